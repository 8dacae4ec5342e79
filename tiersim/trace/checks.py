"""Vectorised checks of trace columns: each finds the first bad row with numpy and raises.

A check never loops over rows in Python: it builds one boolean mask of bad rows, takes the
first with ``argmax`` and only then looks at that single row to word the message.
"""

from __future__ import annotations

import datetime
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tiersim.errors import cut
from tiersim.trace.cells import written_cells
from tiersim.trace.filecheck import Source

INT32_MAX = np.iinfo(np.int32).max
NS_RANGE_S = (pd.Timestamp.min.value // 10**9 + 1, pd.Timestamp.max.value // 10**9 - 1)
"""Seconds since 1970 that int64 nanoseconds can hold (about 1677-09-22 to 2262-04-11)."""


def first_true(mask: np.ndarray) -> int | None:
    """Index of the first True in ``mask``, or None when there is none."""
    if mask.size == 0 or not mask.any():
        return None
    return int(np.argmax(mask))


def numbers(src: Source, s: pd.Series, column: str, label: str, *, integer: bool = False,
            low: tuple[float, str] | None = None, high: tuple[float, str] | None = None,
            flags: bool = False,
            zero: tuple[np.ndarray, str] | None = None) -> np.ndarray:
    """Check a numeric column and return it as float64.

    Bad values: missing, not a number, infinite, not whole (when ``integer``), below ``low`` or
    above ``high``, and true/false unless ``flags`` (a label may be a flag; a time is not).
    Each bound is ``(value, words)``, the words for the message: ``(1, "> 0")``. ``zero`` is
    ``(rows, message)``: a 0 in one of those rows (a boolean mask) is bad too, said so, and the
    first bad row of any kind is the one named.
    """
    if not flags:
        i = first_true(true_false(s))
        if i is not None:
            raise src.error(f"{label} is a true/false value (got "
                            f"{_flag_as_written(src, i, column, s.iloc[i])}); write a "
                            f"{'whole ' if integer else ''}number", i, column)
    if pd.api.types.is_bool_dtype(s.dtype):
        s = s.astype("int64")
    not_temporal(src, s, column, label)
    if pd.api.types.is_numeric_dtype(s.dtype):
        missing = s.isna().to_numpy()
        values = s.to_numpy(dtype="float64", na_value=np.nan)
        text_bad = np.zeros(len(s), dtype=bool)
    else:
        missing = s.isna().to_numpy()
        values = to_floats(_flag_words(s) if flags else s)
        text_bad = np.isnan(values) & ~missing
    bad = _bad_numbers(values, missing | text_bad, integer, low, high)
    zeros = np.zeros(len(s), dtype=bool) if zero is None else zero[0] & (values == 0)
    i = first_true(bad | zeros)
    if i is not None and zeros[i] and not bad[i]:
        raise src.error(zero[1], i, column)
    if i is not None:
        raw = s.iloc[i]
        if missing[i] and _json_constant(src, i, column) == "NaN":  # not a null: not "missing"
            raise src.error(f"{label} is NaN, which is no number (JSON writes a missing one as "
                            "null); write the number or remove the row", i, column)
        if not (missing[i] or text_bad[i] or np.isfinite(values[i])):  # 1e400, read as inf
            raw = _infinite_as_written(src, i, column, raw, values[i])
        written = raw if raw in ("Infinity", "-Infinity") else None  # a JSON line's, as written
        if not (missing[i] or text_bad[i]) and np.isfinite(values[i]) and isinstance(
                raw, float | np.floating):  # a text file's 1e19, not Python's 1e+19
            written = _as_written(src, [i], column, [values[i]])[0]
        message = _number_message(raw, values[i], label, missing[i], text_bad[i],
                                  integer, low, high, written)
        raise src.error(message + (" or true/false" if flags and text_bad[i] else ""), i,
                        column)
    return values


FLAG_WORDS = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}
"""The text a CSV reader takes as true/false (pandas' words), as the numbers they stand for."""


def _flag_words(s: pd.Series) -> pd.Series:
    """A text column of a label that may be a flag with its true/false words
    (:data:`FLAG_WORDS`) as 1 and 0: pandas reads a CSV column of those words alone as
    booleans, but one other cell (``maybe`` at row 5,000) left every cell text, and the
    column was refused at row 1, a ``False``."""
    words = s.isin(list(FLAG_WORDS)).to_numpy(dtype=bool)
    if not words.any():
        return s
    return s.where(~words, s.map(FLAG_WORDS))


