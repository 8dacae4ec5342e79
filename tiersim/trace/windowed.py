"""An Azure CSV read a chunk at a time, keeping only the requests a window holds.

The whole-file read (:func:`tiersim.trace.source.read_raw`, then the format's converter) holds
every row's text and arrays before a ``trace.window`` cuts a few minutes out of it: a 3M-row
Azure CSV took about 500 MiB for a 5-minute window. Here the file is parsed
:data:`~tiersim.trace.read_csv.CSV_CHUNK_ROWS` rows at a time
(:func:`tiersim.trace.read_csv.csv_chunks`), each chunk checked as the converter checks the whole
column (the same messages, naming the file's row and line), and only the served requests
inside the window are kept. Azure's times must be sorted (an earlier time is refused, checked
within each chunk and at the seams), so the read stops at the first served request at or past
the window's end; without a window (``tiersim trace inspect``) it reads to the end, holding 32
bytes a request.

The table, its request ids, its arrivals (bit for bit: the same integer differences divided
the same way) and its notes are the whole read's, with three differences where the read stops
before the file's end: rows after the window's end are not read, so nothing wrong there is
found; the note on rows without output counts the rows before the stopping row (the first
served request at or past the window's end) and says so; the origin's last arrival is the last
read (at or past the window's end, so the window cut to the trace's arrivals is the same). A
stopping row in the file's last chunk (one shorter than :data:`CSV_CHUNK_ROWS` or
``chunk_rows``; a last chunk of exactly that many rows is not known as the last) leaves no row
unread: the note is then the whole read's, of every row. The coarse-times note is judged on
the window's requests alone (the whole read said it only where the whole file's times were
coarse as well).

A fault found in the rows read sends the file to the whole read, which names it: a file with
two faults gets the one line the whole read gives (the time column's fault first, then the
output's, then the prompt's, as the converter checks whole columns), whatever the chunks' size;
a chunk names the first fault in file order, so a 300-row chunk and a 100-row one named
different rows (:mod:`tiersim.trace.windowed_burstgpt` does the same; the cost, the whole read's
memory, is paid only by a file that is refused; where it cannot be held, MemoryError, the
chunk's fault is named: :func:`tiersim.trace.chunked.refuse_as_the_whole_read`).

Only a file whose result this read can give as the whole read does takes it (:func:`read`
returns None otherwise, and the caller reads the whole file): an Azure CSV of its three columns
and any others that are not canonical optional columns (those are checked against rows far
apart; the others are noted as not read, as the whole read notes them, and not parsed, as the
whole read leaves them out: pyarrow vouches for each chunk's records first, and a chunk it does
not vouch for is parsed with every column, :mod:`tiersim.trace.csv_records`), whose every
chunk's timestamps are plain ISO date-times of one zone style
(:func:`tiersim.trace.checks.plain_datetimes_ns`: a date alone, or a cell without an offset
among cells with one, is judged on the whole column), and whose window holds a request (a file
of none gets the whole read's error).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tiersim.errors import TraceError
from tiersim.trace import canonical, checks, units
from tiersim.trace.chunked import refuse_as_the_whole_read
from tiersim.trace.filecheck import Source, open_checked
from tiersim.trace.formats import (
    FORMATS,
    OWN,
    SERVED_LABELS,
    carried,
    columns_left_out,
    columns_used,
    dropped_notes,
)
from tiersim.trace.read_csv import CSV_CHUNK_ROWS, chunk_source, csv_chunks, csv_columns

TIME, PROMPT, OUTPUT = FORMATS["azure"].required


@dataclass(frozen=True)
class Part:
    """The requests a window holds (``table``, arrivals in seconds since the file's first
    request, the window not yet applied), the converter's notes on them, and the first and last
    arrival read (``arrivals``; the last is at or past the window's end when the read stopped
    there), and the file's format."""

    table: pd.DataFrame
    notes: list[str]
    arrivals: tuple[float, float]
    format: str = "azure"


