"""Load a trace file of any supported format into the canonical request table.

``load_trace`` reads the file, recognises its format from the columns (or takes the named one),
checks every column it uses, then applies the time window and the time scale. Loud changes
(e.g. BurstGPT's failed requests dropped) are emitted as :class:`TraceWarning`;
:func:`read_trace` returns them with the table, in its :class:`TraceOrigin` (the format, the
notes, and where the table's rows sit in the file, for errors found later). Nothing travels in
``df.attrs``. Length-only files (token lengths without arrival times) are not traces:
``load_trace`` refuses them and ``load_lengths`` reads them for synthetic arrivals.
"""

from __future__ import annotations

import math
import unicodedata
import warnings
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from tiersim.errors import TraceError, escaped, shown
from tiersim.trace import canonical, checks, chunked, units, windowed, windowed_burstgpt
from tiersim.trace.filecheck import Source, open_checked
from tiersim.trace.formats import (
    FORMATS,
    LENGTH_COLUMNS,
    ModelMix,
    arrival_lookalikes,
    columns_left_out,
    columns_used,
    complete_formats,
    detect,
    expected_columns,
    file_columns,
    is_length_only,
    is_trace_column,
    shown_name,
    token_renames,
    unread_note,
)
from tiersim.trace.read_parquet import (
    parquet_columns,
    parquet_rows,
    parquet_selection,
    parquet_source,
)
from tiersim.trace.source import read_raw

FORMAT_NAMES = ("auto", *FORMATS)
TIME_SCALE_RANGE = (1e-3, 1e3)
"""Accepted time scales (the scenario's ``trace.time_scale`` has the same bounds)."""
MAX_SPAN_S = 1e9
"""Longest span of arrival times accepted (about 31.7 years: more is a wrong time unit)."""

LENGTHS_FIX = ("use it with synthetic arrivals: write tiersim.workload.synthetic.poisson_arrivals"
               "(tiersim.trace.load_lengths(path), rate_rps, numpy.random.default_rng(seed))"
               ".to_parquet(FILE) and name FILE as the scenario's trace.path, or give its "
               "lengths a logged trace's arrival times (tiersim/traces/README.md, \"Token "
               "lengths at a logged trace's arrival times\")")


AGENTIC_DOC = "docs/agentic.md in tiersim's source repository"
"""Where the session notes send the reader (an installed wheel holds no docs/ folder)."""


class TraceWarning(UserWarning):
    """A trace was loaded with a deliberate, reported change (e.g. rows dropped)."""


SESSION_COLUMNS = ("session_id", "step")
"""The columns that make a table's rows the steps of agentic sessions (docs/agentic.md)."""


@dataclass(frozen=True)
class TraceOrigin:
    """Where a loaded table came from: the file, its format, the loader's notes, and how table
    rows map to the file (``first_row``: the file data row of table row 0, 0-based, after a
    window; ``header_lines``: lines before the data, None for binary files; ``rows``: the file
    data row of every table row, 0-based, when a window kept rows that are not one run of the
    file, i.e. whole sessions, else None; ``arrivals``: the first and last arrival of the whole
file (of a session trace, of its sessions' first steps), in the seconds a window is given in,
before any window and time scale (of an Azure CSV whose read stopped at a window's end,
:mod:`tiersim.trace.windowed`, the last is the last read, at or past the window's end);
``step_types``:
the ``step_type`` values of the whole file, before any window, or None without the column)."""

    path: str
    format: str
    notes: tuple[str, ...] = ()
    first_row: int = 0
    header_lines: int | None = None
    rows: np.ndarray | None = field(default=None, compare=False, repr=False)
    arrivals: tuple[float, float] | None = None
    step_types: frozenset[str] | None = None
    skipped: tuple[int, int, int] | None = None
    """``trace.skip_longer_than``'s tokens, the requests it left out and those read, or None
    without the key (set by :func:`tiersim.inputs.skip_longer`)."""
    session_names: tuple[str, ...] | None = None
    """A text ``session_id`` column's ids as the file writes them (stripped), the one tiersim
    numbered k at place k (:func:`tiersim.trace.canonical.session_names`), so a session's
    errors name it so; None where the ids are numbers."""

    def session(self, number: int) -> str:
        """Session ``number`` as an error names it: its text id as the file writes it
        (quoted, cut to 40 characters), else the number."""
        names = self.session_names
        if names is None or not 0 <= number < len(names):
            return str(number)
        return shown_name(names[number])

    def row(self, index: int) -> int:
        """The file's 1-based data row of 0-based table row ``index``, as :meth:`error` names
        it."""
        return int(self.rows[index]) + 1 if self.rows is not None else self.first_row + index + 1

    def error(self, message: str, index: int | None, column: str | None = None) -> TraceError:
        """A one-line TraceError at 0-based table row ``index``, named as the file's row."""
        if self.rows is not None and index is not None:
            return Source(self.path, self.header_lines).error(message, int(self.rows[index]),
                                                              column)
        return Source(self.path, self.header_lines, self.first_row).error(message, index, column)


@dataclass(frozen=True)
class LoadedTrace:
    """A canonical request table and its :class:`TraceOrigin`."""

    table: pd.DataFrame
    origin: TraceOrigin


def load_trace(path: str | Path, format: str = "auto", window: tuple[float, float] | None = None,
               time_scale: float = 1.0) -> pd.DataFrame:
    """The canonical table of a trace (:func:`read_trace` without the origin)."""
    return read_trace(path, format, window, time_scale).table


