"""``tiersim trace``: look at a trace before simulating it.

``trace_app`` is a typer sub-app; the top-level CLI mounts it as ``tiersim trace`` and turns
TiersimError into a one-line message and exit code 1.
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tiersim.cli.usage import echo, number_flag, read_flag_number
from tiersim.errors import Note, TiersimError, escaped, shown
from tiersim.paths import command_line_trace, named_as_typed
from tiersim.scenario_models import SKIP_MOST
from tiersim.trace.formats import (
    FORMATS,
    arrival_lookalikes,
    is_length_only,
    shown_name,
    token_renames,
)
from tiersim.trace.loader import (
    FORMAT_NAMES,
    TIME_SCALE_RANGE,
    TraceWarning,
    lengths_dropped_note,
    load_lengths,
    read_trace,
)
from tiersim.trace.source import names_and_raw
from tiersim.trace.stats import MIN_RATE_SPAN_S, trace_stats

trace_app = typer.Typer(help="Inspect request traces.", no_args_is_help=True)


@trace_app.callback()
def _group() -> None:
    """Inspect request traces (Azure, BurstGPT, Mooncake, canonical Parquet/CSV)."""


def _typed_number(flag: str, text: str) -> float:
    """Option ``flag``'s number read as every number flag is
    (:func:`tiersim.cli.usage.read_flag_number`), keeping the text it was typed as (a
    :class:`~tiersim.numbers.WrittenNumber`: ``1e400`` reads as infinity, a message shows
    ``1e400``)."""
    return read_flag_number(float, None, None, text, flag=flag)


INSPECT_HELP = (
    "Print rows, span, rate, burstiness (inter-arrival CV) and token percentiles; with --window "
    "the rate is rows over the window's length, cut to the trace's first and last arrival (no "
    "empty time before or after the trace), else over first to last arrival.")
"""``tiersim trace inspect --help``'s text, given as text: ``python -OO`` strips docstrings."""


@trace_app.command(help=INSPECT_HELP)
def inspect(
    path: str = typer.Argument(..., help="Trace file, or the name of a bundled trace."),
    format: str = typer.Option("auto", "--format", "-f",
                               help=f"auto, {', '.join(FORMATS)}"),
    window: tuple[float, float] | None = typer.Option(
        None, help="Keep START <= t < END seconds of the trace.",
        parser=functools.partial(_typed_number, "--window")),
    time_scale: float = typer.Option(1.0, help="Divide arrival times (2 = twice the load).",
                                     parser=functools.partial(_typed_number, "--time-scale")),
    skip_longer_than: Annotated[int | None, typer.Option(
        "--skip-longer-than", **number_flag(int, 1, SKIP_MOST, flag="--skip-longer-than"),
        metavar="N",
        help="Leave out the requests longer (prompt + output tokens) than N, as a run's "
        "trace.skip_longer_than does (a session holding one, whole); a note says how many.")
    ] = None,
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
) -> None:
    """``tiersim trace inspect``: print a trace's statistics (:data:`INSPECT_HELP`)."""
    _check_options(window, time_scale, format)
    time_scale = float(time_scale)  # checked: the text it was typed as is not kept
    window = None if window is None else (float(window[0]), float(window[1]))
    resolved = command_line_trace(path)
    with named_as_typed(path, resolved) as named:  # ./b.csv read "b.csv: not a trace"
        stats, fmt, notes = _load_stats(resolved, format, window, time_scale, skip_longer_than)
    if as_json:
        echo(json.dumps({"path": named, "format": fmt, **stats, "notes": notes}))
        return
    console = Console(markup=False)  # a path is text, never markup, nor a terminal escape
    console.print(Text(escaped(named), style="bold") + Text(f" ({fmt})"), soft_wrap=True)
    console.print(stats_table(stats, notes))


