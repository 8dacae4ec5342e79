"""The checks made once the points ran, before they are made one table: no point of the grid
lost while the sweep ran (:func:`_refuse_lost_points`), and no two versions of one input file
read (:func:`_check_one_version`: the points that read the older one are marked failed, so a
rerun recomputes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.input_files import file_digest, input_paths
from tiersim.sweep import axes as ax
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.store import points_dir, write_point


def _check_one_version(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse to make one table of points that read two versions of one input file (it was
    replaced while the sweep ran). The points that read another version of any such file than
    it holds now are marked failed, so a rerun recomputes them over the files as they are; the
    line names the first file, with its own count."""
    changed = [(path, field, by_digest) for path, (field, by_digest)
               in _input_versions(plan, records).items() if len(by_digest) > 1]
    if not changed:
        return
    stale = [_stale_ids(path, by_digest) for path, _, by_digest in changed]
    marked: set[str] = set()
    for (path, field, _), ids in zip(changed, stale, strict=True):
        for point_id in sorted(ids - marked):
            _mark_stale(out, records[point_id], field, path)
        marked |= ids
    for name in ("sweep.parquet", "report.html"):  # they may show a point just marked
        (out / name).unlink(missing_ok=True)
    path, field, by_digest = changed[0]
    finished = len(set().union(*by_digest.values()))
    too = "" if len(changed) == 1 else f" ({_changed_too(changed[1:])})"
    those, are = ("it", "it is") if len(marked) == 1 else (f"those {len(marked)}", "they are")
    files = "the file as it is" if len(changed) == 1 else "the files as they are"
    raise TiersimError(f"{out}: {path} ({field}) changed while the sweep ran{too}: "
                       f"{len(stale[0])} of {finished} finished points read an older version "
                       "of it, and one table must not mix the two; rerun to recompute "
                       f"{those} over {files} now ({are} marked failed), or use a new --out "
                       "folder")


def _stale_ids(path: Path, by_digest: dict[str, set[str]]) -> set[str]:
    """The points that read another version of ``path`` than it holds now."""
    now = _digest_now(path)
    return {i for digest, ids in by_digest.items() if digest != now for i in ids}


def _changed_too(changed: list[tuple[Path, str, Any]]) -> str:
    """The other input files that changed while the sweep ran, in words."""
    names = ", ".join(f"{path} ({field})" for path, field, _ in changed[:2])
    more = f" and {len(changed) - 2} more" if len(changed) > 2 else ""
    return f"so did {names}{more}"


def _input_versions(plan: SweepPlan, records: dict[str, dict[str, Any]]
                    ) -> dict[Path, tuple[str, dict[str, set[str]]]]:
    """For each input file the plan's finished points read: its (first) field and, per
    content digest the points recorded, the ids of the points that read that version, each
    once (two tiers of one model config read one file under two fields)."""
    wanted = {p.id: p for p in plan.points}
    found: dict[Path, tuple[str, dict[str, set[str]]]] = {}
    for point_id, record in records.items():
        if record.get("status") != "ok" or point_id not in wanted:
            continue
        paths = input_paths(ax.apply(plan.base, wanted[point_id].values, plan.source),
                            plan.source)
        for field, digest in (record.get("inputs") or {}).items():
            if field in paths:
                versions = found.setdefault(paths[field], (field, {}))[1]
                versions.setdefault(str(digest), set()).add(point_id)
    return found


def _digest_now(path: Path) -> str | None:
    """The file's digest now (None if it can no longer be read)."""
    try:
        return file_digest(path)
    except OSError:
        return None


def _mark_stale(out: Path, record: dict[str, Any], field: str, path: Path) -> None:
    """Store a point that read an older version of ``path`` as failed (a rerun retries it)."""
    record.update(status="error", summary=None,
                  error=f"InputChanged: {path} ({field}) changed while the sweep ran; rerun "
                        "to recompute this point")
    write_point(out, record)


def _refuse_lost_points(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse a grid one of whose points is no longer stored once the points ran (its file
    removed, or edited into no record, while the sweep ran): the table would be short of it
    and read as complete. No table is written, and one there (which now outlives its data)
    goes with its report; a rerun runs the point again."""
    lost = [p.id for p in plan.points if p.id not in records]
    if not lost:
        return
    for name in ("sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)
    ids = ", ".join(lost[:3]) + (", ..." if len(lost) > 3 else "")
    one = len(lost) == 1
    raise TiersimError(f"{points_dir(out)}: {len(lost):,} of the {len(plan.points):,} points "
                       f"{'is' if one else 'are'} no longer stored ({ids}: "
                       f"{'its file was' if one else 'their files were'} removed or changed "
                       f"while the sweep ran); rerun to resume ({'it runs' if one else 'they run'}"
                       " again)")
