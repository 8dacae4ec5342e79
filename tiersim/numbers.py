"""How tiersim reads a number written as text: one rule for scenario YAML and command-line flags.

A number is written in decimal: an optional sign, digits (an ``_`` may group them in
thousands: ``8_192``, ``0.000_001``), an optional fraction and an optional exponent (``1e3``
is 1000, as YAML 1.2 and Python read it). A whole number has no leading zero (``010``: YAML
1.1 reads it as octal 8, Python as 10). Spellings YAML 1.1 or a programming language reads
some other way are refused with the decimal number to write: ``010``, base 60 (``1:30``, 90
to YAML 1.1), a base prefix (``0x10``, ``0o10``, ``0b11``) and misplaced underscores (``1__0``,
``10_``, and ``1_0``, which groups no thousands).

:mod:`tiersim.scenario_yaml`'s YAML loader reads a plain scalar as a number only where
:data:`WHOLE` or :data:`FRACTIONAL` match it (everything else is text, so a name such as
``08`` stays a name) and refuses the misspellings in a number field through
:func:`misspelt`; the command line's number flags read their text with :func:`read_number`.
Infinity and NaN are read here (YAML's ``.inf``, Python's ``inf``) and refused by each reader
afterwards, with the place they were given.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from typing import Any

_INT = r"(?:[0-9]+|[0-9]{1,3}(?:_[0-9]{3})+)"
"""Digits before a point: bare, or grouped in thousands by ``_`` (``8_192``, ``1_000_000``)."""
_FRAC = r"(?:[0-9]+|[0-9]{3}(?:_[0-9]{3})*_[0-9]{1,3})"
"""Digits after a point: bare, or grouped in threes from the point (``0.000_001``)."""
_EXP = r"[eE][-+]?[0-9]+"
WHOLE = re.compile(r"^[-+]?(?:0|[1-9][0-9]*|[1-9][0-9]{0,2}(?:_[0-9]{3})+)$")
"""A whole number as written: decimal digits, no leading zero, ``_`` only between groups of
thousands (``8_192``; ``1_0`` is refused: Python and YAML 1.1 read it as 10, but nobody groups
digits so, and a typo is likelier)."""
FRACTIONAL = re.compile(rf"^[-+]?(?:{_INT}\.(?:{_FRAC})?(?:{_EXP})?|\.{_FRAC}(?:{_EXP})?"
                        rf"|{_INT}{_EXP})$")
"""A number with a decimal point or an exponent (``2.5``, ``.5``, ``3.``, ``1e3``, ``1.0e-05``),
``_`` grouping thousands as in :data:`WHOLE` (none in the exponent)."""
NON_FINITE = re.compile(r"^[-+]?(?:\.?inf|infinity|\.?nan)$", re.IGNORECASE)
"""Infinity and NaN as YAML (``.inf``) or Python (``inf``, ``infinity``) write them."""

_SIXTY = re.compile(r"^([-+]?)([0-9][0-9_]*(?::[0-5]?[0-9])+)(\.[0-9_]*)?$")
_PREFIXED = re.compile(r"^([-+]?)0([xXoObB])([0-9a-fA-F_]+)$")
_LEADING_ZERO = re.compile(r"^([-+]?)0[0-9_]*[0-9]$")
_BASES = {"x": (16, "hexadecimal"), "o": (8, "octal"), "b": (2, "binary")}
MAX_INT_BITS = 3000
"""The most bits a whole number in a scenario or a flag may have (about 900 digits; Python will
not print one of over 4,300 digits); smaller ones get their key's own bound."""
LONGEST_SHOWN = 40
"""The most characters of a refused spelling an error line repeats (a 1,000-digit ``0xfff...``
was repeated whole, with its 1,200-digit decimal after it: one line of 2,261 characters)."""


class NumberError(ValueError):
    """Text that is no number as tiersim reads one; the message says why, and which decimal
    number to write where the text reads as one some other way (``1__0``: write 10)."""