def read_trace(path: str | Path, format: str = "auto", window: tuple[float, float] | None = None,
               time_scale: float = 1.0, sessions: bool = True,
               raw: tuple[pd.DataFrame, Source] | None = None,
               keep: Collection[str] | None = None) -> LoadedTrace:
    """Read a trace into the canonical table (see :mod:`tiersim.trace.canonical`).

    ``format``: one of ``auto, azure, burstgpt, mooncake, canonical``. ``window=(start_s,
    end_s)`` keeps requests with ``start_s <= t < end_s``, t in seconds since the trace's first
    request (``end_s`` may be None for no end), or, for a table of agentic sessions (it has
    ``session_id`` and ``step``, unless ``sessions`` is False: the run does not replay them as
    sessions), whole sessions whose first step is inside (see :func:`window_rows`); the window
    start becomes time 0. Then
    ``time_scale`` divides arrival times: 2.0 replays at twice the load. Azure, BurstGPT and
    Mooncake times become seconds since the first request; a canonical file keeps its own
    ``arrival_s`` (which must be >= 0 and sorted). Bad input raises
    :class:`tiersim.errors.TraceError` naming file, row (1-based data row) and column; so
    does a trace too big for the memory the process may use (a 10^8-row Parquet file of 1.9 MB
    under ``ulimit -v``: numpy's MemoryError ended the command in a traceback). ``raw``: the
    file already read by :func:`tiersim.trace.source.names_and_raw` (a JSONL file read whole
    to find its column names), converted instead of reading the file again. ``keep``: the
    columns beyond the canonical ones that the caller reads (a response cache's key: carried,
    and not noted as used by nothing); a canonical file's other columns are then read from a
    CSV as categories, and left out of a Parquet file's table, never decoded (noted from its
    schema alone); None: they are carried in the table.
    """
    try:
        return _read_trace(path, format, window, time_scale, sessions, raw, keep)
    except MemoryError as err:
        raise TraceError(str(path), f"reading this trace ran out of memory ({err}); read it "
                         "where the process may use more memory (ulimit -v, a container's "
                         "limit), or cut it to the rows you need") from None


def _read_trace(path: str | Path, format: str, window: tuple[float, float] | None,
                time_scale: float, sessions: bool, raw, keep) -> LoadedTrace:
    """:func:`read_trace`, memory permitting."""
    part = _window_part(path, format, window, keep)
    if part is not None:
        table, src, name, notes = part.table, Source(str(path), 1), part.format, part.notes
        arrivals = part.arrivals
    else:
        table, src, name, notes = _read_converted(path, format, raw, keep)
        arrivals = _whole_arrivals(table, sessions)
    # kept in the origin, not the table (pandas writes attrs into a Parquet file it writes)
    names = table.attrs.pop(canonical.SESSION_NAMES, None)
    t = table["arrival_s"].to_numpy()
    step_types = _step_types(table)
    if name == "canonical":  # of the whole file (a Parquet file's chunks are converted apart)
        notes = [*notes, *units.seconds_note("arrival_s", t)]
    if sessions:
        notes = [*_tool_s_unit(notes, table), *_half_sessions_note(table),
                 *_root_tool_note(table, name)]
    rows = None
    if window is not None:
        if part is None:
            _check_span_past_window(table, window, src, name)
        rows, window_notes = window_rows(table, window, src, sessions)
        table = _keep(table, rows, window, src)
        notes = [*notes, *window_notes]
    notes = [text for note in notes for text in (
        note.within(rows) if isinstance(note, ModelMix | units.CoarseNote) else [note])]
    notes = [*units.unfollowed(notes, time_scale), *_late_start(table, window, time_scale),
             *_early_end(table, window, time_scale)]
    data = _file_rows(table, name, rows)
    origin = TraceOrigin(src.path, name, tuple(notes), 0 if data is None else int(data[0]),
                         src.header_lines, None if data is None or _one_run(data) else data,
                         arrivals, step_types, session_names=names)
    _check_span(table, src, origin, window is not None)
    table = apply_time_scale(table, time_scale, src)
    _check_scaled_span(table, time_scale, src)
    for note in notes:
        warnings.warn(f"{src.path}: {note}", TraceWarning, stacklevel=4)
    return LoadedTrace(table, origin)


def _window_part(path: str | Path, format: str, window: tuple[float, float] | None,
                 keep: Collection[str] | None = None) -> windowed.Part | None:
    """The requests of an Azure or BurstGPT CSV that ``window`` holds, read a chunk at a time
    (an Azure CSV's no further than the window's end: :mod:`tiersim.trace.windowed`,
    :mod:`tiersim.trace.windowed_burstgpt`); None where the file is read whole, as is a CSV
    holding a column of ``keep`` (those readers carry no column beyond their format's)."""
    reader = next((module for module in (windowed, windowed_burstgpt)
                   if module.suits(path, format)), None)
    header = windowed.columns_read_as(path, "auto", "auto") if reader and keep else None
    if reader is None or set(keep or ()) & set(header or ()):
        return None
    bounds = None if window is None else _window_bounds(window, Source(str(path), 1))
    return reader.read(path, bounds)


def _whole_arrivals(table: pd.DataFrame, sessions: bool) -> tuple[float, float]:
    """The first and last arrival of the whole table, as a window selects rows by them: of a
    table of agentic sessions (read as sessions), its sessions' first steps' (a later step's
    logged ``arrival_s`` is not when it is replayed, so a window cut to it counted empty
    time)."""
    if sessions and set(SESSION_COLUMNS) <= set(table.columns):
        begins = _session_starts(table)
        return float(begins.min()), float(begins.max())
    t = table["arrival_s"].to_numpy()
    return float(t[0]), float(t[-1])


