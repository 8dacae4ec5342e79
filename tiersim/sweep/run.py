"""Run a whole sweep: load the scenario, expand the axes, skip finished points, run the rest.

``run_sweep(scenario, out_dir)`` is what ``tiersim sweep`` calls. It writes ``DIR/scenario.yaml``
(the base scenario), ``DIR/sweep.json`` (the manifest: source and points), one
``DIR/points/<id>.json`` per finished point, ``DIR/sweep.parquet`` and, unless told not to,
``DIR/report.html``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tiersim.errors import ScenarioError, TiersimError
from tiersim.sweep import axes as ax
from tiersim.sweep import executors
from tiersim.sweep.points import (
    PointRunner,
    Task,
    Validator,
    default_runner,
    default_validator,
    warm_up,
)
from tiersim.sweep.store import (
    collect,
    read_points,
    remove_stale_temps,
    write_json_atomic,
    write_point,
)


def load_raw(path: str | Path) -> dict[str, Any]:
    """Read a scenario YAML as a plain dict (sweep map included); errors name the file."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ScenarioError(str(path), "", f"cannot read ({error.strerror})") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise ScenarioError(str(path), where, "not valid YAML") from error
    if not isinstance(doc, dict):
        raise ScenarioError(str(path), "", "must be a YAML map at the top level")
    return doc


@dataclass
class SweepPlan:
    """A loaded sweep: the base scenario dict, where it came from, its axes and points."""

    base: dict[str, Any]
    source: str
    axes: list[str]
    points: list[ax.Point]


def _deepest(doc: dict[str, Any], path: str) -> str:
    """Describe what exists at the deepest existing prefix of ``path``."""
    node: Any = doc
    walked: list[str] = []
    for segment in path.split("."):
        child = ax.list_child(node, segment) if isinstance(node, list) else (
            node.get(segment) if isinstance(node, dict) else None)
        if child is None:
            break
        node, walked = child, [*walked, segment]
    return f"under {'.'.join(walked) or '<top>'!r}: {ax.describe(node)}"


def check_axes(plan: SweepPlan, validator: Validator | None) -> None:
    """Fail fast on an axis whose path (with its first value) the scenario does not accept."""
    for path in plan.axes:
        first = next(p.values[path] for p in plan.points)
        doc = ax.apply(plan.base, {path: first}, plan.source)
        if validator is None:
            continue
        try:
            validator(doc, plan.source)
        except TiersimError as error:
            message = str(error).removeprefix(f"{plan.source}: ")
            raise ax.SweepError(plan.source, path, f"{message} ({_deepest(plan.base, path)})") \
                from error


def prepare(scenario: str | Path | dict, source: str | None = None,
            validator: Validator | None = default_validator) -> SweepPlan:
    """Load a scenario (path or dict), expand its ``sweep:`` map and check every axis path."""
    if isinstance(scenario, dict):
        base, source = scenario, source or "scenario"
    else:
        base, source = load_raw(scenario), source or str(scenario)
    sweep_map = base.get("sweep") or {}
    points = ax.expand(sweep_map, source)
    plan = SweepPlan(base, source, ax.axis_names(sweep_map), points)
    check_axes(plan, validator)
    return plan


def _progress(console: Console, enabled: bool) -> Progress:
    """Progress bar: points done of total, elapsed, ETA."""
    return Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("points"), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), console=console, disable=not enabled)


def base_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario without its sweep map: points of different bases never mix."""
    return ax.point_id({k: v for k, v in base.items() if k != "sweep"})


def _check_same_base(out: Path, plan: SweepPlan) -> None:
    """Refuse to resume into a folder whose points came from a different base scenario."""
    manifest = out / "sweep.json"
    if not manifest.exists():
        return
    try:
        old = json.loads(manifest.read_text()).get("base_digest")
    except ValueError:
        return
    if old is not None and old != base_digest(plan.base) and read_points(out):
        raise TiersimError(f"{out}: holds a sweep of a different scenario (something outside "
                           "`sweep:` changed); use a new --out folder, or delete "
                           f"{out / 'points'} to start over")


def _write_manifest(out: Path, plan: SweepPlan) -> None:
    """Store the base scenario and the list of points next to the results."""
    (out / "scenario.yaml").write_text(yaml.safe_dump(plan.base, sort_keys=False))
    write_json_atomic(out / "sweep.json", {
        "source": plan.source, "axes": plan.axes, "base_digest": base_digest(plan.base),
        "points": [{"point_id": p.id, "index": p.index, "values": p.values}
                   for p in plan.points]})


def run_sweep(scenario: str | Path | dict, out_dir: str | Path, workers: int | None = None,
              executor: str = "local", address: str | None = None,
              runner: PointRunner = default_runner, validator: Validator | None = default_validator,
              source: str | None = None, progress: bool | None = None,
              report: bool = True) -> pd.DataFrame:
    """Run every point not already finished in ``out_dir``; return the sweep table."""
    if executor not in ("local", "ray"):
        raise TiersimError(f"--executor: must be 'local' or 'ray' (got {executor!r})")
    plan = prepare(scenario, source, validator)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_same_base(out, plan)
    _write_manifest(out, plan)
    remove_stale_temps(out)  # a killed sweep may leave one per worker; no writer is active now
    done = {i for i, r in read_points(out).items() if r.get("status") == "ok"}
    pending = [p for p in plan.points if p.id not in done]
    console = Console(stderr=True, soft_wrap=True)
    workers = workers or os.cpu_count() or 1
    failed = _execute(plan, pending, out, workers, executor, address, runner,
                      _progress(console, sys.stderr.isatty() if progress is None else progress),
                      len(plan.points) - len(pending))
    frame = collect(out, plan.axes, [p.id for p in plan.points])
    console.print(f"sweep: {len(plan.points)} points ({len(pending)} run, "
                  f"{len(plan.points) - len(pending)} already done, {failed} failed) -> "
                  f"{out / 'sweep.parquet'}")
    if report:
        _report(out, console)
    return frame


def _execute(plan: SweepPlan, pending: list[ax.Point], out: Path, workers: int, executor: str,
             address: str | None, runner: PointRunner, bar: Progress, already: int) -> int:
    """Run the pending points with the chosen executor; return how many failed."""
    tasks = [Task(p, ax.apply(plan.base, p.values, plan.source), plan.source, runner, str(out))
             for p in pending]
    failures = 0

    def on_done(record: dict[str, Any]) -> None:
        nonlocal failures
        if not record.pop("stored", False):
            write_point(out, record)
        failures += record.get("status") != "ok"
        bar.advance(bar_id)

    if executor == "ray":
        with bar:
            bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
            executors.run_ray(tasks, on_done, address)
        return failures
    warm_up(runner)  # imported once here; forked workers inherit it
    workers = workers if len(tasks) > 1 else 1
    with executors.local_pool(workers) as pool, bar:
        bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
        executors.run_local(tasks, pool, on_done, workers)
    return failures


def _report(out: Path, console: Console) -> None:
    """Write the HTML report; a report failure is reported, the results stay."""
    from tiersim.report import write_report

    try:
        console.print(f"report: {write_report(out)}")
    except Exception as error:  # noqa: BLE001 - results are already saved
        console.print(f"report: not written ({type(error).__name__}: {error})")