def read_number(text: str, kind: type = float, flag: str | None = None) -> int | float:
    """The number ``text`` writes (blanks around it ignored): an int for a whole number, a
    float for one with a point or an exponent, or infinity or NaN. ``kind=int`` words the
    refusal of text that is no number at all as a whole number's; :class:`NumberError`.
    ``flag``: the option it was typed for (``--max-replicas``), which words the refusal of a
    unit, a % or a currency sign as what to type (:func:`flag_unit_words`)."""
    written = text.strip()
    if WHOLE.match(written):
        try:
            return int(written)
        except ValueError:  # more digits than Python converts (4,300)
            raise NumberError(f"a whole number of {len(written.lstrip('+-')):,} digits is "
                              "beyond any setting") from None
    if FRACTIONAL.match(written):
        if underflows(written):
            raise NumberError(underflow_words(written))
        return float(written)
    if NON_FINITE.match(written):
        return float(written.replace(".", ""))
    why = misspelt(written, flag=flag)
    if why is not None:
        raise NumberError(why)
    raise NumberError("input should be a valid integer, unable to parse string as an integer"
                      if kind is int else
                      "input should be a valid number, unable to parse string as a number")


def underflows(text: str) -> bool:
    """Whether decimal ``text`` (:data:`FRACTIONAL`) writes a number other than 0 that is nearer
    0 than any float (``1e-400``): Python and YAML read it as 0.0, and a price, an SLO or a
    share the user gave as above 0 would be 0 without a word."""
    mantissa = re.split(r"[eE]", text)[0]
    return float(text) == 0 and re.search(r"[1-9]", mantissa) is not None


def underflow_words(text: str) -> str:
    """Why :func:`underflows` text is refused."""
    return (f"{shown(text)} is nearer 0 than any number tiersim holds (the least is about "
            "5e-324), so it would read as 0; write 0 if that is meant")


def exact_whole(text: str) -> int:
    """The whole number that decimal ``text`` with a point or an exponent writes (``2.0``,
    ``1e30``: :data:`FRACTIONAL`), exactly: ``int(float("1e30"))`` is 10**30 +
    19,884,624,838,656, the nearest float's. For a reader that wants a whole number: text
    that is whole only as a float (``2.99999999999999999999``, which ``int(Decimal)`` cut to 2
    while the float is 3.0) is :class:`NumberError` (:func:`not_whole_words`)."""
    number = Decimal(text.strip().replace("_", ""))
    if number != number.to_integral_value():
        raise NumberError(not_whole_words(text.strip()))
    return int(number)


def whole_only_as_float(text: str) -> bool:
    """Whether decimal ``text`` (:data:`FRACTIONAL`) reads as a whole float (``2.0``) but
    writes a fraction, past a float's 16 digits (``1.99999999999999999999``): a field that
    takes whole numbers took it as 2 without a word."""
    value = float(text.replace("_", ""))
    if not (math.isfinite(value) and value.is_integer()):
        return False
    number = Decimal(text.strip().replace("_", ""))
    return number != number.to_integral_value()


def not_whole_words(text: str) -> str:
    """Why :func:`whole_only_as_float` text is refused where a whole number goes."""
    return (f"{shown(text)} is not a whole number (only a float's 16 digits would round it to "
            f"{_decimal(float(text.replace('_', '')))}); write the whole number meant")


def misspelt(text: str, key: str | None = None, flag: str | None = None) -> str | None:
    """Why ``text`` is refused where a number is wanted, with the decimal number to write,
    when it reads as a number some other way (``010 has a leading zero, which YAML 1.1
    reads as octal (8); write 10``); None for a number as written and for text that is no
    number at all. ``key``: the name of the scenario key it was written for (its last part,
    ``time_scale``), which words the refusal of a unit after it (:func:`_with_unit`); ``flag``:
    the option it was typed for, which words it as what to type (:func:`flag_unit_words`)."""
    if WHOLE.match(text) or FRACTIONAL.match(text) or NON_FINITE.match(text):
        return None
    ascii_text = ascii_digits(text)
    if ascii_text != text:
        return _other_digits(text, ascii_text, key, flag)
    for reading in (_base_sixty, _prefixed, _leading_zero, _underscores):
        why = reading(text)
        if why is not None:
            return why
    why = _comma(text)
    if why is not None:
        words, number = why
        if flag is not None:
            return f"{words}; type {flag} {number}"
        return f"{words}; write {number}" + (
            "" if "." in number else f" (or {number_grouped(number)})")
    if flag is not None:
        return flag_unit_words(text, flag)
    return _percent_or_dollars(text, key) or _with_unit(text, key)