SESSION_ONLY_COLUMNS = ("session_id", "step", "parent", "tool_s")
"""The columns that mean something only in a session trace (``step_type`` routes requests of
a plain trace too)."""


def _half_sessions_note(table: pd.DataFrame) -> list[str]:
    """A note when a table has session columns (:data:`SESSION_ONLY_COLUMNS`) but not both
    :data:`SESSION_COLUMNS`: its rows are replayed alone, and its ``parent`` and ``tool_s``
    are not used (they were dropped without a word)."""
    named = [c for c in SESSION_ONLY_COLUMNS if c in table.columns]
    missing = [c for c in SESSION_COLUMNS if c not in table.columns]
    if not named or not missing:
        return []
    return [f"column(s) {', '.join(named)} describe agentic sessions, but the trace has no "
            f"{' and '.join(missing)} (a session trace needs both session_id and step): every "
            "row is replayed as an independent request at its own arrival_s; add the missing "
            f"column(s) to replay sessions ({AGENTIC_DOC})"]


def _tool_s_unit(notes: list[str], table: pd.DataFrame) -> list[str]:
    """``notes`` with each unit note advising a ``time_scale`` above 1 (arrivals that look
    1000 times finer than read) saying, on a session trace with tool time, that time_scale
    leaves ``tool_s`` as it is: a trace logged in milliseconds throughout waited 5,000 s per
    tool call once the advice was followed."""
    if not {*SESSION_COLUMNS, "tool_s"} <= set(table.columns):
        return notes
    if not (checks.to_floats(table["tool_s"]) > 0).any():
        return notes
    return [units.UnitNote(f"{note}; time_scale does not rescale tool_s, so if it is logged in "
                           "arrival_s's unit, write it in seconds", note.scale)
            if isinstance(note, units.UnitNote) and note.scale > 1 else note for note in notes]


def _root_tool_note(table: pd.DataFrame, name: str) -> list[str]:
    """A note when a session trace gives ``tool_s`` above 0 to steps that follow none (a
    ``parent`` of -1 or empty; without the column, each session's lowest step): a step's
    tool_s is the time before it, from its predecessor's finish, so theirs is not read. A file
    giving each step the tool time after it (the call it makes) has one on every first step,
    and each later step would wait its predecessor's tool time (it was read without a word)."""
    if not {*SESSION_COLUMNS, "tool_s"} <= set(table.columns):
        return []
    if "parent" in table.columns:
        parent = checks.to_floats(table["parent"])
        roots = np.isnan(parent) | (parent == -1)
    else:
        steps = table["step"].to_numpy(np.int64)
        lowest = table.groupby("session_id", sort=False)["step"].transform("min").to_numpy()
        roots = steps == lowest
    tool = checks.to_floats(table["tool_s"])
    timed = roots & (tool > 0)
    i = checks.first_true(timed)
    if i is None:
        return []
    data = _file_rows(table, name, None)
    row = (i if data is None else int(data[i])) + 1
    return [f"tool_s is above 0 on {int(timed.sum()):,} of {int(roots.sum()):,} steps that "
            f"follow none (first at row {row}, {checks.show_number(tool[i])} s): a step's "
            "tool_s is the time from its predecessor's finish to its own arrival, so such a "
            "step's is not read; if the file gives each step the tool time after it, move each "
            f"session's tool_s down one step ({AGENTIC_DOC})"]


def _file_rows(table: pd.DataFrame, name: str, rows: np.ndarray | None) -> np.ndarray | None:
    """The file's 0-based data row of every row of a loaded ``table`` of format ``name``
    (None: the table's rows are the file's, in order): a logged format's ``request_id``,
    which its converter sets to the data row (BurstGPT drops its failed requests, so its
    table rows are not the file's); a canonical table's rows a window kept (``rows``)."""
    if name != "canonical":
        return table["request_id"].to_numpy(np.int64)
    return rows


def _step_types(table: pd.DataFrame) -> frozenset[str] | None:
    """The ``step_type`` values a table holds (None without the column)."""
    if "step_type" not in table.columns:
        return None
    return frozenset(canonical.distinct_text(table["step_type"].dropna()))


def _read_converted(path: str | Path, format: str, given=None,
                    keep=None) -> tuple[pd.DataFrame, Source, str, list]:
    """The file's canonical table, its source, format name and notes (``given``: the file's
    :func:`read_raw` result, where the caller has it; ``keep``: as :func:`read_trace`'s).

    A canonical Parquet file is read a row group at a time (:mod:`tiersim.trace.chunked`:
    bounded memory for traces of millions of rows); any other file is read whole first. The
    columns the converter does not read (:func:`columns_used`) are not read at all from a
    Parquet file, nor from a logged format's CSV, but for its own (:func:`columns_left_out`:
    BurstGPT's ``Log Type``) and those read for a note, which a CSV reads as categories.
    """
    parquet = open_checked(path) == "parquet"

    def used(columns: list[str]) -> set[str] | None:
        return columns_used(columns, format, keep, decoded=parquet)

    def left_out(columns: list[str]) -> set[str]:
        return columns_left_out(columns, format, keep)

    if parquet:
        columns, rows = parquet_columns(Path(path)), parquet_rows(Path(path))
        src = Source(str(path), None, typed=True)
        name = _choose_format(columns, rows, src, format)
        if name == "canonical":
            src = replace(parquet_source(Path(path), parquet_selection(Path(path), used)[1]),
                          kept=tuple(keep or ()))
            convert = FORMATS[name].convert
            table, notes = chunked.read_canonical(Path(path), src, convert, rows, used=used)
            _check_whole_table(table, src, name, "prefix_hashes")
            return table, src, name, notes
    raw, src = given or read_raw(path, used, left_out)
    src = replace(src, kept=tuple(keep or ()))
    name = _choose_format(list(raw.columns), len(raw), src, format)
    table, notes = FORMATS[name].convert(raw, src)
    own = name == "mooncake" and "hash_ids" in raw.columns
    _check_whole_table(table, src, name, "hash_ids" if own else "prefix_hashes")
    return table, src, name, notes