def _check_options(window, time_scale: float, format: str) -> None:
    """The bounds of --window must be finite numbers with 0 <= START < END (as a scenario's
    ``trace.window``), --time-scale within :data:`TIME_SCALE_RANGE` and --format one of
    :data:`FORMAT_NAMES`, and the window, replayed, at least :data:`MIN_WINDOW_S` long: one
    line naming the option and the value as typed (the option's
    fault, not the trace file's, which is not read)."""
    if format not in FORMAT_NAMES:
        raise TiersimError(f"--format {shown(format, 64)}: choose one of "
                           f"{', '.join(FORMAT_NAMES)}")
    for bound, value in zip(("START", "END"), window or ()):
        if not math.isfinite(value):
            raise TiersimError(f"--window {bound}: must be a finite number (got {_typed(value)})")
    if window is not None and not 0 <= window[0] < window[1]:  # the flag's fault, not the file's
        raise TiersimError(f"--window: START must be >= 0 and below END (got {_typed(window[0])} "
                           f"{_typed(window[1])}); give the window's start and end in seconds "
                           "of the trace")
    low, high = TIME_SCALE_RANGE
    if not (math.isfinite(time_scale) and low <= time_scale <= high):
        raise TiersimError(f"--time-scale: must be a number from {low:g} to {high:g} (got "
                           f"{_typed(time_scale)})")
    if window is not None and (window[1] - window[0]) / time_scale < MIN_WINDOW_S:
        scaled = "" if time_scale == 1 else f" replayed at --time-scale {_typed(time_scale)}"
        least = MIN_WINDOW_S * time_scale
        raise TiersimError(f"--window: {_typed(window[0])} {_typed(window[1])} is "
                           f"{(window[1] - window[0]) / time_scale:.3g} s long{scaled}, shorter "
                           "than the microsecond tiersim's clock resolves, so no rate can be "
                           f"read over it; give a window at least {least:g} s long")


MIN_WINDOW_S = MIN_RATE_SPAN_S
"""The shortest --window (replayed, so divided by --time-scale) whose rate is read
(:data:`tiersim.trace.stats.MIN_RATE_SPAN_S`: a microsecond, the finest step the simulated
clock keeps over a trace's span). A shorter one held a request or none, and one request over
1e-300 s read as 1e+300 requests/s."""


def _typed(value: float) -> str:
    """An option's value as typed (read by :func:`_typed_number`: ``1e400, beyond a float``),
    else as Python writes it (:func:`tiersim.numbers.as_written`)."""
    from tiersim.numbers import as_written

    return as_written(value)


def _load_stats(path: Path, format: str, window, time_scale: float, skip: int | None = None):
    """Statistics of a trace; a length-only file gets token statistics without timing.
    ``skip`` (``--skip-longer-than``) leaves out the requests a run's
    ``trace.skip_longer_than`` would (:func:`tiersim.inputs.skip_longer`), with its note."""
    from tiersim.cli import return_freed_arrow_memory

    return_freed_arrow_memory()
    # a JSONL file is read whole to name its columns: that read is converted, not a second
    columns, raw = names_and_raw(path) if format == "auto" else ([], None)
    if format == "auto" and is_length_only(columns):
        if window is not None or time_scale != 1.0 or skip is not None:
            flag = ("--window" if window is not None else "--time-scale" if time_scale != 1.0
                    else "--skip-longer-than")
            replayed = ("" if flag != "--skip-longer-than" else
                        " (no run replays it, so no trace.skip_longer_than leaves rows out)")
            raise TiersimError(f"{path}: holds token lengths but no arrival times, so "
                               f"{flag} has nothing to act on{replayed}; drop it")
        with warnings.catch_warnings():  # the note is printed with the table instead
            warnings.simplefilter("ignore", TraceWarning)
            lengths = load_lengths(path, raw)
        notes = _lengths_notes(columns) + lengths_dropped_note(columns)
        return trace_stats(lengths), "lengths (no arrival times)", notes
    with warnings.catch_warnings():  # the notes are printed with the table instead
        warnings.simplefilter("ignore", TraceWarning)
        loaded = read_trace(path, format=format, window=window, time_scale=time_scale,
                            raw=raw, keep=())  # the statistics read the canonical columns
    del raw  # let go before the statistics, as when read_trace read the file itself
    skipped = _skipped(loaded, skip, str(path))
    if skipped is not None:
        loaded, skip_note = skipped
    starts = _session_starts(loaded, str(path))
    cut = _cut(window, loaded.origin.arrivals)
    stats = trace_stats(loaded.table, _window_s(cut, time_scale), starts)
    stats["time_scale"] = float(time_scale)
    stats.update(_replayed(loaded.table if starts is None else starts))
    notes = list(loaded.origin.notes)
    if skipped is not None:
        stats["skip_longer_than"] = int(skip)
        stats["skipped_requests"], stats["requests_read"] = loaded.origin.skipped[1:]
        notes.extend(skip_note)
    if starts is not None:
        stats["sessions"] = int(len(starts))
        notes.append("session trace: span, rate and inter-arrival CV count the first step of "
                     "each session; a later step arrives its tool_s after its predecessor "
                     "finishes, which only a run knows, so the run replays and bills past the "
                     "last arrival shown")
    if _arrivals(stats) < 2:
        what = "session" if starts is not None else "request"
        notes.append(f"one {what}: a rate needs at least two arrivals spanning time, so none "
                     "is given")
    if window is not None:
        stats["window"] = [float(window[0]), float(window[1])]
        stats["window_cut"] = None if cut == tuple(stats["window"]) else list(cut)
    return stats, loaded.origin.format, notes