def to_floats(s: pd.Series) -> np.ndarray:
    """A column's cells as float64: numbers as they are, text parsed, NaN where a cell is no
    number. A whole number too large for a float64 (a 400-digit cell) is infinite: pandas
    raises OverflowError on it, so such a column is converted cell by cell; text of a whole
    number of more than 4,300 digits, which pandas reads as no number (Python's limit on
    reading integers), is infinite too (it was refused as "not a number")."""
    try:
        num = pd.to_numeric(s, errors="coerce")
    except OverflowError:
        num = pd.Series([_cell_float(v) for v in s], index=s.index, dtype="float64")
    values = num.to_numpy(dtype="float64", na_value=np.nan)
    unread = np.flatnonzero(np.isnan(values) & s.notna().to_numpy())
    if len(unread) and not pd.api.types.is_numeric_dtype(s.dtype):
        values = values.copy()
        values[unread] = [_cell_float(v) if _whole_text(v) else np.nan
                          for v in s.iloc[unread]]
    return values


def _cell_float(value) -> float:
    """One cell as a float for :func:`to_floats`: NaN when it is no number, +-inf when it is a
    whole number beyond the float range."""
    if isinstance(value, bool | np.bool_):
        return float(value)
    try:
        return float(value)
    except OverflowError:
        return np.inf if value > 0 else -np.inf
    except (TypeError, ValueError):
        return np.nan


EXACT_FLOAT_INT = 2 ** 53
"""Largest whole number a float64 holds exactly (ids read through floats must stay below it)."""
INT64_MAX = np.iinfo(np.int64).max


def whole_numbers(src: Source, s: pd.Series, column: str, label: str, *,
                  low: tuple[float, str] | None = None,
                  high: tuple[float, str] | None = None) -> np.ndarray:
    """Check an id-like column (whole numbers) and return it as int64, exactly: an integer
    column is read as integers (no float64 rounding above 2**53, no wraparound); a float or
    text column must stay below 2**53 in magnitude (2**53 itself is where 2**53 + 1, read
    through a float, lands too, so it cannot be told apart). A column of booleans is no
    id (True and False would read as 1 and 0)."""
    if pd.api.types.is_bool_dtype(s.dtype) or (s.dtype == object and s.map(type).eq(bool).any()):
        i = first_true(s.map(lambda v: isinstance(v, bool | np.bool_)).to_numpy())
        raise src.error(f"{label} must be a whole number, not true/false; write the ids as "
                        "numbers", 0 if i is None else i, column)
    if pd.api.types.is_integer_dtype(s.dtype):
        missing = s.isna().to_numpy()
        i = first_true(missing)
        if i is not None:
            raise src.error(f"missing {label}; fill it in or remove the row", i, column)
        ints = s.to_numpy()
        if ints.dtype.kind == "u":
            i = first_true(ints > INT64_MAX)
            if i is not None:
                raise src.error(f"{label} must be at most {INT64_MAX} (got {int(ints[i])}); "
                                "fix or remove the row", i, column)
        ints = ints.astype(np.int64)
        for bound, bad in ((low, lambda b: ints < b), (high, lambda b: ints > b)):
            i = None if bound is None else first_true(bad(bound[0]))
            if i is not None:
                raise src.error(f"{label} must be {bound[1]} (got {int(ints[i])}); fix or "
                                "remove the row", i, column)
        return ints
    values = numbers(src, s, column, label, integer=True, low=low, high=high)
    i = first_true(np.abs(values) >= EXACT_FLOAT_INT)
    if i is not None:
        shown = shown_as_written(s.iloc[i], values[i])
        if not -2.0**63 <= values[i] < 2.0**63:
            raise src.error(f"{label} {shown} is beyond what a 64-bit integer "
                            f"holds (-2**63 to 2**63 - 1); use smaller ids", i, column)
        raise src.error(f"{label} {shown} is at or beyond 2**53, where a number "
                        "written with a decimal point or as text cannot be read exactly; store "
                        "it as a 64-bit integer", i, column)
    return values.astype(np.int64)


def exact_times(src: Source, t: np.ndarray, raw: pd.Series, column: str, unit: str) -> None:
    """Refuse sorted times read as decimals (float64) that sit at or beyond 2**53 of their
    ``unit`` and nearer the first time than 0 (times offset by a large constant): decimals
    there are 2 or more units apart, so arrivals would move without a word (Mooncake
    milliseconds beyond 2**63, which the JSON reader gives as decimals, replayed 0.5 s gaps as
    0 and 2.048 s). A time far from the first (1e300 after 0) is the span check's to refuse;
    whole numbers read as integers never come here."""
    if not len(t):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        i = first_true((np.abs(t) >= EXACT_FLOAT_INT) & (np.abs(t - t[0]) < np.abs(t)))
    if i is not None:
        step = float(np.spacing(abs(t[i])))
        apart = f"{step:,.0f}" if step < 1e15 else f"{step:.3g}"
        cell = raw.iloc[i]
        shown = (_as_written(src, [i], column, [t[i]])[0] if isinstance(cell, float | np.floating)
                 else shown_as_written(cell, t[i]))  # -1e308 as written, not -1e+308
        raise src.error(f"timestamp {shown} is at or beyond 2**53 "
                        f"{unit}, where a number read as a decimal is not exact (decimals there "
                        f"are {apart} {unit} apart); subtract the first timestamp from every "
                        "row", i, column)