def _check_whole_table(table: pd.DataFrame, src: Source, name: str, column: str) -> None:
    """The checks that compare rows far apart, on the whole table (after a Parquet trace's
    chunks are joined): each prefix hash id at one place (:func:`canonical.check_hash_places`;
    ``column``: the file's name for the hashes) and one length per prompt hash
    (:func:`canonical.check_prompt_lengths`). A logged format's table rows are its file's
    data rows ``request_id`` (BurstGPT drops failed ones); a canonical table's are the file's,
    in order."""
    rows = None if name == "canonical" else table["request_id"].to_numpy(np.int64)
    where = replace(src, rows=rows)
    if "prefix_hashes" in table.columns:
        canonical.check_hash_places(where, table["prefix_hashes"].to_numpy(), column)
    if "prompt_hash" in table.columns:
        canonical.check_prompt_lengths(where, table["prompt_hash"],
                                       table["input_tokens"].to_numpy(np.int64))


def _check_span(table: pd.DataFrame, src: Source, origin: TraceOrigin,
                windowed: bool = False) -> None:
    """Refuse arrival times beyond MAX_SPAN_S after time 0 (the first request, the window start,
    or a canonical file's own 0): 1e300 would make every rate and cost absurd. ``origin`` maps
    the table's rows (after a window) to the file's."""
    t = table["arrival_s"].to_numpy()
    late = np.flatnonzero(t > MAX_SPAN_S)
    if not len(late):
        return
    # canonical rows are dropped by a window only; the other formats' request_id is the data row
    name = origin.format
    canonical = name == "canonical"
    zero = ("the window start" if windowed else "time 0" if canonical else
            "the first request")
    fix = "check the time unit"
    if canonical and not windowed and float(t[-1] - t[0]) <= MAX_SPAN_S:
        fix = ("canonical arrival_s are seconds from the trace's start: subtract the first "
               f"arrival from every row, or set {_window_hint(t)}")
    message = (f"arrival {float(t[late[0]]):.15g} s is more than {MAX_SPAN_S:.0e} s "
               f"(31 years) after {zero}; {fix}")
    if canonical:
        raise origin.error(message, int(late[0]), "arrival_s")
    raise src.error(message, int(table["request_id"].iloc[late[0]]) - src.first_row,
                    FORMATS[name].required[0])


def _check_span_past_window(table: pd.DataFrame, window, src: Source, name: str) -> None:
    """Refuse, in a trace read whole, an arrival more than MAX_SPAN_S after the window start,
    inside the window or past it, naming its row, as :func:`_check_span` refuses one without
    a window (and a session trace's step past the window): a row of 1e300 s past a window of
    [0, 10] was read without a word but a note advising ``time_scale: 1000``, its span printed
    as a 300-digit number of days. A file whose times are Unix seconds, windowed at them, still
    reads."""
    start, end = _window_bounds(window, src)
    t = table["arrival_s"].to_numpy()
    late = np.flatnonzero(t > start + MAX_SPAN_S)
    if not len(late):
        return
    i = int(late[0])
    message = (f"arrival {float(t[i] - start):.15g} s is more than {MAX_SPAN_S:.0e} s (31 years) "
               f"after the window start; {_past_window_fix(t, start, end, name)}")
    if name == "canonical":
        raise Source(src.path, src.header_lines, src.first_row).error(message, i, "arrival_s")
    raise src.error(message, int(table["request_id"].iloc[i]) - src.first_row,
                    FORMATS[name].required[0])


def _past_window_fix(t: np.ndarray, start: float, end: float, name: str) -> str:
    """The fix :func:`_check_span_past_window` gives: of a canonical file whose own arrivals
    span no more than MAX_SPAN_S (Unix seconds, say), the window shifted to its first arrival
    (a window is in the file's own ``arrival_s``; one of [0, 600] over Unix seconds was told
    to check the time unit, though its unit is right; round 56 said the window held none),
    as :func:`_check_span` says it without a window; else to check the time unit."""
    if name != "canonical" or float(t[-1] - t[0]) > MAX_SPAN_S:
        return "check the time unit"
    first = float(t[0])
    if math.isinf(end):
        hint = _window_hint(t)
    else:
        low, high = _number(first + start), _number(first + end)
        hint = f"trace.window: [{low}, {high}] (tiersim trace inspect: --window {low} {high})"
    return (f"a window is in the file's own arrival_s, which start at {_number(first)} s: set "
            f"{hint} for the same span from its first arrival, or subtract the first arrival "
            "from every row")


