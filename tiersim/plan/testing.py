"""A fake evaluator for tests of the planner: closed-form, monotone latencies, no simulation.

:class:`FakeEvaluator` answers the same questions as :class:`tiersim.plan.evaluate.SimEvaluator`
(``fits``, ``routing``, ``evaluate``, ``by_name``, ``cost_model``, ``simulations``) for a
:class:`FakeTier` list. A design's traffic goes to its cheapest kept tier for the ``p_easy``
share and to its last kept tier for the rest (all of it on a single tier); accuracy is the
matching mix of the tiers' accuracies. A tier's p99 TTFT at ``r`` replicas of ``g`` GPUs is
``base_ttft_s / g + load / (r g capacity_rps)`` seconds (falls as replicas grow: monotone) and
its TPOT ``base_tpot_s / g`` (replicas cannot fix it; more GPUs per replica can). A prompt
longer than ``max_prompt x g`` is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from tiersim.plan.evaluate import Design, Outcome, TierOutcome


@dataclass(frozen=True)
class FakeTier:
    """One tier of the fake fleet."""

    name: str
    accuracy: float
    cost_per_gpu_hour: float = 1.0
    capacity_rps: float = 1.0
    base_ttft_s: float = 0.1
    base_tpot_s: float = 0.01
    max_gpus: int = 8
    min_gpus: int = 1
    drops_below_gpus: int = 1


@dataclass
class FakeEvaluator:
    """Closed-form stand-in for the simulation (see the module docstring)."""

    tiers: list[FakeTier]
    rate_rps: float = 10.0
    p_easy: float = 0.7
    duration_s: float = 3600.0
    cost_model: str = "provisioned"
    drain_s: dict[tuple[str, ...], float] = field(default_factory=dict)
    """Seconds a design (by its kept tiers) is paid for after ``duration_s``: its drain after
    the last arrival, so fleets of one USD/hour may cost differently over the trace."""
    simulations: int = 0
    calls: list = field(default_factory=list)

    @property
    def by_name(self) -> dict[str, FakeTier]:
        """Tiers by name."""
        return {t.name: t for t in self.tiers}

    def fits(self, name: str, gpus: int) -> bool:
        """Between the tier's least and most GPUs per replica."""
        t = self.by_name[name]
        return t.min_gpus <= gpus <= t.max_gpus

    def shares(self, design: Design) -> dict[str, float]:
        """Traffic share per kept tier."""
        if len(design.tiers) == 1:
            return {design.tiers[0]: 1.0}
        out = dict.fromkeys(design.tiers, 0.0)
        out[design.tiers[0]] = self.p_easy
        out[design.tiers[-1]] += 1.0 - self.p_easy
        return out

    def routing(self, design: Design):
        """(None, None, accuracy)."""
        acc = sum(s * self.by_name[n].accuracy for n, s in self.shares(design).items())
        return None, None, float(acc)

    def evaluate(self, design: Design, replicas: dict[str, int]) -> Outcome:
        """Closed-form latencies and cost of the design at ``replicas``."""
        self.simulations += 1
        self.calls.append((design, dict(replicas)))
        tiers = {}
        for name, share in self.shares(design).items():
            t, g, r = self.by_name[name], design.gpus(name), replicas[name]
            load = self.rate_rps * share
            served = share > 0
            tiers[name] = TierOutcome(
                replicas=r, requests=int(round(load * self.duration_s)),
                ttft_p99_s=t.base_ttft_s / g + load / (r * g * t.capacity_rps) if served else None,
                tpot_p99_s=t.base_tpot_s / g if served else None,
                dropped=int(round(load * self.duration_s)) if g < t.drops_below_gpus else 0,
                utilization=min(1.0, load / (r * g * t.capacity_rps)))
        rate = sum(replicas[n] * design.gpus(n) * self.by_name[n].cost_per_gpu_hour
                   for n in design.tiers)
        served = [o for o in tiers.values() if o.ttft_p99_s is not None and not o.dropped]
        duration = self.duration_s + self.drain_s.get(design.tiers, 0.0)
        return Outcome(
            ttft_p99_s=max((o.ttft_p99_s for o in served), default=None),
            tpot_p99_s=max((o.tpot_p99_s for o in served), default=None),
            dropped=sum(o.dropped for o in tiers.values()),
            accuracy=self.routing(design)[2], cost_usd=rate * duration / 3600.0,
            cost_per_hour_usd=rate, duration_s=duration, tiers=tiers)


def fake_scenario(tiers: list[FakeTier], ttft: float = 1.0, tpot: float = 0.05,
                  floor: float | None = None, name: str = "fake") -> SimpleNamespace:
    """The few scenario fields the planner reads."""
    return SimpleNamespace(name=name, tiers=[SimpleNamespace(name=t.name) for t in tiers],
                           slo=SimpleNamespace(ttft_p99_s=ttft, tpot_p99_s=tpot),
                           accuracy_floor=floor, seed=0)


def brute_force_replicas(judge, names: list[str], top: int) -> dict[str, int] | None:
    """Cheapest-by-count feasible replicas over the whole grid ``1..top`` per tier (tests)."""
    best = None
    for combo in np.ndindex(*(top,) * len(names)):
        replicas = {n: int(c) + 1 for n, c in zip(names, combo, strict=True)}
        if judge(replicas).ok and (best is None or sum(replicas.values()) < sum(best.values())):
            best = replicas
    return best
