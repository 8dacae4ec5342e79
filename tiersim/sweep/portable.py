"""The sweep's saved scenario (``DIR/scenario.yaml``) written to rerun from any folder: the
relative paths of the user files the base scenario and its sweep values name are made absolute,
as a run's saved scenario makes them (:func:`tiersim.runner.portable_paths`). The digests a
resume checks stay those of the scenario as read (:mod:`tiersim.sweep.resume`); where they differ,
the points are read under this copy and compared (:mod:`tiersim.sweep.equivalent`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from tiersim.errors import TiersimError
from tiersim.jsonio import sorted_json
from tiersim.sweep import axes as ax

if TYPE_CHECKING:
    from tiersim.sweep.plan import SweepPlan


def portable_base(plan: SweepPlan) -> dict[str, Any]:
    """The base scenario as ``DIR/scenario.yaml`` stores it: relative paths of the user files
    it names made absolute (:func:`tiersim.runner.portable_paths`), and those its sweep values
    name, whatever the axis (:func:`portable_sweep`)."""
    from tiersim.runner import portable_paths

    doc = portable_paths(copy.deepcopy(plan.base), plan.source)
    if isinstance(plan.base.get("sweep"), dict):
        doc["sweep"] = portable_sweep(plan)
    return doc


def portable_sweep(plan: SweepPlan) -> dict[str, Any]:
    """The plan's ``sweep:`` map with each value as the scenario would name it absolute: the
    value is set into the base, :func:`tiersim.runner.portable_paths` is applied, and the
    value read back, so an axis holding a map (``trace``, a tier, ``speculative``) is covered
    as well as one naming a file. An axis whose values would no longer be distinct (``sub/t``
    and ``./sub/t``) keeps them as written."""
    from tiersim.runner import portable_paths

    def axis(path: str, values: Any) -> Any:
        if not isinstance(values, list):
            return values
        where = ax.canonical_path(plan.base, path)  # before a value renames what it names
        try:
            rewritten = [_portable_value(plan, path, where, value, portable_paths)
                         for value in values]
        except (TiersimError, LookupError, TypeError, ValueError):
            return values  # a value the base cannot take: the points say so; kept as written
        distinct = {sorted_json(v) for v in rewritten}
        return rewritten if len(distinct) == len(values) else values

    def group(axes: Any) -> Any:
        return {k: axis(k, v) for k, v in axes.items()} if isinstance(axes, dict) else axes

    sweep = plan.base["sweep"]
    out = group({k: v for k, v in sweep.items() if k != "zip"})
    if "zip" in sweep:
        zips = sweep["zip"]
        out["zip"] = [group(g) for g in zips] if isinstance(zips, list) else group(zips)
    return out


def _portable_value(plan: SweepPlan, path: str, where: tuple[str, ...], value: Any,
                    portable_paths) -> Any:
    """One sweep value as the scenario would name it absolute (see :func:`portable_sweep`);
    a number or a flag as it is."""
    if not isinstance(value, (str, dict, list)):
        return value
    doc = ax.apply(plan.base, {path: copy.deepcopy(value)}, plan.source)
    doc = portable_paths(doc, plan.source)  # rewrites in place: the copy, not the plan
    return _value_at(doc, where)


def _value_at(doc: Any, segments: tuple[str, ...]) -> Any:
    """The value at canonical ``segments`` (list items by index) of ``doc``."""
    for segment in segments:
        doc = doc[int(segment)] if isinstance(doc, list) else doc[segment]
    return doc