def not_temporal(src: Source, s: pd.Series, column: str, label: str) -> None:
    """Refuse a date-time, duration or period column where a number is wanted: its integers
    are in the column's own unit (nanoseconds, milliseconds, a period's days ...), so reading
    them as numbers would scale every time by an unknown factor."""
    kind = ("date-time" if pd.api.types.is_datetime64_any_dtype(s.dtype) else
            "duration" if pd.api.types.is_timedelta64_dtype(s.dtype) else
            "period" if isinstance(s.dtype, pd.PeriodDtype) else None)
    if kind is not None:
        raise src.error(f"is a {kind} column ({s.dtype}), and {label} must be a plain number; "
                        "write it as numbers", None, column)


def _bad_numbers(values: np.ndarray, unreadable: np.ndarray, integer: bool,
                 low: tuple[float, str] | None, high: tuple[float, str] | None) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        bad = unreadable | ~np.isfinite(values)
        if integer:
            bad |= values != np.floor(values)
        if low is not None:
            bad |= values < low[0]
        if high is not None:
            bad |= values > high[0]
    return bad


def _number_message(raw, value: float, label: str, missing: bool, text_bad: bool,
                    integer: bool, low: tuple | None, high: tuple | None,
                    written: str | None = None) -> str:
    """Why a cell of a number column is refused; ``written``: the number as a text trace
    writes it (:func:`_as_written`), where the reader made a float of it."""
    if missing:
        return f"missing {label}; fill it in or remove the row"
    if text_bad:
        return _other_digits(raw, label) or (
            f"{label} is not a number (got {short(raw)}); write a number")
    shown = shown_as_written(raw, value) if written is None else written
    whole = (isinstance(raw, int) and not isinstance(raw, bool)) or _whole_text(raw)
    if whole and not np.isfinite(value):
        return (f"{label} is beyond the range of numbers (got {shown}); fix or "
                "remove the row")  # a 400-digit cell, which no float holds
    if not np.isfinite(value) and _decimal_text(raw):  # 1e400: "got inf" named no cell's text
        return (f"{label} is beyond the range of numbers (got {cut(raw.strip(), 40)}); fix or "
                "remove the row")
    if not np.isfinite(value):
        return f"{label} is not finite (got {shown}); write a finite number"
    if integer and value != np.floor(value):
        return f"{label} must be a whole number (got {shown}); round it"
    rule = low[1] if low is not None and value < low[0] else high[1]
    return f"{label} must be {rule} (got {shown}); fix or remove the row"


_WHOLE_TEXT = r"\s*[+-]?\d+\s*"
"""A cell of text that is a whole number (digits, a sign at most)."""


def shown_as_written(raw, value: float) -> str:
    """A cell's number for a message, as written where its float ``value`` would round it
    (9007199254740993 is no float64): an integer cell, or text of a whole number, in full;
    anything else as :func:`show_number` shows ``value``."""
    if isinstance(raw, int | np.integer) and not isinstance(raw, bool | np.bool_):
        return show_number(int(raw))
    if _whole_text(raw):
        digits = raw.strip().lstrip("+")
        return show_number(int(digits)) if len(digits) <= 20 else _long_digits(digits)
    return show_number(value)


def _decimal_text(raw) -> bool:
    """Whether a cell is text of a number in decimal notation (:data:`_BARE_NUMBER`, ASCII
    digits, spaces around; not ``inf`` or ``nan``): infinite once read, it is a number beyond
    a float's range (``1e400``)."""
    return isinstance(raw, str) and re.fullmatch(rf"\s*{_BARE_NUMBER}\s*", raw,
                                                 re.ASCII) is not None


def _whole_text(raw) -> bool:
    """Whether a cell is text of a whole number in ASCII digits (:data:`_WHOLE_TEXT`; another
    script's digits, which Python's ``float`` reads, are no number to pandas, nor here)."""
    return isinstance(raw, str) and re.fullmatch(_WHOLE_TEXT, raw, re.ASCII) is not None