def _skipped(loaded, skip: int | None, source: str):
    """``loaded`` less the requests longer than ``skip`` tokens, and the note saying so (none
    where none is longer), as a run's ``trace.skip_longer_than`` leaves them out
    (:func:`tiersim.inputs.skip_longer`: a session trace loses each session holding one, as a
    run replaying it as sessions does); None without ``--skip-longer-than``."""
    if skip is None:
        return None
    from tiersim.inputs import skip_longer

    with warnings.catch_warnings(record=True) as caught:  # printed with the table instead
        warnings.simplefilter("always", Note)
        kept = skip_longer(loaded, skip, True, source, flag="--skip-longer-than")
    return kept, [str(w.message) for w in caught if issubclass(w.category, Note)]


def _lengths_notes(columns: list[str]) -> list[str]:
    """A note naming a column of a file of token lengths that may be its arrival times
    misnamed (:func:`arrival_lookalikes`: a misspelt ``arrival_s`` made a trace read as
    lengths without a word), or its ``arrival_s`` beside Sarathi/Vidur token columns."""
    tokens = token_renames(columns)
    if "arrival_s" in columns and tokens:
        return ["column 'arrival_s' is not read: a file of token lengths has no arrival times; "
                f"rename {tokens} to read the file as a trace"]
    close = arrival_lookalikes(columns)
    if not close:
        return []
    tokens = f", {tokens}" if tokens else ""
    return [f"column {shown_name(close[0])} (arrival_s?) is not read: a file of token lengths "
            f"has no arrival times; rename it arrival_s (seconds from the trace's start){tokens} "
            "to read the file as a trace"]


def _cut(window, arrivals: tuple[float, float] | None) -> tuple[float, float] | None:
    """``--window START END`` cut to the trace's first and last arrival (``arrivals``): the
    time before the trace starts or after it ends holds no request, so a rate over it would
    count empty time (a window past the end of a trace read 0.72 req/s for 1.65)."""
    if window is None:
        return None
    start, end = float(window[0]), float(window[1])
    if arrivals is None:
        return start, end
    return max(start, arrivals[0]), min(end, arrivals[1])


def _window_s(window, time_scale: float) -> float | None:
    """The replayed length of a window ``(START, END)``: (END - START) / time scale."""
    return None if window is None else (float(window[1]) - float(window[0])) / time_scale


def _replayed(arrivals) -> dict:
    """Where the requests sit in the time ``tiersim run`` replays, which starts at 0 (a
    canonical file's 0, or the window start) and bills the fleet from there: the first and
    last arrival, in seconds after it, time scale applied (``arrivals``: a table, or a
    session trace's first steps' arrival times)."""
    t = arrivals["arrival_s"].to_numpy() if hasattr(arrivals, "columns") else arrivals
    return {"first_arrival_s": float(t[0]), "last_arrival_s": float(t[-1])}


def _session_starts(loaded, source: str):
    """A session trace's first steps' arrival times (None for a trace without sessions),
    once its session columns pass the checks ``tiersim run`` makes of them (a step given
    twice, a parent that is no earlier step ...), or fail here with the same line."""
    from tiersim.workload.sessions import checked, has_session_columns

    if not has_session_columns(loaded.table):
        return None
    table = checked(loaded.table, source, loaded.origin)
    return table["arrival_s"].to_numpy()[table["parent"].to_numpy() < 0]


RATE_LABELS = {"window": "rate (requests / window)", "span": "rate ((requests - 1) / span)"}
"""The rate row's label by what the rate divides by (:func:`tiersim.trace.trace_stats`)."""


