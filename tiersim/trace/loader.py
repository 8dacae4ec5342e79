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
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tiersim.errors import TraceError
from tiersim.trace import checks, chunked
from tiersim.trace.formats import (
    FORMATS,
    LENGTH_COLUMNS,
    complete_formats,
    detect,
    expected_columns,
    is_length_only,
)
from tiersim.trace.source import (
    Source,
    open_checked,
    parquet_columns,
    parquet_rows,
    read_raw,
)

FORMAT_NAMES = ("auto", *FORMATS)
TIME_SCALE_RANGE = (1e-3, 1e3)
"""Accepted time scales (the scenario's ``trace.time_scale`` has the same bounds)."""
MAX_SPAN_S = 1e9
"""Longest span of arrival times accepted (about 31.7 years: more is a wrong time unit)."""

LENGTHS_FIX = ("use it with synthetic arrivals: tiersim.workload.synthetic.poisson_arrivals"
               "(tiersim.trace.load_lengths(path), rate_rps, rng)")


class TraceWarning(UserWarning):
    """A trace was loaded with a deliberate, reported change (e.g. rows dropped)."""


@dataclass(frozen=True)
class TraceOrigin:
    """Where a loaded table came from: the file, its format, the loader's notes, and how table
    rows map to the file (``first_row``: the file data row of table row 0, 0-based, after a
    window; ``header_lines``: lines before the data, None for binary files)."""

    path: str
    format: str
    notes: tuple[str, ...] = ()
    first_row: int = 0
    header_lines: int | None = None

    def error(self, message: str, index: int | None, column: str | None = None) -> TraceError:
        """A one-line TraceError at 0-based table row ``index``, named as the file's row."""
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
               time_scale: float = 1.0) -> LoadedTrace:
    """Read a trace into the canonical table (see :mod:`tiersim.trace.canonical`).

    ``format``: one of ``auto, azure, burstgpt, mooncake, canonical``. ``window=(start_s,
    end_s)`` keeps requests with ``start_s <= t < end_s``, t in seconds since the trace's first
    request (``end_s`` may be None for no end); the window start becomes time 0. Then
    ``time_scale`` divides arrival times: 2.0 replays at twice the load. Azure, BurstGPT and
    Mooncake times become seconds since the first request; a canonical file keeps its own
    ``arrival_s`` (which must be >= 0 and sorted). Bad input raises
    :class:`tiersim.errors.TraceError` naming file, row (1-based data row) and column.
    """
    table, src, name, notes = _read_converted(path, format)
    first_row = 0
    if window is not None:
        first_row = window_start_row(table, window, src)
        table = apply_window(table, window, src)
    elif name == "canonical":
        notes = [*notes, *_late_start(table)]
    _check_span(table, src, name, first_row, window is not None)
    table = apply_time_scale(table, time_scale, src)
    for note in notes:
        warnings.warn(f"{src.path}: {note}", TraceWarning, stacklevel=3)
    return LoadedTrace(table, TraceOrigin(src.path, name, tuple(notes), first_row,
                                          src.header_lines))


def _read_converted(path: str | Path, format: str) -> tuple[pd.DataFrame, Source, str, list]:
    """The file's canonical table, its source, format name and notes.

    A canonical Parquet file is read a row group at a time (:mod:`tiersim.trace.chunked`:
    bounded memory for traces of millions of rows); any other file is read whole first.
    """
    if open_checked(path) == "parquet":
        columns, rows = parquet_columns(Path(path)), parquet_rows(Path(path))
        src = Source(str(path), None)
        name = _choose_format(columns, rows, src, format)
        if name == "canonical":
            convert = FORMATS[name].convert
            return chunked.read_canonical(Path(path), src, convert, rows), src, name, []
    raw, src = read_raw(path)
    name = _choose_format(list(raw.columns), len(raw), src, format)
    table, notes = FORMATS[name].convert(raw, src)
    return table, src, name, notes


