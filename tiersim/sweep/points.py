"""Running one sweep point: the task sent to a worker and the record it returns.

A *point runner* is any picklable callable ``runner(doc, source) -> summary dict`` taking the
scenario as a plain dict (sweep values applied) and the name of the file it came from. The
default one validates the dict with :func:`tiersim.scenario.scenario_from_dict` and simulates it
with :func:`tiersim.runner.run_scenario` (both imported lazily, inside the worker).
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiersim.atomic import write_point
from tiersim.errors import TiersimError, note_kind, notes_of
from tiersim.input_files import point_inputs
from tiersim.sweep.axes import Point
from tiersim.sweep.refusal import AxisKey, point_error, refusal_of

PointRunner = Callable[[dict, str], dict]
Validator = Callable[[dict, str], object]


def default_runner(doc: dict, source: str) -> dict:
    """Validate the scenario dict and simulate it with its savings simulated (uniform fleets
    sized by simulation, as ``tiersim run`` does); return the run summary
    (:meth:`tiersim.results.RunResult.to_json`, the content of ``summary.json``)."""
    return _run(doc, source, baselines=True)


def estimate_runner(doc: dict, source: str) -> dict:
    """As :func:`default_runner`, but with the savings estimated from the run's per-token
    costs (``tiersim sweep --no-baselines``: faster; the savings say ``method: estimated``)."""
    return _run(doc, source, baselines=False)


KEPT_ROWS = 1_000_000
"""Requests' latencies a sweep worker's :data:`_KEPT_RUNS` keeps (about 41 MB, 41 bytes a
request, :data:`tiersim.plan.evaluate.KEPT_ROWS`): its runs
outlive the point that made them, so fewer than a plan's (whose evaluator holds them anyway);
a run of more requests is not kept, and a uniform run of a million-request trace fills it."""

_KEPT_RUNS = None
"""This process's :class:`tiersim.plan.evaluate.RunStore` (made at its first point): a
point's uniform baselines are sized by running fleets that an earlier point of the same trace,
load and tiers ran already (an axis over the router, the prices or the routed fleet leaves
them the same), and read back they are the same runs to the byte."""


def _run(doc: dict, source: str, baselines: bool) -> dict:
    """Validate and simulate one point (imports inside the worker); the baselines' engine runs
    an earlier point of this process made are read back (:data:`_KEPT_RUNS`)."""
    from tiersim.plan.evaluate import RunStore, keeping_runs
    from tiersim.runner import run_scenario
    from tiersim.scenario import scenario_from_dict

    global _KEPT_RUNS
    if _KEPT_RUNS is None:
        _KEPT_RUNS = RunStore(KEPT_ROWS)
        _KEPT_RUNS.reading = True
    with keeping_runs(_KEPT_RUNS):
        result = run_scenario(scenario_from_dict(doc, source), scenario_path=source,
                              baselines=baselines)
    return result.to_json()


def warm_up(runner: PointRunner) -> None:
    """Import what ``runner`` needs, so forked workers inherit it instead of each importing it."""
    if runner in (default_runner, estimate_runner):
        import tiersim.runner  # noqa: F401
        import tiersim.scenario  # noqa: F401


def default_validator(doc: dict, source: str) -> object:
    """Validate a scenario dict with the scenario models and what a run checks before it
    starts (each tier's max_model_len against its model's context); raises ScenarioError."""
    from tiersim.fleet import check_contexts
    from tiersim.scenario import scenario_from_dict

    scenario = scenario_from_dict(doc, source)
    check_contexts(scenario)
    return scenario


@dataclass(frozen=True)
class Task:
    """Everything a worker needs to run one point, picklable."""

    point: Point
    doc: dict
    source: str
    runner: PointRunner
    out_dir: str | None = None
    digests: dict[str, str] | None = None
    """``base_digest`` (the scenario without ``sweep:``) and ``sweep_digest`` (its sweep map),
    stored in the point's record so a rerun can refuse points of another scenario; with them
    the record gets ``tiersim``, the version of the build that ran the point."""
    refused: str | None = None
    """Why the point's values cannot be applied to the scenario (an axis path another axis'
    value removed): recorded as the point's error without running it."""
    axes: tuple[AxisKey, ...] = ()
    """The sweep's axes, for the line the point's error names
    (:func:`tiersim.sweep.refusal.point_error`)."""
    folder: str | None = None
    """The working folder of the command, where the point's relative paths (the scenario's
    own, a profile named from the working folder) are read from: set for a Ray task, whose
    worker may have started in another folder (``ray start`` elsewhere). None: here."""


def _one_line(error: BaseException) -> str:
    """The first line of the message, as the command line shows it for a user-input error;
    ``Type: first line`` for anything else (a bug, whose type says where to look)."""
    text = str(error).strip().splitlines()
    if isinstance(error, TiersimError) and text:
        return text[0]
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