def stats_table(stats: dict, notes: list[str]) -> Table:
    """A rich table of :func:`trace_stats` output, with the loader's notes as last rows."""
    table = Table(show_header=True)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_row("requests", f"{stats['rows']:,}")
    if "sessions" in stats:
        table.add_row("sessions", f"{stats['sessions']:,}")
    scale = stats.get("time_scale", 1.0)
    if scale != 1.0:
        table.add_row("time scale", f"{scale:g} (arrival times divided by {scale:g})")
    table.add_row("span", _fmt(stats["span_s"], "{:,.1f} s"))
    if stats.get("last_arrival_s") is not None:
        table.add_row("replayed by tiersim run", _replayed_text(stats))
    if stats.get("window") is not None:
        table.add_row("window", _window_text(stats["window"], stats.get("window_cut"),
                                             stats["window_s"], scale))
    what = "sessions" if "sessions" in stats else "requests"  # a session trace: first steps
    label = RATE_LABELS.get(stats.get("rate_basis"), "rate").replace("requests", what)
    unit = "{:.3g} sessions/s" if what == "sessions" else "{:.3g} req/s"
    rate = _fmt(stats["rate_rps"], unit)
    if stats["rate_rps"] is None and "first_arrival_s" in stats and _arrivals(stats) < 2:
        rate = f"n/a (one {what[:-1]})"  # a note below says why
    table.add_row(label, rate)
    table.add_row("inter-arrival CV", _fmt(stats["interarrival_cv"], "{:.3g}"))
    for col in ("input_tokens", "output_tokens"):
        for key, value in stats[col].items():
            table.add_row(f"{col.split('_')[0]} tokens {key}", _fmt(value, "{:,.1f}"))
    if "prefix_reuse" in stats:
        table.add_row("prefix hits, unbounded cache", _fmt(stats["prefix_reuse"], "{:.1%}"))
    for label, value in _task_type_rows(stats.get("task_types"), stats["rows"]):
        table.add_row(label, value)
    for note in notes:  # a note may quote the trace (a model's name): no terminal escapes
        table.add_row("note", escaped(note))
    return table


TASK_TYPE_ROWS = 10
"""The most ``task_type`` rows ``tiersim trace inspect``'s table gives (the most common types);
the rest are one row, and ``--json`` gives every type."""


def _task_type_rows(types: list[dict] | None, rows: int) -> list[tuple[str, str]]:
    """The table's rows of a trace's ``task_type`` column (:func:`tiersim.trace.stats.
    task_type_stats`): per type, "task_type code" -> "8,819 req (100.0%); mean 2,047.8 in /
    27.9 out" (its requests, their share and their mean input and output tokens), the
    :data:`TASK_TYPE_ROWS` most common, then one row for the rest; none where the trace has no
    such column (or no row)."""
    if not types:
        return []

    def share(n: int) -> str:
        return f"{n:,} req ({n / rows:.1%})"

    out = [(f"task_type {escaped(t['task_type'])}",
            f"{share(t['requests'])}; mean {t['input_tokens_mean']:,.1f} in / "
            f"{t['output_tokens_mean']:,.1f} out") for t in types[:TASK_TYPE_ROWS]]
    rest = types[TASK_TYPE_ROWS:]
    if rest:
        out.append((f"task_type, {len(rest):,} other types (--json lists them)",
                    share(sum(t["requests"] for t in rest))))
    return out


def _arrivals(stats: dict) -> int:
    """The arrivals the timing statistics count: a session trace's sessions, else its rows."""
    return stats.get("sessions", stats["rows"])


def _replayed_text(stats: dict) -> str:
    """The time ``tiersim run`` replays and bills, 0 to the last arrival, and where its first
    request arrives when that is not at 0."""
    text = f"0 to {stats['last_arrival_s']:,.1f} s"
    first = stats["first_arrival_s"]
    return text if first == 0 else f"{text}; first request at {first:,.1f} s"


def _window_text(window: list[float], cut: list[float] | None, window_s: float,
                 scale: float) -> str:
    """``--window START END`` in words: where it was cut to the trace's first or last arrival
    (the rate's time), and its length at the time scale when --time-scale changes it (not
    "replayed": a run replays to the last arrival, the row above)."""
    start, end = window
    text = f"{start:,g} to {end:,g} s of the trace"
    if cut is not None:
        start, end = cut
        text += f"; cut to its arrivals, {start:,g} to {end:,g} s"
    if window_s == end - start:
        return text
    return f"{text}; {window_s:,.1f} s at time scale {scale:g}"


def _fmt(value, pattern: str) -> str:
    return "n/a" if value is None else pattern.format(value)
