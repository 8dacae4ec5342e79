"""A canonical Parquet trace read a row group at a time, for traces of millions of rows.

The whole-file path (:func:`tiersim.trace.source.read_raw`) holds the raw pandas frame, its
float64 check copies and the canonical table at once: about 120 bytes a row at its peak. Here
each chunk of at most :data:`CHUNK_ROWS` rows is read with pyarrow, converted and checked by the
same converter as the whole file (so every message is the same; the chunk's
:class:`~tiersim.trace.filecheck.Source` carries its first row, so errors name the file's row), and
its columns are copied into arrays of their final dtypes (int64 ids, float64 arrivals, int32
token counts: 24 bytes a row for the core columns). What spans chunks is checked at their
seams: arrivals sorted, request ids unique.

A fault met in a chunk or at a seam sends the file to the whole read
(:func:`tiersim.trace.source.read_raw`, then the converter), which names it: a file with two
faults gets the one line the whole read gives (the converter's first bad column's first fault),
whatever the chunks' size; a chunk named the first fault in file order, so a prompt of -3 at row
2 and an unsorted arrival at row 8 were refused at row 2 in 3-row chunks and at row 8 read whole
(:mod:`tiersim.trace.windowed` does the same for an Azure CSV). The whole read's memory (about
120 bytes a row) is paid only by a file that is refused, after the chunks' arrays are let go;
were it to pass such a file, or run out of memory, the chunk's fault is raised.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from tiersim.errors import TraceError
from tiersim.trace import checks
from tiersim.trace.canonical import SESSION_NAMES, TEXT_IDS_NOTE
from tiersim.trace.filecheck import Source
from tiersim.trace.read_parquet import parquet_chunks
from tiersim.trace.source import read_raw

CHUNK_ROWS = 1 << 18
"""Rows converted at a time (262,144: a chunk's temporaries stay near 30 MB)."""
MAX_BLOCKS = 100
"""Most separately stored columns the joined table keeps: past this many, pandas warns of a
fragmented frame (PerformanceWarning) at every column added later, so a wider table is copied
once into one block per dtype."""


def read_canonical(path: Path, src: Source, convert, rows: int, chunk_rows: int | None = None,
                   used=None) -> tuple[pd.DataFrame, list[str]]:
    """The canonical table of the canonical Parquet trace ``path`` (``rows`` data rows), each
    chunk (``chunk_rows`` rows, default :data:`CHUNK_ROWS`; ``used``: the columns read, as
    :func:`tiersim.trace.source.read_raw` takes them) converted by
    ``convert(raw, src) -> (table, notes)``, and the chunks' notes, each once, in order; a
    fault is named as the whole read names it (see the module's docstring)."""
    try:
        return _read_chunks(path, src, convert, rows, chunk_rows or CHUNK_ROWS, used)
    except SessionKindsDiffer:  # the whole column decides: read the file whole, as a small one
        return convert(read_raw(path, used)[0], src)
    except TraceError as err:
        fault = err.with_traceback(None)  # its frames (the chunks' arrays) let go
        fault.__context__ = None
    refuse_as_the_whole_read(path, src, convert, used)
    raise fault


def refuse_as_the_whole_read(path: Path, src: Source, convert, used=None) -> bool:
    """Raise the whole read's error of the file ``path`` (its raw table, read by
    :func:`tiersim.trace.source.read_raw` with ``used``, converted whole by ``convert`` with
    ``src``, as :mod:`tiersim.trace.loader` reads any other file), if it gives one; else whether
    it passed the file (False: the whole read could not be held, MemoryError). A file a chunk
    refused is then named by the chunk's fault: read a chunk at a time so that it fits, it read
    'ran out of memory', not the row at fault."""
    try:
        raw = read_raw(path, used)[0]
        convert(raw, src)
    except MemoryError:
        return False
    return True


class SessionKindsDiffer(Exception):
    """One chunk read its text session ids as names, another as numbers (a typed file's
    chunk of ids of digits alone, ``"0"``, beside a later one's ``"a3f9c2d1"``): whether they
    are names is the whole column's to decide (:func:`tiersim.trace.canonical.text_ids`), so
    the file is read whole. Read a chunk at a time, the numbers 0 and the names numbered from
    0 were one session."""


def _read_chunks(path: Path, src: Source, convert, rows: int, chunk_rows: int,
                 used=None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`read_canonical`, a fault raised as the chunk or seam that holds it names it."""
    columns = _Columns(rows)
    previous = None  # (last arrival, its raw value) of the chunk before
    has_ids = True
    notes: dict[str, None] = {}  # ordered, each note once (every chunk gives a column's note)
    names: dict[str, int] = {}  # text session ids, numbered over the whole file
    kinds: set[bool] = set()  # whether each chunk read its session ids as names
    for start, raw in parquet_chunks(path, chunk_rows, used):
        part_src = replace(src, first_row=start)
        table, part_notes = convert(raw, part_src)
        if "session_id" in table.columns:
            kinds.add(SESSION_NAMES in table.attrs)
            if len(kinds) > 1:
                raise SessionKindsDiffer
        _renumber_sessions(table, names)
        notes.update(dict.fromkeys(part_notes))
        has_ids = "request_id" in raw.columns
        if previous is not None:
            _check_seam(part_src, previous, table, raw)
        if len(table):
            previous = (table["arrival_s"].iat[-1], raw["arrival_s"].iloc[-1])
        columns.add(start, table)
    table = columns.table()
    if names:
        table.attrs[SESSION_NAMES] = tuple(names)
        notes = _one_text_ids_note(notes, len(names))
    if has_ids:
        _check_unique_ids(src, table["request_id"].to_numpy())
    else:
        table["request_id"] = np.arange(len(table), dtype=np.int64)
    return table, list(notes)


def _renumber_sessions(table: pd.DataFrame, names: dict[str, int]) -> None:
    """A chunk's text session ids (numbered within the chunk, its ``attrs`` naming them) as
    numbered over the whole file: ``names``, each id's number, grows as new ids appear. Each
    chunk numbered its own from 0, so ``conv_b`` of a later chunk was read as the session
    ``conv_a`` was (tasks of different ids merged)."""
    chunk = table.attrs.pop(SESSION_NAMES, None)
    if chunk is None:
        return
    whole = np.array([names.setdefault(name, len(names)) for name in chunk], dtype=np.int64)
    table["session_id"] = whole[table["session_id"].to_numpy(np.int64)]


def _one_text_ids_note(notes: dict[str, None], count: int) -> dict[str, None]:
    """``notes`` with the chunks' text-id notes (each counted its own chunk's ids) as one note
    counting the whole file's ``count`` ids, in the first one's place."""
    head = TEXT_IDS_NOTE.split("{")[0]
    ids = f"{count:,} distinct id{'' if count == 1 else 's'}"
    whole = TEXT_IDS_NOTE.format(last=count - 1, ids=ids)
    out = {(whole if note.startswith(head) else note): None for note in notes}
    return out


def _check_seam(src: Source, previous: tuple, table: pd.DataFrame, raw: pd.DataFrame) -> None:
    """The chunk's first arrival must not be earlier than the chunk before's last."""
    last_t, last_raw = previous
    if len(table) and table["arrival_s"].iat[0] < last_t:
        pair = np.array([last_t, table["arrival_s"].iat[0]])
        raw_pair = pd.Series([last_raw, raw["arrival_s"].iloc[0]], dtype=object)
        checks.sorted_times(replace(src, first_row=src.first_row - 1), pair, raw_pair,
                            "arrival_s")


def _check_unique_ids(src: Source, ids: np.ndarray) -> None:
    """Request ids must be unique over the whole file (increasing ids are, without a hash
    table; otherwise the whole-file check runs)."""
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return
    checks.unique_ints(src, ids, "request_id")


class _Columns:
    """The canonical table's columns, filled chunk by chunk: numeric columns into arrays
    allocated once at full length, others (categories, lists, text) joined at the end."""

    def __init__(self, rows: int):
        self.rows = rows
        self.arrays: dict[str, np.ndarray] = {}
        self.pieces: dict[str, list] = {}
        self.order: list[str] = []

    def add(self, start: int, table: pd.DataFrame) -> None:
        """Copy a converted chunk's columns into place (rows ``start`` onwards)."""
        if not self.order:
            self.order = list(table.columns)
        for name in self.order:
            s = table[name]
            array = self.arrays.get(name)
            if array is not None and s.dtype != array.dtype:  # e.g. ints, then ints with gaps
                self.pieces[name] = [pd.Series(array[:start]).array]
                del self.arrays[name]
            if name in self.arrays or (name not in self.pieces and _fixed(s)):
                if name not in self.arrays:
                    self.arrays[name] = np.empty(self.rows, dtype=s.dtype)
                self.arrays[name][start:start + len(s)] = s.to_numpy()
            else:
                self.pieces.setdefault(name, []).append(s.array)

    def table(self) -> pd.DataFrame:
        """The joined table, in the converter's column order: no copy of the arrays, unless
        there are more than :data:`MAX_BLOCKS` columns (then one copy joins them)."""
        out = {}
        for name in self.order:
            out[name] = self.arrays[name] if name in self.arrays else _join(self.pieces[name])
        table = pd.DataFrame(out, copy=False)
        return table.copy() if len(out) > MAX_BLOCKS else table


def _fixed(s: pd.Series) -> bool:
    """A plain numpy numeric or bool column (filled in place; its dtype is the file's, the
    same in every chunk)."""
    return isinstance(s.dtype, np.dtype) and s.dtype.kind in "biuf"


def _join(pieces: list):
    """The chunks' values of one column, joined as one column of the same kind."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, pd.Categorical) for p in pieces):
        return union_categoricals(pieces, sort_categories=True)
    return pd.concat([pd.Series(p) for p in pieces], ignore_index=True).array
