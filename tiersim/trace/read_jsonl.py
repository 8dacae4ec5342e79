"""Reading a JSON-lines trace into a raw table (:func:`read_jsonl_file`), and finding the line at
fault when the JSON reader refuses one (:mod:`tiersim.trace.filecheck` looked at the file
first)."""

from __future__ import annotations

import contextlib
import json
import math
import re
import tempfile
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pa_json

from tiersim.arrowfile import arrow_file
from tiersim.errors import TraceError
from tiersim.jsonio import int_or_digits
from tiersim.trace.filecheck import (
    CHUNK_BYTES,
    JSON_BLANK,
    MAX_JSONL_LINE_BYTES,
    Source,
    error_line,
    is_trace_column,
    json_keys,
    json_lines,
    line_chunks,
)
from tiersim.trace.formats import columns_used

JSONL_BLOCK_BYTES = 1 << 24
"""Bytes the JSON-lines reader parses at a time: a line must fit in one block (16 MiB; Arrow's
default of 1 MiB refused a Mooncake line with a few hundred thousand hash ids)."""


TIME_KEYS = frozenset({"Timestamp", "timestamp", "arrival_s"})
"""The formats' arrival-time keys that hold numbers: typed as date-times by the JSON reader,
they are refused as such. Azure's ``TIMESTAMP``, date-time text, is read again as that text,
as any other key typed so is, and checked as a CSV's (it skipped those checks: dates alone
replayed a day's requests at once, and an offset beside times without one read the latter
as UTC)."""


def _read_jsonl(p: Path) -> pd.DataFrame:
    """Read a JSON-lines file; a ``prompt_hash`` read as floats (whole numbers of 2^63 or more,
    which Arrow reads as doubles: two hashes would round to one key) is read again exactly.
    A key whose every string Arrow reads as a date-time (``task_type`` "2024-01-01
    00:00:00" became "2024-01-01"; a ``prompt`` of dates was refused as no text; Azure's
    ``TIMESTAMP``), other than a time key that holds numbers (:data:`TIME_KEYS`), is read
    again as the text written. A file of whole numbers and lists of them is read a block of
    lines at a time (:func:`_jsonl_in_blocks`)."""
    blocks = _jsonl_in_blocks(p)
    if blocks is not None:
        return blocks
    try:
        table = _json_table(p)
        dated = [f.name for f in table.schema if f.name.strip() not in TIME_KEYS
                 and (pa.types.is_timestamp(f.type) or pa.types.is_date(f.type))]
        if dated:  # text the reader typed as date-times: read again as the text written
            table = _json_table(p, pa_json.ParseOptions(
                explicit_schema=pa.schema([(name, pa.string()) for name in dated]),
                unexpected_field_behavior="infer")).select(table.column_names)  # key order
        lines = _filled_lines(p)
        if table.num_rows != lines:  # an object over lines, or two on one: the first named
            raise _jsonl_parse_error(p, ValueError(
                f"{table.num_rows:,} objects on {lines:,} lines; write one object a line"))
        df = table.to_pandas()
        for name in _overflowed(table):
            df[name] = _exact_overflowed(p, name, df[name])
        if _float_column(table, "prompt_hash"):
            exact = _exact_hashes(p)
            if exact is not None:
                df["prompt_hash"] = exact
        for name in _float_id_lists(table):
            exact = _exact_id_lists(p, name)
            if exact is not None:
                df[name] = exact
        return df
    except pa.ArrowInvalid as e:
        raise _jsonl_parse_error(p, e) from None


def read_jsonl_file(p: Path, name: str, used=None) -> tuple[pd.DataFrame, Source]:
    """A JSON-lines file read whole (:func:`_read_jsonl`); where that read fails, read again
    without the keys nothing reads (``used``, as :func:`read_raw`'s; None: those of the format
    the keys name, :func:`tiersim.trace.formats.columns_used`), which are then only named
    (the Source's ``unread``): a key nothing reads holding values of changing kinds (a number
    on one line, an object on the next; a list of mixed items), or named twice on a line,
    refused the whole trace. A fault of a key that is read is refused as before, naming its
    file line (:func:`_kept_keys_copy` keeps the lines)."""
    try:
        return _read_jsonl(p), Source(name, 0, typed=True)
    except TraceError:
        copy = _kept_keys_copy(p, used)
        if copy is None:
            raise
    handle, order = copy
    with handle:
        try:
            df = _read_jsonl(Path(_FD_FOLDER, str(handle.fileno())))
        except TraceError as err:  # named by the copy's path: name the file's
            raise _renamed(err, name) from None
    unread = tuple(key for key in order if key not in df.columns)
    return df, Source(name, 0, unread=unread, order=order, typed=True)


