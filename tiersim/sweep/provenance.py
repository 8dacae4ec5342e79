"""What ties a stored point to what made it (:func:`digests`): the digests of its base scenario
(:func:`base_digest`, with the one limit that changes results, :func:`baseline_cap`) and sweep
map, the runner that computed its savings (:func:`runner_name`), and the tiersim build that ran
it (:func:`tiersim.sweep.build.tiersim_version`)."""

from __future__ import annotations

from typing import Any

from tiersim.sweep import axes as ax
from tiersim.sweep.build import tiersim_version
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner, default_runner


def base_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario without its sweep map: points of different bases never mix.
    Of ``limits`` only what changes a result counts: ``max_replicas`` where it sets the cap
    on the simulated uniform baselines (:func:`baseline_cap`), and ``gpus_per_replica`` where
    the scenario sets it (the sizes those baselines may use); ``max_sweep_points`` bounds the
    grid, never a result (raising it to extend a sweep, as its refusal advises, keeps the
    finished points)."""
    doc = {k: v for k, v in base.items() if k not in ("sweep", "limits")}
    cap = baseline_cap(base)
    if cap is not None:  # left out at the default cap, so older sweep folders still resume
        doc["limits"] = {"max_replicas": cap}
    limits = base.get("limits")
    if isinstance(limits, dict) and "gpus_per_replica" in limits:
        doc.setdefault("limits", {})["gpus_per_replica"] = limits["gpus_per_replica"]
    return ax.point_id(doc)


def baseline_cap(base: dict[str, Any]) -> Any:
    """The scenario's ``limits.max_replicas`` where it changes results: a run's sized uniform
    baselines try at most that many replicas (:func:`tiersim.savings.baseline_replica_limit`),
    so ``None`` when it is not set or is the default (1024), else the value as written."""
    from tiersim.scenario import DEFAULT_MAX_REPLICAS

    value = _max_replicas(base)
    if isinstance(value, float) and value.is_integer():  # 8.0 is the 8 validation accepts
        value = int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)
                         and value == DEFAULT_MAX_REPLICAS):
        return None
    return value


def _max_replicas(base: dict[str, Any]) -> Any:
    """``limits.max_replicas`` as the scenario writes it (None where it does not)."""
    limits = base.get("limits")
    if limits is None:
        return None
    return limits.get("max_replicas") if isinstance(limits, dict) else limits


def _cap_words(value: Any) -> str:
    """A scenario's baseline cap in words, for a refusal."""
    return "no limits.max_replicas" if value is None else f"limits.max_replicas {value!r}"


def sweep_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario's sweep map (its axes and their values)."""
    return ax.point_id({"sweep": base.get("sweep") or {}})


#: How each point runner computes savings, as a rerun's refusal names it.
RUNNER_WORDS = {"default_runner": "with simulated baselines",
                "estimate_runner": "with --no-baselines (estimated savings)"}


def runner_name(runner: PointRunner) -> str:
    """The name a point record keeps of the runner that made it."""
    return str(getattr(runner, "__qualname__", None) or type(runner).__name__)


def digests(plan: SweepPlan, runner: PointRunner = default_runner) -> dict[str, str]:
    """What every point record carries to tie it to its scenario: the scenario text without
    and with its sweep map, and how its savings are made (the worker adds the digests of the
    files the point read, :func:`tiersim.input_files.point_inputs`)."""
    return {"base_digest": base_digest(plan.base), "sweep_digest": sweep_digest(plan.base),
            "runner": runner_name(runner), "tiersim": tiersim_version()}