_COMMA = re.compile(r"([+-]?)([0-9]+)((?:,[0-9]+)+)")
"""A number written with commas: a decimal comma (``3,50``) or thousands (``8,192``)."""


_WIDE_SIGNS = str.maketrans("．，－＋＿ｅＥｘＸ％＄−", ".,-+_eExX%$-")
"""The full-width forms of the signs a number is written with (``３．５``: 3.5), and the
minus sign U+2212."""


def ascii_digits(text: str) -> str:
    """``text`` with every decimal digit of another script (full-width ``１``, Arabic-Indic
    ``١``, Devanagari ``१``) written as its 0-9, and, where it has such a digit, the full-width
    point, comma, signs, ``_`` and ``e`` as their ASCII forms; ``text`` itself where it has
    none."""
    if text.isascii() or not any(c.isdecimal() and not c.isascii() for c in text):
        return text
    import unicodedata

    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c
                   for c in text.translate(_WIDE_SIGNS))


def other_digits_words(text: str) -> str:
    """Why ``text`` written in digits other than 0-9 is refused (:func:`ascii_digits`), in
    words, with no fix."""
    return (f"{shown(text)} is written in digits other than 0-9 (full-width, or another "
            "script's), which tiersim does not read")


def _other_digits(text: str, ascii_text: str, key: str | None, flag: str | None) -> str:
    """Why ``text``, written in digits other than 0-9 (``１``, ``３．５０``), is refused, with
    the number to write: the one its ASCII form ``ascii_text`` writes, or that form's own
    refusal (``３,５０``: a decimal comma). It was "unable to parse string as a number", as
    any text is, with no fix (Python's own ``int`` and ``float`` read such digits, YAML and
    tiersim do not)."""
    words = other_digits_words(text)
    if WHOLE.match(ascii_text) or FRACTIONAL.match(ascii_text) or NON_FINITE.match(ascii_text):
        if flag is None:
            return f"{words}; write {ascii_text}"
        if FLAG_KINDS.get(flag) in ("window", "counts"):  # one of the flag's several numbers
            return f"{words}; type {ascii_text} for {text}"
        return f"{words}; type {flag} {ascii_text}"
    why = misspelt(ascii_text, key, flag)
    return f"{words}, and in 0-9 {why}" if why else f"{words}; write it in 0-9"


def _comma(text: str) -> tuple[str, str] | None:
    """``3,50`` (a decimal comma: 3.50) or ``8,192`` and ``1,000,000`` (thousands grouped with
    commas): why it is refused and the number meant, as text; None for other text, and for
    commas that are neither (``1,00,000``). Both were "unable to parse string as a number",
    with no fix."""
    match = _COMMA.fullmatch(text)
    if match is None:
        return None
    sign, head, tail = match.group(1).replace("+", ""), match.group(2), match.group(3)[1:]
    parts = tail.split(",")
    if len(parts) == 1 and len(parts[0]) != 3:
        return (f"{shown(text)} has a decimal comma, which tiersim does not read",
                f"{sign}{head}.{parts[0]}")
    if 1 <= len(head) <= 3 and not head.startswith("0") and all(len(p) == 3 for p in parts):
        return (f"{shown(text)} groups thousands with a comma, which tiersim does not read",
                f"{sign}{head}{''.join(parts)}")
    return None