def _check_span(table: pd.DataFrame, src: Source, name: str, first_row: int = 0,
                windowed: bool = False) -> None:
    """Refuse arrival times beyond MAX_SPAN_S after time 0 (the first request, the window start,
    or a canonical file's own 0): 1e300 would make every rate and cost absurd. ``first_row``: the
    file data row of table row 0 (after a window)."""
    t = table["arrival_s"].to_numpy()
    late = np.flatnonzero(t > MAX_SPAN_S)
    if not len(late):
        return
    # canonical rows are never dropped; the other formats' request_id is the data row
    canonical = name == "canonical"
    row = first_row + int(late[0]) if canonical else int(table["request_id"].iloc[late[0]])
    zero = ("the window start" if windowed else "time 0" if canonical else
            "the first request")
    fix = "check the time unit"
    if canonical and not windowed and float(t[-1] - t[0]) <= MAX_SPAN_S:
        fix = ("canonical arrival_s are seconds from the trace's start: subtract the first "
               f"arrival from every row, or set {_window_hint(t)}")
    raise src.error(f"arrival {float(t[late[0]]):.15g} s is more than {MAX_SPAN_S:.0e} s "
                    f"(31 years) after {zero}; {fix}", row - src.first_row,
                    "arrival_s" if canonical else FORMATS[name].required[0])


LATE_START_S = 3600.0
"""A canonical trace whose first request comes later than this (and later than its own span)
is warned about: the run, and the fleet's provisioned cost, start at time 0."""


def _late_start(table: pd.DataFrame) -> list[str]:
    """A note when a canonical trace's first arrival is late (epoch times, or a cut from a long
    log): later than :data:`LATE_START_S` and than its own span (last - first arrival)."""
    t = table["arrival_s"].to_numpy()
    first, span = float(t[0]), float(t[-1] - t[0])
    if not (first > LATE_START_S and first > span) or first > MAX_SPAN_S:
        return []
    return [f"the first request arrives at {_number(first)} s, but the run and its provisioned "
            "cost start at 0 s (canonical arrival_s are seconds from the trace's start); to "
            f"start at the first request set {_window_hint(t)}"]


def _window_hint(t: np.ndarray) -> str:
    """The window from the first arrival of ``t`` to past its last, as a scenario setting and
    as the trace inspect option (the end is exclusive, so it is the last arrival + 1, rounded
    down to whole seconds)."""
    start, end = _number(float(t[0])), _number(float(math.floor(t[-1]) + 1))
    return f"trace.window: [{start}, {end}] (tiersim trace inspect: --window {start} {end})"


def _number(value: float) -> str:
    """A number as a person writes it back: whole numbers without a point, others exactly."""
    return str(int(value)) if value == math.floor(value) and abs(value) < 1e16 else repr(value)


def _json_array(path: str) -> bool:
    """Whether a text file starts with ``[``, then ``{`` (a JSON array of records)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head.startswith(b"[") and head[1:].lstrip().startswith(b"{")


def _choose_format(columns: list[str], rows: int, src: Source, format: str) -> str:
    """The format of a table with ``columns`` and ``rows`` data rows, checked."""
    if format not in FORMAT_NAMES:
        raise TraceError(src.path, f"unknown format {format!r}; use one of "
                         f"{', '.join(FORMAT_NAMES)}")
    name = detect(columns) if format == "auto" else format
    if format == "auto":
        _one_format(columns, src)
    if is_length_only(columns) and (name is None or name == "canonical"):
        raise TraceError(src.path, "has token lengths but no arrival times; " + LENGTHS_FIX)
    if name is None or detect(columns) is None:
        if _json_array(src.path):
            raise TraceError(src.path, "is one JSON array; tiersim reads JSON lines (one object "
                             "per line, a .jsonl file): convert it, e.g. jq -c '.[]' FILE")
        # NOTE: not recognised as a table: its "columns" may be any text (/proc/self/environ),
        # so they are counted, never shown
        raise TraceError(src.path, f"not a trace: none of its {len(columns)} column name(s) "
                         f"is a trace column; expected {expected_columns()}")
    _require(src, columns, FORMATS[name].required, name)
    if rows == 0:
        raise TraceError(src.path, "has no requests (only a header); add rows")
    return name


def _one_format(columns: list[str], src: Source) -> None:
    """Refuse a table that has every required column of two or more formats: which one it is
    cannot be known, and reading it as either would silently drop the other's columns."""
    names = complete_formats(columns)
    if len(names) > 1:
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        raise TraceError(src.path, f"has every required column of the {listed} formats, so "
                         "which one it is cannot be known; name it: trace.format in the "
                         "scenario (tiersim trace inspect: --format)")


