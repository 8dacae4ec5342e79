"""A loaded sweep: :class:`SweepPlan` (the base scenario, where it came from, its axes and grid
points), the scenario file read as a plain dict, the grid's size limit, and the input files the
points read (:func:`names_files`, :func:`sweep_inputs`)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiersim.errors import ScenarioError, shown_yaml
from tiersim.input_files import input_files
from tiersim.sweep import axes as ax
from tiersim.sweep.points import Validator


def load_raw(path: str | Path) -> dict[str, Any]:
    """Read a scenario YAML as a plain dict (sweep map included) within the scenario reader's
    limits (size, UTF-8, depth, alias expansion, finite numbers), a quoted number refused as
    ``tiersim run`` refuses it (the points are validated from dicts, which cannot tell one);
    errors name the file."""
    return _read_base(path)[0]


def _read_base(path: str | Path) -> tuple[dict[str, Any], Any]:
    """:func:`load_raw`'s dict and the file's YAML node tree; the sweep map's numbers keep the
    text the file writes them in (:func:`tiersim.scenario.numbers_as_written`), so a line
    quoting an axis value quotes it so: ``1e30`` read "1e+30", ``0.00001`` "1e-05"."""
    from tiersim.scenario import (
        numbers_as_written,
        read_yaml,
        refuse_non_map,
        refuse_text_numbers,
    )

    doc, root = read_yaml(path)
    refuse_non_map(doc, str(path), root)
    refuse_text_numbers(doc, str(path), root)
    if isinstance(doc.get("sweep"), dict):  # its values quoted as written (1e30, not 1e+30)
        doc["sweep"] = numbers_as_written(doc["sweep"], root, ("sweep",))
    return doc, root


@dataclass
class SweepPlan:
    """A loaded sweep: the base scenario dict, where it came from, its axes and points."""

    base: dict[str, Any]
    source: str
    axes: list[str]
    points: list[ax.Point]
    root: Any = None
    """The scenario file's YAML node tree (None for a scenario given as a dict): tells a
    quoted value from a plain one (:func:`check_quoted_numbers`)."""
    validator: Validator | None = None
    """What reads each point (notes dropped; None: points are not read before they run):
    a resume after the base's text changed compares the points' readings
    (:mod:`tiersim.sweep.equivalent`)."""


def max_points_of(base: dict[str, Any], source: str) -> int:
    """The scenario's ``limits.max_sweep_points`` (default 10,000, also where ``limits`` is
    no map: the scenario check names that, as ``tiersim run`` does)."""
    from tiersim.scenario import DEFAULT_MAX_SWEEP_POINTS

    limits = base.get("limits")
    limits = limits if isinstance(limits, dict) else {}
    value = limits.get("max_sweep_points", DEFAULT_MAX_SWEEP_POINTS)
    if isinstance(value, float) and value.is_integer():  # 5.0 is the 5 validation accepts
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ScenarioError(source, "limits.max_sweep_points", f"must be a whole number >= 1 "
                            f"(got {shown_yaml(value, 80)})")
    if value > ax.MAX_GRID_POINTS:  # as the scenario check says it: no sweep holds more
        raise ScenarioError(source, "limits.max_sweep_points", f"must be <= "
                            f"{ax.MAX_GRID_POINTS} (got {shown_yaml(value, 80)})")
    return value


def names_files(axis: str) -> bool:
    """Whether values of ``axis`` may name an input file: it sets a key the scenario schema
    names a file with (:func:`tiersim.scenario.file_keys`: ``trace.path``, ``profile``, a
    tier's or a baseline-only tier's ``model``), or a map or list holding one (``trace``,
    ``tiers``, ``baselines``, ``tiers.0``, ``baselines.big.speculative``), not a number beside
    them (``tiers.big.cost_per_gpu_hour``, ``trace.window``)."""
    from tiersim.scenario import file_keys

    parts = axis.split(".")
    return any(len(parts) <= len(key) and all(k in ("*", p) for k, p in zip(key, parts,
                                                                          strict=False))
               for key in file_keys())


def sweep_inputs(plan: SweepPlan) -> list[Path]:
    """Every file the sweep's points read (each distinct combination of the file-naming axes'
    values, resolved as a run resolves it), once, with its links resolved (``m/config.json``
    and ``link/config.json`` are one file): a file named only on an axis is an input too."""
    file_axes = [a for a in plan.axes if names_files(a)]
    seen: set[tuple] = set()
    found = list(input_files(plan.base, plan.source))
    for point in plan.points:
        key = tuple(repr(point.values.get(a)) for a in file_axes)
        if not file_axes or key in seen:
            continue
        seen.add(key)
        with contextlib.suppress(Exception):  # a value no run accepts fails as its own point
            found += input_files(ax.apply(plan.base, point.values, plan.source), plan.source)
    return list(dict.fromkeys(Path(os.path.realpath(path)) for path in found))