def number_grouped(digits: str) -> str:
    """Whole-number text (``-1000000``) with its thousands grouped by ``_``, as tiersim reads
    them (``-1_000_000``)."""
    sign, body = ("-", digits[1:]) if digits.startswith("-") else ("", digits)
    groups = []
    while len(body) > 3:
        body, groups = body[:-3], [body[-3:], *groups]
    return sign + "_".join([body, *groups])


_PERCENT = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*%")
"""A number written as a percent: ``93%``, ``93.5 %``."""
_DOLLARS = re.compile(r"\$\s*((?:\d+\.?\d*|\.\d+))|((?:\d+\.?\d*|\.\d+))\s*(?:\$|USD|usd)")
"""A price written with a dollar sign before or after it, or USD after it: ``$3.50``,
``3.50$``, ``3.50 USD`` (the last two were "unable to parse" and "a key's unit is in its
name: GB for _gb", which is no price's fix)."""


def _percent_or_dollars(text: str, key: str | None = None) -> str | None:
    """``93%`` for a share, ``$3.50`` for a price: the number to write instead. Before, both
    were refused as "input should be a valid number, unable to parse string as a number (got
    '93%')", with no fix (a whole ``93`` for a share is told "a share, not a percent")."""
    match = _PERCENT.fullmatch(text)
    if match is not None:
        share = format(Decimal(match.group(1)).scaleb(-2).normalize(), "f")
        if key in SHARE_KEYS:
            return f"{shown(text)} is a percent; write the share {share} (a share from 0 to 1)"
        if key is None:  # a flag: its key is not known here, nor whether it is a share
            return (f"{shown(text)} has a % sign, which tiersim does not read; write the "
                    f"number alone (a share from 0 to 1 as {share})")
        return (f"{shown(text)}: {key} is no share, and tiersim reads no % sign; write the "
                "number alone")
    match = _DOLLARS.fullmatch(text)
    if match is not None:
        price = key in _PRICE_KEYS
        return (f"{shown(text)} has a currency sign, which tiersim does not read; write "
                + (f"{match.group(1) or match.group(2)} (USD)" if price
                   else "the number alone"))
    return None


_PRICE_KEYS = frozenset({"cost_per_gpu_hour", "budget_usd_per_request", "cost_per_request_usd"})
"""Scenario keys whose number is a price in USD."""


_UNIT = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*([A-Za-z]{1,5})")
"""A decimal number with a unit word after it: ``50GB``, ``10min``, ``60 ms``."""


FACTOR_KEYS = frozenset({"time_scale", "output_length_multiplier", "head_cost"})
"""Scenario keys whose number is a factor, with no unit: ``time_scale: 2`` (arrivals twice as
fast), ``output_length_multiplier``, ``head_cost`` (of one decode step). ``time_scale: 4x``
was told "has a unit ... a key's unit is in its name", which no name here has."""
SHARE_KEYS = frozenset({
    "accuracy_floor", "p_easy", "p_hopeless", "top_accuracy", "fpr", "fnr", "fractions",
    "thresholds", "floor", "budget_relative", "train_fraction", "gpu_memory_utilization",
    "watermark", "prefix_cache_fraction", "acceptance", "accuracy", "step_mix",
    "class_difficulty"})
"""Scenario keys whose number is a share, a probability or an accuracy from 0 to 1, with no
unit (78.5 % is 0.785)."""
COUNT_KEYS = frozenset({
    "replicas", "gpus_per_replica", "data_parallel", "max_num_seqs", "k", "prefill_replicas",
    "decode_replicas", "tasks", "max_steps", "text_max_features", "cv_folds", "ece_bins",
    "size", "distinct", "max_replicas", "max_sweep_points"})
"""Scenario keys whose number is a count of things (replicas, GPUs, steps...), with no unit."""
UNIT_KEYS = frozenset({
    "window", "cost_per_gpu_hour", "budget_usd_per_request", "cost_per_request_usd",
    "skip_longer_than", "max_model_len", "block_size", "max_num_batched_tokens",
    "system_prompt_tokens", "max_context_tokens", "input", "output", "task_rate_rps",
    "tool_s_median", "ttft_p99_s", "tpot_p99_s", "capacity_gb", "read_gb_s", "write_gb_s",
    "link_gb_s", "latency_us", "lookup_s", "hours_per_month", "e2e_p99_s", "session_p99_s"})