def _require(src: Source, columns: list[str], required: tuple[str, ...], name: str) -> None:
    for col in required:
        if col not in columns:
            raise TraceError(src.path, f"missing column for the {name} format (found: "
                             f"{_names(columns)}); add it or name the right format",
                             column=col)


def _names(columns: list[str], most: int = 20, longest: int = 40) -> str:
    """Column names for a message: at most ``most`` of them, each cut to ``longest`` chars."""
    shown = [c if len(c) <= longest else c[:longest - 3] + "..." for c in columns[:most]]
    more = f", ... ({len(columns) - most} more)" if len(columns) > most else ""
    return ", ".join(shown) + more


def apply_window(table: pd.DataFrame, window, src: Source) -> pd.DataFrame:
    """Keep ``start <= arrival_s < end`` and shift arrivals so the window starts at 0."""
    start, end = _window_bounds(window, src)
    t = table["arrival_s"].to_numpy()
    lo, hi = np.searchsorted(t, start, "left"), np.searchsorted(t, end, "left")
    if lo >= hi:
        span = float(t[-1]) if len(t) else 0.0
        raise TraceError(src.path, f"window [{start:g}, {end:g}) s selects no requests; "
                         f"the trace spans 0 to {span:g} s")
    out = table.iloc[lo:hi].reset_index(drop=True)
    out["arrival_s"] = out["arrival_s"].to_numpy() - start
    return out


def window_start_row(table: pd.DataFrame, window, src: Source) -> int:
    """The 0-based file data row of the first request :func:`apply_window` keeps."""
    start, _ = _window_bounds(window, src)
    return int(np.searchsorted(table["arrival_s"].to_numpy(), start, "left"))


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


def load_lengths(path: str | Path) -> pd.DataFrame:
    """Token lengths (``input_tokens``, ``output_tokens`` int32 > 0) of any trace or length file.

    Reads length-only files (``num_prefill_tokens``, ``num_decode_tokens``, as shipped by
    Vidur / Sarathi-Serve) and, for any full trace, its token columns without arrival times.
    """
    raw, src = read_raw(path)
    columns = list(raw.columns)
    if set(LENGTH_COLUMNS) <= set(columns):
        inp_col, out_col = LENGTH_COLUMNS
    elif {"input_tokens", "output_tokens"} <= set(columns):
        inp_col, out_col = "input_tokens", "output_tokens"
    else:
        table = load_trace(path)
        return table[["input_tokens", "output_tokens"]].copy()
    if len(raw) == 0:
        raise TraceError(src.path, "has no rows (only a header); add rows")
    return pd.DataFrame({
        "input_tokens": checks.tokens(src, raw[inp_col], inp_col).astype(np.int32),
        "output_tokens": checks.tokens(src, raw[out_col], out_col).astype(np.int32),
    })


__all__ = ["FORMAT_NAMES", "LoadedTrace", "TraceOrigin", "TraceWarning", "apply_time_scale",
           "apply_window", "load_lengths", "load_trace", "read_trace", "window_start_row"]