def show_number(value: float) -> str:
    """A number for a message: an integer in full up to 20 digits, a longer one by its first
    digits and its length (``100000000000... (401 digits)``), a float in short form (whole
    floats below 1e16 without a point; others as Python writes them: 1e+300, not 301 digits)."""
    if isinstance(value, int | np.integer):
        value = int(value)
        return str(value) if abs(value) < 10**20 else _long_integer(value)
    value = float(value)
    if np.isfinite(value) and value == np.floor(value) and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _long_integer(value: int) -> str:
    """An integer of more than 20 digits, shortened to its first 12 and its length (Python
    writes none of more than 4,300 digits)."""
    try:
        text = str(value)
    except ValueError:
        return "an integer of more than 4,300 digits"
    return _long_digits(text)


def _long_digits(text: str) -> str:
    """The text of a long whole number by its first 12 characters and its digits' count (no
    integer is made: Python reads none of more than 4,300 digits)."""
    return f"{text[:12]}... ({len(text.lstrip('-')):,} digits)"


def tokens(src: Source, s: pd.Series, column: str, *, allow_zero: bool = False,
           served: np.ndarray | None = None) -> np.ndarray:
    """Check a token-count column (whole numbers > 0, or >= 0) and return it as int64; a
    true/false cell is no count. With ``served`` (a boolean mask) a 0 is allowed only in the
    rows where it is False (a logged prompt is 0 only in a request that produced nothing)."""
    low = (0, "> 0") if served is not None else (0, ">= 0") if allow_zero else (1, "> 0")
    zero = None if served is None else (served, "token count must be > 0 (got 0) in a request "
                                                "that did not fail; fix or remove the row")
    values = numbers(src, s, column, "token count", integer=True, low=low,
                     high=(INT32_MAX, f"at most {INT32_MAX}"), zero=zero)
    return values.astype(np.int64)


def true_false(s: pd.Series) -> np.ndarray:
    """Which cells of ``s`` are true/false values (a number reader would take them as 1 or 0)."""
    if s.dtype == object:
        return np.asarray(s.map(lambda v: isinstance(v, bool | np.bool_)), dtype=bool)
    return np.full(len(s), pd.api.types.is_bool_dtype(s.dtype))


RELATIVE_TIMES = frozenset({"now", "today"})
"""Words pandas reads as the time of the run, not a time in the trace: a trace holding one
would replay differently on every run, so they are refused (in any case and spacing)."""


def datetimes_ns(src: Source, s: pd.Series, column: str) -> np.ndarray:
    """Parse a date-time column (ISO 8601 strings, any time zone) to int64 UTC nanoseconds.
    A missing or unreadable cell is refused, and so is one pandas would read but that is no
    date-time (:func:`_not_absolute`): a relative word or a bare number."""
    plain = _plain_times(s)
    return _ns(src, _read_times(src, s, column) if plain is None else plain[0], column)


def plain_datetimes_ns(src: Source, s: pd.Series, column: str) -> tuple[np.ndarray, str] | None:
    """:func:`datetimes_ns` of a column of plain date-times (:data:`_PLAIN`), with their zone
    style ("offset": every cell with a UTC offset, "none": none with one); None for any other
    column, which :func:`datetimes_ns` reads whole (whether a date alone or a cell without an
    offset is refused depends on the whole column), as it reads a column of these cells of
    two styles (:func:`_one_zone_style`)."""
    plain = _plain_times(s)
    return None if plain is None else (_ns(src, plain[0], column), plain[1])


def _ns(src: Source, t: pd.Series, column: str) -> np.ndarray:
    """Date-times ``t`` (UTC where they name no zone) as int64 UTC nanoseconds, a time outside
    what nanoseconds cover refused."""
    if getattr(t.dt, "tz", None) is None:
        t = t.dt.tz_localize("UTC")
    seconds = t.dt.as_unit("s").astype("int64").to_numpy()
    i = first_true((seconds < NS_RANGE_S[0]) | (seconds > NS_RANGE_S[1]))
    if i is not None:
        raise src.error("timestamp is outside the years 1678-2261 that nanosecond times "
                        "cover; write the real date", i, column)
    return t.dt.as_unit("ns").astype("int64").to_numpy()


_ASCII_SPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f "
r"""The ASCII characters Python's ``\s`` matches (RE2's ``\s`` misses \x0b and \x1c-\x1f)."""
_RE2_FOR = {"match": "^(?:{})", "search": "{}", "fullmatch": "^(?:{})$"}


