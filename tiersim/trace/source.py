"""Reading a trace file into a raw table, and pointing at its rows in error messages.

Rows in every error are 1-based *data* rows: row 1 is the first request, whatever the file
format. For text files (CSV, JSONL) the message also gives the line of the file, so that
``row 3`` of a CSV with a header reads ``(file line 4)``.

A file is looked at before it is parsed (docs/security.md): binary content that is not Parquet is
refused, and so is a header longer than :data:`MAX_HEADER_BYTES` or with more than
:data:`MAX_COLUMNS` columns, so a pathological file is rejected in milliseconds. Until a file is
recognised as a trace (one of its columns is a known trace column), errors name the file and
positions only, never its contents: a path like ``/proc/self/environ`` must not be echoed.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import functools
import io
import json
import math
import re
import stat
import sys
import tempfile
import typing
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from tiersim.arrowfile import arrow_file
from tiersim.errors import TraceError
from tiersim.trace.csv_records import Records, Unvouched

MAX_HEADER_BYTES = 65_536
"""Longest CSV header line read before parsing."""
MAX_JSONL_LINE_BYTES = 1 << 24
"""Longest JSON line, its line end not counted, wherever it is (a Mooncake line with its hash
ids is a few KB; a long prompt may take megabytes): the JSON reader's block
(:data:`JSONL_BLOCK_BYTES`) holds one so long wherever the blocks fall. The first line was
held to 8 MB, with its own message, and a later one read or not by where the blocks fell."""
MAX_COLUMNS = 1_000
"""Most columns a trace may have (real traces have fewer than 20)."""
MAX_JSON_DEPTH = 32
"""Deepest bracket nesting in a JSON line (Mooncake needs 2; the JSON reader crashes on
very deep nesting, so it is checked first)."""
_CHUNK = 1 << 24
_OTHER_BYTES = bytes(c for c in range(256) if c not in b"[]{}\n")
_STEP = np.zeros(256, dtype=np.int32)
_STEP[[ord("["), ord("{")]], _STEP[[ord("]"), ord("}")]] = 1, -1


@dataclass(frozen=True)
class Source:
    """Where a raw table came from: the path, how many lines precede its first data row,
    (for a table read in chunks) the file's data row of the table's first row, 0-based,
    (for a table of some of the rows read, e.g. BurstGPT's kept rows) each table row's data row
    among those read, 0-based; and the file's columns the read left out (``unread``, in file
    order: their values are never decoded, as nothing reads them; the converters name them in
    their notes as they name the columns read), and those read for the caller beyond the ones
    the converter reads (``kept``: ``keep`` of :func:`tiersim.trace.loader.read_trace`, a
    response cache's key; not noted as used by nothing); and, where some were left out, all the
    file's column names in file order (``order``: the columns read and those left out are named
    in it, as a CSV's, all read, are)."""

    path: str
    header_lines: int | None  # None for binary files (Parquet), which have no lines
    first_row: int = 0
    rows: np.ndarray | None = field(default=None, compare=False, repr=False)
    unread: tuple[str, ...] = field(default=(), compare=False, repr=False)
    kept: tuple[str, ...] = field(default=(), compare=False, repr=False)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def row(self, index: int) -> int:
        """The file's 1-based data row of 0-based table row ``index``."""
        if self.rows is not None:
            index = int(self.rows[index])
        return self.first_row + int(index) + 1

    def error(self, message: str, index: int | None = None,
              column: str | None = None) -> TraceError:
        """A TraceError at 0-based data row ``index`` of the table (reported as the file's
        1-based data row) and ``column``."""
        row = None if index is None else self.row(index)
        if row is not None and self.header_lines is not None:
            message += f" (file line {file_line(self.path, self.header_lines, row)})"
        return TraceError(self.path, message, row=row, column=column)


def file_line(path: str, header_lines: int, row: int) -> int:
    """The line of a text trace where its 1-based data row ``row`` starts, counting the blank
    lines and the quoted line breaks the parsers skip (scanned only when an error is raised;
    ``row + header_lines`` when the file cannot be read again)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:  # a BOM is no record
            if header_lines == 0:  # JSON lines: one record per non-blank line
                records = (n for n, line in enumerate(handle, start=1)
                           if line.strip(JSON_BLANK))
            else:
                records = _csv_record_lines(handle)
            for _ in range(header_lines + row - 1):
                next(records)
            return next(records)
    except (OSError, UnicodeError, StopIteration, csv.Error):
        return row + header_lines


def written_cells(path: str, header_lines: int, rows: list[int], column: str) -> dict[int, str]:
    """The text of 1-based data rows ``rows``' cells of ``column`` as a text trace writes them
    (``{row: text}``): a CSV's field, a JSON line's value (a number as its characters: ``1.7e9``,
    not the float it reads as). A row is left out where the file cannot be read again, or the
    row, the column or a value of text or a number is not there. One pass over the file, made
    only when an error is raised (as :func:`file_line`'s)."""
    try:
        if header_lines == 0:
            return _json_cells(path, rows, column)
        return _csv_cells(path, rows, column) if header_lines == 1 else {}
    except (OSError, UnicodeError, ValueError, pa.ArrowException):
        return {}


def _csv_cells(path: str, rows: list[int], column: str) -> dict[int, str]:
    """:func:`written_cells` of a CSV with its header on line 1: its one column read as text
    by Arrow's streaming reader, a block at a time, to the last row wanted (pandas took 4.3 s
    for 2M rows of text, Python's CSV reader 5 s; Arrow 0.6 s). Arrow may skip or split a row
    otherwise than pandas did (a line of spaces), so the caller checks each text against the
    number read."""
    header = _csv_header(Path(path))
    names = [name.strip() for name in header]
    if column not in names:
        return {}
    name = header[names.index(column)]
    convert = pa_csv.ConvertOptions(include_columns=[name], column_types={name: pa.string()},
                                    strings_can_be_null=False)
    wanted, found, start = sorted(set(rows)), {}, 0
    with pa.input_stream(arrow_file(path), compression=None) as stream:  # whatever the name
        for batch in pa_csv.open_csv(stream, convert_options=convert):
            cells = batch.column(0)
            found |= {row: cells[row - 1 - start].as_py() for row in wanted
                      if start < row <= start + len(cells)}
            start += len(cells)
            if start >= wanted[-1]:
                break
    return found


def _json_cells(path: str, rows: list[int], column: str) -> dict[int, str]:
    """:func:`written_cells` of a JSON-lines file: each wanted line's value of key ``column``
    (stripped), text as it is, a number as written (``json.loads`` keeps its characters)."""
    wanted, found = set(rows), {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        lines = (line for line in handle if line.strip(JSON_BLANK))
        for row, line in enumerate(lines, start=1):
            if row in wanted:
                record = json.loads(line, parse_float=str, parse_int=str)
                value = next((v for k, v in record.items() if str(k).strip() == column), None)
                found |= {row: value} if isinstance(value, str) else {}
            if row >= max(wanted):
                break
    return found


@contextlib.contextmanager
def _long_fields():
    """Python's CSV reader without its field size limit inside the block (a long prompt is one
    field, not an error)."""
    limit = csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(limit)


def _csv_record_lines(handle):
    """The first line of each CSV record the CSV parser reads, in order (the header's
    included): a blank line, or one of spaces and tabs only (unquoted), is skipped, as pandas
    skips it."""
    return (start for start, _ in _csv_records(handle))


def _csv_records(handle):
    """Each CSV record the CSV parser reads, in order (the header's included), with the file
    line it starts on: ``(line, fields)``; blank records are skipped as by
    :func:`_csv_record_lines`."""
    text: list[str] = []  # the lines of the record being read, as written
    reader = csv.reader(_kept(handle, text))
    end = 0
    for record in reader:
        start, end = end + 1, reader.line_num
        if record and not _blank(text):
            yield start, record
        text.clear()


def _kept(lines, text: list[str]):
    """``lines``, each also appended to ``text`` as it is read."""
    for line in lines:
        text.append(line)
        yield line


def _blank(lines: list[str]) -> bool:
    """Whether a record's lines hold only spaces and tabs (pandas' C parser reads no row from
    such a line; a quoted space, or any other character, is a row)."""
    return not "".join(lines).strip(" \t\r\n")


def sniff(path: Path) -> str:
    """The container of a file from its first bytes: "parquet", "jsonl" or "csv"; binary
    content that is not Parquet is refused (without showing it)."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise TraceError(str(path), f"cannot read the file ({err.strerror})") from None
    if head.startswith(b"PAR1"):
        return "parquet"
    if path.suffix.lower() in (".yaml", ".yml"):  # read as a CSV: "has 2 fields where ..."
        raise TraceError(str(path), "is a YAML file (a scenario?), not a trace (a trace is "
                         "Parquet, CSV or JSON lines); give the trace file (a scenario names it "
                         "under trace.path)")
    wide = _wide_text(head)
    if wide is not None:
        raise TraceError(str(path), f"{wide} text; save the trace as UTF-8 (CSV or JSON lines)")
    if b"\0" in head:
        packed = next((name for magic, name in _PACKED if head.startswith(magic)), None)
        if packed is not None:
            raise TraceError(str(path), f"not a trace: binary content compressed with {packed} "
                             "(a trace is Parquet, CSV or JSON lines); decompress it first")
        if _text_but_nul(head):
            _check_no_nul(path)  # raises, naming the line
        raise TraceError(str(path), "not a trace: binary content that is not Parquet "
                         "(a trace is Parquet, CSV or JSON lines; decompress it first)")
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()  # a UTF-8 BOM or not
    if text.startswith(b"{"):
        return "jsonl"
    if text.startswith(b"[") and text[1:].lstrip().startswith(b"{"):  # records of any layout
        raise TraceError(str(path), "is one JSON array; tiersim reads JSON lines (one object per "
                         "line, a .jsonl file): convert it, e.g. jq -c '.[]' FILE")
    return "csv"


_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
"""Byte-order marks of the wide encodings, longest first (UTF-32's starts as UTF-16's)."""


_PACKED = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bzip2"),
           (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"))
"""The opening bytes of compressed files, and the compressor named for each."""

_CONTROL = re.compile(rb"[\x01-\x08\x0b\x0e-\x1f\x7f]")
"""A control character no text trace writes (a tab, a line end or a form feed may be)."""


def _text_but_nul(head: bytes) -> bool:
    """Whether the opening bytes ``head`` of a file are UTF-8 text but for NUL bytes (a text
    trace padded with zeros, as a write cut short by a crash leaves it, or damaged), with a
    whole line before the first NUL, as a trace's header or first object is (text cut by NULs
    alone, as ``/proc/self/environ`` is, stays binary content)."""
    if not _line_ends(head[:head.find(b"\0")]):
        return False
    text = head.replace(b"\0", b"")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(text)  # a character cut at the end waits
    except UnicodeDecodeError:
        return False
    return bool(text.strip()) and _CONTROL.search(text) is None


def _check_no_nul(path: Path) -> None:
    r"""Refuse a text trace (CSV or JSON lines) holding a NUL byte, naming its file line: the
    parsers read one as an end of the line or a bad character (a file padded with zeros read
    as "has 1 field where the header has 3", or was binary content to decompress when the zeros
    came early). Read in blocks (a ``\r`` that ends one waits for the next byte, so a
    ``\r\n`` is counted once)."""
    line = 1
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            while block.endswith(b"\r") and (more := f.read(1)):
                block += more
            at = block.find(b"\0")
            if at >= 0:
                raise TraceError(str(path), f"file line {line + _line_ends(block[:at])} holds a "
                                 "NUL byte, which no text trace holds (zeros a write cut short "
                                 "by a crash left, or damage); remove the NUL bytes (tr -d "
                                 "'\\000' < FILE > FIXED) or restore the file")
            line += _line_ends(block)


def _wide_text(head: bytes) -> str | None:
    """The wide encoding ("UTF-16" or "UTF-32") of a file starting with ``head``: by its
    byte-order mark, or, without one, by text whose every second (fourth) byte is 0, as ASCII
    is in those encodings (it was refused as binary content to decompress)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        usable = head[:len(head) - len(head) % width]
        lanes = [usable[k::width] for k in range(width)]
        for text in (0, width - 1):  # little- or big-endian: where the ASCII byte sits
            if len(usable) >= 2 * width and b"\0" not in lanes[text] and all(
                    not lane.strip(b"\0") for k, lane in enumerate(lanes) if k != text):
                return name
    return None


JSON_BLANK = " \t\r\n"
"""The characters of a blank JSON line (JSON's white space): Python's ``str.strip`` also
strips a form feed, a no-break space or U+2028, which the JSON reader refuses, so such a line
was skipped when the line at fault was looked for, and none was named."""

_LINE_END = re.compile(rb"\r\n?|\n")
r"""A line end as the CSV and JSON readers take it: ``\n``, ``\r\n`` or a ``\r`` alone."""


def _first_line(path: Path, limit: int) -> bytes:
    r"""The file's first non-blank line (without its end; the readers skip blank lines before
    a header too), refusing one longer than ``limit`` bytes. A line ends at ``\n``, ``\r\n``
    or a lone ``\r``, as the readers end it (a file of ``\r`` line ends is one long line to
    ``readline``: its rows' commas were counted as the header's columns)."""
    with path.open("rb") as f:
        head = f.read(limit + 1).lstrip(b"\r\n")
        while not head:
            block = f.read(limit + 1)
            if not block:
                return b""
            head = block.lstrip(b"\r\n")
        head += f.read(limit + 1 - len(head))
    line = _LINE_END.split(head, maxsplit=1)[0]
    if len(line) > limit:
        raise TraceError(str(path), f"first line is longer than {limit:,} bytes; not "
                         "a trace header")
    return line


def _header_fields(path: Path) -> int:
    """Fields of a CSV file's header record as the CSV reader parses it from its first
    :data:`MAX_HEADER_BYTES` bytes: a quoted newline continues the header past its first line
    (a header of 20,000 columns after one hung the reader)."""
    with path.open("rb") as f:
        head = f.read(MAX_HEADER_BYTES).decode("utf-8", errors="replace")
    head = head.lstrip("\r\n")  # blank lines before the header, as the reader skips them
    first = next(csv.reader(io.StringIO(head, newline="")), [])
    return len(first)


def _check_columns(path: Path, count: int) -> None:
    if count > MAX_COLUMNS:
        raise TraceError(str(path), f"has {count:,} columns or more, above the {MAX_COLUMNS:,} "
                         "a trace may have; not a trace")


def _line_chunks(path: Path, size: int | None = None):
    r"""The file in chunks of about ``size`` bytes (None: :data:`_CHUNK`, 16 MB), each cut at
    a line end (the last may lack one): a ``\n`` or a lone ``\r`` (cut at ``\n`` only, a file
    of ``\r`` line ends was held whole), never between the two bytes of a ``\r\n`` (a ``\r``
    that ends a read waits for the next)."""
    tail = b""
    with path.open("rb") as f:
        while chunk := f.read(size or _CHUNK):
            chunk = tail + chunk
            cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r", 0, len(chunk) - 1)) + 1
            if cut:
                yield chunk[:cut]
            tail = chunk[cut:]
    if tail:
        yield tail


def _check_json_line_lengths(path: Path) -> None:
    r"""Refuse a JSON-lines file with a line longer than :data:`MAX_JSONL_LINE_BYTES` (its end,
    ``\n``, ``\r\n`` or a lone ``\r``, not counted; a BOM is), naming its row and file line.

    NOTE: read in blocks, each line's length carried across them (numpy finds the line ends),
    so a file of one endless line is not held whole."""
    line, length = 1, 0  # the line being read, and its bytes read so far
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            while block.endswith(b"\r") and (more := f.read(1)):  # a \r\n cut in two
                block += more
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            b = np.frombuffer(block, np.uint8)
            ends = np.flatnonzero(b == ord("\n"))
            lengths = np.diff(np.r_[-1, ends]) - 1
            if len(lengths):
                lengths[0] += length
            over = np.flatnonzero(lengths > MAX_JSONL_LINE_BYTES)
            tail = length + len(b) if not len(ends) else len(b) - int(ends[-1]) - 1
            if len(over) or tail > MAX_JSONL_LINE_BYTES:
                _line_too_long(path, line + (int(over[0]) if len(over) else len(ends)))
            line, length = line + len(ends), tail


def _line_too_long(path: Path, line: int) -> None:
    """Raise the error of JSON file line ``line``, too long, with its data row (the lines
    before it that are not blank)."""
    with path.open("rb") as f:
        row = 1 + sum(bool(text.decode("utf-8", "replace").strip(JSON_BLANK))
                      for _, text in zip(range(line - 1), _json_lines(f), strict=False))
    raise TraceError(str(path), f"longer than {MAX_JSONL_LINE_BYTES:,} bytes, more than a "
                     f"trace line holds; split or shorten it (file line {line})", row=row)


def _json_lines(f):
    r"""The lines of binary file ``f`` as the JSON reader ends them (``\n``, ``\r\n`` or a
    lone ``\r``)."""
    for text in f:  # lines of \n; a lone \r ends one too
        yield from _LINE_END.split(text.rstrip(b"\n").removesuffix(b"\r"))


def _check_utf8(path: Path, kind: str = "JSON-lines") -> None:
    """Refuse a ``kind`` file ("JSON-lines" or "CSV") that is not UTF-8 text, naming the
    first line that is not (the JSON reader fails on such a value or key with a traceback; the
    CSV reader's error names no line). Chunks are cut at line ends, which never split a UTF-8
    character."""
    line = 1
    for chunk in _line_chunks(path):
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as bad:
            at = line + _line_ends(chunk[:bad.start])
            raise TraceError(str(path), f"not a text {kind} file (cannot decode it as UTF-8 "
                             f"at file line {at}); save the trace as UTF-8") from None
        line += _line_ends(chunk)


def _line_ends(text: bytes) -> int:
    r"""The line ends in ``text``: ``\n``, ``\r\n`` or a lone ``\r``, as :data:`_LINE_END`
    finds them (counted in C)."""
    return text.count(b"\n") + text.count(b"\r") - text.count(b"\r\n")


def _check_json_depth(path: Path) -> None:
    """Refuse a JSON-lines file with a line nested deeper than MAX_JSON_DEPTH brackets.

    NOTE: each chunk's strings are emptied first (:data:`_JSON_STRING`: brackets inside text
    neither count nor cancel real ones; 100,000 ``}`` in a string hid 100,000 levels of ``[``
    and the reader crashed the process), then the chunk is cut down to its brackets and line
    ends (``bytes.translate``, C speed) and a running bracket count, reset at each line end, is
    taken with numpy.
    """
    line = 1
    for chunk in _line_chunks(path):
        # a lone \r ends a line too, as the reader ends it (the count named line 1 for all)
        chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        text = _JSON_STRING.sub(b'""', chunk)
        b = np.frombuffer(text.translate(None, _OTHER_BYTES), dtype=np.uint8)
        newlines = int(np.count_nonzero(b == ord("\n")))
        if len(b):
            step = _STEP[b]
            newline = b == ord("\n")
            total = np.cumsum(step)
            last = np.maximum.accumulate(np.where(newline, np.arange(len(b)), -1))
            within = np.where(last >= 0, total - total[np.maximum(last, 0)], total)
            deepest = int(np.argmax(within))
            if within[deepest] > MAX_JSON_DEPTH:
                at = line + int(np.count_nonzero(newline[:deepest]))
                raise TraceError(str(path), f"line {at} is nested more than {MAX_JSON_DEPTH} "
                                 "levels deep; not a trace")
        line += newlines


_JSON_STRING = re.compile(rb'"([^"\\\n]*+(?:\\.[^"\\\n]*+)*+)"(\s*:)?')
"""A JSON string (escapes kept whole), and the colon after it when it is an object key. Matched
from each line's start, strings are consumed in order, so a match never starts inside one; in
valid JSON only a key is followed by a colon, so the distinct keys found bound the columns."""


def _keys(chunk: bytes) -> set[bytes]:
    """The distinct object keys of whole JSON lines (:data:`_JSON_STRING`)."""
    return {text for text, colon in _JSON_STRING.findall(chunk) if colon}


def _check_json_keys(path: Path) -> None:
    """Refuse a JSON-lines file whose lines name more than :data:`MAX_COLUMNS` distinct keys in
    all: each line may add its own, and the reader would make a column of every one (20,000
    lines of one new key each took 6.6 GB). The first line alone is checked before.

    NOTE: a regular-expression scan of 16 MB chunks cut at line ends (about 0.5 s for 200 MB of
    Mooncake lines, a sixth of the parse), stopping at the first key past the limit.
    """
    keys: set[bytes] = set()
    for chunk in _line_chunks(path):
        keys |= _keys(chunk)
        _check_columns(path, len(keys))


def check_shape(path: Path, kind: str) -> None:
    """Refuse a file whose header is too long or too wide, before a parser sees it."""
    if kind == "parquet":
        try:
            with arrow_file(path) as handle:
                count = len(pq.read_schema(handle).names)
        except Exception as e:  # noqa: BLE001 - whatever a corrupt footer raises
            raise TraceError(str(path), f"not a readable Parquet file ({_error_line(e)})") \
                from None
        _check_columns(path, count)
    elif kind == "jsonl":
        _check_no_nul(path)
        _check_json_line_lengths(path)
        _check_columns(path, _first_line(path, MAX_JSONL_LINE_BYTES).count(b'":'))
        _check_utf8(path)
        _check_json_depth(path)
        _check_json_keys(path)
    else:
        _check_no_nul(path)
        _check_columns(path, _first_line(path, MAX_HEADER_BYTES).count(b",") + 1)
        _check_columns(path, _header_fields(path))


def open_checked(path: str | Path) -> str:
    """The container of an existing trace file ("parquet", "jsonl" or "csv"), after the checks
    made before any parser sees it (:func:`sniff`, :func:`check_shape`)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as err:
        raise _not_found(p, str(path), err) from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(str(path), "is a folder; give the trace file in it")
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(str(path), "not a regular file (a device or pipe); give a trace file")
    return _checked_kind(str(p), st.st_size, st.st_mtime_ns, st.st_ino)


def _not_found(p: Path, name: str, err: OSError) -> TraceError:
    """The error for the path ``p`` (given as ``name``) whose file cannot be looked at (``err``,
    from ``stat``): a link that leads nowhere (its target missing, or links in a loop), a path
    to nothing, or one the system refuses (a folder on the way the user may not enter: it
    raised PermissionError from ``is_dir``), in one line each."""
    if err.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
        try:
            link = p.is_symlink()
        except OSError:
            link = False
        if link or err.errno == errno.ELOOP:
            return TraceError(name, "a link that leads to no file (its target is missing, or "
                              "the links loop); point it at the trace file, or give the file "
                              "itself")
        return TraceError(name, "file not found; check the path")
    return TraceError(name, f"cannot read the file ({err.strerror or type(err).__name__})")


@functools.lru_cache(maxsize=16)
def _checked_kind(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """:func:`sniff` and :func:`check_shape` of one version of a file (keyed by its size, time
    and inode), remembered: a run reads a trace's kind up to three times, and the checks scan
    the whole file (5 s a call for a million-line JSONL). A failure is not remembered."""
    p = Path(path)
    kind = sniff(p)
    check_shape(p, kind)
    return kind


def read_raw(path: str | Path, used=None, left_out=None) -> tuple[pd.DataFrame, Source]:
    """Read a CSV, JSONL or Parquet trace as it is, with column names stripped of spaces.

    ``used(columns) -> set | None`` picks, from a CSV's or Parquet file's stripped column
    names, the columns whose values are used (None: all); a CSV's others are read as categories
    (:func:`_read_csv`), a Parquet file's are not decoded (:func:`parquet_selection`; the
    Source's ``unread``). ``left_out(columns) -> set`` picks, of a CSV's others, those it does
    not parse at all, as a Parquet file's (:func:`_read_csv_columns`)."""
    p = Path(path)
    kind = open_checked(p)
    if kind == "parquet":
        columns, unread = parquet_selection(p, used)
        df, src = _read_parquet(p, columns, unread), parquet_source(p, unread)
    elif kind == "jsonl":
        df, src = _read_jsonl_used(p, str(path), used)
    else:
        df, src = _read_csv_columns(path, used, left_out)
    csv_file = kind not in ("parquet", "jsonl")
    names = _csv_header(p) if csv_file else list(df.columns)
    df.columns = [str(c).strip() for c in df.columns]
    _no_duplicate_columns([str(c).strip() for c in names], src,
                          " (the header, file line 1)" if csv_file else "", csv_file)
    if csv_file:
        _no_repeated_header(df, _read_names(names, src), src)
    return df, src


def _read_names(header: list[str], src: Source) -> list[str]:
    """The stripped header cells of the columns a CSV read into its table (``src.order``, the
    file's column names, where some were left out: ``src.unread``)."""
    names = [str(c).strip() for c in header]
    if not src.order or len(src.order) != len(names):
        return names
    return [name for name, column in zip(names, src.order, strict=True)
            if column not in src.unread]


def _no_repeated_header(df: pd.DataFrame, names: list[str], src: Source) -> None:
    """Refuse a CSV data row that repeats the header (``cat`` of two CSV files: BurstGPT ships
    its log in two): it was refused as a bad cell of its first column, "text of 9 characters".

    A column of numbers holds no header text, so a table with one under a name is passed at
    once; else the rows whose first cell is the first name are found, then compared in the
    other columns (a blank header cell, a trailing comma's, matches an empty cell; a
    byte-order mark before a cell, as a joined file's second header holds, is no part of it)."""
    numeric = [pd.api.types.is_numeric_dtype(df[c].dtype) for c in df.columns]
    if len(names) != len(df.columns) or not len(df) or any(
            kind and name for kind, name in zip(numeric, names, strict=True)):
        return
    rows = np.arange(len(df))
    for column, name in zip(df.columns, names, strict=True):
        cells = df[column].iloc[rows]
        if not pd.api.types.is_numeric_dtype(cells.dtype):
            # a byte-order mark is no part of a name (a joined file's second header holds one)
            cells = (cells.astype("string").str.strip().str.removeprefix("\ufeff").str.strip()
                     .replace("", pd.NA))
        rows = rows[(cells.isna() if not name else cells.eq(name).fillna(False))
                    .to_numpy(dtype=bool)]
        if not len(rows):
            return
    raise src.error("repeats the header (CSV files joined with their headers?); remove the "
                    "line", int(rows[0]))


def _csv_header(p: Path) -> list[str]:
    """The header cells of a CSV as written (pandas renames a repeated one ``x.1``)."""
    with open(p, newline="", encoding="utf-8-sig") as handle:  # a BOM is no part of a name
        rows = csv.reader(handle)
        return next((row for row in rows if row), [])  # blank lines: the reader skips them


def _no_duplicate_columns(names: list[str], src: Source, where: str = "",
                          csv_header: bool = False) -> None:
    """Refuse a column named twice: which copy is meant cannot be known. The name is shown
    only when it is a trace column (:func:`is_trace_column`), otherwise the two columns'
    positions. In a CSV header (``csv_header``) blank cells, as spreadsheets export trailing
    commas, are no names (the reader names each apart); elsewhere (Parquet, JSON keys ``""``
    and ``" "``) two blank names are one name, read as one column of two (a crash)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            if not name:
                raise src.error(f"columns {seen[name]} and {position} share a name (a blank "
                                "one); keep one, or name them apart", None, None)
            twice = (f"names the column {name!r} twice" if is_trace_column(name)
                     else f"columns {seen[name]} and {position} share a name")
            raise src.error(f"{twice}{where}; keep one (which copy holds the data cannot be "
                            "known)", None, None)
        if name or not csv_header:
            seen[name] = position


def is_trace_column(name: str) -> bool:
    """Whether tiersim reads a column by this name (see
    :func:`tiersim.trace.formats.is_trace_column`): before a file is recognised as a trace, only
    such a name may be shown (docs/security.md)."""
    from tiersim.trace import formats  # NOTE: here, as formats imports this module

    return formats.is_trace_column(str(name))


def _read_parquet(p: Path, columns: list[str] | None = None,
                  unread: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read a Parquet file (its schema's ``columns`` alone, ``unread`` the names left out:
    :func:`parquet_selection`; None: all); any failure while decoding it is the file's, so it
    is one line, except running out of memory (:func:`tiersim.trace.loader.read_trace` says
    that).

    NOTE: the file is decoded once, its text checked (:func:`_utf8_text`) in the table that
    becomes the frame, converted as :func:`parquet_chunks` converts a chunk. The text columns
    were read twice, once to check them and once by ``pd.read_parquet``: 1M rows of a
    300-byte text column took 9.6 s and 1.84 GB at the peak."""
    try:
        with arrow_file(p) as handle:
            schema = pq.read_schema(handle)
            table = pq.read_table(handle, columns=columns,
                                  read_dictionary=text_as_categories(schema))
        _utf8_text(p, table, positions=_positions(schema, columns))
        df = _parquet_frame(p, table)
        del table
        return _schema_names_kept(named_index_as_columns(df, p), p, unread)
    except (TraceError, MemoryError):  # pyarrow's ArrowMemoryError too: no damage of the file
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt file raises KeyError, TypeError, ...
        raise TraceError(str(p), f"not a readable Parquet file ({_error_line(e)})") from None


def _schema_names_kept(df: pd.DataFrame, p: Path, unread: tuple[str, ...] = ()) -> pd.DataFrame:
    """``df`` when its columns are the names its Parquet schema gives (those recognised as a
    trace's) but those left out of the read (``unread``); a file whose pandas metadata renames
    a column is refused, naming the column by position (the name it was recognised by is not
    the one read)."""
    names = parquet_columns(p)
    read = {str(c).strip() for c in df.columns}
    lost = [i for i, name in enumerate(names, 1) if name not in read and name not in unread]
    if lost:
        raise TraceError(str(p), f"its pandas metadata names column {lost[0]} otherwise than "
                         "its schema does; write the file again without that metadata "
                         "(pyarrow: table.replace_schema_metadata())")
    return df


def named_index_as_columns(df: pd.DataFrame, path: str | Path = "") -> pd.DataFrame:
    """A frame read from Parquet with the index levels pandas stored under a name turned back
    into columns (``df.set_index("arrival_s").to_parquet(...)`` keeps ``arrival_s`` as the
    index, which reading would hide); an unnamed index stays the index. An index named as a
    column of ``path`` is refused: which of the two holds the data cannot be known."""
    names = [name for name in df.index.names if name is not None]
    clash = [name for name in names if name in df.columns]
    if clash:
        raise _index_clash(clash[0], list(df.columns).index(clash[0]) + 1, path)
    return df.reset_index(level=names) if names else df


def _index_clash(name, position: int, path: str | Path) -> TraceError:
    """The error for a pandas index named as the file's column at 1-based ``position``."""
    both = (f"its pandas index and a column are both named {str(name)!r}"
            if is_trace_column(name) else f"its pandas index and column {position} share a name")
    return TraceError(str(path), f"{both}; keep one (drop the index with "
                      "reset_index(drop=True), or rename it) and write the file again")


@dataclass(frozen=True)
class _Cut:
    """A CSV's columns parsed (``kept``, 0-based positions) and left out (``unread``), and all
    its column names (``names``, stripped, as pandas names them), in file order."""

    kept: list[int]
    unread: tuple[str, ...]
    names: tuple[str, ...]

    def source(self, path: str, first_row: int = 0) -> Source:
        """The :class:`Source` of a table read without the columns left out."""
        return Source(path, 1, first_row, unread=self.unread, order=self.names)


def _cut(p: Path, left_out) -> _Cut | None:
    """The CSV's columns that ``left_out`` (see :func:`read_raw`) leaves out of the parse;
    None when it leaves none."""
    if left_out is None:
        return None
    names = csv_columns(p)
    out = left_out(names)
    if not out:
        return None
    return _Cut([i for i, name in enumerate(names) if name not in out],
                tuple(name for name in names if name in out), tuple(names))


def _read_csv_columns(path: str | Path, used=None, left_out=None) -> tuple[pd.DataFrame, Source]:
    """A CSV's table (:func:`_read_csv`) and its :class:`Source`, without the columns
    ``left_out`` leaves out where pyarrow vouches for every record
    (:mod:`tiersim.trace.csv_records`); else every column parsed, which names what is wrong.

    NOTE: a column nothing reads (an Azure CSV's 200-byte text column), parsed as categories,
    took three times the file's size at the peak: 300,000 rows, 527 MiB, 158 without it; left
    out, 178 (``tiersim trace inspect``)."""
    p = Path(path)
    cut = _cut(p, left_out)
    if cut is not None:
        try:
            return _read_kept(p, used, cut), cut.source(str(path))
        except Unvouched:
            pass
    return _read_csv(p, used), Source(str(path), 1)


def _read_kept(p: Path, used, cut: _Cut) -> pd.DataFrame:
    """The CSV's ``cut.kept`` columns, once pyarrow vouched for every record
    (:class:`Unvouched` otherwise, or where pandas does not parse them so)."""
    rows = Records(p, len(cut.names)).count()
    with _unvouched_by_pandas():
        df = _parse_csv(p, usecols=cut.kept, **_csv_options(p, used))
    if len(df) != rows or not isinstance(df.index, pd.RangeIndex):
        raise Unvouched
    _no_repeated_header_read(df, _csv_header(p), cut.source(str(p)))
    return df


def _no_repeated_header_read(df: pd.DataFrame, header: list[str], src: Source) -> None:
    """:func:`_no_repeated_header` of the columns read into ``df`` (``header``: the file's
    header cells). Where some were left out (``src.unread``), a row that repeats the header in
    those read is :class:`Unvouched`: its cells left out were not compared, so every column is
    parsed again, which says whether it repeats the header or holds a bad cell."""
    try:
        _no_repeated_header(df, _read_names(header, src), src)
    except TraceError:
        if src.unread:
            raise Unvouched from None
        raise


@contextlib.contextmanager
def _unvouched_by_pandas():
    """pandas' failure to parse the columns kept of a file pyarrow vouched for, as
    :class:`Unvouched`: every column is parsed again, which names it as it always did."""
    try:
        yield
    except (ValueError, pd.errors.DtypeWarning):  # pandas' ParserError, a decoding error ...
        raise Unvouched from None


def _read_csv(p: Path, used=None, nrows: int | None = None) -> pd.DataFrame:
    """Read a CSV (its first ``nrows`` data rows; 0: the header alone), the columns that
    ``used`` (see :func:`read_raw`) leaves out as categories.

    NOTE: an unused column (BurstGPT's ``Log Type``) read as text took 30 bytes a row or more
    at the parse's peak; as a category it takes a code a row. It is still parsed, not skipped
    with ``usecols``: with ``usecols`` pandas accepts a row with more fields than the header
    (its values then shift) instead of refusing it; a column is left out only where pyarrow
    vouched for every record first (:func:`_read_csv_columns`)."""
    _no_separator_line(p)
    with _csv_errors(p):
        df = _parse_csv(p, nrows=nrows, **_csv_options(p, used))
    _no_extra_fields(p, df)
    _no_short_rows(p, df, len(df))
    return df


def _csv_options(p: Path, used=None) -> dict:
    """``read_csv``'s options for a trace CSV: its text columns read as text
    (:func:`_text_cells`), the columns ``used`` leaves out as categories."""
    unused = _unused_as_categories(p, used) if used is not None else None
    options = _text_cells(p)
    dtype = {**options.pop("dtype", {}), **(unused or {})} or None
    # the bytes were checked: text, whatever the name
    return {"compression": None, "dtype": dtype, **options}


@contextlib.contextmanager
def _csv_errors(p: Path):
    """The CSV parser's failures inside the block as one-line TraceErrors naming the file."""
    try:
        yield
    except pd.errors.EmptyDataError:
        raise TraceError(str(p), "file is empty; a trace needs a header and rows") from None
    except pd.errors.ParserError as e:
        raise _csv_parse_error(p, e) from None
    except UnicodeDecodeError:
        _check_utf8(p, "CSV")  # raises, naming the first line that is not UTF-8
        raise TraceError(str(p), "not a text CSV file (cannot decode it as UTF-8)") from None


def _no_extra_fields(p: Path, df: pd.DataFrame, first: bool = True) -> None:
    """Refuse a CSV read with more fields than its header in its first data rows (``df``:
    the rows read, or a later chunk of them when not ``first``)."""
    # pandas made the extra leading cells an index: a RangeIndex too, when they are 0, 1, 2 ...
    if not isinstance(df.index, pd.RangeIndex) or (first and len(df) and _first_row_longer(p)):
        raise _extra_fields(p)


CSV_CHUNK_ROWS = 1 << 18
"""Rows of a CSV parsed at a time by :func:`csv_chunks` (262,144: an Azure chunk's cells and
arrays stay near 30 MB)."""


def csv_chunks(path: str | Path, rows: int = CSV_CHUNK_ROWS, used=None, left_out=None):
    """A CSV trace as ``(first_row, raw table)`` pairs of at most ``rows`` data rows each, in
    file order (``first_row``: the file's 0-based data row of the chunk's first), parsed and
    checked as :func:`read_raw` reads the whole file (``used``, ``left_out``: as there, the
    columns read as values, those not parsed at all, the others read as categories; a chunk's
    :func:`chunk_source` names those left out), so a reader that stops early holds one chunk at
    a time and parses no further. A chunk is typed on its own rows (each column one way in a
    chunk: :func:`_frames`), as the checks take any type. From a chunk pyarrow does not
    vouch for on (:mod:`tiersim.trace.csv_records`), every column is parsed, which names what
    is wrong; the chunks before it are not given twice."""
    p = Path(path)
    open_checked(p)
    _no_separator_line(p)
    given = 0
    cut = _cut(p, left_out)
    if cut is not None:
        try:
            for chunk in _chunks(p, rows, used, cut):
                yield chunk
                given += 1
            return
        except Unvouched:
            pass
    for index, chunk in enumerate(_chunks(p, rows, used)):
        if index >= given:
            yield chunk


def _chunks(p: Path, rows: int, used=None, cut: _Cut | None = None):
    """:func:`csv_chunks` of every column, or of ``cut.kept`` alone where pyarrow vouches for
    each chunk's records before it is given (:class:`Unvouched` at the first it does not)."""
    start = 0
    records = None if cut is None else Records(p, len(cut.names))
    with _csv_errors(p):  # the header's reader decodes the lines after it too
        names = [str(c).strip() for c in _csv_header(p)]
        _no_duplicate_columns(names, Source(str(p), 1), " (the header, file line 1)", True)
        src = Source(str(p), 1) if cut is None else cut.source(str(p))
        with _parse_errors(cut), pd.read_csv(
                p, chunksize=rows, low_memory=cut is not None, usecols=cut and cut.kept,
                **_csv_options(p, used)) as reader:
            for df in _frames(reader, rows, records):
                if records is None:
                    _no_extra_fields(p, df, start == 0)
                df = df.reset_index(drop=True)
                df.columns = [str(c).strip() for c in df.columns]
                _no_repeated_header_read(df, names, replace(src, first_row=start))
                if records is None:
                    _no_short_rows(p, df, start + len(df))
                yield start, df
                start += len(df)
        if records is not None:
            records.vouch_all(start)


def _frames(reader, rows: int, records: Records | None):
    """The chunks of ``rows`` rows of pandas' chunked ``reader``; of some columns
    (``records``), each once pyarrow vouched for its records (:class:`Unvouched` otherwise, or
    where the chunk's parts typed a column apart: pandas' DtypeWarning).

    NOTE: a chunk of some columns is parsed a part at a time (``low_memory``): parsed at once,
    pandas held every field's text of its 262,144 rows, the columns left out too (a 200-byte
    text column: 50 MB); a column typed apart in two parts (numbers, then text) is parsed
    again, every column, as a chunk of every column is typed, on its rows as one. Its records
    are checked before pandas parses them: pandas fails on a first row longer than the
    columns kept (a ValueError)."""
    start = 0
    while True:
        if records is not None:
            records.vouch(start + rows)
        with warnings.catch_warnings():
            if records is not None:
                warnings.simplefilter("error", pd.errors.DtypeWarning)
            df = next(reader, None)
        if df is None:
            return
        if records is not None and (records.checked < start + len(df)
                                    or not isinstance(df.index, pd.RangeIndex)):
            raise Unvouched
        start += len(df)
        yield df


def _parse_errors(cut: _Cut | None):
    """Around a parse of every column, nothing (its failures are named by
    :func:`_csv_errors`); of some columns (``cut``), :func:`_unvouched_by_pandas`."""
    return contextlib.nullcontext() if cut is None else _unvouched_by_pandas()


def chunk_source(path: str | Path, first_row: int, raw: pd.DataFrame,
                 names: list[str]) -> Source:
    """The :class:`Source` of a chunk that :func:`csv_chunks` gave (its first at 0-based data
    row ``first_row``) of the CSV ``path`` with columns ``names`` (:func:`csv_columns`): those
    not in its table were left out of the parse (``unread``), as :func:`read_raw` says."""
    read = set(raw.columns)
    unread = tuple(name for name in names if name not in read)
    return Source(str(path), 1, first_row, unread=unread, order=tuple(names) if unread else ())


_SEPARATOR_LINE = re.compile(r"sep=[,;\t|]", re.IGNORECASE)
"""A spreadsheet's first line naming the CSV's separator (Excel writes and reads ``sep=,``)."""


def _no_separator_line(p: Path) -> None:
    """Refuse a CSV whose first line is a spreadsheet's separator note (``sep=,``): the header
    after it was read as a data row, and refused as one with more fields than a header of
    ``sep=`` ('row 1: has 3 fields where the header has 2'), the real header unnamed. Only
    such a line is echoed (one separator character after ``sep=``)."""
    try:
        with open(p, newline="", encoding="utf-8-sig") as handle:
            first = handle.readline(64).rstrip("\r\n")
    except (OSError, UnicodeError):
        return  # the read itself names what is wrong
    if _SEPARATOR_LINE.fullmatch(first):
        raise TraceError(str(p), f"its first line ({first!r}) is a spreadsheet's note of the "
                         "separator, not the header; remove the line, so that the header comes "
                         "first (file line 1)")


def _parse_csv(p: Path, **options) -> pd.DataFrame:
    """``pd.read_csv(p, **options)``, each column typed one way for the whole file.

    NOTE: pandas types a large file's columns a chunk of rows at a time, and a column typed
    apart in two chunks (numbers, then text) mixed both: hash 5 in an early chunk and "5" in
    a late one were two prompt keys, and pandas' DtypeWarning was printed with its source
    line. Such a file, rare, is parsed again in one piece (more memory while parsing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.DtypeWarning)
        try:
            return pd.read_csv(p, **options)
        except pd.errors.DtypeWarning:
            pass
    return pd.read_csv(p, low_memory=False, **options)


def _first_row_longer(p: Path) -> bool:
    """Whether a CSV's first data record has more fields than its header: pandas then reads
    the rows' first cells as an index, which is a RangeIndex, like its own, where they are
    evenly spaced whole numbers (every column was read one to the left, without a word)."""
    try:
        with _long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            records = _csv_records(handle)
            header, first = next(records, (0, [])), next(records, (0, []))
            return len(first[1]) > len(header[1])
    except (csv.Error, UnicodeError):
        return False  # the file as pandas read it stands


def _no_short_rows(p: Path, df: pd.DataFrame, rows: int) -> None:
    """Refuse a CSV data row with fewer fields than the header names columns: pandas reads
    the cells left off as blank, so an optional column silently took its default (``tool_s``
    0 s, an empty ``prompt``). No producer of a CSV format tiersim reads writes short rows (the
    Azure traces, BurstGPT, Sarathi's and Vidur's length files write every field); a header's
    trailing blank-named cells (a spreadsheet's trailing comma) are not counted. Only the
    first ``rows`` data rows, those read, are looked at.

    NOTE: a short row leaves its last named column missing, so the file is scanned again, with
    Python's CSV reader, only when that column has a missing cell."""
    if not len(df):
        return
    try:
        header = _csv_header(p)
        width = max((k + 1 for k, name in enumerate(header) if name.strip()), default=0)
        if not width or width > df.shape[1] or not df.iloc[:, width - 1].isna().any():
            return
        with _long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            for row, (_, record) in enumerate(_csv_records(handle)):
                if row > rows:
                    return
                if row and len(record) < width:
                    raise Source(str(p), 1).error(
                        f"has {len(record)} field{'s' if len(record) != 1 else ''} where the "
                        f"header has {len(header)}; fix the separators or quoting, or write an "
                        "empty cell for each one left out", row - 1)
    except (csv.Error, UnicodeError):
        return  # the file as pandas read it stands


TEXT_COLUMNS = frozenset({"task_type", "step_type", "prompt"})
"""Columns of labels and prompts: text, where only an empty cell is missing."""
MISSING_WORDS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                 "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
"""The cells pandas reads as missing by default (its ``STR_NA_VALUES``)."""


def _text_cells(p: Path) -> dict:
    """``read_csv``'s options that read a CSV's text columns (:data:`TEXT_COLUMNS`) as the text
    written: as strings (pandas typed them by their cells: a prompt of digits was refused as no
    text, a task_type 007 became 7), and missing only where empty, where other columns take
    pandas' words too (:data:`MISSING_WORDS`). By default pandas reads NA, null, None, n/a ...
    as missing in every column: a task_type "NA" was refused as missing, a step_type "null"
    replayed as the default step, a prompt "None" read as no text, where JSON lines keep the
    text."""
    try:
        names = list(pd.read_csv(p, compression=None, nrows=0).columns)
    except (ValueError, UnicodeDecodeError):
        return {}  # the read itself names what is wrong
    if not any(str(name).strip() in TEXT_COLUMNS for name in names):
        return {}
    return {"keep_default_na": False, "na_values": {
        name: [""] if str(name).strip() in TEXT_COLUMNS else list(MISSING_WORDS)
        for name in names}, "dtype": {
        name: str for name in names if str(name).strip() in TEXT_COLUMNS}}


def _unused_as_categories(p: Path, used) -> dict[str, str] | None:
    """The ``dtype`` that reads the columns ``used`` leaves out of a CSV as categories."""
    names = list(pd.read_csv(p, compression=None, nrows=0).columns)
    wanted = used([str(name).strip() for name in names])
    if wanted is None:
        return None
    return {name: "category" for name in names if str(name).strip() not in wanted}


def csv_columns(p: Path) -> list[str]:
    """A CSV's column names as :func:`read_raw` gives them, from its header alone (what is
    wrong in its rows, or a column named twice, is refused when :func:`read_raw` reads it)."""
    return [str(c).strip() for c in _read_csv(p, nrows=0).columns]


def _extra_fields(p: Path) -> TraceError:
    """A CSV whose first data rows have more fields than its header, with the first such line."""
    with open(p, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        width = len(next(rows))
        for line, row in enumerate(rows, start=2):
            if len(row) > width:
                return TraceError(str(p), f"has {len(row)} fields where the header has {width} "
                                  f"(file line {line}); fix the separators or quoting",
                                  row=line - 1)
    return TraceError(str(p), f"has rows with more fields than the header's {width}; fix the "
                      "separators or quoting")


def _csv_parse_error(p: Path, e: Exception) -> TraceError:
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
    if not m:
        return TraceError(str(p), f"cannot parse the CSV ({_error_line(e)})")
    want, line, got = (int(x) for x in m.groups())
    return TraceError(
        str(p), f"has {got} fields where the header has {want} (file line {line}); "
        "fix the separators or quoting", row=line - 1)


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
        return df
    except pa.ArrowInvalid as e:
        raise _jsonl_parse_error(p, e) from None


def _read_jsonl_used(p: Path, name: str, used=None) -> tuple[pd.DataFrame, Source]:
    """A JSON-lines file read whole (:func:`_read_jsonl`); where that read fails, read again
    without the keys nothing reads (``used``, as :func:`read_raw`'s; None: those of the format
    the keys name, :func:`tiersim.trace.formats.columns_used`), which are then only named
    (the Source's ``unread``): a key nothing reads holding values of changing kinds (a number
    on one line, an object on the next; a list of mixed items), or named twice on a line,
    refused the whole trace. A fault of a key that is read is refused as before, naming its
    file line (:func:`_kept_keys_copy` keeps the lines)."""
    try:
        return _read_jsonl(p), Source(name, 0)
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
    return df, Source(name, 0, unread=unread, order=order)


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
    (see :func:`_read_jsonl_used`), one line for each of the file's, so that rows and file
    lines stay those of the file, and the file's keys in the order they first appear; None
    when every key is read. A line that is no JSON object, or names a key that is read twice,
    or holds a number too big for a double in one, is copied as it is (the read of the copy
    names its fault as the file's)."""
    from tiersim.trace.formats import columns_used

    names = dict.fromkeys(_key_name(key) for chunk in _line_chunks(p) for key in _keys(chunk))
    chosen = (used or columns_used)([name.strip() for name in names if name is not None])
    if chosen is None or all(name.strip() in chosen for name in names if name is not None):
        return None  # every key (nested ones too) is read: no copy, the read's error stands
    order: dict[str, None] = {}
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - returned open, closed by the caller
    try:
        with p.open("rb") as f:
            for n, line in enumerate(_json_lines(f)):
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
    return sum(_filled_in(chunk, n == 0) for n, chunk in enumerate(_line_chunks(p)))


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


JSONL_READ_BYTES = _CHUNK
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
    for n, chunk in enumerate(_line_chunks(p, JSONL_READ_BYTES)):
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
    a missing value (a null, a key left out) or a list with one."""
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
    """The Arrow table of a JSON-lines file."""
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
    (read again by ``json.loads``), so that its error names the number given, not ``inf``
    (one of over 4,300 digits, which Python reads as no number, stays infinite)."""
    exact = values.astype(object)
    infinite = set(np.flatnonzero(np.isinf(values.to_numpy(dtype=float))))
    with p.open(encoding="utf-8-sig", errors="replace") as f:
        lines = (line for line in f if line.strip(JSON_BLANK))
        for row, line in enumerate(lines):
            if row in infinite:
                with contextlib.suppress(ValueError):  # over 4,300 digits: Python reads none
                    exact.iloc[row] = json.loads(line).get(name, exact.iloc[row])
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
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except _DuplicateKey as twice:
                return TraceError(str(p), f"{twice.words()}; keep one (which copy holds the data "
                                  f"cannot be known){where}", row=row)
            except ValueError as bad:
                return TraceError(str(p), f"{_not_one_object(line, bad)}{where}", row=row)
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
    return TraceError(str(p), f"cannot read the JSON lines ({_error_line(e)})")


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
    return f"not a JSON object ({_error_line(bad)}); each line must be one JSON object"


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


def column_names(path: str | Path) -> list[str]:
    """A trace's column names as :func:`read_raw` gives them; a Parquet file's from its schema
    and a CSV's from its header, without reading its rows."""
    return names_and_raw(path)[0]


def names_and_raw(path: str | Path) -> tuple[list[str], tuple[pd.DataFrame, Source] | None]:
    """A trace's column names (:func:`column_names`) and, where finding them reads the whole
    file (JSON lines: a key may first appear on any line), that read (:func:`read_raw`'s
    result), to pass on (``raw`` of :func:`tiersim.trace.loader.read_trace`) rather than read
    the file again; None for a Parquet file or a CSV, whose names are read alone."""
    kind = open_checked(path)
    if kind == "parquet":
        return parquet_columns(Path(path)), None
    if kind == "csv":
        return csv_columns(Path(path)), None
    raw = read_raw(path)
    return [*raw[0].columns, *raw[1].unread], raw


def parquet_columns(p: Path) -> list[str]:
    """The column names of a Parquet file as :func:`read_raw` gives them (stripped), without
    reading its rows."""
    with arrow_file(p) as handle:
        schema = pq.read_schema(handle)
    index = {n for n in _pandas_index_columns(schema) if n.startswith("__index_level_")}
    names = [str(c).strip() for c in schema.names if c not in index]
    ranged = _range_index(schema)
    if ranged is not None:  # stored in the metadata alone; read, it is the first column
        if ranged[0] in schema.names:
            raise _index_clash(ranged[0], schema.names.index(ranged[0]) + 1, p)
        names.insert(0, ranged[0].strip())
    _no_duplicate_columns(names, Source(str(p), None))
    return names


def parquet_selection(p: Path, used=None) -> tuple[list[str] | None, tuple[str, ...]]:
    """The columns of the Parquet file ``p`` to decode for ``used`` (see :func:`read_raw`):
    the schema's columns whose stripped names it picks, and those pandas stored its index in
    (None: all columns); and the names (:func:`parquet_columns`) left out, read from the
    schema alone. NOTE: decoded, an extra 300-byte text column that nothing reads took a
    1M-row canonical trace's ``tiersim trace inspect`` to 3,702 MiB at the peak (203 MiB
    left out)."""
    if used is None:
        return None, ()
    names = parquet_columns(p)
    wanted = used(names)
    if wanted is None:
        return None, ()
    with arrow_file(p) as handle:
        schema = pq.read_schema(handle)
    kept = {*wanted, *_index_names(schema)}
    unread = tuple(name for name in names if name not in kept)
    if not unread:
        return None, ()
    return [c for c in schema.names if str(c).strip() not in unread], unread


def parquet_source(p: Path, unread: tuple[str, ...] = ()) -> Source:
    """The :class:`Source` of the Parquet file ``p`` read without its ``unread`` columns
    (:func:`parquet_selection`), with its columns' file order where some were left out."""
    order = tuple(parquet_columns(p)) if unread else ()
    return Source(str(p), None, unread=unread, order=order)


def _index_names(schema: pa.Schema) -> set[str]:
    """The names, stripped, of the index levels pandas stored in a Parquet file: read, whatever
    the columns used, as the index becomes a column (:func:`named_index_as_columns`, which
    refuses one named as a column; the column is read too, so the refusal is the same)."""
    doc, stored = _pandas_metadata(schema), _pandas_index_columns(schema)
    try:
        names = [d.get("name") for d in [*doc.get("columns", []), *doc.get("index_columns", [])]
                 if isinstance(d, dict) and (d.get("field_name") in stored or "kind" in d)]
    except TypeError:  # a key that holds no list
        return set()
    return {name.strip() for name in [*names, *stored] if isinstance(name, str)}


def _positions(schema: pa.Schema, columns: list[str] | None) -> list[int] | None:
    """The file's 1-based column of each of ``columns`` (None: all are read, in order)."""
    return None if columns is None else [schema.names.index(c) + 1 for c in columns]


def _range_index(schema: pa.Schema) -> tuple[str, int, int] | None:
    """The named RangeIndex that pandas stored in a Parquet file's metadata alone (no column
    holds it: pandas 3's ``set_index`` makes one of evenly spaced whole numbers), as
    ``(name, start, step)``; None without one (an unnamed one is no column)."""
    indexes = _pandas_metadata(schema).get("index_columns", [])
    try:
        ranged = [(d["name"], int(d["start"]), int(d["step"])) for d in indexes
                  if isinstance(d, dict) and d.get("kind") == "range"
                  and isinstance(d.get("name"), str)]
    except (ValueError, KeyError, TypeError, OverflowError):  # OverflowError: a start of 1e999
        return None
    return ranged[0] if len(ranged) == 1 else None


def _pandas_metadata(schema: pa.Schema) -> dict:
    """The pandas metadata of a Parquet file's schema as a map: ``{}`` without it, and where it
    is no JSON object (not JSON, a list, or arrays nested past Python's recursion limit, where
    ``json.loads`` raised RecursionError: a traceback from ``trace inspect`` and ``run``); the
    table's reading then says what is wrong with the file."""
    meta = (schema.metadata or {}).get(b"pandas")
    if not meta:
        return {}
    try:
        doc = json.loads(meta)
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _parquet_frame(p: Path, table: pa.Table) -> pd.DataFrame:
    """``table``, read from the Parquet file ``p``, as a frame; where its pandas metadata
    cannot be applied (pyarrow raised what its parse met: 'malformed node or string on line 1:
    <ast.Name object at 0x...>', 'TypeError: list indices must be integers...'), one line
    saying so. The metadata is at fault when the table's first zero rows fail alike."""
    try:
        return table.to_pandas()
    except MemoryError:  # pyarrow's ArrowMemoryError too: no damage of the file
        raise
    except Exception:  # noqa: BLE001 - the metadata's parse raises whatever it meets
        if b"pandas" not in (table.schema.metadata or {}) or _converts(table.slice(0, 0)):
            raise
        raise TraceError(str(p), "its pandas metadata is unreadable; write the file again "
                         "without that metadata (pyarrow: table.replace_schema_metadata())") \
            from None


def _converts(table: pa.Table) -> bool:
    """Whether ``table`` becomes a frame without an error."""
    try:
        table.to_pandas()
    except Exception:  # noqa: BLE001 - whatever the conversion raises
        return False
    return True


def parquet_rows(p: Path) -> int:
    """The number of data rows of a Parquet file, from its footer."""
    try:
        with arrow_file(p) as handle:
            return pq.ParquetFile(handle).metadata.num_rows
    except Exception as e:  # noqa: BLE001 - whatever a corrupt footer raises
        raise TraceError(str(p), f"not a readable Parquet file ({_error_line(e)})") from None


def _pandas_index_columns(schema: pa.Schema) -> set[str]:
    """Columns that pandas stored as the frame's index (an unnamed one, ``__index_level_0__``,
    becomes no column when read; a named one does: :func:`named_index_as_columns`)."""
    names = _pandas_metadata(schema).get("index_columns", [])
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def parquet_chunks(p: Path, rows: int, used=None):
    """A Parquet file as ``(first_row, raw table)`` pairs of at most ``rows`` rows each, in
    file order, converted as :func:`read_raw` converts the whole file (``used``: as there, the
    columns whose values are used; the others are not decoded); a decoding failure is the
    file's, one line (running out of memory is not: it is raised as it is)."""
    columns, unread = parquet_selection(p, used)
    try:
        with arrow_file(p) as handle:
            # pre_buffer=False: pyarrow's default pre-buffering holds every row group's
            # compressed bytes read so far until the file is closed (a 20M-row trace held
            # its whole 236 MB file beside the table being built)
            f = pq.ParquetFile(handle, pre_buffer=False,
                               read_dictionary=text_as_categories(pq.read_schema(handle)))
            yield from _parquet_batches(p, f, rows, columns, unread)
    except (TraceError, MemoryError):  # pyarrow's ArrowMemoryError too: no damage of the file
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt file raises KeyError, TypeError, ...
        raise TraceError(str(p), f"not a readable Parquet file ({_error_line(e)})") from None


def _parquet_batches(p: Path, f: pq.ParquetFile, rows: int, columns: list[str] | None,
                     unread: tuple[str, ...]):
    """:func:`parquet_chunks` of the open file ``f`` (its ``columns`` alone, ``unread`` the
    names left out; None: all); a footer whose row count the batches do not add up to is the
    file's damage."""
    _check_row_count(p, f.metadata)
    ranged = _range_index(f.schema_arrow)
    positions = _positions(f.schema_arrow, columns)
    start = 0
    for batch in f.iter_batches(batch_size=rows, columns=columns):
        _utf8_text(p, batch, start, positions)
        df = named_index_as_columns(_parquet_frame(p, pa.Table.from_batches([batch])), p)
        if ranged is not None and ranged[0] not in df.columns:
            # pandas rebuilds a stored RangeIndex only for a table of its whole length, so a
            # later chunk's part of it is made here (it was lost: ids renumbered from 0)
            name, first, step = ranged
            df.insert(0, name, first + step * np.arange(start, start + len(df), dtype=np.int64))
        df = _schema_names_kept(df, p, unread) if start == 0 else df
        df.columns = [str(c).strip() for c in df.columns]
        yield start, df
        start += len(df)
    if start != f.metadata.num_rows:
        raise TraceError(str(p), f"its footer says {f.metadata.num_rows:,} rows but "
                         f"{start:,} were read; the file is damaged, write it again")


def text_as_categories(schema: pa.Schema) -> list[str]:
    """The plain text columns of a Parquet ``schema`` to read as dictionaries, so as
    categories, each distinct value once: those no trace reads (an extra column, carried in
    the table: :func:`tiersim.trace.formats.is_trace_column`, or a canonical optional one)
    and the canonical text columns checked by their distinct values
    (:data:`tiersim.trace.canonical.BY_VALUE`). Read as plain text, a column repeating one
    100,000-character string, which the file stores once in its dictionary, was copied into
    every row (a 118 KB file of 20,000 rows took 5.5 GB), when no Arrow schema stored in the
    file says the column is a dictionary (as files written by other tools)."""
    from tiersim.trace import canonical, formats  # NOTE: here, as both import this module

    def read_as_categories(name: str) -> bool:
        return name in canonical.BY_VALUE or not (
            formats.is_trace_column(name) or name in formats.KNOWN
            or name.startswith(canonical.PREFIXES))

    once = [name for name in schema.names if schema.names.count(name) == 1]  # else refused
    return [name for name in once if _text_type(schema.field(name).type)
            and not pa.types.is_dictionary(schema.field(name).type)
            and read_as_categories(name.strip())]


def _text_type(kind: pa.DataType) -> bool:
    """Whether a column of type ``kind`` holds text: strings, or a dictionary of them."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _holds_text(kind: pa.DataType) -> bool:
    """Whether a column of type ``kind`` holds text, itself or inside lists or structs."""
    if _text_type(kind):
        return True
    return pa.types.is_nested(kind) and any(
        _holds_text(kind.field(i).type) for i in range(kind.num_fields))


def _utf8_text(p: Path, table: pa.Table | pa.RecordBatch, first_row: int = 0,
               positions: list[int] | None = None) -> None:
    """Refuse a Parquet text column (``first_row`` the file's 0-based row of the table's first;
    ``positions`` the file's 1-based column of each of the table's, where it holds only some)
    holding a value that is not UTF-8, which pyarrow reads unchecked: turning it into Python
    text raised UnicodeDecodeError, or ArrowException "Wrapping ... failed", a traceback
    wherever the column was read, even one nothing reads. A column is named when it is a trace
    column, else by its position (a file's text is not echoed until it is known a trace)."""
    positions = positions or range(1, table.num_columns + 1)
    for position, name, column in zip(positions, table.column_names, table.columns,
                                      strict=True):
        if not _holds_text(column.type):
            continue
        shown = repr(name) if is_trace_column(name) else str(position)
        fault = (f"column {shown} holds text that is not UTF-8; write the file again with its "
                 "text in UTF-8")
        if not _text_type(column.type):  # text inside lists or structs: the column is named
            try:
                column.validate(full=True)
            except pa.ArrowInvalid:
                raise TraceError(str(p), fault) from None
            continue
        row = _first_not_utf8(column)
        if row is not None:
            raise TraceError(str(p), fault, row=first_row + row + 1)


def _first_not_utf8(column: pa.Array | pa.ChunkedArray) -> int | None:
    """The 0-based row of a text column's first value that is not UTF-8 (its bytes decoded one
    by one only in a chunk that fails Arrow's check); None when all are."""
    offset = 0
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid:
            for i, value in enumerate(chunk.cast(pa.large_binary()).to_pylist()):
                try:
                    _ = value is not None and value.decode("utf-8")
                except UnicodeDecodeError:
                    return offset + i
        offset += len(chunk)
    return None


def _check_row_count(p: Path, meta) -> None:
    """The footer's row count must be its row groups' sum (a damaged or hand-patched footer
    would otherwise size the columns wrong: rows of uninitialised memory, or a crash)."""
    groups = sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    if groups != meta.num_rows:
        raise TraceError(str(p), f"its footer says {meta.num_rows:,} rows but its row groups "
                         f"hold {groups:,}; the file is damaged, write it again")


def _error_line(e: Exception) -> str:
    """The first line of a parser's message, cut short (it may quote the file)."""
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0]}" if text and isinstance(e, LookupError | TypeError) \
        else (text[0] if text else type(e).__name__)
    return line if len(line) <= 120 else line[:117] + "..."
