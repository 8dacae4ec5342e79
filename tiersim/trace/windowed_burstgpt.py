"""A BurstGPT CSV read a chunk at a time, keeping only the requests a window holds.

The whole-file read holds every row's cells and arrays before a ``trace.window`` cuts a few
minutes out of it (BurstGPT's log is 5.3 million rows). Here the file is parsed
:data:`~tiersim.trace.read_csv.CSV_CHUNK_ROWS` rows at a time
(:func:`tiersim.trace.read_csv.csv_chunks`, its unread columns as categories, as the whole read
reads them), each chunk checked by the converter's checks, and only the served requests inside
the window are kept, with their model.

Unlike an Azure CSV's (:mod:`tiersim.trace.windowed`), the read goes on to the file's end:
BurstGPT's notes are of the whole file (the rows without output, the rows whose Total tokens
is not the sum, the models' first spellings, the time unit's span and gaps), so they are
counted chunk by chunk and said as the whole read says them. It saves memory, not time. The
table (bit for bit: each arrival is the same difference of the same two numbers), the origin
and the notes are the whole read's.

:func:`read` returns None, and the caller reads the whole file, where its result could
differ or where the file is refused (the whole read names the fault as it always has):

- a canonical optional column (checked against rows far apart; the loader reads a file
  holding a column its caller reads whole too); other columns, such as the ``Session ID`` and
  ``Elapsed time`` of BurstGPT's v2.0 release (``BurstGPT_3.csv``), are noted as not read, as
  the whole read notes them, and not parsed, as the whole read leaves them out;
- a chunk's ``Timestamp`` not read as numbers, decimals at or beyond 2**53, or whole numbers
  at or beyond 2**53 in a file whose other chunks are decimals (the whole column is then
  decimals, which round them);
- a chunk's ``Model`` read as numbers (the whole column may be text);
- times spanning more than a day whose gaps are not surely short of a minute (the unit note
  then needs the median gap of the whole file);
- any error, an unsorted seam between chunks, or no request in the window.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tiersim.errors import TraceError, escaped
from tiersim.trace import canonical, checks, units
from tiersim.trace.filecheck import Source
from tiersim.trace.formats import (
    FORMATS,
    OWN,
    READ,
    SERVED_LABELS,
    ModelMix,
    carried,
    columns_left_out,
    columns_used,
    dropped_notes,
    model_names,
    noted_models,
    totals_mismatch,
    totals_note,
)
from tiersim.trace.read_csv import CSV_CHUNK_ROWS, chunk_source, csv_chunks, csv_columns
from tiersim.trace.windowed import Part, _joined, columns_read_as

TIME, PROMPT, OUTPUT = FORMATS["burstgpt"].required
MODEL = "Model"


class _Unsuited(Exception):
    """A file whose result this read cannot give as the whole read gives it."""


@dataclass
class _Totals:
    """The rows kept whose Total tokens is not the sum (:func:`formats.totals_mismatch`)."""

    count: int = 0
    first: tuple[int, str, int, int] | None = None  # row, total shown, request, response


@dataclass
class _Models:
    """The models named so far, in order of first appearance among the rows kept, keyed by
    their case-folded name, each shown as first spelled (as :func:`formats._burstgpt_models`
    numbers them over the whole file)."""

    keys: dict[str, int] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)

    def add(self, cells: pd.Series) -> np.ndarray:
        """The model key of each served row's ``Model`` cell, new models numbered in order."""
        codes, values = pd.factorize(cells, use_na_sentinel=False)
        names = model_names(values)
        found = np.empty(len(names), dtype=np.int64)
        for i, (name, folded) in enumerate(zip(names, names.str.casefold(), strict=True)):
            if folded not in self.keys:
                self.keys[folded] = len(self.shown)
                self.shown.append(escaped(name))
            found[i] = self.keys[folded]
        return found[codes]


@dataclass
class _Reading:
    """What a read has gathered so far (:func:`_add`)."""

    start: float
    end: float
    first: np.generic | None = None  # the first row's time, as read
    ref: np.generic | None = None  # the first served request's time, as read
    served_row: int = 0
    previous: np.generic | None = None  # the last row's time (the seam check)
    last_since_first: float = 0.0  # the last row's seconds since the first row's
    positive: int = 0  # gaps between rows' seconds above 0
    kinds: set = field(default_factory=set)  # the time chunks' dtype kinds
    big: bool = False  # whole-number times at or beyond 2**53
    rows: int = 0
    dropped: int = 0
    first_dropped: int | None = None
    kept_count: int = 0
    kept_served: int = 0  # served requests counted for the coarse note
    tied: int = 0  # served requests at the instant of the served request before
    whole: list = field(default_factory=lambda: [True] * len(units.COARSE_UNITS))
    """Whether every served request's time is a whole hour, minute, second so far."""
    last: float = 0.0
    totals: _Totals = field(default_factory=_Totals)
    models: _Models | None = None
    column_notes: list[str] | None = None  # the notes on columns not read (the first chunk's)
    kept: tuple[list[np.ndarray], ...] = field(default_factory=lambda: ([], [], [], [], []))
    """Each chunk's requests inside the window: rows, arrivals, prompt and output tokens
    (int32) and model keys, a list a column."""


