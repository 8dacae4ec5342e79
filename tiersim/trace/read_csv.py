"""Reading a CSV trace into a raw table: whole (:func:`read_csv_file`) or a chunk of rows at a
time (:func:`csv_chunks`), each refusal naming the file's row and line
(:mod:`tiersim.trace.filecheck` looked at the file first)."""

from __future__ import annotations

import collections
import contextlib
import csv
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from tiersim.arrowfile import arrow_file
from tiersim.errors import TraceError, shown
from tiersim.trace.csv_records import Records, Unvouched
from tiersim.trace.filecheck import (
    Source,
    check_utf8,
    error_line,
    long_fields,
    no_duplicate_columns,
    open_checked,
    records_with_lines,
)
from tiersim.trace.trace_columns import REQUIRED


def csv_cells(path: str, rows: list[int], column: str) -> dict[int, str]:
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


def read_csv_file(path: str | Path, used=None,
                  left_out=None) -> tuple[pd.DataFrame, Source]:
    """A CSV trace's table and :class:`Source` (:func:`tiersim.trace.source.read_raw`, whose
    ``used`` and ``left_out`` these are), its column names stripped of spaces; a column named
    twice in the header, or a row repeating the header, is refused."""
    p = Path(path)
    df, src = _read_csv_columns(path, used, left_out)
    names = _csv_header(p)
    df.columns = [str(c).strip() for c in df.columns]
    no_duplicate_columns([str(c).strip() for c in names], src, " (the header, file line 1)",
                         True)
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
    _no_comment_line(p)
    _no_line_above_header(p)
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
        check_utf8(p, "CSV")  # raises, naming the first line that is not UTF-8
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
    _no_comment_line(p)
    _no_line_above_header(p)
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
        no_duplicate_columns(names, Source(str(p), 1), " (the header, file line 1)", True)
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


def _no_comment_line(p: Path) -> None:
    """Refuse a CSV whose first line is a ``#`` comment above the header (a note on where the
    trace came from) with another number of fields than the line after it: the comment was
    read as the header, and the header refused as row 1 ('row 1: has 6 fields where the header
    has 1'), no word of the comment. A header whose first name starts with ``#`` and whose
    rows match it stands. The comment is echoed cut (:func:`tiersim.errors.shown`)."""
    try:
        with long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            first = handle.readline(4096).rstrip("\r\n")
            if not first.startswith("#"):
                return
            handle.seek(0)
            records = records_with_lines(handle)
            (_, comment), (_, header) = next(records, (0, [])), next(records, (0, []))
    except (OSError, UnicodeError, csv.Error):
        return  # the read itself names what is wrong
    if header and len(header) != len(comment):
        fields = f"{len(comment)} field{'s' if len(comment) != 1 else ''}"
        raise TraceError(str(p), f"its first line ({shown(first, 60)}) looks like a comment, "
                         f"not the header: it has {fields} where the next line has "
                         f"{len(header)}; remove the line, so that the header comes first (file "
                         "line 1)")


def _no_line_above_header(p: Path) -> None:
    """Refuse a CSV whose first record names no trace column while the record after it holds
    every column a format requires: a title or note above the header ('Azure LLM inference
    trace 2023', ``// exported by ...``, a spreadsheet's empty ``,,``) was read as the header,
    and the header refused as row 1 ('row 1: has 3 fields where the header has 1; fix the
    separators or quoting', or 'none of its column names is a trace column'), the real header
    unnamed. The line is not echoed (it may be anything); the header's format and line are
    named."""
    try:
        with long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            records = records_with_lines(handle)
            (first_line, first), (line, header) = (next(records, (0, [])),
                                                   next(records, (0, [])))
    except (OSError, UnicodeError, csv.Error):
        return  # the read itself names what is wrong
    above = {name.strip() for name in first}
    below = {name.strip() for name in header}
    known = {name for names in REQUIRED.values() for name in names}
    found = next((fmt for fmt, names in REQUIRED.items() if below.issuperset(names)), None)
    if found is None or above & known:
        return
    raise TraceError(str(p), f"its first line is not the header: it names no trace column, and "
                     f"file line {line} holds the {found} format's columns "
                     f"({', '.join(REQUIRED[found])}); remove the line, so that the header "
                     f"comes first (file line {first_line})")


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
        with long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            records = records_with_lines(handle)
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
        with long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
            for row, (_, record) in enumerate(records_with_lines(handle)):
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
    if "EOF inside string" in str(e):
        return _unclosed_quote(p, e)
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
    if not m:
        return TraceError(str(p), f"cannot parse the CSV ({error_line(e)})")
    want, line, got = (int(x) for x in m.groups())
    return TraceError(
        str(p), f"has {got} fields where the header has {want} (file line {line}); "
        "fix the separators or quoting", row=line - 1)


def _unclosed_quote(p: Path, e: Exception) -> TraceError:
    """pandas' "EOF inside string starting at row N" (a quote never closed: the rest of the
    file is one cell) as the data row and file line of the record that quote is in: the last
    record :func:`records_with_lines` reads, as it too reads on to the file's end (pandas' N
    counts records from the header, not lines: a quoted line break before it moved N off the
    file's line)."""
    with long_fields(), open(p, newline="", encoding="utf-8-sig") as handle:
        last = collections.deque(enumerate(records_with_lines(handle)), maxlen=1)
    if not last:
        return TraceError(str(p), f"cannot parse the CSV ({error_line(e)})")
    record, (line, _) = last[0]
    where = "in the header" if record == 0 else "in this row"
    return TraceError(str(p), f"a quote {where} is never closed (the file ends inside it; file "
                      f"line {line}); close the quote, or write a quote inside a quoted cell "
                      'as two ("")', row=record or None)