_FD_FOLDER = "/proc/self/fd" if Path("/proc/self/fd").is_dir() else "/dev/fd"
"""Where an open file is reached by its descriptor (a copy with no name on disk)."""


def _renamed(err: TraceError, name: str) -> TraceError:
    """``err`` (about a copy of a file) as the same error about the file ``name``."""
    again = TraceError(name, str(err)[len(err.path) + 2:])
    again.row, again.column = err.row, err.column
    return again


def _kept_keys_copy(p: Path, used) -> tuple[typing.IO[bytes], tuple[str, ...]] | None:
    """An unnamed temporary copy of JSON-lines file ``p`` (opened, at its start; it leaves
    nothing on disk whatever ends the process) whose objects keep only the keys that are read
    (see :func:`read_jsonl_file`), one line for each of the file's, so that rows and file
    lines stay those of the file, and the file's keys in the order they first appear; None
    when every key is read. A line that is no JSON object, or names a key that is read twice,
    or holds a number too big for a double in one, is copied as it is (the read of the copy
    names its fault as the file's)."""
    names = dict.fromkeys(_key_name(key) for chunk in line_chunks(p) for key in json_keys(chunk))
    chosen = (used or columns_used)([name.strip() for name in names if name is not None])
    if chosen is None or all(name.strip() in chosen for name in names if name is not None):
        return None  # every key (nested ones too) is read: no copy, the read's error stands
    order: dict[str, None] = {}
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - returned open, closed by the caller
    try:
        with p.open("rb") as f:
            for n, line in enumerate(json_lines(f)):
                handle.write(_kept_line(line.removeprefix(b"\xef\xbb\xbf") if not n else line,
                                        chosen, order) + b"\n")
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    if all(key.strip() in chosen for key in order):
        handle.close()
        return None
    return handle, tuple(order)


def _key_name(key: bytes) -> str | None:
    """A key as :data:`_JSON_STRING` found it (its escapes as written), decoded; None for one
    that is no JSON text (the read names its line)."""
    try:
        return json.loads(b'"' + key + b'"')
    except ValueError:
        return None


def _kept_line(line: bytes, chosen: set[str], order: dict[str, None]) -> bytes:
    """One line of :func:`_kept_keys_copy`: the object with only the ``chosen`` keys (their
    values written again exactly: whole numbers as written, floats as read, text escaped), its
    keys added to ``order``; the line as it is where it is blank or cannot be so copied."""
    if not line.strip(JSON_BLANK.encode()):
        return b""
    try:
        record = json.loads(line, object_pairs_hook=_CountedObject, parse_float=_json_float)
    except ValueError:
        return line
    if not isinstance(record, dict):
        return line
    order.update(dict.fromkeys(record))
    kept = {key: value for key, value in record.items() if key.strip() in chosen}
    if any(key in kept for key in record.twice) or any(map(_holds_too_big, kept.values())):
        return line
    return json.dumps(kept).encode()


class _CountedObject(dict):
    """A JSON object (``json.loads``'s ``object_pairs_hook``) with the keys it names twice
    (``twice``; the last value is kept)."""

    def __init__(self, pairs: list[tuple[str, object]]):
        super().__init__(pairs)
        self.twice = {key for key, _ in pairs} if len(self) < len(pairs) else set()
        if self.twice:
            seen: set[str] = set()
            self.twice = {key for key, _ in pairs if key in seen or seen.add(key)}


def _filled_lines(p: Path) -> int:
    r"""The lines of a text file that are not blank (a line ends at ``\n``, ``\r\n`` or a
    lone ``\r``, as the JSON reader ends it; a blank line holds spaces and tabs at most).

    NOTE: Arrow's JSON reader takes objects over several lines, or several on one line, but
    only where a 16 MB block does not cut one (:data:`JSONL_BLOCK_BYTES`): such a file was
    read when small and refused when large, and its errors named rows as lines. One object a
    line is checked by this count, taken with numpy (0.2 s for a million lines): lines of
    spaces or tabs, rare, are looked at one by one."""
    return sum(_filled_in(chunk, n == 0) for n, chunk in enumerate(line_chunks(p)))