def suits(path: str | Path, format: str) -> bool:
    """Whether ``path`` is a CSV of BurstGPT's required three columns and others that are no
    canonical optional column, each named once (read as ``format``: auto or burstgpt; read as
    auto, no other format's every column)."""
    columns = columns_read_as(path, format, "burstgpt")
    if columns is None or len(set(columns)) != len(columns):
        return False
    used = columns_used(columns, format)
    return (used is not None and used <= set(READ["burstgpt"])
            and set(FORMATS["burstgpt"].required) <= set(columns))


def _left_out(columns: list[str]) -> set[str]:
    """The columns of a BurstGPT CSV that are not parsed at all (:func:`columns_left_out`:
    neither its own nor read by its converter)."""
    return columns_left_out(columns, "burstgpt")


def read(path: str | Path, window: tuple[float, float] | None,
         chunk_rows: int | None = None) -> Part | None:
    """The requests of the BurstGPT CSV ``path`` (:func:`suits`) that ``window`` holds
    (``(start_s, end_s)``, checked, the end possibly infinite; None: every request), or None
    where the whole read must give the result (see the module's docstring). ``chunk_rows``:
    rows parsed at a time (default :data:`tiersim.trace.read_csv.CSV_CHUNK_ROWS`)."""
    start, end = (0.0, np.inf) if window is None else window
    reading = _Reading(float(start), float(end))
    used = lambda columns: columns_used(columns, "burstgpt")  # noqa: E731
    try:
        names = csv_columns(Path(path))
        with contextlib.closing(csv_chunks(path, chunk_rows or CSV_CHUNK_ROWS, used,
                                           _left_out)) as chunks:
            for first, raw in chunks:
                _add(reading, chunk_source(path, first, raw, names), raw)
        if not reading.kept[0] or (reading.big and "f" in reading.kinds):
            return None
        return _part(reading)
    except (_Unsuited, TraceError):
        return None


def _times(reading: _Reading, src: Source, s: pd.Series) -> np.ndarray:
    """A chunk's times as read (whole numbers, or decimals checked as the converter checks
    them), sorted within the chunk and at its seam."""
    kind = s.dtype.kind if isinstance(s.dtype, np.dtype) else "O"
    if kind not in "iuf":
        raise _Unsuited
    if kind == "f":
        t = checks.numbers(src, s, TIME, "timestamp in seconds")
        if (np.abs(t) >= checks.EXACT_FLOAT_INT).any():
            raise _Unsuited
    else:
        t = s.to_numpy()
        reading.big |= bool(len(t)) and (t.min() <= -checks.EXACT_FLOAT_INT
                                         or t.max() >= checks.EXACT_FLOAT_INT)
    reading.kinds.add("f" if kind == "f" else "i")
    checks.sorted_times(src, t, s, TIME)
    if len(t) and reading.previous is not None and t[0] < reading.previous:
        raise _Unsuited  # the whole read names the unsorted rows
    return t


def _since(t: np.ndarray, ref: np.generic) -> np.ndarray:
    """Seconds of times ``t`` since ``ref``, as the converter gives them: whole numbers
    subtracted exactly, then made float64; decimals subtracted as decimals."""
    if t.dtype.kind in "iu" and np.asarray(ref).dtype.kind in "iu":
        return (t.astype(np.uint64) - np.uint64(ref)).astype(np.float64) * 1.0
    with np.errstate(over="ignore"):
        return (t.astype(np.float64) - np.float64(ref)) * 1.0


def _add(reading: _Reading, src: Source, raw: pd.DataFrame) -> None:
    """Check a chunk (``src``: its first row) as the converter checks the whole file, count
    what its notes count and keep its served requests inside the window."""
    t = _times(reading, src, raw[TIME])
    if reading.column_notes is None:
        reading.column_notes = carried(raw.iloc[:0], src, OWN["burstgpt"])[1]
    out = checks.tokens(src, raw[OUTPUT], OUTPUT, allow_zero=True)
    served = out > 0
    inp = checks.tokens(src, raw[PROMPT], PROMPT, served=served)
    if not len(t):
        return
    _count(reading, src.first_row, t, served)
    _count_totals(reading.totals, raw, inp, out, served, src.first_row)
    models = _model_keys(reading, raw, served)
    if reading.ref is None:
        return
    since = _since(t, reading.ref)
    inside = served & (since >= reading.start) & (since < reading.end)
    if inside.any():
        keys = models[inside[served]] if models is not None else np.zeros(0, np.int32)
        for column, values in zip(reading.kept, (
                src.first_row + np.flatnonzero(inside), since[inside],
                inp[inside].astype(np.int32), out[inside].astype(np.int32),
                keys.astype(np.int32)), strict=True):
            column.append(values)
    if served.any():
        _count_ties(reading, since[served])
        reading.last = float(since[np.flatnonzero(served)[-1]])


