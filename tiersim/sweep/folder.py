"""The sweep folder around its points: what is refused before anything is written (a user's
file, a link or a folder in the way), the base scenario copy and ``sweep.json`` staged and
renamed into place (:func:`_new_manifest`), the table and report removed once they no longer
describe the stored points (:func:`_remove_stale_outputs`), and a write that fails as one
line (:func:`_cannot_write`)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from tiersim.atomic import commit, stage
from tiersim.errors import FILE_TOO_LARGE_FIX, TiersimError, os_errno, os_said
from tiersim.sweep import axes as ax
from tiersim.sweep.manifest import stage_manifest
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner, default_runner
from tiersim.sweep.portable import portable_base
from tiersim.sweep.provenance import digests
from tiersim.sweep.resume import _own_copy, _read_manifest
from tiersim.sweep.store import points_dir, table_matches, table_rows


@contextlib.contextmanager
def _new_manifest(out: Path, plan: SweepPlan, runner: PointRunner = default_runner,
                  bases: list[str] | None = None):
    """Write the base scenario (its user files named absolute, so the copy reruns from any
    folder; the digests stay those of the scenario as read) and the list of points next to
    the results, in two steps: both are written in full beside their places first, the block
    runs (removing what the new manifest outdates), then both are renamed into place. A
    full disk or unwritable file stops the sweep before the block, so the folder keeps its
    old table, report and manifest; a failure in the block leaves the old manifest too. The
    manifest keeps the copy's digest (``copy_digest``): a resume reads the finished points
    under the copy only while it is as written (:func:`_check_same_readings`), and the base
    digests of the points it keeps (``bases``, :func:`tiersim.sweep.resume.kept_bases`; this
    scenario's alone when not given): a point naming any other was copied in."""
    from tiersim.scenario import dump_yaml

    copy = portable_base(plan)
    text = dump_yaml(copy)
    head = {"source": _source_of(out, plan), "axes": plan.axes, **digests(plan, runner),
            "copy_digest": ax.point_id(copy)}
    head["bases"] = bases or [head["base_digest"]]
    staged: list[tuple[Path, Path]] = []
    try:
        staged.append((stage(out / "scenario.yaml", lambda h: h.write(text), "w"),
                       out / "scenario.yaml"))
        staged.append((stage_manifest(out / "sweep.json", head, plan.points),
                       out / "sweep.json"))
        yield
        commit(staged)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _source_of(out: Path, plan: SweepPlan) -> str:
    """The scenario file ``sweep.json`` names as the points' source: the plan's
    (:func:`_source_named`), but the one named before where the plan is the folder's own
    copy, so that a refusal to resume from an edited copy names the original."""
    if _own_copy(out, plan):
        return _read_manifest(out).get("source") or _source_named(plan.source)
    return _source_named(plan.source)


def _source_named(source: str) -> str:
    """The scenario file ``source`` as ``sweep.json`` records it: absolute, so a refusal that
    names it (:func:`_different_base`) names that file from any working folder (``s.yaml``
    named another folder's file, or none); a source that is no file (a scenario given as a
    map) as it is."""
    try:
        return str(Path(source).absolute()) if Path(source).is_file() else source
    except OSError:
        return source


def _cannot_write(error: OSError, out: Path) -> TiersimError:
    """An OSError while writing results, as one line naming the file (and the folder that is
    in the way of one, if that is why)."""
    where = error.filename or out
    if Path(where).is_dir() and Path(where) != out:
        return TiersimError(f"{where}: cannot write ({error.strerror or error}): a folder is "
                            "in the way of this sweep file; remove that folder, then rerun to "
                            "resume")
    if os_errno(error) == errno.EFBIG:  # over ulimit -f: free space does not help
        return TiersimError(f"{where}: cannot write ({os_said(error)}); {FILE_TOO_LARGE_FIX}, "
                            "then rerun to resume")
    return TiersimError(f"{where}: cannot write ({os_said(error)}); check that "
                        f"{out} is writable and has free space, then rerun to resume")


SWEEP_FILES = ("scenario.yaml", "sweep.parquet", "report.html")
"""The files a sweep writes beside ``sweep.json``, which it writes before any of them."""


def _refuse_foreign_files(out: Path, plan: SweepPlan) -> None:
    """Refuse a folder without a sweep's ``sweep.json`` that holds a file a sweep writes (a
    user's own ``scenario.yaml`` or ``report.html`` was replaced), before anything is written.
    The sweep's own copy of this scenario is no user's file (a kill between the renames of
    ``scenario.yaml`` and ``sweep.json`` leaves it alone), so that folder resumes, as does
    one with a sweep's ``points/`` or a ``sweep.json`` of any kind (the resume reads them)."""
    manifest = out / "sweep.json"
    if manifest.exists() or manifest.is_symlink() or (out / "points").is_dir():
        return
    for name in SWEEP_FILES:
        path = out / name
        if not path.is_file() or (name == "scenario.yaml" and _own_base_copy(path, plan)):
            continue
        raise TiersimError(f"{path}: `tiersim sweep` would overwrite this file, and {out} "
                           "holds no sweep's results (no sweep.json); move the file, or use "
                           "another --out folder (nothing was written)")


def _own_base_copy(path: Path, plan: SweepPlan) -> bool:
    """Whether ``path`` holds the base scenario exactly as this sweep writes it."""
    from tiersim.scenario import dump_yaml

    text = dump_yaml(portable_base(plan))
    try:
        with path.open("rb") as handle:
            return handle.read(len(text.encode()) + 1) == text.encode()
    except OSError:
        return False


def _check_points_folder(out: Path) -> None:
    """Refuse, before anything is written, a link or a file where the sweep keeps its
    ``points/`` folder."""
    points = out / "points"
    if points.is_symlink():
        raise TiersimError(f"{points}: is a link; a sweep keeps its points inside "
                           "--out (remove the link or use another --out)")
    if points.exists() and not points.is_dir():
        raise TiersimError(f"{points}: a file is in the way of the points folder that "
                           "`tiersim sweep` writes; move or remove that file, or use another "
                           "--out folder (nothing was written)")


def _refuse_folders_in_the_way(out: Path, pending: list[ax.Point]) -> None:
    """Refuse, before the folder changes or a point runs, a folder where a pending point's
    file goes (``points/<id>.json/``): found only when the point was stored, it ended the
    sweep there, and every point then in flight was computed and lost."""
    try:
        with os.scandir(points_dir(out)) as entries:
            folders = {e.name for e in entries if e.is_dir(follow_symlinks=False)}
    except OSError:  # no points folder yet (or none to read: the writes say so)
        return
    for point in pending:
        if f"{point.id}.json" in folders:
            raise TiersimError(f"{points_dir(out) / f'{point.id}.json'}: a folder is in the way "
                               "of this sweep point's file; remove that folder, then rerun to "
                               "resume (no point was run)")


def _remove_stale_outputs(out: Path, records: dict[str, dict[str, Any]],
                          pending: list[ax.Point], ids: list[str]) -> None:
    """Before the manifest or any point changes, remove what no longer describes the stored
    points, so a sweep killed from here on leaves no table or report that outlives its data
    (this sweep writes them again at its end): ``sweep.parquet`` when one of its rows is not
    stored as it was (points deleted to start over, say) or one is not among the plan's
    points ``ids`` in their order (an axis cut or reordered: the new manifest would not list
    it; a table short of an extended grid's points stays, and a report refuses it until this
    sweep rewrites it) or one of its rows is a point to run again (a failed one, or one another
    version ran: its file changes before the table is rewritten), ``report.html`` then and
    whenever points are to run."""
    rows = table_rows(out) or []
    table_ids = [point for point, _ in rows]
    shown = set(table_ids)
    stale = not table_matches(out, records) or [i for i in ids if i in shown] != table_ids
    stale = stale or any(point.id in shown for point in pending)  # its row is to change
    if stale:
        (out / "sweep.parquet").unlink(missing_ok=True)
    if stale or pending:
        (out / "report.html").unlink(missing_ok=True)