@dataclass
class _Reading:
    """What a read has gathered so far (:func:`_add`)."""

    start: float
    end: float
    style: str | None = None  # the timestamps' zone style
    first_ns: int | None = None  # the first row's time
    served_ns: int | None = None  # the first served request's time
    served_row: int = 0
    previous: tuple[int, str] | None = None  # the last row's time and text (the seam check)
    rows: int = 0
    dropped: int = 0
    first_dropped: int | None = None
    whole: bool = True  # the rows counted are the file's every row
    last: float = 0.0  # the last served request's arrival
    kept: tuple[list[np.ndarray], ...] = field(default_factory=lambda: ([], [], [], []))
    """Each chunk's requests inside the window: their rows, arrivals and (int32, as the table
    holds them) prompt and output tokens, a list a column."""
    column_notes: list[str] | None = None  # the notes on columns not read (the first chunk's)


class _Unsuited(Exception):
    """A chunk whose timestamps this read cannot judge as the whole column would be judged."""


def suits(path: str | Path, format: str) -> bool:
    """Whether ``path`` is a CSV of the Azure format's three columns and others that are no
    canonical optional column, each named once (read as ``format``: auto or azure; read as
    auto, no other format's every column)."""
    columns = columns_read_as(path, format, "azure")
    return (columns is not None and len(set(columns)) == len(columns)
            and columns_used(columns, format) == {TIME, PROMPT, OUTPUT})


def _used(columns: list[str]) -> set[str] | None:
    """The columns an Azure CSV's converter reads (the others are left out: :func:`_left_out`)."""
    return columns_used(columns, "azure")


def _left_out(columns: list[str]) -> set[str]:
    """The columns of an Azure CSV that are not parsed at all (:func:`columns_left_out`)."""
    return columns_left_out(columns, "azure")


def columns_read_as(path: str | Path, format: str, name: str) -> list[str] | None:
    """The header of ``path`` where it is a CSV read as ``format`` that may be the format
    ``name`` (``format`` auto or ``name``); None otherwise, or where the header does not read
    (the whole read names what is wrong). A chunked reader takes only files it suits."""
    if format not in ("auto", name) or open_checked(path) != "csv":
        return None
    try:
        return csv_columns(Path(path))
    except TraceError:
        return None


def read(path: str | Path, window: tuple[float, float] | None,
         chunk_rows: int | None = None) -> Part | None:
    """The requests of the Azure CSV ``path`` (:func:`suits`) that ``window`` holds
    (``(start_s, end_s)``, checked, the end possibly infinite; None: every request), or None
    where the whole read must give the result (see the module's docstring); a file with a
    fault raises the whole read's error (the chunk's where the whole read cannot be held).
    ``chunk_rows``: rows parsed at a time (default
    :data:`tiersim.trace.read_csv.CSV_CHUNK_ROWS`)."""
    start, end = (0.0, math.inf) if window is None else window
    try:
        reading = _read_chunks(path, _Reading(float(start), float(end)),
                               chunk_rows or CSV_CHUNK_ROWS)
    except _Unsuited:
        return None
    except TraceError as err:  # named by the whole read (see the module's docstring)
        fault = err.with_traceback(None)  # its frames (the chunks read, the window's rows) go
        fault.__context__ = None
    else:
        return _part(reading) if reading.kept[0] else None
    if not refuse_as_the_whole_read(Path(path), Source(str(path), 1), FORMATS["azure"].convert,
                                    _used):
        raise fault  # the whole read cannot be held: the chunk's fault
    return None


def _read_chunks(path: str | Path, reading: _Reading, chunk_rows: int) -> _Reading:
    """``reading`` of the file's chunks of ``chunk_rows`` rows up to the window's end
    (:func:`_add`); its faults raised as the chunk that holds them names them."""
    names = csv_columns(Path(path))
    with contextlib.closing(csv_chunks(path, chunk_rows, _used, _left_out)) as chunks:
        for first, raw in chunks:
            if _add(reading, chunk_source(path, first, raw, names), raw, len(raw) < chunk_rows):
                break
    return reading