"""Scenario keys whose number is in a unit (seconds, GB, tokens, USD...), named in the key
(``_s``, ``_gb``) or in its docs; every other key's number has no unit."""


_UNIT_SUFFIXES = ("_s", "_gb", "_us", "_usd", "_rps", "_tokens")
"""How a key's name ends where it names the key's unit (a key added later is read so too)."""


def _with_unit(text: str, key: str | None = None) -> str | None:
    """``50GB``, ``10min``, ``4x``: a number written with a unit (or a sign) after it, which
    tiersim never reads. For ``key`` with a unit (:data:`UNIT_KEYS`; or no key: a flag) that
    unit is in its name (``capacity_gb``, ``tpot_p99_s``) or its docs; any other key's number
    has none, and the words say what it is (a factor, a share, a count) and what to write."""
    match = _UNIT.fullmatch(text)
    if match is None or match.group(2) in ("e", "E"):  # 1e: an exponent cut short
        return None
    if key is None or key in UNIT_KEYS or key.endswith(_UNIT_SUFFIXES):
        return (f"{shown(text)} has a unit, which tiersim does not read; write the number "
                "alone (a scenario key's unit is in its name: GB for _gb, seconds for _s and "
                "for trace.window)")
    number = match.group(1)
    times = match.group(2).lower() in ("x", "times")
    if key in FACTOR_KEYS:
        what, fix = "a factor", number if times else "the factor alone (2 for twice)"
    elif key in SHARE_KEYS:
        what, fix = "a share from 0 to 1", "the share alone (0.5 for half)"
    elif key in COUNT_KEYS:
        what, fix = "a count", number
    else:
        what, fix = "a number", "the number alone"
    return f"{shown(text)}: {key} is {what}, with no unit, and tiersim reads none; write {fix}"


FLAG_KINDS = {
    "--accuracy-floor": "share", "--p": "share", "--eps": "share", "--delta": "share",
    "--floor": "share", "--time-scale": "factor", "--max-replicas": "count",
    "--check-seeds": "count", "--workers": "count", "--max-points": "count", "--tp": "count",
    "--slo-ttft-p99": "seconds", "--slo-tpot-p99": "seconds", "--budget-s": "seconds",
    "--slo-e2e-p99": "seconds", "--slo-session-p99": "seconds",
    "--window": "window", "--gpus-per-replica": "counts", "--skip-longer-than": "tokens",
    "--dc": "cost", "--c0": "cost", "--seed": "whole", "--hours-per-month": "hours"}
"""What each number flag's number is, which words the refusal of a unit typed after it
(:func:`flag_unit_words`); a flag not listed is "a number"."""
_FLAG_WHAT = {
    "share": ("a share from 0 to 1", "share"), "factor": ("a factor (2 for twice the load)",
                                                          "factor"),
    "count": ("a count", "count"), "seconds": ("in seconds", "number of seconds"),
    "window": ("START END in seconds", "number of seconds"),
    "counts": ("whole numbers, such as 1,2,4", "count"),
    "tokens": ("a count of tokens", "count of tokens"), "cost": ("a cost", "cost"),
    "whole": ("a whole number", "number"), "number": ("a number", "number"),
    "hours": ("in hours (730 for 24/7)", "number of hours")}
"""Per kind of :data:`FLAG_KINDS`: what the flag is, and the noun of "type the ... alone"."""
_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "ms": Decimal("0.001"),
            "us": Decimal("0.000001"), "min": 60, "mins": 60, "m": 60, "h": 3600,
            "hr": 3600, "hrs": 3600, "hour": 3600}
"""A time unit typed after a number, in seconds."""
_THOUSANDS = {"k": 1000, "K": 1000, "M": 1_000_000}
"""A count typed with a thousands suffix: ``10k``."""