def _filled_in(chunk: bytes, first: bool) -> int:
    """The lines of ``chunk`` (whole lines of a file, the file's first when ``first``) that
    are not blank (:func:`_filled_lines`)."""
    chunk = chunk.removeprefix(b"\xef\xbb\xbf") if first else chunk  # a BOM is no text
    chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    b = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(b == ord("\n"))
    starts, ends = np.r_[0, ends + 1], np.r_[ends, len(b)]
    filled = np.flatnonzero(ends > starts)
    heads = b[starts[filled]]
    spaced = filled[(heads == ord(" ")) | (heads == ord("\t"))]
    return len(filled) - sum(not chunk[starts[i]:ends[i]].strip(b" \t") for i in spaced)


JSONL_READ_BYTES = CHUNK_BYTES
"""Bytes of whole lines :func:`_jsonl_in_blocks` parses at a time (16 MB: about 50,000
Mooncake lines)."""


def _jsonl_in_blocks(p: Path) -> pd.DataFrame | None:
    """A JSON-lines file whose every key holds whole numbers or lists of them (Mooncake's
    ``timestamp``, ``input_length``, ``output_length`` and ``hash_ids``), read
    :data:`JSONL_READ_BYTES` of whole lines at a time: the frame the whole read gives
    (:func:`_read_jsonl`), or None where a block does not read as such (a parse fault, another
    type or a missing value, keys not those of the first block, objects not one a line): the
    whole read then reads the file and names what is wrong, as it did.

    NOTE (memory): the whole read held the file's Arrow table beside the frame made of it, and
    the JSON reader's work on the whole file: a 1M-line Mooncake file (30 hash ids a line, 353
    MB) peaked at 1.48 GB. Here one block's table is made at a time and only its columns are
    kept (each row's hash ids an int64 array, a view of its block's ids, as the whole read's
    are views of the whole column's)."""
    schema, columns = None, {}
    for n, chunk in enumerate(line_chunks(p, JSONL_READ_BYTES)):
        filled = _filled_in(chunk, n == 0)
        if not filled:  # blank lines: no rows
            continue
        table = _json_block(chunk)
        if table is None or table.num_rows != filled or not (
                schema is None and _plain_numbers(table.schema) or table.schema == schema):
            return None
        schema = table.schema
        for name, values in table.to_pandas().items():  # converted as the whole read's
            columns.setdefault(name, []).append(values.to_numpy())
    if schema is None:
        return None
    return pd.DataFrame({name: np.concatenate(columns.pop(name)) for name in schema.names},
                        copy=False)


def _json_block(chunk: bytes) -> pa.Table | None:
    """The Arrow table of whole JSON lines ``chunk``, None where it does not parse, or holds
    a missing value (a null, a key left out) or a list with one (a list opening with a null is
    found by its text: Arrow's inference dropped the null, :func:`_json_table`)."""
    if NULL_FIRST.search(chunk):  # Arrow's inference may drop it: read whole, typed
        return None
    options = pa_json.ReadOptions(block_size=JSONL_BLOCK_BYTES)
    try:
        table = pa_json.read_json(pa.BufferReader(chunk), read_options=options)
    except pa.ArrowInvalid:
        return None
    items = [part.values for c in table.columns if pa.types.is_list(c.type) for part in c.chunks]
    return None if any(c.null_count for c in [*table.columns, *items]) else table


def _plain_numbers(schema: pa.Schema) -> bool:
    """Whether every column of ``schema`` holds whole numbers (int64) or lists of them, which
    a block reads as the whole file does (another type may be typed apart in two blocks,
    text read as dates, floats read again: :func:`_read_jsonl`)."""
    whole = pa.int64()
    return len(schema) > 0 and all(
        f.type == whole or (pa.types.is_list(f.type) and f.type.value_type == whole)
        for f in schema)