def _add(reading: _Reading, src: Source, raw: pd.DataFrame, final: bool) -> bool:
    """Check a chunk (``src``: its first row; ``final``: shorter than a chunk, so the file's
    last) as the converter checks the whole file and keep its served requests inside the
    window; True once a served request at or past the window's end was read (the file is
    sorted, so no later row is inside)."""
    got = checks.plain_datetimes_ns(src, raw[TIME], TIME)
    if got is None or reading.style not in (None, got[1]):
        raise _Unsuited
    ns, reading.style = got
    if reading.column_notes is None:
        reading.column_notes = carried(raw.iloc[:0], src, OWN["azure"])[1]
    _check_sorted(reading, src, ns, raw[TIME])
    out = checks.tokens(src, raw[OUTPUT], OUTPUT, allow_zero=True)
    served = out > 0
    inp = checks.tokens(src, raw[PROMPT], PROMPT, served=served)
    _find_origin(reading, src.first_row, ns, served)
    stop = None if reading.served_ns is None else _keep(reading, src.first_row, ns, served,
                                                        inp, out)
    if stop is not None and not final:
        reading.whole = False  # the rows from the stopping row on are not counted
        served = served[:stop]
    _count(reading, src.first_row, served)
    return stop is not None


def _keep(reading: _Reading, first: int, ns: np.ndarray, served: np.ndarray, inp: np.ndarray,
          out: np.ndarray) -> int | None:
    """Keep a chunk's (its first at 0-based row ``first``) served requests inside the window;
    the chunk's index of its first served request at or past the window's end (where the read
    stops), or None."""
    t = (ns - reading.served_ns) / 1e9  # as the converter's since(first served row)
    inside = served & (t >= reading.start) & (t < reading.end)
    if inside.any():
        rows = first + np.flatnonzero(inside)
        for column, values in zip(reading.kept, (rows, t[inside], inp[inside].astype(np.int32),
                                                 out[inside].astype(np.int32)), strict=True):
            column.append(values)
    if served.any():
        reading.last = float(t[np.flatnonzero(served)[-1]])
    return checks.first_true(served & (t >= reading.end))


def _check_sorted(reading: _Reading, src: Source, ns: np.ndarray, text: pd.Series) -> None:
    """Refuse a time earlier than the row before's, within the chunk and at its seam with the
    chunk before, as :func:`tiersim.trace.checks.sorted_times` refuses it in the whole file."""
    if reading.previous is not None and len(ns):
        pair, cells = np.array([reading.previous[0], ns[0]]), pd.Series(
            [reading.previous[1], text.iloc[0]], dtype=object)
        checks.sorted_times(Source(src.path, 1, src.first_row - 1), pair, cells, TIME)
    checks.sorted_times(src, ns, text, TIME)
    if len(ns):
        reading.previous = (ns[-1], text.iloc[-1])


def _find_origin(reading: _Reading, first: int, ns: np.ndarray, served: np.ndarray) -> None:
    """Find the file's first row's time and first served request's in a chunk (its first at
    0-based row ``first``), where the chunks before held none."""
    if reading.first_ns is None and len(ns):
        reading.first_ns = ns[0]
    if reading.served_ns is None and served.any():
        at = int(np.argmax(served))
        reading.served_ns, reading.served_row = ns[at], first + at


def _count(reading: _Reading, first: int, served: np.ndarray) -> None:
    """Count the rows ``served`` tells of (a chunk's, its first at 0-based row ``first``, or
    those before the read's stopping row) and those of them without output."""
    failed = int(np.count_nonzero(~served))
    if failed and reading.first_dropped is None:
        reading.first_dropped = first + int(np.argmax(~served))
    reading.rows += len(served)
    reading.dropped += failed


def _part(reading: _Reading) -> Part:
    """The window's table and notes."""
    rows, t, inp, out = (_joined(column) for column in reading.kept)
    table = canonical.build(rows, t, inp, out)
    notes = [*reading.column_notes, *units.coarse_note(TIME, t)]
    if reading.dropped:
        begin = float((reading.served_ns - reading.first_ns) / 1e9)
        notes += dropped_notes(reading.dropped, reading.rows, reading.first_dropped,
                               reading.served_row, begin, SERVED_LABELS["azure"], reading.whole)
    return Part(table, notes, (0.0, reading.last))


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    """A column's chunks joined into one array, the chunks let go (one column's held twice at
    a time, not every column's)."""
    joined = np.concatenate(pieces)
    pieces.clear()
    return joined
