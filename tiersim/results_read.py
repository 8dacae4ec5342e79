"""Reading a results file back: each field checked as tiersim writes it.

:func:`_build` makes a result dataclass from its JSON object, each plain field of the type its
annotation names (:func:`_scalar`) and each structured one validated by pydantic
(:func:`_structured`); :func:`range_problem` says which numbers may be below 0 (:data:`SIGNED`)
and which are fractions (:data:`FRACTIONS`); :func:`check_finite` refuses a NaN or infinity.
The parts of a run summary that need more (its ``analytic`` block, a tier's cache levels, the
accuracy's interval, the profile's fidelity record, the sessions) are read here too, and
:meth:`tiersim.results.RunResult.from_json` puts a summary together from them. The public names
here are importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from tiersim.errors import json_written, shown_json
from tiersim.results_accuracy import FLOOR_TOLERANCE
from tiersim.results_figures import _unknown
from tiersim.results_parts import SessionResult, StepTypeResult


def _oneline(err: Exception) -> str:
    """An exception's detail on one line; a KeyError says which key is missing."""
    if isinstance(err, KeyError):
        key = str(err.args[0] if err.args else "").strip("'")
        return f"missing key '{key}'"
    return " ".join(str(err).split())


def _build(cls, data: dict, at: str | None = None, **nested) -> Any:
    """A dataclass from a dict: required fields must be present, defaults may be absent. ``at``
    names where ``data`` sits in the summary in messages (default: the class's key)."""
    at = at or _where(cls)
    if not isinstance(data, dict):
        raise TypeError(f"'{at}' must be a JSON object, got {shown_json(data)}")
    kwargs = {}
    kinds = _scalar_kinds(cls)
    for f in dataclasses.fields(cls):
        if f.name in nested:
            kwargs[f.name] = nested[f.name]
        elif f.name in data and f.name in kinds:
            kwargs[f.name] = _scalar(data[f.name], kinds[f.name], f"{at}.{f.name}")
        elif f.name in data:
            kwargs[f.name] = _structured(data[f.name], cls, f.name, f"{at}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f"'{at}.{f.name}'")
    return cls(**kwargs)


_SCALARS = {"float": (float,), "int": (int,), "str": (str,), "bool": (bool,)}


def _where(cls) -> str:
    """The summary key a result dataclass is written under (``router``, ``profile`` ...)."""
    name = cls.__name__.removesuffix("Result").removesuffix("Used")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()  # ResponseCache -> response_cache


@functools.cache
def _scalar_kinds(cls) -> dict[str, tuple[str, bool]]:
    """``{field: (scalar type name, None allowed)}`` for a result dataclass's plain fields
    (``float``, ``int | None`` ...); other fields (tuples, dicts, nested results) are absent."""
    kinds = {}
    for f in dataclasses.fields(cls):
        parts = [p.strip() for p in str(f.type).split("|")]
        names = [p for p in parts if p != "None"]
        if len(names) == 1 and names[0] in _SCALARS:
            kinds[f.name] = (names[0], len(parts) > 1)
    return kinds


def _scalar(value: Any, kind: tuple[str, bool] | None, where: str) -> Any:
    """``value`` if it is of its field's scalar kind (a number for ``float``, a whole number
    for ``int``, text for ``str``; None where allowed, and for every ``float``, as a NaN is
    written as null), else a ValueError naming the field. A whole number of a ``float`` field
    is read as a float: kept whole, one past 64 bits (``"duration_s": 100000000000000000000``,
    hand-edited) reached numpy as an object and the report ended in a casting traceback."""
    if kind is None or (value is None and (kind[1] or kind[0] == "float")):
        return value
    type_name = kind[0]
    ok = isinstance(value, _SCALARS[type_name])
    if type_name in ("float", "int"):
        ok = (ok or (type_name == "float" and isinstance(value, int))) and not isinstance(
            value, bool)
        if ok and type_name == "float" and isinstance(value, int) and abs(value) > 1e300:
            ok = False  # beyond what a float holds
    if not ok:
        raise ValueError(f"'{where}' must be "
                         f"{'a number' if type_name in ('float', 'int') else type_name}, "
                         f"got {shown_json(value)}")
    if type_name == "int" and value < 0:  # every whole number of a summary is a count
        raise ValueError(f"'{where}' must be a count >= 0, got {shown_json(value)}")
    problem = range_problem(value, where) if type_name == "float" else None
    if problem:
        raise ValueError(f"'{where}' {problem}, got {shown_json(value)}")
    return float(value) if type_name == "float" else value  # 10**20 is no int64 for numpy


SIGNED = frozenset({"vs_uniform_usd", "vs_uniform_frac", "vs_uniform_over_trace_frac",
                    "vs_static_split_usd", "vs_static_split_frac",
                    "vs_static_split_over_trace_frac", "success_misjudged_by",
                    "gpu_hours_saved", "cost_saved_usd", "attributed_saved_usd", "margin",
                    "margin_frac", "vs_fleet_frac", "dearer_than_plan_frac",
                    "dearer_than_baseline_frac", "vs_current_frac", "vs_current_per_hour_usd",
                    "vs_current_per_month_usd", "right_sizing_per_hour_usd",
                    "design_vs_uniform_per_hour_usd"})
"""Number fields of a summary or plan that may be below 0: a saving (a loss is a negative one),
a difference of two figures (a plan's constraint margin) and a cost gap (a seed check's
rejected fleet, cheaper or dearer). Every other number is a time,
cost, size, count or fraction."""

FRACTIONS = frozenset({"accuracy", "accuracy_floor", "per_request_accuracy", "task_success",
                       "share", "utilization", "kv_peak_frac", "slo_attainment", "fpr", "fnr",
                       "escalation_rate", "escalation_refused_rate", "silent_failure_rate",
                       "hit_rate", "prefix_hit_rate", "prefix_hit_bound", "prefix_recompute_rate",
                       "accuracy_ci95", "first_tier_shares", "final_tier_shares",
                       "prefix_hit_by_level", "static_split_mix", "auroc", "auroc_ci95",
                       "auroc_wrong", "auroc_wrong_ci95", "auroc_asked", "fpr_asked", "fnr_asked",
                       "spec_draft_acceptance"})
"""Number fields of a summary that are fractions, between 0 and 1 (shown as percents); for a
map or a pair (``first_tier_shares``, ``accuracy_ci95``), every number in it."""


def range_problem(value: float, name: str) -> str | None:
    """Why ``value`` is no figure a run writes under the summary field ``name`` (the last part of
    a dotted key): ``must be >= 0`` (only a saving may be below 0), ``must be a fraction between
    0 and 1``; None when it may be."""
    name = name.rsplit(".", 1)[-1]
    if name in FRACTIONS and not 0 <= value <= 1 + FLOOR_TOLERANCE:
        return "must be a fraction between 0 and 1"
    if name not in SIGNED and value < 0:
        return "must be >= 0"
    return None


def check_finite(data: Any, where: str) -> None:
    """A ValueError naming the first NaN or infinite number in a parsed results file (``where``:
    the path to ``data`` in it): tiersim writes a missing figure as null and never writes
    another, so one is a hand edit the page would show as a figure."""
    if isinstance(data, float) and not math.isfinite(data):  # as the file writes it: NaN,
        raise ValueError(f"'{where}' is {json_written(data)}, a number tiersim never "  # not nan
                         "writes: a missing figure is null")
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(
        data, list) else ()
    for key, value in items:
        check_finite(value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")


def _structured(value: Any, cls, name: str, where: str) -> Any:
    """``value`` validated against field ``name``'s annotation (a tuple of two numbers, a map
    of names to numbers...) by pydantic, strictly as JSON (no text read as a number, no flag as
    one) with null allowed wherever a float is (NaN is written as null); a ValueError naming
    ``where`` and the first thing wrong otherwise."""
    checked = _validated(_adapter(cls, name), value, where)
    _in_range(checked, name, where)
    return checked


def _in_range(value: Any, name: str, where: str) -> None:
    """A ValueError naming the first number nested in ``value`` (the field ``name``, at
    ``where``) that :func:`range_problem` refuses: a share or interval bound of a map or a
    pair is a fraction as a top-level one is. Under a free-form field (a plan's ``plan``), a
    key of :data:`SIGNED` (a saving, a margin) may hold a number below 0, as it may at the top
    level; a fraction map's keys are names (tiers), never field names."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        problem = range_problem(value, name)
        if problem:
            raise ValueError(f"'{where}' {problem}, got {shown_json(value)}")
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list | tuple) else ()
    for key, item in items:
        child = key if name not in FRACTIONS and key in SIGNED else name
        _in_range(item, child, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")


def _validated(adapter, value: Any, where: str) -> Any:
    """``value`` through ``adapter`` in strict JSON mode; a ValueError naming ``where``."""
    from pydantic import ValidationError

    try:
        return adapter.validate_json(json.dumps(value), strict=True)
    except ValidationError as err:
        raise ValueError(_first_error(err, where)) from None


@functools.cache
def _adapter(cls, name: str):
    """A pydantic TypeAdapter for field ``name`` of dataclass ``cls``, floats nullable."""
    import typing

    return _type_adapter(_nullable(typing.get_type_hints(cls)[name]))


@functools.cache
def _type_adapter(hint: Any):
    """A pydantic TypeAdapter for ``hint``, built once."""
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _nullable(hint: Any) -> Any:
    """``hint`` with ``float`` replaced by ``float | None`` throughout."""
    import operator
    import types
    import typing

    if hint is float:
        return float | None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        return dict[args[0], _nullable(args[1])]
    if origin is tuple:
        return tuple[tuple(a if a is Ellipsis else _nullable(a) for a in args)]
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, [_nullable(a) for a in args])
    return hint


def _first_error(err, where: str) -> str:
    """``'where.loc': message`` for the first error of a pydantic ValidationError."""
    first = err.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    if first["type"] == "missing":
        return f"'{where}{loc}': missing"
    return f"'{where}{loc}': {first['msg'].lower()}, got {shown_json(first.get('input'))}"


@with_config(ConfigDict(extra="allow"))
class _AnalyticParams(TypedDict, total=False):
    """The ``params`` of a summary's ``analytic`` block, as the report reads them (other keys
    pass)."""

    cheap: str
    top: str
    p: float | None
    eps: float | None
    delta: float | None
    c0_usd: float | None
    dc_usd: float | None
    dC_star_usd: float | None


ANALYTIC_PARTS = {"note": str, "params": _AnalyticParams}
"""The keys of a summary's ``analytic`` block the report reads as they are, and their types."""

FRONTIER = list[tuple[float | None, float | None]]
"""Any other key of the block that holds a list: a frontier of ``[cost, accuracy]`` points."""

FIGURES = dict[str, float | str | None] | float | str
"""Any other key that holds no list: a figure or a map of figures (``tiersim analytic``'s dC*,
kink, at_floor)."""


def _analytic_from(data: Any) -> dict[str, Any]:
    """The ``analytic`` block, each part validated (:data:`ANALYTIC_PARTS`, else
    :data:`FRONTIER` or :data:`FIGURES`); ``{}`` when absent."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TypeError(f"'analytic' must be a JSON object, got {shown_json(data)}")
    out = {}
    for key, value in data.items():
        hint = ANALYTIC_PARTS.get(key, FRONTIER if isinstance(value, list) else FIGURES)
        out[key] = _validated(_type_adapter(hint), value, f"analytic.{key}")
    return out


def _interval(interval: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """The accuracy's 95% interval as a run writes it: two fractions, the low end first (or
    no end, where there is none); a ValueError otherwise."""
    lo, hi = interval
    if _unknown(lo) or _unknown(hi):
        return interval
    if not 0 <= lo <= hi <= 1 + FLOOR_TOLERANCE:
        raise ValueError("'router.accuracy_ci95' must be two fractions between 0 and 1, the low "
                         f"end first, got {json_written([lo, hi])}")
    return interval


def _object(data: Any, where: str) -> dict:
    """``data`` when it is a JSON object; a TypeError naming ``where`` and what it holds
    otherwise (a list or text read as one failed with "'list' object has no attribute")."""
    if not isinstance(data, dict):
        raise TypeError(f"'{where}' must be a JSON object, got {shown_json(data)}")
    return data


def _tier_data(data: Any, name: str) -> dict:
    """A tier's JSON object with its name added and its cache levels top first (in its
    ``prefix_level_order``, where it has one)."""
    if not isinstance(data, dict):
        raise TypeError(f"'tiers.{name}' must be a JSON object, got {shown_json(data)}")
    data = {**data, "name": name}
    order, levels = data.pop("prefix_level_order", None), data.get("prefix_hit_by_level")
    if order is not None:
        if not isinstance(levels, dict) or sorted(map(str, order)) != sorted(levels):
            raise ValueError(f"'tiers.{name}.prefix_level_order' must name every level of "
                             "its 'prefix_hit_by_level' once")
        data["prefix_hit_by_level"] = {level: levels[level] for level in order}
    return data


SPEC_K = re.compile(r"spec decode k=(\d+)")
"""The draft length a speculative tier's ``techniques`` names (``spec decode k=3``:
:func:`tiersim.results_savings.techniques_words`)."""


def check_spec_steps(tier, written: dict) -> None:
    """A ValueError where a speculative tier's tokens per verify step (``spec_tokens_per_step``,
    realised, and ``spec_expected_tokens_per_step``, the formula's) lie outside 1 to k + 1 for
    the draft length k its ``techniques`` names: a verify step emits the target's own token
    and at most its k drafted ones, so no run writes another figure. Before, the reader held
    them only to be numbers >= 0, and a hand-edited 0.5 or 9 (k=3) reached the console and
    the report as the engine's draws. ``written``: the tier's JSON object, whose figure a
    refusal quotes as the file writes it (9, not 9.0)."""
    figures = [(key, getattr(tier, key)) for key in ("spec_tokens_per_step",
                                                      "spec_expected_tokens_per_step")
               if getattr(tier, key) is not None]
    if not figures:
        return
    found = SPEC_K.search(tier.techniques or "")
    if found is None:
        raise ValueError(f"'tiers.{tier.name}.techniques' must name the tier's draft length "
                         f"(spec decode k=3, say) beside its {figures[0][0]}, got "
                         f"{shown_json(tier.techniques)}")
    top = int(found.group(1)) + 1
    for key, value in figures:
        if not 1 - FLOOR_TOLERANCE <= value <= top * (1 + FLOOR_TOLERANCE):
            raise ValueError(f"'tiers.{tier.name}.{key}' must lie between 1 and {top} (k + 1, "
                             f"for the tier's {found.group(0)}), got "
                             f"{shown_json(written.get(key, value))}")


def _checked_from(data: Any) -> dict[str, Any] | None:
    """A profile's fidelity record as the report reads it (:class:`tiersim.fidelity.Checked`),
    or None."""
    from pydantic import ValidationError

    from tiersim.fidelity import Checked

    if data is None:
        return None
    try:
        Checked.model_validate(data)
    except ValidationError as err:
        raise ValueError(_first_error(err, "profile.checked")) from None
    return data


def _sessions_from(data: dict | None) -> SessionResult | None:
    """SessionResult from its JSON form (None when the run had no sessions)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise TypeError(f"'sessions' must be a JSON object, got {shown_json(data)}")
    step_types = data.get("step_types") or {}
    if not isinstance(step_types, dict):
        raise TypeError(f"'sessions.step_types' must map step types to objects, got "
                        f"{shown_json(step_types)}")
    kinds = tuple(_build(StepTypeResult, {**v, "step_type": k}, at=f"sessions.step_types.{k}")
                  for k, v in step_types.items())
    return _build(SessionResult, data, at="sessions", step_types=kinds)
