"""Running a sweep's pending points: their tasks made as they are sent (:func:`_tasks`), run
by the local or Ray executor, each record stored as it comes back (:func:`_execute`; one of
another tiersim build is refused), and the :class:`Tally` an interrupted sweep reports."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.jsonio import read_json
from tiersim.sweep import axes as ax
from tiersim.sweep import executors
from tiersim.sweep.build import ran_here, tiersim_version
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner, SweepNotes, Task, warm_up
from tiersim.sweep.provenance import digests
from tiersim.sweep.refusal import axis_keys
from tiersim.sweep.store import points_dir, write_point


@dataclass
class Tally:
    """What one :func:`run_sweep` call did, for the line an interrupted sweep prints."""

    stored: int = 0
    """Finished (``ok``) points this call stored (points stored earlier are not counted)."""
    folder: Path | None = None
    """The sweep's points folder, once the finished points are known."""
    pending: tuple[str, ...] = ()
    """The ids of the points this call runs."""
    earlier: int = 0
    """Finished points an earlier sweep stored in the folder, which this call keeps."""
    total: int = 0
    """The grid's points, stored or not."""

    def stored_on_disk(self) -> int:
        """The points of this call stored ``ok``, counted in the folder: an interrupted sweep
        may have had one stored by a worker that the parent had not counted yet."""
        if self.folder is None or not self.pending:
            return self.stored
        try:
            names = {e.name for e in os.scandir(self.folder)}
        except OSError:
            return self.stored
        ids = [i for i in self.pending if f"{i}.json" in names]
        return max(self.stored, sum(_stored_ok(self.folder / f"{i}.json") for i in ids))


def _stored_ok(path: Path) -> bool:
    """Whether the point file at ``path`` is whole, says ``ok`` and was run by this tiersim
    version: a point another version stored ``ok`` is pending too (it runs again,
    :func:`_other_version`), and until this call rewrites it its file still says ``ok``."""
    try:
        record = read_json(path, "a sweep point record")
        return record.get("status") == "ok" and ran_here(record)
    except (TiersimError, AttributeError):
        return False


def _tasks(plan: SweepPlan, pending: list[ax.Point], out: Path,
           runner: PointRunner) -> Iterator[Task]:
    """The pending points' tasks, each made as it is sent (a scenario copy per point would
    otherwise be held for every point before the first runs)."""
    keys = axis_keys(plan.base, plan.axes, plan.source)
    tags = {k: v for k, v in digests(plan, runner).items() if k != "tiersim"}  # the worker's
    for point in pending:
        try:
            doc = ax.apply(plan.base, point.values, plan.source)
        except TiersimError as error:  # a combination the scenario cannot hold: its own point
            yield Task(point, {}, plan.source, runner, str(out), tags, refused=str(error))
            continue
        yield Task(point, doc, plan.source, runner, str(out), tags, axes=keys)


def _execute(plan: SweepPlan, pending: list[ax.Point], out: Path, workers: int, executor: str,
             address: str | None, runner: PointRunner, bar, already: int,
             tally: Tally) -> int:
    """Run the pending points with the chosen executor; return how many failed (``tally``
    counts those stored ok as they come back)."""
    tasks = _tasks(plan, pending, out, runner)
    failures = 0
    notes = SweepNotes(out)
    version = tiersim_version()

    def on_done(record: dict[str, Any]) -> None:
        nonlocal failures
        _refuse_other_build(out, record, version)
        index = record.pop("grid_index", None)
        if not record.pop("stored", False):
            write_point(out, record)
        notes.add(record, index)
        failures += record.get("status") != "ok"
        tally.stored += record.get("status") == "ok"
        bar.advance(bar_id)

    if executor == "ray":
        with bar:
            bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
            executors.run_ray(tasks, on_done, address, workers)
        notes.show()
        return failures
    warm_up(runner)  # imported once here; forked workers inherit it
    workers = max(1, min(workers, len(pending)))  # a worker without a point would only idle
    with executors.local_pool(workers) as pool, bar:
        bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
        executors.run_local(tasks, pool, on_done, workers)
    notes.show()
    return failures


def _refuse_other_build(out: Path, record: dict[str, Any], version: str) -> None:
    """End the sweep on a point that another tiersim build ran (a Ray cluster's workers with
    another tiersim installed, or local workers that read tiersim's code after it was edited):
    stored, it would read as this build's (as would every point those workers run), and a
    resume would keep it. It is not stored."""
    theirs = record.get("tiersim")
    if theirs == version or "base_digest" not in record:  # this build's, or the sweep's own
        return  # record of a worker that died
    if record.get("stored"):  # a local worker stored it itself
        (points_dir(out) / f"{record['point_id']}.json").unlink(missing_ok=True)
    theirs = theirs or "of a build older than this one (which does not say its version)"
    raise TiersimError(f"{out}: point {record.get('point_id')} was run by tiersim {theirs}, "
                       f"this command is tiersim {version} (a Ray cluster's workers need this "
                       "tiersim installed); run the same build on both, then rerun to resume "
                       "(points of the other build are not stored)")