def regex_cells(text: pd.Series, pattern: str, how: str) -> np.ndarray:
    r"""Which cells of a text column ``pattern`` finds, as Python's ``re`` would (``how``: its
    ``match``, ``search`` or ``fullmatch``), a missing cell False: pyarrow's RE2 on the ASCII
    cells (:func:`_re2`), Python's ``re`` on the others alone.

    NOTE: pandas ran a pattern with ``\s`` (or ``$``, or ``\d`` on text that is not all
    ASCII) through Python's ``re`` a cell at a time: 12 s of the 15 s that reading a
    million-row Azure CSV took."""
    cells = pa.array(text, type=pa.large_string())
    found = pc.fill_null(pc.match_substring_regex(cells, _re2(pattern, how)), False)
    found = found.to_numpy(zero_copy_only=False).copy()
    other = np.flatnonzero(~pc.fill_null(pc.string_is_ascii(cells), True)
                           .to_numpy(zero_copy_only=False))
    if len(other):
        method = getattr(re.compile(pattern), how)
        found[other] = [method(cells[int(i)].as_py()) is not None for i in other]
    return found


def _re2(pattern: str, how: str) -> str:
    r"""``pattern`` for RE2, matching ASCII text as Python's ``re`` does: ``\s`` and ``\d``
    spelt as the ASCII characters Python's match, ``$`` (at the end of ``pattern`` only, as
    here) also before a final newline, as in a match or search."""
    out, inside, k = [], False, 0
    while k < len(pattern):
        c = pattern[k:k + 2] if pattern[k] == "\\" else pattern[k]
        k += len(c)
        spelt = {"\\s": _ASCII_SPACE, "\\d": "0-9"}.get(c)
        if spelt is not None:
            c = spelt if inside else f"[{spelt}]"
        elif c == "$" and not inside and how != "fullmatch":
            c = "\\n?$"
        inside = (inside or c == "[") and not (inside and c == "]")
        out.append(c)
    return _RE2_FOR[how].format("".join(out))


def _read_times(src: Source, s: pd.Series, column: str) -> pd.Series:
    """A date-time column read by pandas as :func:`datetimes_ns` reads it, its cells that are
    missing, unreadable, no absolute date-time or a date alone refused."""
    if isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(s.dtype):
        t, refused = s, np.zeros(len(s), dtype=bool)
    else:
        utf8_bytes(src, s, column, "timestamp")
        text = s.astype("string")
        t = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        refused = _not_absolute(text)
        _one_zone_style(src, text, column, t.notna().to_numpy() & ~refused)
    i = first_true(t.isna().to_numpy() | refused)
    if i is not None:
        raise src.error(_timestamp_fault(s.iloc[i]), i, column)
    i = first_true(_date_only(s, dates_too=_date_only(s).all()))
    if i is not None:
        raise src.error("timestamp is a date without a time of day (read as midnight, a day's "
                        "requests would arrive at once); write when the request arrived, like "
                        "2023-11-16 18:15:46", i, column)
    return t


_PLAIN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
"""The opening of a plain ISO 8601 date-time, as every Azure trace writes one (RE2)."""
_PLAIN_ZONES = {"none": (None, "$"),
                "offset": ("UTC", "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$")}
"""A column of plain date-times without and with a UTC offset: the zone pyarrow reads it in,
and what follows :data:`_PLAIN` in its cells."""