def _check_scaled_span(table: pd.DataFrame, time_scale: float, src: Source) -> None:
    """Refuse a ``time_scale`` below 1 that replays the last arrival beyond MAX_SPAN_S after
    time 0, as :func:`_check_span` refuses such a trace: beyond it the float64 clock's steps
    grow past a microsecond, and a few-millisecond decode step reads a percent off (at 1e12 s,
    4.406 ms read 4.395 ms)."""
    t = table["arrival_s"].to_numpy()
    if not len(t) or float(t[-1]) <= MAX_SPAN_S:
        return
    raw = float(t[-1]) * float(time_scale)
    least = raw / MAX_SPAN_S
    step = 10.0 ** (math.floor(math.log10(least)) - 2)  # rounded up at 3 significant digits
    scale = f"{math.ceil(least / step) * step:.3g}"
    raise TraceError(src.path, f"time_scale {time_scale:g} replays the last arrival, {raw:.6g} "
                     f"s, at {float(t[-1]):.6g} s, more than {MAX_SPAN_S:.0e} s (31 years) after "
                     "time 0, where the simulated clock loses its precision; set "
                     f"trace.time_scale to at least {scale} (tiersim trace inspect: --time-scale "
                     f"{scale}), or a trace.window of at most {MAX_SPAN_S * time_scale:.3g} s "
                     "(tiersim trace inspect: --window START END)")


MIN_LEAD_S = 60.0
"""Least empty time before the first request (as replayed) that :func:`_late_start` notes."""


def _late_start(table: pd.DataFrame, window, time_scale: float) -> list[str]:
    """A note when the replayed table's first request comes late: after more empty time than
    the arrivals' own span (more than half of the time replayed up to the last arrival holds
    no request) and at least :data:`MIN_LEAD_S` after time 0 (a canonical file's 0, or the
    window start), where the run, and the fleet's provisioned cost, start."""
    t = table["arrival_s"].to_numpy()
    first, span = float(t[0]), float(t[-1] - t[0])
    scale = float(time_scale) if isinstance(time_scale, int | float) and time_scale > 0 else 1.0
    if not (first > span and first / scale >= MIN_LEAD_S) or first > MAX_SPAN_S:
        return []
    zero = ("canonical arrival_s are seconds from the trace's start" if window is None else
            "the window start is time 0")
    offset = 0.0 if window is None else float(window[0])
    lead, total = first / scale, float(t[-1]) / scale
    return [f"the first request arrives at {lead:,.0f} s, but the run and its provisioned cost "
            f"start at 0 s ({zero}): {lead:,.0f} of the {total:,.0f} s replayed to the last "
            f"arrival ({lead / total:.0%}) hold no request and are billed; to start at the "
            f"first request set {_window_hint(t + offset)}"]


MIN_TAIL_S = 600.0
"""Least window time after the last request that :func:`_early_end` notes (a window a few
minutes past a short trace's end is a user's round number, not a misread span)."""


def _early_end(table: pd.DataFrame, window, time_scale: float) -> list[str]:
    """A note when ``window`` runs on well past the trace's last request (its requests all
    arrive in less than half of it): the run ends when they are served, so it replays the
    trace's span, not the window written (a report's provenance names the window, a user
    reading "0, 3600" would take the run for an hour of traffic)."""
    if window is None or time_scale != 1.0 or window[1] is None:
        return []  # an open end ([start, null]) is the trace's own end
    start, end = float(window[0]), float(window[1])
    last = float(table["arrival_s"].to_numpy()[-1])  # from the window's start
    if not math.isfinite(end) or last >= (end - start) / 2 or end - start - last < MIN_TAIL_S:
        return []
    return [f"trace.window [{_number(start)}, {_number(end)}] reaches past the trace's last "
            f"request, which arrives {last:,.0f} s into it: the run replays those "
            f"{last:,.0f} s of traffic (and their drain), not {end - start:,.0f} s"]


def _window_hint(t: np.ndarray) -> str:
    """The window from the first arrival of ``t`` to past its last, as a scenario setting and
    as the trace inspect option (the end is exclusive, so it is the last arrival + 1, rounded
    down to whole seconds)."""
    start, end = _number(float(t[0])), _number(float(math.floor(t[-1]) + 1))
    return f"trace.window: [{start}, {end}] (tiersim trace inspect: --window {start} {end})"


