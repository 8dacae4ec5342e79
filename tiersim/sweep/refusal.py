"""A sweep whose every point failed with one and the same input error: the scenario's error.

A check a run makes only once it reads the trace (a ``router.response_cache.key`` column the
trace lacks, say) fails every point of a sweep that does not change it, the same way. That is
the scenario's error, not its points': the worker keeps each input error's parts in the point's
record (:func:`refusal_of`), and the sweep raises :func:`common_refusal` as ``tiersim run``
raises it (with the key's line in the scenario, which the command line adds), or as the
error of the axis that made the key where the base lacks it
(:func:`blamed`). A sweep that made its folder for this leaves none (:func:`remove_written`).
A point that fails alone records its error as a plain run of its values would name it, at the
line of the axis' key in the sweep map or of the base scenario's key (:func:`point_error`).
Imports nothing heavy: workers load it (and the scenario module, once a point fails).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiersim.errors import ScenarioError, TiersimError
from tiersim.sweep.axes import SweepError, canonical_path


def refusal_of(error: BaseException) -> dict[str, str] | None:
    """The parts of a user-input error for a point's record (``None`` for anything else: a
    bug is never a scenario's refusal)."""
    if isinstance(error, ScenarioError):
        parts = {"path": error.path, "where": error.where, "message": error.message}
        return parts if error.refused_as is None else {**parts, "refused_as": error.refused_as}
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
        return ScenarioError(parts["path"], parts["where"], parts["message"],
                             parts.get("refused_as"))
    return TiersimError(parts.get("message", ""))


@dataclass(frozen=True)
class AxisKey:
    """A sweep axis as an error is blamed on it: ``path`` as the sweep map writes it, ``canon``
    the key it sets (list elements by index: :func:`tiersim.sweep.axes.canonical_path`) and
    ``held`` how many of ``canon``'s leading parts the base scenario holds."""

    path: str
    canon: tuple[str, ...]
    held: int

    def owns(self, key: tuple[str, ...]) -> bool:
        """Whether an error at ``key`` (its parts as strings) is this axis': it sets ``key`` or
        a map holding it, or made ``key`` (sets a value below it) where the base lacks it."""
        if key[:len(self.canon)] == self.canon:
            return True
        return self.canon[:len(key)] == key and len(key) > self.held


def axis_keys(base: dict, paths: list[str], source: str) -> tuple[AxisKey, ...]:
    """The :class:`AxisKey` of each axis ``paths`` of the base scenario ``base``."""
    keys = []
    for path in paths:
        canon = canonical_path(base, path, source)
        keys.append(AxisKey(path, canon, _held(base, canon)))
    return tuple(keys)


def _held(doc: Any, canon: tuple[str, ...]) -> int:
    """How many leading parts of ``canon`` the plain scenario data ``doc`` holds."""
    for n, part in enumerate(canon):
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return n
    return len(canon)


def blamed(error: TiersimError, axes: tuple[AxisKey, ...], source: str) -> TiersimError:
    """``error`` blamed on the axis that set the key it names (a ``trace.path`` axis naming a
    missing file), or that made that key where the base lacks it (``router.response_cache.
    size`` adding the cache whose key column the trace lacks): named at the base's key, it
    read as an error of a scenario that runs. Otherwise the error as it is (the scenario's
    own)."""
    from tiersim.scenario import key_path

    loc = key_path(error.where) if isinstance(error, ScenarioError) else None
    if loc is None:
        return error
    key = tuple(str(part) for part in loc)
    axis = next((a for a in axes if a.owns(key)), None)
    if axis is None:
        return error
    return SweepError(source, axis.path, f"{error.where}: {error.message}")


def with_line(error: TiersimError) -> TiersimError:
    """A scenario or sweep error with its key's line in the file, where it names none
    (:func:`tiersim.scenario_explain.located`; a sweep error's key is its axis in the sweep map)."""
    if isinstance(error, ScenarioError):
        from tiersim.scenario import located

        return located(error)
    if isinstance(error, SweepError) and error.loc is not None:
        from tiersim.scenario import line_in

        line = line_in(error.source, _axis_loc(error))
        return error if line is None else SweepError(error.source, error.path, error.message,
                                                     line, error.loc)
    return error


def _axis_loc(error: SweepError) -> tuple[str | int, ...]:
    """Where in its file the axis a sweep error names is listed: ``("sweep", path)``, or in
    the zip group that lists it (the last of two: the one found twice), where the sweep map
    has no key of that name (its line was the line of ``sweep:`` itself)."""
    from tiersim.scenario import read_yaml

    loc = error.loc or ()
    if loc != ("sweep", error.path) or not error.source.endswith((".yaml", ".yml")):
        return loc
    try:
        data, _ = read_yaml(error.source)
    except (TiersimError, OSError):
        return loc
    sweep = data.get("sweep") if isinstance(data, dict) else None
    if not isinstance(sweep, dict) or error.path in sweep:
        return loc
    groups = sweep.get("zip")
    if isinstance(groups, dict):
        return ("sweep", "zip", error.path) if error.path in groups else loc
    held = [i for i, group in enumerate(groups if isinstance(groups, list) else [])
            if isinstance(group, dict) and error.path in group]
    return ("sweep", "zip", held[-1], error.path) if held else loc


def point_error(error: BaseException, axes: tuple[AxisKey, ...],
                source: str) -> BaseException:
    """A failed point's error as a plain run of its values names it: a scenario error at the
    line of the axis' key in the sweep map where an axis set the key it names (:func:`blamed`),
    else of that key in the base scenario ``source``. Any other error as it is."""
    if not isinstance(error, ScenarioError):
        return error
    return with_line(blamed(error, axes, source))


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


__all__ = ["AxisKey", "axis_keys", "blamed", "common_refusal", "is_fresh", "point_error",
           "refusal_of", "remove_written", "with_line"]