class SweepNotes:
    """A sweep's notes, each kind shown once when its points are done. Points raise one note
    with their own numbers (a tier's price on a price axis): one kind is one text with its
    numbers left out, shown as the first point's text, the point it came from, and how many
    other points have it with other numbers; a note the same in every point is shown as is
    (the CLI prints each distinct one once), and one only some points raised (a tier's KV
    note at one GPU of a ``gpu`` axis) says at which. Every point's own notes stay in its
    record."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.kinds: dict[str, list[Any]] = {}  # kind -> [text, point, grid index, points, differs]
        self.done = 0  # points finished, with notes or without

    def add(self, record: dict[str, Any], index: int | None = None) -> None:
        """Count a finished point's notes; ``index``: its place in the grid. Each kind is shown
        as the text of its point first in the grid, not of the first to finish, so a sweep
        prints the same notes however its workers (local or Ray) finish."""
        self.done += 1
        rank = index if index is not None else float("inf")
        for note in record.get("notes") or ():
            text = str(note)
            kind = self.kinds.setdefault(note_kind(text),
                                         [text, record.get("point_id"), rank, 0, False])
            kind[3] += 1
            kind[4] = kind[4] or text != kind[0]
            if rank < kind[2]:
                kind[:3] = [text, record.get("point_id"), rank]

    def show(self) -> None:
        """Raise each kind of note once, where the sweep runs, in the grid order of the points
        they are shown with."""
        from tiersim.errors import Note

        for text, point, _, count, differs in sorted(self.kinds.values(),
                                                      key=lambda kind: kind[2]):
            if differs:
                more = count - 1
                have = "points have" if more != 1 else "point has"
                text += (f" (point {point}; {more:,} more {have} this note with other numbers, "
                         f"each in its {self.out / 'points'}/<id>.json)")
            elif count < self.done:  # shown as is, it read as true of every point
                text += (f" (point {point} only, of the {self.done:,} run)" if count == 1 else
                         f" ({count:,} of the {self.done:,} points run, the first {point}; "
                         f"each in its {self.out / 'points'}/<id>.json)")
            warnings.warn(text, Note, stacklevel=2)


def _changed_inputs(task: Task, before: dict[str, str]) -> str | None:
    """The error of a point one of whose files (its trace, a model config, its profile)
    changed while it ran: it may have read either version, and it records one (None when
    none changed)."""
    now = point_inputs(task.doc, task.source)
    changed = sorted(k for k in set(now) | set(before) if now.get(k) != before.get(k))
    if not changed:
        return None
    return (f"InputChanged: {', '.join(changed)} changed while this point ran; rerun to "
            "recompute this point")


def execute(task: Task) -> dict[str, Any]:
    """Run one point, catching its failure; store the record if ``task.out_dir`` is set (a
    record this cannot write is returned unstored, for the driver to store). With
    ``task.folder`` set it runs in that folder (where there is one: a cluster's other machine
    may have none), then returns to its own."""
    with _working_folder(task.folder):
        return _execute(task)


@contextlib.contextmanager
def _working_folder(folder: str | None) -> Iterator[None]:
    """Run the block in ``folder`` when given and there, then back in this process's own."""
    here = None
    if folder is not None:
        with contextlib.suppress(OSError):
            here = os.getcwd()
            os.chdir(folder)
    try:
        yield
    finally:
        if here is not None:
            with contextlib.suppress(OSError):
                os.chdir(here)


def _execute(task: Task) -> dict[str, Any]:
    """:func:`execute` in the working folder it runs in."""
    started = time.time()
    t0 = time.perf_counter()
    record: dict[str, Any] = {"point_id": task.point.id, "values": task.point.values,
                              "started": started, **(task.digests or {})}
    if task.digests is not None:  # the build that runs it (a Ray cluster's may not be the
        from tiersim.sweep.build import tiersim_version  # sweep's; an older one leaves it out)

        record["tiersim"] = tiersim_version()
    record["inputs"] = {} if task.refused else point_inputs(task.doc, task.source)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            if task.refused:
                raise TiersimError(task.refused)
            record["summary"] = task.runner(task.doc, task.source)
            record["status"] = "ok"
            record["error"] = None
            changed = _changed_inputs(task, record["inputs"])
            if changed is not None:
                record.update(status="error", error=changed, summary=None)
        except Exception as error:  # noqa: BLE001 - a failing point is recorded, not fatal
            shown = point_error(error, task.axes, task.source)  # at its line, as run says
            record.update(status="error", error=_one_line(shown), summary=None,
                          traceback=traceback.format_exc(limit=8))
            if refusal_of(error) is not None:  # the sweep raises it if every point does
                record["refusal"] = refusal_of(error)
    notes = notes_of(caught)  # they travel with the record; the sweep prints each once
    if notes:
        record["notes"] = notes
    record["wall_s"] = time.perf_counter() - t0
    if task.out_dir is not None:
        try:
            write_point(Path(task.out_dir), record)
            record["stored"] = True
        except OSError:  # the driver stores it (or says, in one line, why it cannot): the
            pass  # point it computed is not lost as a worker that died
    record["grid_index"] = task.point.index  # for the driver only: never stored
    return record