def _number(value: float) -> str:
    """A number as a person writes it back: whole numbers without a point, others exactly
    (``inf``: a window with no end)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def _choose_format(columns: list[str], rows: int, src: Source, format: str) -> str:
    """The format of a table with ``columns`` and ``rows`` data rows, checked."""
    if format not in FORMAT_NAMES:
        raise TraceError(src.path, f"unknown format {shown(format, 64)}; use one of "
                         f"{', '.join(FORMAT_NAMES)}")
    name = detect(columns) if format == "auto" else format
    if format == "auto":
        _one_format(columns, src)
        name = _in_another_case(columns) or name
    if is_length_only(columns) and (name is None or name == "canonical"):
        raise TraceError(src.path, "has token lengths but no arrival times" +
                         _arrival_hint(columns) + LENGTHS_FIX)
    if name is None or (detect(columns) is None and _in_another_case(columns) != name):
        # NOTE: not recognised as a table: its "columns" may be any text (/proc/self/environ),
        # so they are counted, never shown
        raise TraceError(src.path, f"not a trace: none of its {len(columns)} column name(s) "
                         f"{_no_format_columns(columns)}{_separator_hint(columns, src)}; "
                         f"expected {expected_columns()}")
    _require(src, columns, FORMATS[name].required, name)
    if rows == 0:
        raise TraceError(src.path, f"has no requests ({_only(src)}); add rows")
    return name


def _no_format_columns(columns: list[str]) -> str:
    """What a table that no format matches lacks, in words: a trace column, or, beside the
    trace columns it has (a request_id: splitwise-sim's trace was told it had none), a
    format's time or token column. Only names tiersim reads are shown (the file is not yet
    known to be a trace)."""
    known = [str(c) for c in columns if is_trace_column(str(c))]
    if not known:
        return "is a trace column"
    return (f"is a trace format's time or token column (its {', '.join(known[:5])} "
            f"{'is' if len(known) == 1 else 'are'} read only beside them)")


def _only(src: Source) -> str:
    """What a file of no rows holds, in words: a text file's header, a Parquet file's schema
    (it has no header: 'only a header' misled)."""
    return "only a schema" if src.header_lines is None else "only a header"


def _arrival_hint(columns: list[str]) -> str:
    """The words between "has token lengths but no arrival times" and the fix: a column that
    may be the arrival times misnamed (:func:`arrival_lookalikes`), or an ``arrival_s`` beside
    Sarathi/Vidur token columns, is named, with the renames that make the file a trace."""
    tokens = token_renames(columns)
    if "arrival_s" in columns and tokens:  # Vidur's token names beside canonical arrivals
        return (": its arrival_s is read beside input_tokens and output_tokens only; rename "
                f"{tokens} to replay the file as a trace, or ")
    close = arrival_lookalikes(columns)
    if not close:
        return "; "
    tokens = f", {tokens}" if tokens else ""
    return (f": no column is named arrival_s, but column {shown_name(close[0])} (arrival_s?) "
            f"may hold them; rename it arrival_s (seconds from the trace's start){tokens} to "
            "replay the file as a trace, or ")


SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "bars"}
"""Separators other than the comma that a one-column CSV header may hold."""


def _separator_hint(columns: list[str], src: Source) -> str:
    """For a CSV whose header reads as one column holding another separator (a trace saved
    with ``;`` or tabs), the words saying so (the header's text is not shown: the file is not
    yet known to be a trace); else nothing."""
    if src.header_lines != 1 or len(columns) != 1:
        return ""
    found = [words for mark, words in SEPARATORS.items() if mark in columns[0]]
    if not found:
        return ""
    return (f" (its header is one column holding {found[0]}: a trace CSV is separated by "
            "commas; save it with commas)")


def _one_format(columns: list[str], src: Source) -> None:
    """Refuse a table that has every required column of two or more formats: which one it is
    cannot be known, and reading it as either would silently drop the other's columns."""
    names = complete_formats(columns)
    if len(names) > 1:
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        raise TraceError(src.path, f"has every required column of the {listed} formats, so "
                         "which one it is cannot be known; name it: trace.format in the "
                         "scenario (tiersim trace inspect: --format)")


OWNERS = {"azure": "Azure's", "burstgpt": "BurstGPT's", "mooncake": "Mooncake's",
          "canonical": "the canonical table's"}
"""Each format's name in "these columns are ...'s" (a wrong format named)."""


def _require(src: Source, columns: list[str], required: tuple[str, ...], name: str) -> None:
    """Refuse a table without one of ``name``'s required columns, saying which format the
    columns are when they are another's every required column."""
    for col in required:
        if col not in columns:
            raise TraceError(src.path, f"missing column for the {name} format (found: "
                             f"{_names(columns)}); {_format_fix(columns, name)}", column=col)


def _in_another_case(columns: list[str]) -> str | None:
    """The one format whose required columns are all among ``columns`` in another case or with
    invisible characters (a lower-cased BurstGPT header, a second byte-order mark), when no
    format's are as spelled; else None (a lower-cased BurstGPT header was read as a Mooncake
    trace, by its ``timestamp``)."""
    if complete_formats(columns):
        return None
    folded = {_folded(c) for c in columns}
    found = [name for name, f in FORMATS.items()
             if {c.casefold() for c in f.required} <= folded]
    return found[0] if len(found) == 1 else None


def _case_renames(columns: list[str], name: str) -> list[tuple[str, str]]:
    """The columns that differ from a required column of format ``name`` only in case or
    spacing, each with the required name: ``[("contexttokens", "ContextTokens")]``."""
    missing = [c for c in FORMATS[name].required if c not in columns]
    return [(c, want) for want in missing for c in columns
            if _folded(c) == want.casefold()]


def _folded(name) -> str:
    """A column name without case, outer spaces or invisible format characters (a second
    byte-order mark, a zero-width space), as :func:`_in_another_case` compares names."""
    text = "".join(ch for ch in str(name) if unicodedata.category(ch) != "Cf")
    return text.strip().casefold()


def _format_fix(columns: list[str], name: str) -> str:
    """How to read a table whose columns are not ``name``'s: the format they are, if any, or,
    where every required column of ``name`` is there in another case or spacing, those
    columns."""
    others = [other for other in complete_formats(columns) if other != name]
    if len(others) == 1:
        other = others[0]
        return (f"these columns are {OWNERS[other]}: set trace.format: {other} or auto (tiersim "
                f"trace inspect: --format {other})")
    renames = _case_renames(columns, name) if _in_another_case(columns) == name else []
    if renames:
        shown = ", ".join(f"'{escaped(c)}' ({want})" for c, want in renames)  # as found: lists
        if len(renames) == 1:
            return (f"column {shown} differs only in case or invisible characters: rename it "
                    "as the format spells it")
        return (f"columns {shown} differ only in case or invisible characters: rename them as "
                "the format spells them")
    return "add it or name the right format"