def _json_table(p: Path, parse: pa_json.ParseOptions | None = None) -> pa.Table:
    """The Arrow table of a JSON-lines file. Where a list opens with a null (:data:`NULL_FIRST`)
    its lists are read again with the types first inferred given: Arrow's inference dropped
    nulls met in a list before its items' type was known, and moved the later items up
    (``[null, null, 7, 8]`` then ``[9, null]`` read as ``[7, 8, 9, null]`` and ``[null,
    null]``: hash ids moved to other blocks and rows, without a word)."""
    table = _read_json(p, parse)
    given = parse.explicit_schema if parse is not None else None
    inferred = [f for f in table.schema if pa.types.is_list(f.type)
                and (given is None or given.get_field_index(f.name) < 0)]
    if not inferred or not any(NULL_FIRST.search(chunk) for chunk in line_chunks(p)):
        return table
    typed = pa.schema([*(given or []), *inferred])
    return _read_json(p, pa_json.ParseOptions(explicit_schema=typed,
                                              unexpected_field_behavior="infer")
                      ).select(table.column_names)


NULL_FIRST = re.compile(rb"\[[ \t\r\n]*null\b")
"""A JSON list whose first item is null (:func:`_json_table`)."""


def _read_json(p: Path, parse: pa_json.ParseOptions | None) -> pa.Table:
    """The Arrow table of a JSON-lines file, as Arrow reads it."""
    options = pa_json.ReadOptions(block_size=JSONL_BLOCK_BYTES)
    with pa.input_stream(arrow_file(p), compression=None) as stream:  # text, whatever the name
        return pa_json.read_json(stream, read_options=options, parse_options=parse)


def _float_column(table: pa.Table, name: str) -> bool:
    """Whether ``table`` has a column ``name`` of floating-point numbers."""
    return name in table.column_names and pa.types.is_floating(table.schema.field(name).type)


def _overflowed(table: pa.Table) -> list[str]:
    """Columns of floats holding an infinity: JSON writes none, so each is a whole number
    beyond a double's range, which Arrow reads as infinite (a float one it refuses). Only
    columns tiersim reads (others are carried as they are), not ``prompt_hash``: floats there
    are refused as inexact hashes, and an exact one is kept."""
    return [f.name for f in table.schema if f.name != "prompt_hash"
            and is_trace_column(f.name.strip()) and pa.types.is_floating(f.type)
            and np.isinf(table.column(f.name).to_numpy(zero_copy_only=False)).any()]


def _exact_overflowed(p: Path, name: str, values: pd.Series) -> pd.Series:
    """Column ``name`` with each infinite cell replaced by the whole number the file writes
    (read again by ``json.loads``), so that its error names the number given, not ``inf``.
    One of over 4,300 digits, of which Python makes no integer, is kept as its digits' text,
    which the error names as a CSV cell of them (it stayed infinite: "not finite (got inf)",
    of a file holding no infinity)."""
    exact = values.astype(object)
    infinite = set(np.flatnonzero(np.isinf(values.to_numpy(dtype=float))))
    with p.open(encoding="utf-8-sig", errors="replace") as f:
        lines = (line for line in f if line.strip(JSON_BLANK))
        for row, line in enumerate(lines):
            if row in infinite:
                with contextlib.suppress(ValueError):
                    exact.iloc[row] = json.loads(line, parse_int=int_or_digits).get(
                        name, exact.iloc[row])
    return exact


EXACT_HASH = pa.decimal128(38, 0)
"""How a JSON ``prompt_hash`` beyond int64 is read again: whole numbers of up to 38 digits."""


def _exact_hashes(p: Path) -> np.ndarray | None:
    """The file's ``prompt_hash`` read again as exact whole numbers (Python ints, None where
    missing), or None when a hash is no whole number of at most 38 digits (then the floats
    stay, and a float beyond 2^53 is refused: :func:`tiersim.trace.canonical`)."""
    schema = pa.schema([("prompt_hash", EXACT_HASH)])
    try:
        exact = _json_table(p, pa_json.ParseOptions(explicit_schema=schema,
                                                    unexpected_field_behavior="infer"))
    except pa.ArrowInvalid:
        return None
    values = exact.column("prompt_hash").to_pylist()
    return np.array([None if v is None else int(v) for v in values], dtype=object)


#: Keys holding lists of hash ids: Mooncake's ``hash_ids``, a canonical trace's ``prefix_hashes``.
ID_LISTS = ("hash_ids", "prefix_hashes")


