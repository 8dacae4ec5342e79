"""Reading a Parquet trace into a raw table: whole (:func:`read_parquet_file`) or a chunk of rows
at a time (:func:`parquet_chunks`), its pandas index and metadata taken as pandas wrote them, its
text checked as UTF-8 (:mod:`tiersim.trace.filecheck` looked at the file first)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tiersim.arrowfile import arrow_file
from tiersim.errors import TraceError
from tiersim.trace import canonical, formats
from tiersim.trace.filecheck import (
    ParquetFooter,
    Source,
    is_trace_column,
    no_duplicate_columns,
    parquet_footer,
    take_parquet_metadata,
    unreadable_parquet,
)


def read_parquet_file(p: Path, used=None) -> tuple[pd.DataFrame, Source]:
    """A Parquet trace's table and :class:`Source` (:func:`tiersim.trace.source.read_raw`,
    whose ``used`` this is): the columns ``used`` picks decoded, the others named as
    ``unread``."""
    columns, unread = parquet_selection(p, used)
    return _read_parquet(p, columns, unread), parquet_source(p, unread)


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
        schema = parquet_footer(p).schema
        take_parquet_metadata(p)  # let go, not held beside the table: read_table parses its own
        with arrow_file(p) as handle:
            table = pq.read_table(handle, columns=columns,
                                  read_dictionary=text_as_categories(schema))
        _utf8_text(p, table, positions=_positions(schema, columns))
        df = _parquet_frame(p, table)
        del table
        return _schema_names_kept(named_index_as_columns(df, p), p, unread)
    except (TraceError, MemoryError):  # pyarrow's ArrowMemoryError too: no damage of the file
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt file raises KeyError, TypeError, ...
        raise unreadable_parquet(p, e) from None


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


def parquet_columns(p: Path) -> list[str]:
    """The column names of a Parquet file as :func:`read_raw` gives them (stripped), without
    reading its rows."""
    schema = parquet_footer(p).schema
    index = {n for n in _pandas_index_columns(schema) if n.startswith("__index_level_")}
    names = [str(c).strip() for c in schema.names if c not in index]
    ranged = _range_index(schema)
    if ranged is not None:  # stored in the metadata alone; read, it is the first column
        if ranged[0] in schema.names:
            raise _index_clash(ranged[0], schema.names.index(ranged[0]) + 1, p)
        names.insert(0, ranged[0].strip())
    no_duplicate_columns(names, Source(str(p), None))
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
    schema = parquet_footer(p).schema
    kept = {*wanted, *_index_names(schema)}
    unread = tuple(name for name in names if name not in kept)
    if not unread:
        return None, ()
    return [c for c in schema.names if str(c).strip() not in unread], unread


def parquet_source(p: Path, unread: tuple[str, ...] = ()) -> Source:
    """The :class:`Source` of the Parquet file ``p`` read without its ``unread`` columns
    (:func:`parquet_selection`), with its columns' file order where some were left out."""
    order = tuple(parquet_columns(p)) if unread else ()
    return Source(str(p), None, unread=unread, order=order, typed=True)


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
    return parquet_footer(p).rows


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
    footer = parquet_footer(p)
    _check_row_count(p, footer)
    try:
        with arrow_file(p) as handle:
            # pre_buffer=False: pyarrow's default pre-buffering holds every row group's
            # compressed bytes read so far until the file is closed (a 20M-row trace held
            # its whole 236 MB file beside the table being built)
            f = pq.ParquetFile(handle, pre_buffer=False, metadata=take_parquet_metadata(p),
                               read_dictionary=text_as_categories(footer.schema))
            yield from _parquet_batches(p, f, rows, columns, unread)
    except (TraceError, MemoryError):  # pyarrow's ArrowMemoryError too: no damage of the file
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt file raises KeyError, TypeError, ...
        raise unreadable_parquet(p, e) from None


def _parquet_batches(p: Path, f: pq.ParquetFile, rows: int, columns: list[str] | None,
                     unread: tuple[str, ...]):
    """:func:`parquet_chunks` of the open file ``f`` (its ``columns`` alone, ``unread`` the
    names left out; None: all); a footer whose row count the batches do not add up to is the
    file's damage."""
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


def _check_row_count(p: Path, footer: ParquetFooter) -> None:
    """The footer's row count must be its row groups' sum (a damaged or hand-patched footer
    would otherwise size the columns wrong: rows of uninitialised memory, or a crash)."""
    if footer.group_rows != footer.rows:
        raise TraceError(str(p), f"its footer says {footer.rows:,} rows but its row groups "
                         f"hold {footer.group_rows:,}; the file is damaged, write it again")