def _names(columns: list[str], most: int = 20, longest: int = 40) -> str:
    """Column names for a message: at most ``most`` of them, each cut to ``longest`` chars,
    control characters escaped (the names are the file's text)."""
    shown = [escaped(c if len(c) <= longest else c[:longest - 3] + "...")
             for c in columns[:most]]
    more = f", ... ({len(columns) - most} more)" if len(columns) > most else ""
    return ", ".join(shown) + more


def apply_window(table: pd.DataFrame, window, src: Source) -> pd.DataFrame:
    """The rows :func:`window_rows` keeps, arrivals shifted so the window starts at 0."""
    return _keep(table, window_rows(table, window, src)[0], window, src)


def window_rows(table: pd.DataFrame, window, src: Source,
                sessions: bool = True) -> tuple[np.ndarray, list[str]]:
    """The 0-based table rows a window keeps, in order, and notes on what it changed.

    A plain table keeps ``start <= arrival_s < end``. A table of agentic sessions
    (:data:`SESSION_COLUMNS`) keeps whole sessions whose first step (lowest ``step``) arrives
    inside: a later step arrives when its predecessor finishes, whatever its logged
    ``arrival_s``, so cutting by each row's time would serve a later step as its session's
    first, with the wrong prompt. With ``sessions`` False (the run replays every row at its
    own ``arrival_s``: ``workload.sessions.source`` off or generate) it is a plain table.
    """
    start, end = _window_bounds(window, src)
    t = table["arrival_s"].to_numpy()
    if not sessions or not set(SESSION_COLUMNS) <= set(table.columns):
        lo, hi = np.searchsorted(t, start, "left"), np.searchsorted(t, end, "left")
        if lo >= hi:
            raise TraceError(src.path, _selects_nothing(t, start, end))
        return np.arange(lo, hi), []
    begins = _session_starts(table)
    rows = np.flatnonzero((begins >= start) & (begins < end))
    if not len(rows):
        raise TraceError(src.path, _selects_nothing(np.unique(begins), start, end, sessions=True))
    return rows, _session_window_notes(t, rows, start, end)


def _selects_nothing(t: np.ndarray, start: float, end: float, sessions: bool = False) -> str:
    """Why the window ``[start, end)`` keeps none of the arrivals ``t`` (sorted) and the fix;
    with ``sessions``, ``t`` are a session trace's first steps' arrivals (a window keeps whole
    sessions by them), worded so, in the same shape.

    The span is written as ``tiersim trace inspect`` prints it (``3,501.7 s``; a session
    trace's span is its first steps'), exactly where that rounding would seem to reach the
    window's start; a window that falls in a gap between two requests (sessions' starts) names
    the gap's ends exactly, as the window is shown. Before, a session trace's line gave no fix
    and every digit of its starts ("...; the sessions start from 0 to 3501.72 s")."""
    last = float(t[-1]) if len(t) else 0.0
    span = f"{last:,.1f}"
    if last < start <= round(last, 1):
        span = _number(last)
    window = f"window {_shown(start, end)} s"
    if sessions:
        first = float(t[0])
        head = (f"{window} holds no session's first step (a window keeps whole sessions by "
                f"their first step's arrival): the sessions start from "
                f"{'0' if first == 0 else format(first, ',.1f')} to {span} s")
        gap = "no session starting"
    else:
        head, gap = f"{window} selects no requests: the trace spans 0 to {span} s", "no request"
    if start > last:
        return f"{head}; choose a window inside 0 - {span} s"
    after = int(np.searchsorted(t, start, "left"))
    before = float(t[after - 1]) if after else 0.0
    return (f"{head}, with {gap} from {_number(before)} to {_number(float(t[after]))} s; "
            "choose a window that holds one")


def _shown(start: float, end: float) -> str:
    """A window ``[start, end)`` with every digit of its ends (:func:`_number`): to 6 digits, a
    window just past a request at 4 s read [4, 5) and seemed to hold it."""
    return f"[{_number(start)}, {_number(end)})"


def _session_starts(table: pd.DataFrame) -> np.ndarray:
    """Each row's session start: the logged arrival of its session's lowest step."""
    session = pd.factorize(table["session_id"])[0]  # 0, 1, ... in order of first appearance
    order = np.lexsort((table["step"].to_numpy(), session))
    heads = order[np.r_[True, session[order][1:] != session[order][:-1]]]  # one per session
    return table["arrival_s"].to_numpy()[heads][session]


def _session_window_notes(t: np.ndarray, rows: np.ndarray, start: float,
                          end: float) -> list[str]:
    """A note when keeping whole sessions differs from cutting by each row's arrival."""
    inside = (t >= start) & (t < end)
    kept = np.zeros(len(t), dtype=bool)
    kept[rows] = True
    dropped, added = int((inside & ~kept).sum()), int((kept & ~inside).sum())
    if not dropped and not added:
        return []
    parts = []
    if dropped:
        parts.append(f"{dropped:,} step(s) logged inside it belong to sessions that start "
                     "outside it and are dropped")
    if added:
        parts.append(f"{added:,} later step(s) logged outside it are kept")
    return [f"window {_shown(start, end)} s keeps whole sessions by their first step's "
            f"arrival: {'; '.join(parts)}"]


