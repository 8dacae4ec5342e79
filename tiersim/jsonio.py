"""Reading a JSON file a user gave (a model config, a profile): one error line per failure.

Missing or unreadable, not a regular file (a FIFO or ``/dev/zero`` would hang or fill memory),
larger than :data:`MAX_JSON_BYTES`, not UTF-8, not JSON, or nested too deeply for the parser:
each is a :class:`~tiersim.errors.TiersimError` subclass chosen by the caller, naming the file
and what it was expected to be. A UTF-8 byte-order mark (as Windows editors save) is read past,
but in a Hugging Face config file, which vLLM refuses with one (:data:`HF_BOM`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError, cut, escaped, yaml_written
from tiersim.numbers import WrittenNumber

MAX_JSON_BYTES = 64 << 20
"""Largest JSON file read (64 MiB: the biggest shipped profile is under 1 MiB, a model config a
few KB)."""


#: Why a Hugging Face config file (config.json, hf_quant_config.json) may not start with a
#: byte-order mark: transformers' ``PretrainedConfig._dict_from_json_file`` (and vLLM's
#: ``get_hf_file_to_dict``) open it as UTF-8 and ``json.loads`` the text, which refuses one.
HF_BOM = ("starts with a UTF-8 byte-order mark, which transformers' config reader, and so vLLM, "
          "refuses (PretrainedConfig._dict_from_json_file: json.loads 'Unexpected UTF-8 BOM'); "
          "save it as UTF-8 without one")


def read_json(path: Path, what: str, error: type[TiersimError] = TiersimError,
              missing: str | None = None, bom: str | None = None,
              floats_as_written: bool = False) -> Any:
    """The parsed content of ``path`` (``what``: "a model config", "a profile"); ``missing``
    replaces the message for a file that does not exist; ``bom``, where given, is why a
    leading byte-order mark is refused (:data:`HF_BOM`), else it is read past;
    ``floats_as_written``: as :func:`parse_json`."""
    if "\0" in str(path):  # open() would say only "embedded null byte"
        raise error(f"{path}: a file name cannot hold the character U+0000 (NUL); check the "
                    "path")
    try:
        _check_regular(path, what, error)
        with open(path, "rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        stripped = str(path).strip()
        if isinstance(exc, FileNotFoundError) and stripped not in ("", str(path)) and Path(
                stripped).is_file():  # the blank that made the difference, unseen before
            raise error(f"{path}: not found: {yaml_written(str(path))} has a space (or another "
                        f"blank) at its start or end, which the file {stripped} has not; remove "
                        "it") from None
        if missing is not None and isinstance(exc, FileNotFoundError):
            raise error(f"{path}: {missing}") from None
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    if len(data) > MAX_JSON_BYTES:
        raise error(f"{path}: larger than {MAX_JSON_BYTES >> 20} MiB; not {what}")
    if bom is not None and data.startswith(b"\xef\xbb\xbf"):
        raise error(f"{path}: {bom}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: byte {exc.start}: not UTF-8 text; {what} is a UTF-8 JSON "
                    "file") from None
    return parse_json(text, path, what, error, floats_as_written)


def parse_json(text: str, path: Path | str, what: str,
               error: type[TiersimError] = TiersimError, floats_as_written: bool = False) -> Any:
    """``text`` parsed as JSON, as :func:`read_json` reads a file's: a key twice in one object,
    invalid JSON, a number too long or nesting too deep for the parser is one ``error`` line
    naming ``path``. An empty text, and one that ends mid-document (a file cut short: a copy
    or save that did not finish), say so, not what the parser expected next (``Expecting ','
    delimiter`` read as a missing comma). ``floats_as_written``: every number with a point or
    an exponent keeps its text (:func:`_float_keeping_text`), so that a line refusing it quotes
    it as the file writes it (a model config's ``1e308``, not ``1e+308``)."""
    if not text.strip():
        raise error(f"{path}: empty; {what} is a UTF-8 JSON file")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_float=(
            _float_keeping_text if floats_as_written else _float_as_written))
    except DuplicateKey as exc:
        raise error(f"{path}: key {exc.args[0]!r} appears twice in one object; keep one (which "
                    "was meant cannot be known)") from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg == "Unterminated string starting at" or (
                _cut_in_a_value(text, exc.pos)):
            # nothing wrong but that the text stopped (a string left open runs to its end)
            size = len(text.encode("utf-8"))
            raise error(f"{path}: line {exc.lineno}: not valid JSON: it ends mid-document after "
                        f"{size:,} byte{'s' if size != 1 else ''}, as a file cut short does (a "
                        "copy or save that did not finish); give the whole file") from None
        if exc.msg == "Expecting value" and not text[:exc.pos].strip():  # nothing JSON at all
            raise error(f"{path}: line {exc.lineno}: not JSON (no JSON value opens the file: "
                        f"another kind of file?); {what} is a UTF-8 JSON file") from None
        raise error(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise error(f"{path}: {_too_long_number(text)}") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to be {what}") from None


_NUMBER_START = re.compile(r"-?(?:(?:0|[1-9]\d*)(?:\.|(?:\.\d+)?(?:[eE][+-]?\d*)?))?")
"""Text a longer text could make a JSON number of (``-``, ``2.``, ``4.11467e``, ``1E-``)."""
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
"""A whole JSON number."""


def _cut_in_a_value(text: str, pos: int) -> bool:
    """Whether the JSON parser's error at ``pos`` is the text stopping inside its last value:
    a number or a word (``true``, ``false``, ``null``) that a longer text would complete. The
    parser reads ``4.11467e`` as the number 4.11467 and then expects a comma ("Expecting ','
    delimiter": a 4 MB profile copied in half read as a comma missing), and ``tr`` as no
    value."""
    body = text.rstrip()
    last = re.search(r"[-+.0-9eE]+\Z|[a-z]+\Z", body)
    if last is None or pos < last.start():
        return False
    word = last.group()
    if word.isalpha():
        return any(full.startswith(word) and full != word for full in ("true", "false", "null"))
    return _NUMBER_START.fullmatch(word) is not None and _NUMBER.fullmatch(word) is None


def _float_as_written(text: str) -> float:
    """A JSON number with a point or an exponent as a float; one beyond a float's range
    (``float`` reads it as infinite) as a :class:`~tiersim.numbers.WrittenNumber` of its text
    (cut to 40 characters), which a message quoting its ``repr`` shows as the file writes it:
    "must be a positive integer (got inf)" named no text of the file."""
    value = float(text)
    if not math.isinf(value):
        return value
    return WrittenNumber(value, text if len(text) <= 40 else f"{text[:37]}...")


def _float_keeping_text(text: str) -> float:
    """A JSON number with a point or an exponent as a :class:`~tiersim.numbers.WrittenNumber`
    of its text (cut to 40 characters): a float that computes as one, and that a message
    quoting it (:func:`tiersim.errors.json_written`) shows as the file writes it."""
    return WrittenNumber(float(text), text if len(text) <= 40 else f"{text[:37]}...")


class _Digits(str):
    """The text of a JSON whole number of more digits than Python makes an int of."""


def int_or_digits(text: str) -> int | _Digits:
    """A JSON whole number as an int, or as its text (:class:`_Digits`) where Python makes no
    int of it (over 4,300 digits: ``int`` raises ValueError)."""
    try:
        return int(text)
    except ValueError:
        return _Digits(text)


def _too_long_number(text: str) -> str:
    """The message for a JSON whole number of more than 4,300 digits, naming its key as the
    file's readers name a key (``key 'overhead_s.value'``) and its digits' count (it was
    Python's words, "a number too long to read (Exceeds the limit (4300 digits) for integer
    string conversion: value has 5000 digits); not a model config", of a file that is one)."""
    try:
        found = _first_digits(json.loads(text, parse_int=int_or_digits), "")
    except (ValueError, RecursionError):  # the text is broken after it too: the number, met
        found = None  # first, is told (a JSONDecodeError here was raised from the handler)
    if found is None:  # not met again: only the count is known
        return ("holds a whole number of more than 4,300 digits, beyond any value; fix the "
                "number")
    key, digits = found
    where = f"key '{escaped(cut(key, 80))}': " if key else ""
    return (f"{where}a whole number of {len(digits.lstrip('-')):,} digits is beyond any value; "
            "fix the number")


def _first_digits(value: Any, key: str) -> tuple[str, _Digits] | None:
    """The key path (``a.b[0]``) and the text of the first :class:`_Digits` in ``value``."""
    if isinstance(value, _Digits):
        return key, value
    items = (value.items() if isinstance(value, dict) else
             enumerate(value) if isinstance(value, list) else ())
    for name, item in items:
        inner = f"{key}[{name}]" if isinstance(name, int) else (
            f"{key}.{name}" if key else str(name))
        found = _first_digits(item, inner)
        if found is not None:
            return found
    return None


def _check_regular(path: Path, what: str, error: type[TiersimError]) -> None:
    """Refuse a path that exists but is no regular file (a folder, FIFO, device)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise error(f"{path}: not a regular file; {what} is a JSON file")


class DuplicateKey(ValueError):
    """A JSON object names one key twice (the parser would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key[:60])
        out[key] = value
    return out


def sorted_json(value: Any, separators: tuple[str, str] | None = None,
                default: Callable[[Any], Any] = str) -> str:
    """``value`` as JSON with its map keys sorted (``default``: how what JSON cannot write is
    written, ``str`` unless given): the text of a value as one setting (a point id, a value
    listed twice). A map whose keys mix text and numbers (``{1: x, policy: y}``, which YAML
    reads from an axis value, a ``--choose`` value or the base) cannot be sorted as it is: its
    keys are then written as JSON writes them (``1`` -> ``"1"``) before sorting, so the text
    is the one JSON already wrote for any map it could sort."""
    try:
        return json.dumps(value, sort_keys=True, default=default, separators=separators)
    except TypeError:
        return json.dumps(_text_keys(value), sort_keys=True, default=default,
                          separators=separators)


def _text_keys(value: Any) -> Any:
    """``value`` with every map key as the text JSON writes it as (``True`` -> ``"true"``,
    ``None`` -> ``"null"``, ``1.5`` -> ``"1.5"``)."""
    if isinstance(value, dict):
        return {key if isinstance(key, str) else _key_text(key): _text_keys(item)
                for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_text_keys(item) for item in value]
    return value


def _key_text(key: Any) -> str:
    """A map key that is not text, as JSON writes it (anything JSON has no key for by
    ``str``)."""
    if isinstance(key, bool | int | float) or key is None:
        return json.dumps({key: 0})[2:-5]
    return str(key)