def flag_unit_words(text: str, flag: str) -> str | None:
    """Why ``text`` typed for number flag ``flag`` is refused when it is a number with a unit,
    a % or a currency sign (``--max-replicas 4x``, ``--slo-tpot-p99 100ms``, ``--dc 3.5$``),
    naming the flag, what its number is and what to type (``--slo-tpot-p99 is in seconds:
    type --slo-tpot-p99 0.1``); None for other text. Flags were told the scenario's words ("a
    scenario key's unit is in its name: GB for _gb, seconds for _s"), which no flag has."""
    kind = FLAG_KINDS.get(flag, "number")
    what, noun = _FLAG_WHAT[kind]
    percent, dollars = _PERCENT.fullmatch(text), _DOLLARS.fullmatch(text)
    unit = _UNIT.fullmatch(text)
    if percent is not None:
        number, sign, word = percent.group(1), "a % sign", "%"
    elif dollars is not None:
        number, sign, word = dollars.group(1) or dollars.group(2), "a currency sign", "$"
    elif unit is not None and unit.group(2) not in ("e", "E"):
        number, sign, word = unit.group(1), "a unit", unit.group(2)
    else:
        return None
    meant = _flag_meant(Decimal(number), word, kind)
    if meant is None:
        fix = f"the {noun} alone, such as {flag} {number}"
    elif kind in ("window", "counts"):  # one of the flag's values
        fix = f"{meant} for {shown(text)}"
    elif isinstance(meant, tuple):
        fix = f"{flag} {meant[0]} ({meant[1]} if {shown(text)} meant {number} x 1024)"
    else:
        fix = f"{flag} {meant}"
    return (f"{shown(text)} has {sign}, which tiersim does not read; {flag} is {what}: "
            f"type {fix}")


def _flag_meant(number: Decimal, word: str, kind: str) -> str | tuple[str, str] | None:
    """The number a flag of ``kind`` typed as ``number`` and ``word`` (a unit, ``%`` or ``$``)
    means, as text; a pair for a count of tokens in thousands (``8k``: 8000, or 8192); None
    where the unit means nothing for the flag (``--max-replicas 4%``)."""
    lower = word.lower()
    if word in ("%", "pc", "pct", "percent"):
        value = number.scaleb(-2) if kind in ("share", "factor") else None
    elif word in ("$", "USD", "usd"):
        value = number if kind == "cost" else None
    elif kind in ("seconds", "window"):
        value = number * _SECONDS[lower] if lower in _SECONDS else None
    elif kind == "hours":  # 730h, 43800min: hours; 30d is no count of hours paid for
        value = number * _SECONDS[lower] / 3600 if lower in _SECONDS else None
    elif kind in ("count", "counts", "tokens") and word in _THOUSANDS:
        value = number * _THOUSANDS[word]
        if kind == "tokens" and word in ("k", "K"):
            return _plain(value), _plain(number * 1024)
    elif kind in ("share", "factor", "count", "counts", "tokens", "whole", "cost", "number"):
        value = number  # 4x, 4cpu, 7th: the number alone
    else:
        value = None
    return None if value is None else _plain(value)


def _plain(number: Decimal) -> str:
    """``number`` as decimal text with no exponent and no trailing zeros (0.1, 600, 10000)."""
    return format(number.normalize(), "f")


def _base_sixty(text: str) -> str | None:
    """``1:30``: YAML 1.1's base 60 (90)."""
    match = _SIXTY.match(text)
    if match is None:
        return None
    sign, parts, fraction = match.groups()
    value = _sixty(parts) if len(parts) <= MAX_INT_BITS // 3 else math.inf
    if value > sys.float_info.max:  # no float holds it (it was printed as one: OverflowError)
        return f"{shown(text)} is base 60 to YAML 1.1, and beyond any setting"
    number = (-1 if sign == "-" else 1) * (value + float(f"0{fraction.replace('_', '')}")
                                          if fraction else value)
    return f"{text} is base 60 to YAML 1.1 ({number:g}); write {_decimal(number)}"