def _keep(table: pd.DataFrame, rows: np.ndarray, window, src: Source) -> pd.DataFrame:
    """``rows`` of ``table`` with arrivals shifted so the window starts at 0 (a later session
    step logged before the window start is kept at 0: its own arrival is not used)."""
    start, _ = _window_bounds(window, src)
    out = table.iloc[rows[0]:rows[-1] + 1] if _one_run(rows) else table.iloc[rows]
    out = out.reset_index(drop=True)
    out["arrival_s"] = np.maximum(out["arrival_s"].to_numpy() - start, 0.0)
    return out


def _one_run(rows: np.ndarray) -> bool:
    """Whether increasing table ``rows`` are one run of consecutive rows."""
    return int(rows[-1]) - int(rows[0]) + 1 == len(rows)


def _window_bounds(window, src: Source) -> tuple[float, float]:
    try:
        start, end = window
        start = float(start)
        end = math.inf if end is None else float(end)
    except (TypeError, ValueError):
        raise TraceError(src.path, f"window must be (start_s, end_s), got {window!r}") from None
    if not (0 <= start < end):
        raise TraceError(src.path, f"window must satisfy 0 <= start_s < end_s, got "
                         f"({start:g}, {end:g})")
    return start, end


def apply_time_scale(table: pd.DataFrame, time_scale: float, src: Source) -> pd.DataFrame:
    """Divide arrival times by ``time_scale`` (2.0 = twice the request rate); it must lie in
    [0.001, 1000] (a time scale of 1e-308 would send every arrival to infinity)."""
    low, high = TIME_SCALE_RANGE
    if not (isinstance(time_scale, int | float) and math.isfinite(time_scale)
            and low <= time_scale <= high):
        raise TraceError(src.path, f"time_scale must be a number from {low:g} to {high:g}, "
                         f"got {time_scale!r}")
    if time_scale != 1.0:
        table["arrival_s"] = table["arrival_s"].to_numpy() / float(time_scale)
    return table


def load_lengths(path: str | Path,
                 given: tuple[pd.DataFrame, Source] | None = None) -> pd.DataFrame:
    """Token lengths (``input_tokens``, ``output_tokens`` int32 > 0) of any trace or length file.

    Reads length-only files (``num_prefill_tokens``, ``num_decode_tokens``, as shipped by
    Vidur / Sarathi-Serve) and, for any full trace, its token columns without arrival times
    (``given``: the file's :func:`read_raw` result, as ``raw`` of :func:`read_trace`). Of a
    file with a pair of token columns, the other columns are not decoded from Parquet, and read
    as categories from CSV (:func:`_token_columns`).
    """
    raw, src = given or read_raw(path, _token_columns)
    columns = list(raw.columns)
    if set(LENGTH_COLUMNS) <= set(columns):
        _one_set_of_lengths(columns, src)
        inp_col, out_col = LENGTH_COLUMNS
    elif {"input_tokens", "output_tokens"} <= set(columns):
        inp_col, out_col = "input_tokens", "output_tokens"
    else:
        table = load_trace(path)
        return table[["input_tokens", "output_tokens"]].copy()
    if len(raw) == 0:
        raise TraceError(src.path, f"has no rows ({_only(src)}); add rows")
    lengths = pd.DataFrame({
        "input_tokens": checks.tokens(src, raw[inp_col], inp_col).astype(np.int32),
        "output_tokens": checks.tokens(src, raw[out_col], out_col).astype(np.int32),
    })
    for note in lengths_dropped_note(file_columns(raw, src)):  # a Parquet file's unread too
        warnings.warn(f"{src.path}: {note}", TraceWarning, stacklevel=2)
    return lengths


def lengths_dropped_note(columns: list[str]) -> list[str]:
    """The note naming the canonical optional columns (sessions, prefix hashes, labels ...) of
    a file :func:`load_lengths` reads, which it drops: it gives token lengths alone, for
    synthetic arrivals, and those drop sessions and prefix hashes as a resampled stream would
    fake them (:data:`tiersim.workload.synthetic.DROPPED`). They were dropped without a word."""
    return unread_note([c for c in columns if canonical.is_optional(c)],
                       "a file of token lengths gives its lengths alone, for synthetic arrivals "
                       "(tiersim.workload.synthetic), whose resampled rows would fake sessions "
                       "and prefix-cache hits")


def _token_columns(columns: list[str]) -> set[str] | None:
    """The columns :func:`load_lengths` reads of a file with ``columns`` (``used`` of
    :func:`read_raw`): its token length columns, where it holds a pair of them (both pairs, so
    that such a file is refused); None (all) for a file read as a trace."""
    tokens = {c for c in columns if c in (*LENGTH_COLUMNS, "input_tokens", "output_tokens")}
    pairs = (set(LENGTH_COLUMNS), {"input_tokens", "output_tokens"})
    return tokens if any(pair <= tokens for pair in pairs) else None


def _one_set_of_lengths(columns: list[str], src: Source) -> None:
    """Refuse a file of Sarathi/Vidur token lengths (:data:`LENGTH_COLUMNS`) that also holds
    ``input_tokens`` or ``output_tokens``: one pair was read and the other, with other numbers,
    dropped without a word."""
    also = [c for c in ("input_tokens", "output_tokens") if c in columns]
    if also:
        raise TraceError(src.path, f"holds token lengths twice, in {', '.join(LENGTH_COLUMNS)} "
                         f"and in {', '.join(also)}; keep one pair (which one holds the lengths "
                         "cannot be known)")


__all__ = ["FORMAT_NAMES", "SESSION_COLUMNS", "LoadedTrace", "TraceOrigin", "TraceWarning",
           "apply_time_scale", "apply_window", "lengths_dropped_note", "load_lengths",
           "load_trace", "read_trace", "window_rows"]
