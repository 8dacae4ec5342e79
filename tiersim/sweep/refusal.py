"""A sweep whose every point failed with one and the same input error: the scenario's error.

A check a run makes only once it reads the trace (a ``router.response_cache.key`` column the
trace lacks, say) fails every point of a sweep that does not change it, the same way. That is
the scenario's error, not its points': the worker keeps each input error's parts in the point's
record (:func:`refusal_of`), and the sweep raises :func:`common_refusal` as ``tiersim run``
raises it (with the key's line in the scenario, which the command line adds), or as the
error of the axis that made the key where the base lacks it
(:func:`tiersim.sweep.run.axis_refusal`). A sweep that
made its folder for this leaves none (:func:`remove_written`). Imports nothing heavy: workers
load it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tiersim.errors import ScenarioError, TiersimError


def refusal_of(error: BaseException) -> dict[str, str] | None:
    """The parts of a user-input error for a point's record (``None`` for anything else: a
    bug is never a scenario's refusal)."""
    if isinstance(error, ScenarioError):
        return {"path": error.path, "where": error.where, "message": error.message}
    if isinstance(error, TiersimError):
        return {"message": str(error)}
    return None


def common_refusal(records: dict[str, dict[str, Any]], ids: list[str]) -> TiersimError | None:
    """The input error every point of ``ids`` failed with, when all failed with one and the
    same (as the error it was); else None."""
    found = [records.get(i, {}).get("refusal") for i in ids]
    if not found or not isinstance(found[0], dict) or any(r != found[0] for r in found):
        return None
    parts = found[0]
    if {"path", "where", "message"} <= parts.keys():
        return ScenarioError(parts["path"], parts["where"], parts["message"])
    return TiersimError(parts.get("message", ""))


def is_fresh(out: Path) -> bool:
    """Whether ``out`` holds nothing yet (absent, or an empty folder): what a sweep writes
    there is all its own."""
    if not out.exists():
        return not out.is_symlink()
    try:
        return out.is_dir() and not any(out.iterdir())
    except OSError:
        return False


def remove_written(out: Path) -> None:
    """Remove what a sweep wrote into the folder it found empty (:func:`is_fresh`): its points
    and manifest (the lock and the folder go as the lock is released)."""
    shutil.rmtree(out / "points", ignore_errors=True)
    for name in ("scenario.yaml", "sweep.json", "sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)


__all__ = ["common_refusal", "is_fresh", "refusal_of", "remove_written"]