def _sixty(parts: str) -> int:
    """The whole number ``parts`` (``1:30``, ``_`` allowed) writes in base 60."""
    value = 0
    for part in parts.replace("_", "").split(":"):
        value = value * 60 + int(part)
    return value


def _prefixed(text: str) -> str | None:
    """``0x10``, ``0o10``, ``0b11``: a number in another base."""
    match = _PREFIXED.match(text)
    if match is None:
        return None
    sign, letter, digits = match.groups()
    base, name = _BASES[letter.lower()]
    try:
        value = int(digits.replace("_", ""), base)
    except ValueError:
        return None
    if value.bit_length() > MAX_INT_BITS:
        return f"{shown(text)} is {name}, {huge(value.bit_length())}"
    return f"{text} is {name}; write {-value if sign == '-' else value}"


def _leading_zero(text: str) -> str | None:
    """``010``: a whole number with a leading zero (octal 8 to YAML 1.1, 10 to Python)."""
    match = _LEADING_ZERO.match(text)
    if match is None:
        return None
    digits = text.lstrip("+-").replace("_", "")
    if len(digits) > MAX_INT_BITS // 3:  # more digits than any setting has (and Python reads)
        return f"{shown(text)} has a leading zero, and {len(digits):,} digits: beyond any setting"
    value = int(digits) * (-1 if match.group(1) == "-" else 1)
    octal = set(digits) <= set("01234567") and int(digits, 8) != int(digits)
    reading = f", which YAML 1.1 reads as octal ({int(text.replace('_', ''), 8)})" if (
        octal) else ""
    return f"{text} has a leading zero{reading}; write {value}"


def _underscores(text: str) -> str | None:
    """``1__0``, ``10_``: an ``_`` that is not between two digits; ``1_0``, ``0.9_5``, ``1e1_0``:
    one between digits that does not group thousands (Python and YAML 1.1 read them, as 10,
    0.95 and 1e10)."""
    bare = text.replace("_", "")
    if "_" not in text or not (WHOLE.match(bare) or FRACTIONAL.match(bare)):
        return None
    between = re.fullmatch(r"[-+]?[0-9.eE+-]*", bare) is not None and re.search(
        r"(^|[^0-9])_|_($|[^0-9])", text) is None
    why = ("has a _ that does not group thousands (8_192 does)" if between else
           "has a _ that is not between two digits")
    if len(text) > LONGEST_SHOWN:
        return f"{shown(text)} {why}; write it without it"
    return f"{text} {why}; write {bare}"


def shown(text: str) -> str:
    """A refused spelling as an error line repeats it: whole, or its first
    :data:`LONGEST_SHOWN` characters and how many more there are."""
    if len(text) <= LONGEST_SHOWN:
        return text
    return f"{text[:LONGEST_SHOWN]}... ({len(text):,} characters)"


class WrittenNumber(float):
    """A number read from text that keeps the ``text`` (:attr:`text`): a number flag's value
    (``-5``, ``1e9``, ``1e400``: :func:`tiersim.cli.usage.read_flag_number`) and a JSON
    number beyond a float's range (``1e400``, :func:`tiersim.jsonio.parse_json`). An error line
    quotes it as written, by :func:`as_written` (``1e400, beyond a float``) or by ``repr``
    (``1e400``), where Python writes ``-5.0``, ``1000000000.0`` and ``inf``. A command turns a
    flag's number into a plain float (:func:`plain_float`) once it has checked it, so no
    number kept so reaches what a run writes."""

    text: str

    def __new__(cls, value: float, text: str) -> WrittenNumber:
        """``value``, keeping the ``text`` it was read from."""
        number = super().__new__(cls, value)
        number.text = text.strip()
        return number

    def __repr__(self) -> str:
        """The number as written (``1e400``), not as Python writes it (``inf``)."""
        return self.text

    def __getnewargs__(self) -> tuple[float, str]:
        """The arguments :meth:`__new__` takes, for ``copy`` and ``pickle`` (a float's own
        gives the number alone)."""
        return float(self), self.text