def _count_ties(reading: _Reading, t: np.ndarray) -> None:
    """Count the served requests ``t`` of a chunk at the instant of the one before (the last
    of the chunks before too), and whether their times are whole units, for the coarse note
    (:func:`tiersim.trace.units.coarse_note`) of the whole file."""
    seam = reading.kept_served > 0 and t[0] == reading.last
    reading.tied += int(np.count_nonzero(t[1:] == t[:-1])) + int(seam)
    reading.kept_served += len(t)
    reading.whole = [whole and units.whole_units(t, size) for whole, (_, size)
                     in zip(reading.whole, units.COARSE_UNITS, strict=True)]


def _count(reading: _Reading, first: int, t: np.ndarray, served: np.ndarray) -> None:
    """Count a chunk's rows (its first at 0-based row ``first``), rows without output and the
    positive gaps of the rows' seconds since the first row; find the first row's time and the
    first served request's."""
    if reading.first is None:
        reading.first = t[0]
    if reading.ref is None and served.any():
        at = int(np.argmax(served))
        reading.ref, reading.served_row = t[at], first + at
    seconds = _since(t, reading.first)
    gaps = int(np.count_nonzero(seconds[1:] > seconds[:-1]))
    seam = reading.rows > 0 and seconds[0] > reading.last_since_first
    reading.positive += gaps + int(seam)
    reading.last_since_first = float(seconds[-1])
    reading.previous = t[-1]
    failed = int(np.count_nonzero(~served))
    if failed and reading.first_dropped is None:
        reading.first_dropped = first + int(np.argmax(~served))
    reading.rows += len(t)
    reading.dropped += failed
    reading.kept_count += len(t) - failed


def _count_totals(totals: _Totals, raw: pd.DataFrame, inp: np.ndarray, out: np.ndarray,
                  served: np.ndarray, first: int) -> None:
    """Count a chunk's served rows whose Total tokens is not the sum, keeping the first."""
    count, at, shown = totals_mismatch(raw, inp, out, served)
    if count and totals.first is None:
        totals.first = (first + at, shown, int(inp[at]), int(out[at]))
    totals.count += count


def _model_keys(reading: _Reading, raw: pd.DataFrame, served: np.ndarray) -> np.ndarray | None:
    """The model key of each served row of a chunk (None without a Model column)."""
    if MODEL not in raw.columns:
        return None
    cells = raw[MODEL]
    if pd.api.types.is_numeric_dtype(cells.dtype) and not cells.isna().all():
        raise _Unsuited  # numbers here may be text in the whole column
    reading.models = reading.models or _Models()
    return reading.models.add(cells[served].reset_index(drop=True))


def _part(reading: _Reading) -> Part:
    """The window's table and the whole read's notes."""
    rows, t, inp, out, keys = (_joined(column) for column in reading.kept)
    table = canonical.build(rows, t, inp, out)
    notes = [*(reading.column_notes or []), *_unit_notes(reading), *_coarse(reading, t)]
    totals = reading.totals
    if totals.count:
        notes += totals_note(totals.count, reading.kept_count, *totals.first)
    if reading.dropped:
        begin = float(_since(np.array([reading.ref]), reading.first)[0])
        notes += dropped_notes(reading.dropped, reading.rows, reading.first_dropped,
                               reading.served_row, begin, SERVED_LABELS["burstgpt"])
    models = reading.models
    if models is not None and noted_models(models.shown):
        mix = ModelMix(keys.astype(np.min_scalar_type(len(models.shown) - 1)), models.shown)
        notes += [mix] if mix else []
    return Part(table, notes, (0.0, reading.last), "burstgpt")


def _coarse(reading: _Reading, t: np.ndarray) -> list[str]:
    """The whole file's coarse note (:func:`tiersim.trace.units.coarse_note`) as a note on the
    window's arrivals ``t``, which the loader says of the rows the window keeps; a file whose
    times are tied enough but on no whole unit is :class:`_Unsuited` (its note needs the
    median gap between instants)."""
    count = reading.kept_served
    if count < 2 or not units.tied_enough(reading.tied, count):
        return []
    unit = next((name for (name, _), whole in zip(units.COARSE_UNITS, reading.whole,
                                                  strict=True) if whole), None)
    if unit is None:
        raise _Unsuited
    return [units.CoarseNote(units.coarse_words(TIME, reading.tied, count, unit), TIME, t)]


def _unit_notes(reading: _Reading) -> list[str]:
    """The notes on the Timestamp's unit (:func:`formats._seconds`), from the first time and
    the count of positive gaps: a span over a day whose gaps are not surely short is
    :class:`_Unsuited` (its note needs the median gap)."""
    if reading.rows < 2:
        return []
    epoch = units.epoch_note(TIME, np.array([reading.first, reading.first]), "seconds")
    if epoch:
        return epoch
    span = reading.last_since_first
    if span <= units.SLOW_SPAN_S or units.gaps_counted_short(reading.positive, span,
                                                              units.SLOW_GAP_S):
        return []
    raise _Unsuited
