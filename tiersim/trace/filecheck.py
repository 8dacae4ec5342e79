"""A trace file looked at before any parser reads it, and pointing at its rows in errors.

Rows in every error are 1-based *data* rows: row 1 is the first request, whatever the file
format. For text files (CSV, JSONL) the message also gives the line of the file, so that
``row 3`` of a CSV with a header reads ``(file line 4)`` (:class:`Source`).

A file is looked at before it is parsed (docs/security.md): binary content that is not Parquet is
refused, and so is a header longer than :data:`MAX_HEADER_BYTES` or with more than
:data:`MAX_COLUMNS` columns, so a pathological file is rejected in milliseconds
(:func:`open_checked`). Until a file is recognised as a trace (one of its columns is a known
trace column), errors name the file and positions only, never its contents: a path like
``/proc/self/environ`` must not be echoed. The readers of each format are
:mod:`tiersim.trace.read_csv`, :mod:`tiersim.trace.read_jsonl` and
:mod:`tiersim.trace.read_parquet`; :mod:`tiersim.trace.source` picks one.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import functools
import io
import json
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tiersim.arrowfile import arrow_file
from tiersim.errors import TraceError
from tiersim.trace import trace_columns

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


CHUNK_BYTES = 1 << 24


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
    in it, as a CSV's, all read, are); and whether the file types its values (``typed``)."""

    path: str
    header_lines: int | None  # None for binary files (Parquet), which have no lines
    first_row: int = 0
    rows: np.ndarray | None = field(default=None, compare=False, repr=False)
    unread: tuple[str, ...] = field(default=(), compare=False, repr=False)
    kept: tuple[str, ...] = field(default=(), compare=False, repr=False)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)
    typed: bool = field(default=False, compare=False, repr=False)
    """Whether the file types its values (JSON lines, Parquet): a text value there is text as
    written (``"49201837"``), where a CSV's unquoted number and quoted text read alike."""

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


@contextlib.contextmanager
def long_fields():
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
    return (start for start, _ in records_with_lines(handle))


def records_with_lines(handle):
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
    if text.startswith(b"[") and _json_list(text.split(b"\n", 1)[0]):  # read as a CSV header
        raise TraceError(str(path), "its first line is a JSON list, not a JSON object; tiersim "
                         "reads JSON lines (one object per line, keys naming the columns) or a "
                         "CSV (a header of column names): write the trace so (file line 1)")
    _no_line_above_objects(path, head.removeprefix(b"\xef\xbb\xbf"))
    return "csv"


def _json_list(line: bytes) -> bool:
    """Whether ``line`` is a JSON list (``[1, 2, 3]``): as a CSV header, its items were told
    "none of its 3 column name(s) is a trace column"."""
    try:
        return isinstance(json.loads(line), list)
    except (ValueError, RecursionError):
        return False


def _no_line_above_objects(path: Path, head: bytes) -> None:
    """Refuse JSON lines below a first line that is no JSON object (a title, a ``#`` or ``//``
    comment): the file was read as a CSV whose header is that line, and refused as one ('row 1:
    has 3 fields where the header has 1; fix the separators or quoting'). Only where the next
    non-blank line of ``head`` (the file's opening bytes) is a whole JSON object; the first
    line is not echoed."""
    lines = [(number, line.strip()) for number, line in
             enumerate(head.replace(b"\r\n", b"\n").split(b"\n")[:-1], start=1)
             if line.strip()]
    if len(lines) < 2 or not lines[1][1].startswith(b"{"):
        return
    try:
        second = json.loads(lines[1][1])
    except (ValueError, RecursionError):
        return
    if isinstance(second, dict):
        raise TraceError(str(path), f"its first line is not a JSON object, and file line "
                         f"{lines[1][0]} is one (JSON lines): remove the line, so that the "
                         f"objects come first (file line {lines[0][0]})")


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
        while block := f.read(CHUNK_BYTES):
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


def line_chunks(path: Path, size: int | None = None):
    r"""The file in chunks of about ``size`` bytes (None: :data:`CHUNK_BYTES`, 16 MB), each cut at
    a line end (the last may lack one): a ``\n`` or a lone ``\r`` (cut at ``\n`` only, a file
    of ``\r`` line ends was held whole), never between the two bytes of a ``\r\n`` (a ``\r``
    that ends a read waits for the next)."""
    tail = b""
    with path.open("rb") as f:
        while chunk := f.read(size or CHUNK_BYTES):
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
        while block := f.read(CHUNK_BYTES):
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
                      for _, text in zip(range(line - 1), json_lines(f), strict=False))
    raise TraceError(str(path), f"longer than {MAX_JSONL_LINE_BYTES:,} bytes, more than a "
                     f"trace line holds; split or shorten it (file line {line})", row=row)


def json_lines(f):
    r"""The lines of binary file ``f`` as the JSON reader ends them (``\n``, ``\r\n`` or a
    lone ``\r``)."""
    for text in f:  # lines of \n; a lone \r ends one too
        yield from _LINE_END.split(text.rstrip(b"\n").removesuffix(b"\r"))


def check_utf8(path: Path, kind: str = "JSON-lines") -> None:
    """Refuse a ``kind`` file ("JSON-lines" or "CSV") that is not UTF-8 text, naming the
    first line that is not (the JSON reader fails on such a value or key with a traceback; the
    CSV reader's error names no line). Chunks are cut at line ends, which never split a UTF-8
    character."""
    line = 1
    for chunk in line_chunks(path):
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
    for chunk in line_chunks(path):
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


def json_keys(chunk: bytes) -> set[bytes]:
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
    for chunk in line_chunks(path):
        keys |= json_keys(chunk)
        _check_columns(path, len(keys))