class WrittenWhole(int):
    """A whole-number flag's value that keeps the ``text`` it was typed as (:attr:`text`:
    ``1e30``, ``2e3``), as :class:`WrittenNumber` keeps a float's: an error line quotes it as
    written (``--max-replicas 1e30``), where Python writes its 31 digits. A command turns it
    into a plain int (:func:`plain_int`) once it has checked it, so no number kept so reaches
    what a run writes (a planned scenario's ``limits.max_replicas``)."""

    text: str

    def __new__(cls, value: int, text: str) -> WrittenWhole:
        """``value``, keeping the ``text`` it was read from."""
        number = super().__new__(cls, value)
        number.text = text.strip()
        return number

    def __repr__(self) -> str:
        """The number as written (``1e30``), not its digits."""
        return self.text

    def __getnewargs__(self) -> tuple[int, str]:
        """The arguments :meth:`__new__` takes, for ``copy`` and ``pickle``."""
        return int(self), self.text


def plain_int(value: int | None) -> int | None:
    """``value`` as a plain int (a :class:`WrittenWhole`'s number, without its text), None as
    None: a whole-number flag's value once checked, before it is used or written."""
    return None if value is None else int(value)


def plain_float(value: float | None) -> float | None:
    """``value`` as a plain float (a :class:`WrittenNumber`'s number, without its text), None
    as None: a flag's number once checked, before it is used (a scenario, a plan, a profile
    written with it holds a float, and prints as Python writes it)."""
    return None if value is None else float(value)


def plain_numbers(value: Any) -> Any:
    """``value`` with every :class:`WrittenNumber` in it (in lists and maps too) a plain float:
    values quoted as written while they are checked (``tiersim plan --choose``), then used
    and written as numbers."""
    if isinstance(value, dict):
        return {key: plain_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_numbers(item) for item in value]
    return float(value) if isinstance(value, WrittenNumber) else value


def beyond_float_words(text: str) -> str:
    """A number no float holds, as an error line quotes it: as written (``.NaN``, ``-.inf``),
    cut to :data:`LONGEST_SHOWN` characters, and a decimal number whose float is infinite
    saying so (``1e400, beyond a float``: Python reads it as ``inf``, which was not written)."""
    written = text.strip()
    if FRACTIONAL.match(written) and math.isinf(float(written.replace("_", ""))):
        return f"{shown(written)}, beyond a float"
    return shown(written)


def as_written(value: float) -> str:
    """A number a flag was given, as an error line quotes it: as typed where it keeps its text
    (:class:`WrittenNumber`, or any float with a ``text``), by :func:`beyond_float_words`
    (``-5``, ``1e9``, ``1e400, beyond a float``);
    else as Python writes it."""
    text = getattr(value, "text", None)
    return beyond_float_words(text) if isinstance(text, str) else repr(value)


def huge(bits: int) -> str:
    """Why a whole number of ``bits`` bits, more than :data:`MAX_INT_BITS`, is refused."""
    return (f"a whole number of {bits:,} bits is beyond any setting (at most "
            f"{MAX_INT_BITS:,} bits, about 900 digits)")


def _decimal(number: float) -> str:
    """A number as the decimal text to write (``90``, ``90.5``)."""
    return str(int(number)) if float(number).is_integer() else repr(float(number))


__all__ = ["COUNT_KEYS", "FACTOR_KEYS", "SHARE_KEYS", "UNIT_KEYS",
           "FRACTIONAL", "LONGEST_SHOWN", "MAX_INT_BITS", "NON_FINITE", "WHOLE", "NumberError",
           "WrittenNumber", "WrittenWhole", "as_written", "beyond_float_words", "exact_whole",
           "huge", "misspelt", "not_whole_words", "plain_float", "plain_int", "plain_numbers",
           "read_number",
           "shown", "underflow_words", "underflows", "whole_only_as_float"]