def _plain_times(s: pd.Series) -> tuple[pd.Series, str] | None:
    """A text column of plain date-times (:data:`_PLAIN`: none missing, all with a UTC offset
    or all without) parsed by pyarrow, in UTC, with its zone style ("offset" or "none"); None
    for any other column, and one pyarrow
    refuses (a 30 February, a 24:00, a year out of nanosecond range), which pandas reads (and
    refuses) as before (:func:`_read_times`).

    NOTE: pandas' ISO 8601 parse made a Python string a cell (about 80 bytes): 58 MiB of the
    peak and 1.1 s of reading a million-row Azure CSV; pyarrow parses the text in place, and
    such a column holds nothing the checks of :func:`_read_times` would refuse."""
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or not len(s):
        return None
    try:
        cells = pa.array(s, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # cells that are no text
    if cells.null_count:
        return None
    for style, (zone, end) in _PLAIN_ZONES.items():
        if pc.all(pc.match_substring_regex(cells, _PLAIN + end)).as_py():
            try:
                ns = pc.cast(cells, pa.timestamp("ns", tz=zone)).cast(pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
            t = pd.Series(ns.to_numpy().view("M8[ns]"), index=s.index).dt.tz_localize("UTC")
            return t, style
    return None


_DATE_ONLY = r"[+-]?\d{4,}-\d{2}(?:-\d{2})?"
"""A cell that is a date alone (``2023-11-16``, ``2023-11``), which ISO 8601 reads as its
midnight."""
_MONTH_ONLY = r"[+-]?\d{4,}-\d{2}"
"""A cell that is a month alone (``2023-11``): no writer's way of putting a midnight."""


def _date_only(s: pd.Series, dates_too: bool = True) -> np.ndarray:
    """Which cells of a timestamp column hold a date without a time of day: text of one
    (:data:`_DATE_ONLY`) or a date object (a Parquet ``date32`` column). Without
    ``dates_too`` only a month alone counts: a day's date among timestamps is its midnight, as
    a writer that drops a midnight's ``00:00:00`` puts it; a column of nothing but dates has
    no time of day at all."""
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return np.zeros(len(s), dtype=bool)
    text = s.astype("string").str.strip()
    pattern = _DATE_ONLY if dates_too else _MONTH_ONLY
    return text.str.fullmatch(pattern).fillna(False).to_numpy(dtype=bool)


_BARE_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
"""A cell that is only a number (pandas reads ``2023`` as 2023-01-01 and ``2023.5`` as
2023-05-01 under ISO 8601)."""


_DATED = r"\s*[+-]?\d{4,}-\d"
"""The opening of a cell that starts with a date (``2024-05-10 ...``): a dash after the digits,
so no bare number and no relative word."""


def _not_absolute(text: pd.Series) -> np.ndarray:
    """Which cells of a timestamp column, as text, are no absolute date-time though pandas may
    read them: a relative word (:data:`RELATIVE_TIMES`) or a bare number, a year to pandas,
    which is refused whatever its size, as a Unix time or a fraction is. A cell that opens
    with a date (:data:`_DATED`), as every cell of a real trace does, is neither: only the
    others are stripped and folded, as copies (a copy of every cell doubled the peak memory of
    reading Azure's week-long 2024 traces, 17 and 27 million rows)."""
    bad = np.zeros(len(text), dtype=bool)
    rest = np.flatnonzero(~regex_cells(text, _DATED, "match"))
    if len(rest):
        words = text.iloc[rest].str.strip().str.casefold()
        found = words.isin(RELATIVE_TIMES) | words.str.fullmatch(_BARE_NUMBER)
        bad[rest] = found.fillna(False).to_numpy(dtype=bool)
    return bad


def _timestamp_fault(raw) -> str:
    """What is wrong with a timestamp cell that is not read, for a message (its text is not
    echoed, except a relative word, one of :data:`RELATIVE_TIMES`, or a number). A list or an
    object (a JSON array, a Parquet list or struct) is said to be one: an empty list raised
    ValueError from ``pd.isna``, and one of an item was described as its printed text."""
    if isinstance(raw, list | tuple | dict | np.ndarray):
        return (f"cannot parse timestamp (got {short(raw)}); write one date-time a row, like "
                "2023-11-16 18:15:46")
    if pd.isna(raw):
        return "missing timestamp; fill it in or remove the row"
    word = str(raw).strip().casefold()
    if word in RELATIVE_TIMES:
        return (f"timestamp {word!r} is relative (read as the time of the run, so every run "
                "would differ); write an absolute timestamp like 2023-11-16 18:15:46")
    fix = "write it as YYYY-MM-DD HH:MM:SS.fffffff"
    number = _as_number(raw, word)
    if number is not None:
        return (f"cannot parse timestamp (got the number {number}; timestamps here are "
                f"date-times, not years or Unix times); {fix}")
    date = _date_beyond_nanoseconds(str(raw))
    if date is not None:
        return (f"timestamp dated {date} is outside the dates a trace can hold ({_FIRST_NS} "
                f"to {_LAST_NS}, nanoseconds since 1970 in 64 bits); fix the date")
    return f"cannot parse timestamp ({short(str(raw))}); {fix}"


_FIRST_NS, _LAST_NS = pd.Timestamp.min.date(), pd.Timestamp.max.date()
"""The first and last day a date-time in nanoseconds since 1970 (int64) reaches."""


def _date_beyond_nanoseconds(text: str) -> datetime.date | None:
    """The date of a timestamp cell written as a date-time (ISO 8601) that lies outside the
    days nanoseconds since 1970 reach (year 1 or 9999: pandas reads it as no date-time, and it
    was refused as one that "cannot parse", told to take the form it had); None for any other
    cell."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    try:
        pd.Timestamp(when).as_unit("ns")
    except (OverflowError, ValueError):  # pandas' OutOfBoundsDatetime is a ValueError
        return when.date()
    return None


def _as_number(raw, word: str) -> str | None:
    """A timestamp cell that is a number (a numeric column's, or text of a bare number) as
    written, cut short; None for any other cell."""
    if isinstance(raw, int | float | np.integer | np.floating) and not isinstance(
            raw, bool | np.bool_):
        return show_number(raw)
    if re.fullmatch(_BARE_NUMBER, word):
        return word if len(word) <= 40 else word[:37] + "..."
    return None


#: A time of day followed by a time-zone designator at the end of an ISO 8601 value: ``Z`` or
#: an offset such as ``+02:00`` (a date alone, ``2024-05-10``, carries none).
_ZONE = r"[Tt\s]\d{2}(?::?\d{2})*(?:[.,]\d+)?\s*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)\s*$"


def _one_zone_style(src: Source, text: pd.Series, column: str, read: np.ndarray) -> None:
    """Refuse a column that mixes times with and without a UTC offset: the ones without would
    be read as UTC, silently hours from the others. Only a cell that was ``read`` as a
    date-time is one without: a zone the pattern does not know (an offset with seconds,
    -04:56:02; a bracketed name, [Europe/Paris]) was called none, though the cell, never read,
    is refused as one that cannot be parsed."""
    zoned = regex_cells(text, _ZONE, "search")
    if zoned.any() and (~zoned & read).any():
        i = first_true(~zoned & read)
        raise src.error("mixes timestamps with a UTC offset (or Z) and without one (this row "
                        "has none, so it would be read as UTC); write every timestamp the same "
                        "way", i, column)


def sorted_times(src: Source, t: np.ndarray, raw: pd.Series, column: str) -> None:
    """Raise at the first row whose time is earlier than the row before it (compared, not
    subtracted: a difference of two int64 or uint64 times can wrap around)."""
    i = first_true(t[1:] < t[:-1])
    if i is not None:
        now, before = raw.iloc[i + 1], raw.iloc[i]
        if isinstance(now, str) or isinstance(before, str):  # text is never echoed
            message = f"timestamp is earlier than the row before's; sort the file by {column}"
        elif _is_date_time(now) or _is_date_time(before):  # a Parquet date-time column
            message = (f"timestamp {pd.Timestamp(now)} is earlier than the row before "
                       f"({pd.Timestamp(before)}); sort the file by {column}")
        else:
            now, before = _as_written(src, [i + 1, i], column, [now, before])
            message = (f"timestamp {now} is earlier than the row before ({before}); sort the "
                       f"file by {column}")
        raise src.error(message, i + 1, column)


def _json_constant(src: Source, i: int, column: str) -> str | None:
    """Table row ``i``'s cell of a JSON-lines trace where the line writes ``NaN``,
    ``Infinity`` or ``-Infinity`` (no JSON, but Python's reader and Arrow's take them), as
    written; else None."""
    if src.header_lines != 0:
        return None
    text = written_cells(src.path, 0, [src.row(i)], column).get(src.row(i))
    return text if text in ("NaN", "Infinity", "-Infinity") else None


def _infinite_as_written(src: Source, i: int, column: str, raw, value: float):
    """Table row ``i``'s cell that reads as infinite, as a text trace writes it where that is
    a number in decimal notation (``1e400``, beyond a float's range, which a CSV reader makes
    infinite: it was "not finite (got inf)"), or a JSON line's ``Infinity`` (it was "got
    inf" too); else ``raw``, the cell as read."""
    constant = _json_constant(src, i, column)
    if constant is not None:
        return constant
    text = _as_written(src, [i], column, [value])[0]
    return text if _decimal_text(text) else raw


def _flag_as_written(src: Source, i: int, column: str, value) -> str:
    """Table row ``i``'s true/false cell as the file writes it: a CSV's word (``true``,
    ``TRUE``), else as JSON writes it (``true``; a JSON line's, a Parquet boolean's). It was
    Python's ``True``, which no trace file holds."""
    row = src.row(i)
    texts = {} if src.header_lines is None else written_cells(src.path, src.header_lines,
                                                              [row], column)
    text = texts.get(row, "").strip()
    return text if text.lower() in ("true", "false") else str(bool(value)).lower()


def _is_date_time(value) -> bool:
    """Whether a cell is a date-time (an Azure Parquet TIMESTAMP), not a number: shown as one
    (a number's float of it raised TypeError)."""
    return isinstance(value, datetime.datetime | datetime.date | np.datetime64)


def _as_written(src: Source, indexes: list[int], column: str, values: list) -> list[str]:
    """The numbers ``values`` of ``column`` in table rows ``indexes`` for a message, each as a
    CSV or JSON-lines file writes it (``1700000000.000000``, not ``1700000000``) where its
    text there is a number (:func:`tiersim.trace.cells.written_cells`) of at most 40
    characters that reads as the value (a text read again otherwise than the trace was is
    not shown); otherwise, and from Parquet, as :func:`_exact` shows it."""
    rows = [src.row(index) for index in indexes]
    texts = {} if src.header_lines is None else written_cells(src.path, src.header_lines,
                                                              rows, column)
    return [_written_number(texts.get(row, "").strip(), value)
            for row, value in zip(rows, values, strict=True)]


def _written_number(text: str, value) -> str:
    """``text`` where it is a number of at most 40 characters that reads as ``value``, else
    :func:`_exact` of ``value``."""
    written = len(text) <= 40 and re.fullmatch(_BARE_NUMBER, text)
    # a text read again otherwise than the trace was (a row skipped) is not that cell
    return text if written and float(text) == float(value) else _exact(value)


def _other_digits(raw, label: str) -> str | None:
    """Why a text cell that writes a number in digits other than 0-9 (full-width ``１０``,
    Arabic-Indic ``١٠``) is refused, with the number to write in 0-9; None for other text.
    It was "is not a number (got text of 2 characters); write a number", no fix, as any text
    is (Python's ``float`` reads such digits, pandas does not)."""
    import re

    from tiersim.numbers import ascii_digits

    if not isinstance(raw, str):
        return None
    written = ascii_digits(raw.strip())
    if written == raw.strip() or not re.fullmatch(_BARE_NUMBER, written, re.ASCII):
        return None
    return (f"{label} is written in digits other than 0-9 (full-width, or another script's), "
            f"which tiersim does not read (got {short(raw)}); write {written}")


def _exact(value) -> str:
    """A cell's number for a message, an integer cell in full (2**60 + 1 is not rounded)."""
    return show_number(value if isinstance(value, int | np.integer) else float(value))


def short(value, limit: int = 40) -> str:
    """A cell described for a message without its content (error messages never echo a file's
    text): a number as written, anything else by its kind and size."""
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        text = repr(value.item() if isinstance(value, np.generic) else value)
        return text if len(text) <= limit else text[:limit - 3] + "..."
    if isinstance(value, str):
        return f"text of {len(value):,} character{'s' if len(value) != 1 else ''}"
    if isinstance(value, list | tuple | np.ndarray):
        return f"a list of {len(value):,} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__} value"


def utf8_bytes(src: Source, s: pd.Series, column: str, label: str) -> None:
    """Refuse a cell of bytes (a Parquet binary column, which is read as the text it holds)
    that are not UTF-8: reading it as text raised UnicodeDecodeError, a traceback. The cell is
    named by its size and the byte at fault, not shown (a timestamp's text is never echoed).
    A column of text alone (``infer_dtype`` "string", 9 ms a million cells) holds no bytes: its
    cells are not looked at one by one (0.37 s a million, more than parsing them as times).
    A dictionary-encoded binary column (pandas' categories of bytes) is checked by its
    categories (it was passed over, then decoding it as text gave the traceback)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        found = _first_not_utf8_category(s)
    elif s.dtype != object or pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty"):
        return
    else:
        bad = s.map(_not_utf8_at)
        i = first_true(bad.notna().to_numpy(dtype=bool))
        found = None if i is None else (i, int(bad.iloc[i]))
    if found is not None:
        i, byte = found
        raise src.error(f"{label} holds bytes that are not UTF-8 text (byte {byte} of "
                        f"{len(s.iloc[i]):,} is not); write the column as UTF-8 text", i, column)


def _first_not_utf8_category(s: pd.Series) -> tuple[int, int] | None:
    """The first row of a categorical column whose category is bytes that are not UTF-8, and
    the 1-based byte at fault; None where every category is text or UTF-8 bytes."""
    at = pd.Series(s.cat.categories, dtype=object).map(_not_utf8_at)
    if not at.notna().any():
        return None
    codes = s.cat.codes.to_numpy()
    i = first_true(np.isin(codes, np.flatnonzero(at.notna().to_numpy())))
    return None if i is None else (i, int(at.iloc[codes[i]]))


def _not_utf8_at(cell) -> int | None:
    """The 1-based byte where a cell of bytes stops being UTF-8; None for UTF-8 bytes or a cell
    that is no bytes."""
    if not isinstance(cell, bytes | bytearray):
        return None
    try:
        bytes(cell).decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start + 1
    return None


def unique_ints(src: Source, values: np.ndarray, column: str) -> None:
    """Raise at the first row whose value repeats an earlier row's."""
    dup = pd.Series(values).duplicated().to_numpy()
    i = first_true(dup)
    if i is not None:
        raise src.error(f"duplicate {column} {show_number(values[i])}; ids must be unique", i,
                        column)


def shown_name(name: str) -> str:
    """A column name of the file for a message: cut to 40 characters, quoted and escaped as
    Python writes it (``repr``, which writes every control, format, surrogate and line or
    paragraph separator character as its escape, as :func:`tiersim.errors.escaped` does).
    NOTE: ``repr`` of the name :func:`~tiersim.errors.escaped` had escaped wrote each escape's
    backslash twice: ``'arrival_s\\\\u200b'`` of a column no file names so."""
    return repr(name if len(name) <= 40 else name[:37] + "...")