def _float_id_lists(table: pa.Table) -> list[str]:
    """The :data:`ID_LISTS` columns Arrow read as lists of floats: one id of 2^63 or more (or
    with a decimal point) anywhere in the file types every row's ids as floats, and an id past
    2^53 then is no whole number: row 2's valid 2^60 + 7 was refused as inexact, not row 5's
    2^64 as out of range."""
    return [f.name for f in table.schema if f.name.strip() in ID_LISTS
            and pa.types.is_list(f.type) and pa.types.is_floating(f.type.value_type)]


def _exact_id_lists(p: Path, name: str) -> np.ndarray | None:
    """Column ``name`` read again as lists of exact whole numbers (Python ints, None where
    missing), or None where an id is no whole number of at most 38 digits (then the floats
    stay, and the first inexact one is refused: :func:`tiersim.trace.canonical.hash_arrays`)."""
    schema = pa.schema([(name, pa.list_(EXACT_HASH))])
    try:
        exact = _json_table(p, pa_json.ParseOptions(explicit_schema=schema,
                                                    unexpected_field_behavior="infer"))
    except pa.ArrowInvalid:
        return None
    cells = exact.column(name).to_pylist()
    out = np.empty(len(cells), dtype=object)
    out[:] = [None if ids is None else [None if i is None else int(i) for i in ids]
              for ids in cells]
    return out


def _jsonl_parse_error(p: Path, e: Exception) -> TraceError:
    """Find the line at fault (only runs when reading failed): the first that is too long,
    is not a JSON object, holds a number beyond a double's range, or gives a key another kind
    of value than the lines before did. It is named as the other trace errors are: its data
    row (blank lines are no rows) and its file line."""
    kinds: dict[tuple, str] = {}
    row = 0
    with p.open(encoding="utf-8-sig", errors="replace") as f:  # the BOM, read, is no error
        for line_no, line in enumerate(f, start=1):
            if not line.strip(JSON_BLANK):  # a form feed is no blank line to the reader
                continue
            row += 1
            where = f" (file line {line_no})"
            if len(line.rstrip("\r\n").encode()) > MAX_JSONL_LINE_BYTES:
                return TraceError(str(p), f"longer than {MAX_JSONL_LINE_BYTES:,} bytes, more "
                                  f"than a trace line holds; split or shorten it{where}", row=row)
            try:
                record = json.loads(line, object_pairs_hook=_unique_keys,
                                    parse_float=_json_float)
            except _DuplicateKey as twice:
                return TraceError(str(p), f"{twice.words()}; keep one (which copy holds the data "
                                  f"cannot be known){where}", row=row)
            except ValueError as bad:
                return TraceError(str(p), f"{_not_one_object(line, bad)}{where}", row=row)
            if not isinstance(record, dict):  # it said "not a JSON object (not an object)"
                kind = _json_kind(record) or "null"
                return TraceError(str(p), f"is {kind}, not a JSON object; each line must be one "
                                  f"JSON object{where}", row=row)
            huge = _too_big(record)
            if huge:
                return TraceError(str(p), f"{huge}; write a finite number{where}", row=row)
            half = _half_character(record)
            if half:
                return TraceError(str(p), f"{half}; remove it or write the whole character"
                                  f"{where}", row=row)
            clash = _kind_clash(record, kinds)
            if clash:
                return TraceError(str(p), f"{clash}; write every line's value of that key the "
                                  f"same way{where}", row=row)
    return TraceError(str(p), f"cannot read the JSON lines ({error_line(e)})")


def _not_one_object(line: str, bad: ValueError) -> str:
    """Why a JSON-lines line that ``json.loads`` refused (``bad``) is no object of its own: one
    cut at the line's end (an object written over several lines, as ``json.dumps(indent=2)``
    writes it; the parser's own words counted lines within the line: "line 2 column 1"), two
    or more on the line, or no JSON object at all."""
    text = line.strip(JSON_BLANK)
    if isinstance(bad, json.JSONDecodeError) and text.startswith(("{", "[")):
        if bad.msg == "Extra data":
            return ("holds more than one JSON value (one ends at character "
                    f"{len(line[:bad.pos].rstrip()):,}); write one object a line, e.g. jq -c . "
                    "FILE")
        if bad.pos >= len(line.rstrip(JSON_BLANK)):
            return ("holds the start of a JSON value that the line does not end (JSON written "
                    "over several lines, or a line cut short?); write one object a line, e.g. "
                    "jq -c . FILE")
    return f"not a JSON object ({error_line(bad)}); each line must be one JSON object"


