"""The tiersim build that runs a sweep's points: its version with a digest of its code and
packaged data (:func:`tiersim_version`), and what it decides: a point another build ran is run
again (:func:`_other_version`), a later release's points are refused
(:func:`_refuse_later_release`), and points run while tiersim's own files changed are marked
failed (:func:`_check_same_package`). Patch :func:`_package_digest` here: it is read here."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from tiersim.atomic import write_point
from tiersim.errors import TiersimError
from tiersim.sweep.messages import _note, clipped


def tiersim_version() -> str:
    """The version of tiersim running the points, with a digest of its code and packaged data
    (``0.1.0+3f2a9c1b7e04``): a point run by another build is run again, so an edited
    checkout without a version bump does not mix its rows with the old ones."""
    import tiersim

    return f"{tiersim.__version__}+{_package_digest()}"


@functools.cache
def _package_digest() -> str:
    """12 hex digits over the package's Python sources and data files (names and bytes)."""
    import tiersim

    root = Path(tiersim.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".parquet", ".csv"):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _check_same_package(out: Path, started: str, ran: list[str],
                        records: dict[str, dict[str, Any]]) -> None:
    """Refuse to make one table of points run while tiersim's own files changed (an upgrade,
    a ``git pull`` or packaged data such as ``precision_priors.json`` edited mid-sweep): a
    point reads some of them as it runs, so the points ``ran`` may have read either version,
    all recorded as ``started``. The package is digested again (:func:`tiersim_version`); on
    a change the points run are marked failed, the table and report removed, and a rerun
    recomputes them with the tiersim then installed."""
    ran = [i for i in ran if i in records]
    if not ran:
        return  # the stored points are all of the version they record
    _package_digest.cache_clear()
    now = tiersim_version()
    if now == started:
        return
    for point_id in ran:
        record = records[point_id]
        if record.get("status") == "ok":
            record.update(status="error", summary=None,
                          error="InputChanged: tiersim's own files changed while the sweep "
                                "ran; rerun to recompute this point")
            write_point(out, record)
    for name in ("sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)
    count = f"{len(ran):,} point{'s' if len(ran) != 1 else ''}"
    raise TiersimError(f"{out}: tiersim's own files changed while the sweep ran (tiersim "
                       f"{started}, now {now}), so its {count} run may have read either "
                       "version, and one table must not mix the two; rerun to recompute "
                       f"{'them' if len(ran) != 1 else 'it'} with the tiersim now installed "
                       f"({'they are' if len(ran) != 1 else 'it is'} marked failed)")


def _refuse_later_release(out: Path, records: dict[str, dict[str, Any]],
                          done: set[str]) -> None:
    """Refuse, before anything changes, to resume points a later tiersim release ran: running
    them again (:func:`_other_version`) would replace their files with this earlier release's
    results. An earlier release's points, or another build of this release's, run again."""
    import tiersim
    from tiersim.versions import later_than_this, release, release_text

    later = sorted((i for i in done if later_than_this(records[i].get("tiersim"))),
                   key=lambda i: release(records[i]["tiersim"]))
    if later:
        newest = str(records[later[-1]]["tiersim"])
        count = f"{len(later)} sweep point{'s' if len(later) != 1 else ''}"
        raise TiersimError(f"{out}: holds {count} run by tiersim {newest}, a later release than "
                           f"this tiersim {tiersim.__version__}; resuming would replace them "
                           "with an earlier version's results: resume with tiersim "
                           f"{release_text(newest)} or later, or use a "
                           "new --out folder (nothing was changed)")


def ran_here(record: dict[str, Any]) -> bool:
    """Whether this tiersim build ran the point ``record`` holds: its ``tiersim`` version is
    this one's. Every build since points recorded it writes one, so a record without one was
    written by an earlier build, another version too."""
    return record.get("tiersim") == tiersim_version()


def _other_version(records: dict[str, dict[str, Any]], done: set[str]) -> set[str]:
    """The finished points another tiersim version ran (one that recorded no version
    included: :func:`ran_here`), noted: they run again, so one table holds one version."""
    now = tiersim_version()
    stale = {i for i in done if not ran_here(records[i])}
    if stale:
        then = sorted({clipped(str(records[i]["tiersim"]), 40) for i in stale
                       if "tiersim" in records[i]})  # an edited file's may be any length
        who = [f"tiersim {', '.join(then)}"] if then else []
        if any("tiersim" not in records[i] for i in stale):
            who.append("a tiersim that recorded no version")
        _note(f"{len(stale)} stored point(s) were run by {' and '.join(who)}; they run "
              f"again with {now}, so the table holds one version")
    return stale