def check_shape(path: Path, kind: str) -> None:
    """Refuse a file whose header is too long or too wide, before a parser sees it."""
    if kind == "parquet":
        _check_columns(path, len(parquet_footer(path).schema.names))
    elif kind == "jsonl":
        _check_no_nul(path)
        _check_json_line_lengths(path)
        _check_columns(path, _first_line(path, MAX_JSONL_LINE_BYTES).count(b'":'))
        check_utf8(path)
        _check_json_depth(path)
        _check_json_keys(path)
    else:  # the header first: its checks read 64 kB, the NUL scan the whole file
        _check_columns(path, _first_line(path, MAX_HEADER_BYTES).count(b",") + 1)
        _check_columns(path, _header_fields(path))
        _check_no_nul(path)


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


@dataclass(frozen=True)
class ParquetFooter:
    """What a Parquet file's footer says that the trace readers use, without its row groups'
    own metadata: its Arrow ``schema``, its ``rows`` and the sum of its row groups' rows
    (``group_rows``; a damaged footer's differ)."""

    schema: pa.Schema
    rows: int
    group_rows: int


def parquet_footer(path: str | Path) -> ParquetFooter:
    """The :class:`ParquetFooter` of the Parquet file ``path``; one that pyarrow cannot read is
    refused in one line (:func:`unreadable_parquet`).

    NOTE: the footer is parsed once per version of the file (:func:`_parquet_footer`) and each
    reader of a schema or row count takes it from there: a footer of 200,000 one-row row groups
    (130 MB) took 1.3 s and 660 MB each time it was parsed, and a load parsed it 11 times
    (``tiersim trace inspect``: 13.6 s, 1.26 GB at the peak). The row groups' metadata, parsed
    with it, is kept for the reader of the rows alone (:func:`take_parquet_metadata`): a
    second parse took as much memory again, the first one's freed memory not reused."""
    p = Path(path)
    key = _version(p)
    try:
        return _parquet_footer(*key) if key else _read_footer(p, None)
    except Exception as e:  # noqa: BLE001 - whatever a corrupt footer raises
        raise unreadable_parquet(p, e) from None


@functools.lru_cache(maxsize=4)
def _parquet_footer(path: str, size: int, mtime_ns: int, inode: int) -> ParquetFooter:
    """:func:`_read_footer` of one version of a file (keyed by its size, time and inode),
    remembered; a failure is not."""
    return _read_footer(Path(path), (path, size, mtime_ns, inode))


def _version(p: Path) -> tuple[str, int, int, int] | None:
    """The file ``p``'s path, size, time and inode; None where it cannot be looked at (left to
    the read, which says so in its words)."""
    try:
        st = p.stat()
    except OSError:
        return None
    return str(p), st.st_size, st.st_mtime_ns, st.st_ino


_PARSED: dict[tuple, pq.FileMetaData] = {}
"""The whole footer of the Parquet file last parsed by :func:`_read_footer`, by the version of
the file (:func:`_version`), until the reader of its rows takes it
(:func:`take_parquet_metadata`) or another file's replaces it."""


def _read_footer(p: Path, key: tuple | None) -> ParquetFooter:
    """The :class:`ParquetFooter` of the file ``p`` (whose version is ``key``), parsed (pyarrow
    raises what it meets)."""
    _PARSED.clear()
    with arrow_file(p) as handle:
        meta = pq.ParquetFile(handle).metadata
    groups = sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    footer = ParquetFooter(meta.schema.to_arrow_schema(), meta.num_rows, groups)
    if key is not None:
        _PARSED[key] = meta
    return footer


def take_parquet_metadata(path: str | Path) -> pq.FileMetaData | None:
    """The whole footer of the Parquet file ``path`` as :func:`parquet_footer` parsed it, for
    ``pq.ParquetFile(..., metadata=...)``, once (it is then let go); None where it was not
    kept (the footer was remembered from an earlier read, or the file has changed since: the
    reader parses it)."""
    key = _version(Path(path))
    meta = _PARSED.get(key) if key else None
    _PARSED.clear()
    return meta


def no_duplicate_columns(names: list[str], src: Source, where: str = "",
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
    :func:`tiersim.trace.trace_columns.is_trace_column`): before a file is recognised as a
    trace, only such a name may be shown (docs/security.md)."""
    return trace_columns.is_trace_column(str(name))


def unreadable_parquet(path: Path, e: Exception) -> TraceError:
    """The one line for a Parquet trace pyarrow cannot read: pyarrow's words for why (a
    footer without its magic bytes, a page it cannot decode), and the fix, which they lacked
    ('not a readable Parquet file (Parquet magic bytes not found in footer. ...)'). A footer
    over the sizes pyarrow reads (thrift's 'Exceeded size limit': 200 MB of key-value metadata,
    or 80 MB, which pyarrow also stores base64-encoded in its Arrow schema) is whole, not cut
    short: it says so."""
    if "Exceeded size limit" in str(e):
        return TraceError(str(path), "its Parquet footer's metadata is over pyarrow's limit "
                          "(100 MB a value); the file is whole, write it again without that "
                          "key-value metadata (pyarrow: table.replace_schema_metadata())")
    return TraceError(str(path), f"not a readable Parquet file ({error_line(e)}); write it "
                      "again (pyarrow, or pandas' to_parquet), or give a whole copy if it was cut "
                      "short")


def error_line(e: Exception) -> str:
    """The first line of a parser's message, cut short (it may quote the file)."""
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0]}" if text and isinstance(e, LookupError | TypeError) \
        else (text[0] if text else type(e).__name__)
    return line if len(line) <= 120 else line[:117] + "..."