class _DuplicateKey(ValueError):
    """A JSON object names a key twice (Arrow refuses it; ``json.loads`` keeps the last), at
    1-based positions ``first`` and ``second`` among its keys."""

    def __init__(self, key: str, first: int, second: int):
        super().__init__(key)
        self.key, self.first, self.second = key, first, second

    def words(self) -> str:
        """The fault for a message: the key when it is a trace column, else its positions."""
        if is_trace_column(self.key):
            return f"names the key {short_key(self.key)} twice"
        return f"keys {self.first} and {self.second} of an object share a name"


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``json.loads``'s ``object_pairs_hook``: the object, or _DuplicateKey for a repeated key."""
    seen: dict = {}
    positions: dict = {}
    for position, (key, value) in enumerate(pairs, start=1):
        if key in seen:
            raise _DuplicateKey(key, positions[key], position)
        seen[key], positions[key] = value, position
    return seen


class _TooBig(float):
    """A JSON number beyond a double's range, which ``json.loads`` reads as infinity (Arrow
    refuses it: "Number too big to be stored in double")."""


def _json_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: the number, marked when it is too big for a double."""
    value = float(text)
    return _TooBig(value) if math.isinf(value) else value


def _too_big(record: dict) -> str | None:
    """The fault of the first key of ``record`` whose value is, or holds, a number too big for
    a double."""
    for position, (key, value) in enumerate(record.items(), start=1):
        if _holds_too_big(value):
            return (f"{_key_words(key, position)} holds a number too large to store (beyond "
                    "+-1.8e308)")
    return None


def _half_character(record: dict) -> str | None:
    """The fault of the first key of ``record`` that is, or whose value holds, text with a
    surrogate escape without its pair (``"\\ud83d"``: a character cut in two, which
    ``json.loads`` keeps and Arrow refuses, naming a 0-based row)."""
    for position, (key, value) in enumerate(record.items(), start=1):
        if _holds_half(key) or _holds_half(value):
            return (f"{_key_words(key, position)} holds half of a character (a surrogate "
                    "escape, \\ud800 to \\udfff, without its pair: text cut in two)")
    return None


def _holds_half(value) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_holds_half(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_half(k) or _holds_half(v) for k, v in value.items())
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate left alone in decoded JSON text (a whole pair decodes to one
character)."""


def _holds_too_big(value) -> bool:
    if isinstance(value, list):
        return any(_holds_too_big(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_too_big(item) for item in value.values())
    return isinstance(value, _TooBig)


def _key_words(key, position: int) -> str:
    """A line's key for a message: its name when it is a trace column, else its position."""
    return f"key {short_key(key)}" if is_trace_column(key) else f"key {position} of this line"


def _kind_clash(record: dict, kinds: dict[tuple, str]) -> str | None:
    """The first key of ``record`` whose value, or a value inside it (a list's items, a nested
    object's values), is of another kind than earlier lines, or earlier items, gave it
    (``kinds`` is updated; null fits any kind). The key is named when it is a trace column,
    otherwise by its position on the line."""
    for position, (key, value) in enumerate(record.items(), start=1):
        for path, kind in _kinds(value, (str(key),)):
            seen = kinds.setdefault(path, kind)
            if seen != kind:
                name = _key_words(key, position)
                if len(path) == 1:
                    return f"{name} is {kind} here and {seen} on earlier lines"
                return (f"a value inside {name} is {kind} here and {seen} in earlier items or "
                        "lines")
    return None


def _kinds(value, path: tuple):
    """``(path, kind)`` of a JSON value and of every value inside it, as Arrow types them: a
    list's items share the path ``path + ("[]",)``, an object's values add their key."""
    kind = _json_kind(value)
    if kind is None:
        return
    yield path, kind
    if isinstance(value, list):
        for item in value:
            yield from _kinds(item, (*path, "[]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _kinds(item, (*path, str(key)))


def _json_kind(value) -> str | None:
    """What a JSON value is (``a list``, ``text``), as an error line names it; None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def short_key(key) -> str:
    """A JSON key for a message (cut short: keys are the file's text)."""
    text = str(key)
    return repr(text if len(text) <= 40 else text[:37] + "...")
