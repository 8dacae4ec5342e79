"""Run a whole sweep: load the scenario, expand the axes, skip finished points, run the rest.

``run_sweep(scenario, out_dir)`` is what ``tiersim sweep`` calls. It writes ``DIR/scenario.yaml``
(the base scenario), ``DIR/sweep.json`` (the manifest: source and points), one
``DIR/points/<id>.json`` per finished point, ``DIR/sweep.parquet`` and, unless told not to,
``DIR/report.html``.

Safety (docs/security.md): the folder is locked while a sweep writes to it (``fcntl.flock`` on
``DIR/.lock``, :func:`tiersim.outputs.locked`, which runs, plans and reports take too; a second
command into it is refused at once with one line, it does not wait); every point records the
digests of its base scenario and sweep map, and a rerun against a different base is refused,
naming the field, unless every finished point reads the same under it
(:mod:`tiersim.sweep.equivalent`: a default written out resumes); every file is written under a
unique temporary name and renamed; a folder that cannot be written (read-only, full) ends the
sweep with one line and no temp file left; failed points end it with one line naming them (exit
1), after the other points are stored, except when every point failed with one and the same
input error: that is the scenario's, raised as ``tiersim run`` raises it, and a folder the sweep
found empty is left so (:mod:`tiersim.sweep.refusal`). No table outlives its data: before
anything changes, a ``sweep.parquet`` whose rows are not all stored points as they were, or not
among the grid's points in its order, or that holds a point to run again, is removed (and
``report.html`` with it, or whenever points are to run; a sweep that writes no report removes
the old one; the new ``scenario.yaml`` and ``sweep.json`` are written in full first and renamed
into place after, so a full disk changes nothing), and points that read two versions of one
input file (replaced while the sweep ran) are refused as one table.

This module is the sweep's front (:func:`prepare`, :func:`run_sweep` and the steps it takes
while it holds the folder); the parts it calls live beside it: :mod:`~tiersim.sweep.plan` (the
loaded sweep), :mod:`~tiersim.sweep.checks` and :mod:`~tiersim.sweep.unread` (what is refused
before a point runs), :mod:`~tiersim.sweep.settings` (a point's reading as one setting),
:mod:`~tiersim.sweep.provenance` and :mod:`~tiersim.sweep.build` (what ties a point to its
scenario, runner and tiersim build), :mod:`~tiersim.sweep.resume` (a rerun into a folder),
:mod:`~tiersim.sweep.folder` (the manifest, refusals before anything is written, stale table
and report), :mod:`~tiersim.sweep.execution` (the points run and stored),
:mod:`~tiersim.sweep.table_checks` (what is refused before the table is made) and
:mod:`~tiersim.sweep.messages`. Their names are importable from here as before; patch a
function where it lives (``tiersim_version`` reads ``tiersim.sweep.build._package_digest``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from tiersim.errors import (
    ScenarioError,
    TiersimError,
    escaped,
    shown,
    shown_yaml,
    yaml_written,
)
from tiersim.numbers import plain_int
from tiersim.outputs import claim_out_dir, locked
from tiersim.sweep import axes as ax
from tiersim.sweep import executors
from tiersim.sweep.build import (
    _check_same_package,
    _other_version,
    _package_digest,
    _refuse_later_release,
    ran_here,
    tiersim_version,
)
from tiersim.sweep.checks import (
    MAX_NUMBER_TEXTS,
    TRIES_PER_VALUE,
    check_axes,
    check_distinct_settings,
    check_quoted_numbers,
    check_tier_names_read_apart,
)
from tiersim.sweep.execution import Tally, _execute
from tiersim.sweep.folder import (
    SWEEP_FILES,
    _cannot_write,
    _check_points_folder,
    _new_manifest,
    _refuse_folders_in_the_way,
    _refuse_foreign_files,
    _remove_stale_outputs,
)
from tiersim.sweep.messages import _note, clipped
from tiersim.sweep.plan import (
    SweepPlan,
    _read_base,
    load_raw,
    max_points_of,
    names_files,
    sweep_inputs,
)
from tiersim.sweep.points import (
    PointRunner,
    Validator,
    default_runner,
    default_validator,
)
from tiersim.sweep.progress import progress_display
from tiersim.sweep.provenance import (
    RUNNER_WORDS,
    base_digest,
    baseline_cap,
    digests,
    runner_name,
    sweep_digest,
)
from tiersim.sweep.refusal import axis_keys, blamed, common_refusal, is_fresh, remove_written
from tiersim.sweep.resume import _check_same_base, _check_same_inputs, kept_bases
from tiersim.sweep.settings import _canonical, file_identity, setting_doc
from tiersim.sweep.store import (
    points_dir,
    read_bookkeeping,
    read_table,
    remove_stale_temps,
    table_rows,
    table_status,
    write_table,
)
from tiersim.sweep.table_checks import _check_one_version, _refuse_lost_points
from tiersim.sweep.unread import check_router_keys, check_session_keys, check_unread_axes
from tiersim.sweep.verdicts import verdict_lines

__all__ = [  # what this module holds, and what it holds for those who import it from here
    "MAX_NUMBER_TEXTS", "MAX_WORKERS", "RUNNER_WORDS", "SWEEP_FILES", "TRIES_PER_VALUE",
    "SweepFailed", "SweepPlan", "Tally", "_canonical", "_check_same_inputs", "_failure_line",
    "_package_digest", "axis_refusal", "base_digest", "baseline_cap", "check_axes",
    "check_distinct_settings", "check_quoted_numbers", "check_router_keys",
    "check_session_keys", "check_tier_names_read_apart", "check_unread_axes", "clipped",
    "digests", "file_identity", "load_raw", "max_points_of", "names_files", "prepare",
    "ran_here", "run_sweep", "runner_name", "setting_doc", "sweep_digest", "sweep_inputs",
    "tiersim_version", "without_notes",
]


MAX_WORKERS = 1024
"""Most local worker processes (each is a whole Python process)."""


class SweepFailed(TiersimError):
    """Some points failed; the others are stored. ``frame`` is the sweep table (its
    ``point_id``, ``status`` and ``error`` columns where :func:`run_sweep` was asked for no
    table)."""

    def __init__(self, message: str, frame: pd.DataFrame):
        super().__init__(message)
        self.frame = frame


def prepare(scenario: str | Path | dict, source: str | None = None,
            validator: Validator | None = default_validator,
            max_points: int | None = None) -> SweepPlan:
    """Load a scenario (path or dict), expand its ``sweep:`` map and check every axis path.

    The grid may hold ``max_points`` points (default: the scenario's
    ``limits.max_sweep_points``); a bigger one is refused before it is expanded."""
    root = None
    if isinstance(scenario, dict):
        base, source = scenario, source or "scenario"
    else:
        (base, root), source = _read_base(scenario), source or str(scenario)
    sweep_map = base.get("sweep")
    if sweep_map is None:  # absent, or every axis commented out
        sweep_map = {}
    if not isinstance(sweep_map, dict):  # as `tiersim run` refuses it (false, [] too)
        from tiersim.scenario import located

        raise located(ScenarioError(source, "sweep", "must be a mapping of keys (got "
                                    f"{shown_yaml(sweep_map, 80)})"))
    limit = max_points if max_points is not None else max_points_of(base, source)
    points = ax.expand(sweep_map, source, limit)
    plan = SweepPlan(base, source, ax.axis_names(sweep_map), points, root)
    ax.no_field_twice(base, plan.axes, source)
    reads: dict[str, Any] = {}
    validator = plan.validator = without_notes(validator)
    check_axes(plan, validator, reads)
    check_distinct_settings(plan, validator, reads)
    check_tier_names_read_apart(plan)
    check_quoted_numbers(plan, validator, reads)
    if validator is not None:
        check_router_keys(plan)
        check_session_keys(plan)
    return plan


def without_notes(validator: Validator | None) -> Validator | None:
    """``validator`` with the notes it raises dropped: the checks read points before they run,
    and each point raises its notes again when it runs, shown once with the points that raised
    them (:class:`SweepNotes`); raised here they were printed as well, unlabelled, as if true
    of the base scenario."""
    if validator is None:
        return None

    def read(doc: dict[str, Any], source: str) -> object:
        import warnings

        from tiersim.errors import Note

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Note)
            return validator(doc, source)

    return read


def run_sweep(scenario: str | Path | dict, out_dir: str | Path, workers: int | None = None,
              executor: str = "local", address: str | None = None,
              runner: PointRunner = default_runner, validator: Validator | None = default_validator,
              source: str | None = None, progress: bool | None = None,
              report: bool = True, max_points: int | None = None,
              strict: bool = True, tally: Tally | None = None,
              table: bool = True) -> pd.DataFrame | None:
    """Run every point not already finished in ``out_dir``; return the sweep table, read from
    ``sweep.parquet`` once the report is written (``table=False``, as ``tiersim sweep`` calls
    it: None, and the sweep's end holds no more of the table than a piece of it being written).

    The folder is locked before the grid is expanded and checked (a big grid takes a while),
    so a second sweep into it is refused at once; Ray (``executor="ray"``) is joined once the
    grid is checked and before the folder changes, so an address it refuses changes nothing,
    and only when a point is left to run (a finished sweep rewrites its table without Ray).
    With ``strict`` (the default, and what
    ``tiersim sweep`` uses), failed points raise :class:`SweepFailed` (one line naming them)
    once everything else is stored. ``tally`` counts the points this call stores.
    ``progress``: True a bar, False nothing, None (the CLI's) a bar on a terminal and a timed
    line off one (:mod:`tiersim.sweep.progress`)."""
    if executor not in ("local", "ray"):
        raise TiersimError(f"--executor: must be 'local' or 'ray' (got {shown(executor, 64)})")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise TiersimError(f"--workers: must be from 1 to {MAX_WORKERS} (got {workers})")
    if executor == "ray":  # a dead address refused at once: Ray would retry for minutes
        _refuse_workers_beside_env_address(address, workers)
        executors.probe_address(address)
    workers, max_points = plain_int(workers), plain_int(max_points)  # checked: no text kept
    out = Path(out_dir)
    claim_out_dir(out, "sweep", [] if isinstance(scenario, dict) else [Path(scenario)])
    _check_points_folder(out)
    fresh = strict and is_fresh(out)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(out, "sweep"))
        except OSError as error:
            raise _cannot_write(error, out) from None
        plan = prepare(scenario, source, validator, max_points)
        check_unread_axes(plan, runner)
        claim_out_dir(out, "sweep", [Path(plan.source), *sweep_inputs(plan)])
        _refuse_foreign_files(out, plan)
        def join() -> None:  # before the folder changes: a bad address changes nothing
            stack.enter_context(executors.ray_session(address, workers))

        try:
            status, failed, refusal = _run_locked(plan, out, workers, executor, address,
                                                  runner, progress, report, fresh,
                                                  tally or Tally(), join)
            frame = read_table(out / "sweep.parquet") if table else None
        except OSError as error:
            raise _cannot_write(error, out) from None
    if strict and failed:
        line = _failure_line(status, out, refusal, plan.points)
        raise SweepFailed(line, frame if frame is not None else status)
    return frame


def _refuse_workers_beside_env_address(address: str | None, workers: int | None) -> None:
    """Refuse ``--workers`` where Ray joins the cluster ``RAY_ADDRESS`` names (as it would
    beside ``--address``): that cluster runs as many points at once as it has CPUs, and Ray
    refused the CPU count with an error naming ``--address None``."""
    joined, named, _ = executors.ray_address(address)
    if workers is not None and joined is not None and joined != address:
        raise TiersimError(f"--workers {workers}: a Ray cluster joined at {named} runs as many "
                           "points at once as it has CPUs, so it is not read; drop it, or unset "
                           f"{executors.RAY_ADDRESS_ENV} to start a local Ray of that many CPUs")


def axis_refusal(plan: SweepPlan, refusal: TiersimError) -> TiersimError:
    """The error every point failed with, blamed on the axis that set or made the key it names
    (:func:`tiersim.sweep.refusal.blamed`); otherwise the error as it is (the scenario's own)."""
    return blamed(refusal, axis_keys(plan.base, plan.axes, plan.source), plan.source)


def _failure_line(frame: pd.DataFrame, out: Path, refusal: TiersimError | None = None,
                  points: list[ax.Point] | None = None) -> str:
    """One line naming the failed points (the first three) and the first error (``refusal``,
    with its line in the scenario, when every point failed with it; else the first failed
    point's error, at its axis values among ``points``: the error names the scenario's keys,
    not the values the point gave them)."""
    from tiersim.scenario import located

    bad = frame[frame["status"] != "ok"]
    ids = ", ".join(bad["point_id"].head(3)) + (", ..." if len(bad) > 3 else "")
    if isinstance(refusal, ScenarioError):
        refusal = located(refusal)
    first = clipped(str(refusal or bad.iloc[0]["error"]))
    values = next((p.values for p in points or () if p.id == bad.iloc[0]["point_id"]), None)
    at = "" if refusal is not None or not values else " at " + ", ".join(
        f"{path}={shown_yaml(value)}" for path, value in values.items())
    return (f"{out}: {len(bad)} of {len(frame)} sweep point(s) failed ({ids}); first{at}: "
            f"{first}; the others are stored; details in {out / 'points'}; fix what the error "
            "names, then rerun to retry them")


def _run_locked(plan: SweepPlan, out: Path, workers: int | None, executor: str,
                address: str | None, runner: PointRunner, progress: bool | None,
                report: bool, fresh: bool = False, tally: Tally | None = None,
                join: Callable[[], None] | None = None
                ) -> tuple[pd.DataFrame, int, TiersimError | None]:
    """The sweep proper, run while holding the folder's lock; returns the table's
    ``point_id``, ``status`` and ``error`` columns (:func:`tiersim.sweep.store.table_status`),
    the failed count and the input error every point failed with, if one did (:mod:`tiersim.sweep.
    refusal`). In a ``fresh`` folder that error is raised as ``tiersim run`` raises it, and
    the folder is left as it was found. ``join`` (Ray's) is called before the folder changes,
    only where a point is left to run: with none, the sweep is the in-process one."""
    started = tiersim_version()
    skipped: list[tuple[str, str]] = []
    records = read_bookkeeping(out, skipped)
    _check_same_base(out, plan, records, runner)
    done = {i for i, r in records.items() if r.get("status") == "ok"}
    _refuse_later_release(out, records, done)
    done -= _other_version(records, done)
    pending = [p for p in plan.points if p.id not in done]
    _note_skipped(out, skipped, {p.id for p in pending})
    _refuse_folders_in_the_way(out, pending)
    if not pending:
        executor = "local"  # nothing to run: Ray is neither needed nor joined
    elif executor == "ray" and join is not None:
        join()
    remove_stale_temps(out)  # a killed sweep may leave one per worker; no writer is active now
    if tally is not None:
        tally.folder, tally.pending = points_dir(out), tuple(p.id for p in pending)
        tally.earlier, tally.total = len(plan.points) - len(pending), len(plan.points)
    with _new_manifest(out, plan, runner, kept_bases(records, base_digest(plan.base))):
        _remove_stale_outputs(out, records, pending, [p.id for p in plan.points])
        described = table_rows(out)  # the table an old report.html describes, if any
    del records  # every stored point: not held while the others run, nor beside the re-read
    console = Console(stderr=True, soft_wrap=True, markup=False)  # paths are text
    workers = workers or os.cpu_count() or 1
    try:
        failed = _execute(plan, pending, out, workers, executor, address, runner,
                          progress_display(console, progress, sys.stderr.isatty()),
                          len(plan.points) - len(pending), tally or Tally())
    finally:  # every worker has ended: one killed mid-write (the OOM killer) left its temp file
        remove_stale_temps(out)
    records = read_bookkeeping(out)
    _refuse_lost_points(out, plan, records)
    _check_same_package(out, started, [p.id for p in pending], records)
    refusal = common_refusal(records, [p.id for p in plan.points])
    if refusal is not None and fresh:  # the scenario's error, not its points'
        remove_written(out)
        raise axis_refusal(plan, refusal)
    _note_whole_maps(plan)
    if not plan.axes:  # said once the point ran: a refusal stays one line
        what = "its sweep: map is empty" if "sweep" in plan.base else "has no sweep: map"
        _note(f"{plan.source}: {what}, so the sweep is its one point (`tiersim run` runs it "
              "alone)")
    _check_one_version(out, plan, records)
    frame = table_status(write_table(out, plan.axes, [p.id for p in plan.points], records))
    failed_total = int((frame["status"] != "ok").sum()) if "status" in frame else 0
    if failed_total:  # the caller's one error line says it all; the report is still written
        console = Console(stderr=True, quiet=True, markup=False)
    for line in verdict_lines(out, plan.axes, report):  # as the report's Points table
        console.print(line)
    points = f"{len(plan.points):,} point{'s' if len(plan.points) != 1 else ''}"
    console.print(f"sweep: {points} ({len(pending):,} run, "
                  f"{len(plan.points) - len(pending):,} already done, {failed:,} failed) -> "
                  f"{escaped(out / 'sweep.parquet')}")
    if report:
        _report(out, console)
    elif table_rows(out) != described:  # the old report shows another table (fewer values)
        (out / "report.html").unlink(missing_ok=True)
    return frame, failed_total, refusal


SKIPPED_NAMED = 5
"""The most point files the note of files not as the sweep stored them names."""


def _note_skipped(out: Path, skipped: list[tuple[str, str]], pending: set[str]) -> None:
    """One note naming the point files a resume does not keep, each with why (edited since
    it was stored, cut short, not a record), whose points run again: an edited file was kept
    as a finished point, and a cut-short one ran again without a word. A file named for no
    point of the grid still to run (a copy of a point file, a user's note) runs nothing, and
    is not named."""
    skipped = [(name, why) for name, why in skipped if name.removesuffix(".json") in pending]
    if not skipped:
        return
    one = len(skipped) == 1
    named = ", ".join(f"{escaped(name)} ({why})" for name, why in skipped[:SKIPPED_NAMED])
    more = f" and {len(skipped) - SKIPPED_NAMED:,} more" if len(skipped) > SKIPPED_NAMED else ""
    _note(f"{escaped(points_dir(out))}: {len(skipped):,} point file{'' if one else 's'} "
          f"{'is' if one else 'are'} not as the sweep stored {'it' if one else 'them'}, so "
          f"{'its point runs' if one else 'their points run'} again: {named}{more}")


def _report(out: Path, console: Console) -> None:
    """Write the HTML report. A report that cannot be written (a full disk) or read back is
    the user's to fix: one line, exit 1, as ``tiersim run`` and ``plan`` say it; the points
    and ``sweep.parquet`` stay. Any other failure is printed, and the results stay."""
    from tiersim.errors import ReportError
    from tiersim.report.page import write_report  # the sweep holds the folder

    try:
        console.print(f"report: {escaped(write_report(out))}")
    except ReportError as error:  # the line said "choose another folder", of a sweep's page
        fix = error.fix.removesuffix(" or choose another folder").removesuffix(
            " or choose another")
        raise ReportError(error.named, error.said, f"{fix}; the sweep's points and "
                          f"sweep.parquet are kept, and tiersim report {escaped(out)} writes "
                          "the page") from None
    except (OSError, TiersimError):
        raise
    except Exception as error:  # noqa: BLE001 - results are already saved
        (out / "report.html").unlink(missing_ok=True)  # an old one shows another table
        console.print(f"report: not written ({type(error).__name__}: {error})")


def _note_whole_maps(plan: SweepPlan) -> None:
    """A note for each axis whose values are maps set where the base scenario has a map with
    keys some value leaves out: an axis value replaces what its path names whole (it is not
    merged), so those points run without the base's keys. Before, ``tiers.fp8.scheduler:
    [{enable_prefix_caching: false}]`` over a base ``scheduler: {max_num_seqs: 64, ...}`` ran
    at vLLM's default 256 sequences, silently; naming the key
    (``tiers.fp8.scheduler.enable_prefix_caching``) keeps the rest."""
    from tiersim.sweep.axes import holder, tree_copy

    for path in plan.axes:
        try:
            node, key = holder(tree_copy(plan.base), path, plan.source)
            base = node[key] if isinstance(node, dict) else None
        except (LookupError, TypeError, ValueError):
            continue  # a path the validator judged already; nothing set there in the base
        if not isinstance(base, dict) or not base:
            continue
        lost = sorted({k for p in plan.points for k in base
                       if isinstance(p.values.get(path), dict) and k not in p.values[path]},
                      key=list(base).index)
        if not lost:
            continue
        given = [k for p in plan.points if isinstance(p.values.get(path), dict)
                 for k in p.values[path]]
        named = f"{path}.{given[0]}" if given else f"{path}.<key>"
        listed = ", ".join(f"{k}: {yaml_written(base[k])}" for k in lost)
        _note(f"{plan.source}: sweep axis {path!r} sets a whole map, which replaces the base "
              "scenario's (values are not merged into it), so points whose value leaves them "
              f"out run without the base's {listed}; to change one key and keep the rest, "
              f"name it in the axis ({named}: [...])")
