"""Capacity planner: the cheapest replica count per tier meeting the SLOs and the accuracy floor.

Search, per router setting (each combination of the ``choose`` lists):

1. Start every tier at 1 replica and simulate.
2. *Doubling*: while the fleet's p99 TTFT or TPOT misses its SLO, double the replicas of every tier
   whose own p99 misses it (all tiers if none does alone). Stop as infeasible when a tier would pass
   ``max_replicas`` or two doublings in a row improve the missed metric by under 1% (more replicas
   do not help: a single request's step is too slow for the SLO).
3. *Bisection*: with the others fixed, find each tier's smallest count that still meets the SLOs,
   most expensive replica first. More replicas never hurt latency (monotonicity), so a bisection
   on ``[1, r]`` is exact, and lowering a later tier cannot make an earlier tier's count - 1
   feasible again: one pass gives a fleet where one replica fewer in any tier misses a constraint.

Accuracy depends on routing only, so a setting whose accuracy misses the floor is dropped after
its first simulation. Every simulated fleet is cached and listed in ``plan.json``.
Cost is the provisioned rate: sum over tiers of replicas x gpus_per_replica x cost_per_gpu_hour.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tiersim.errors import TiersimError
from tiersim.sweep.axes import apply
from tiersim.sweep.points import PointRunner, default_runner
from tiersim.sweep.run import load_raw
from tiersim.sweep.store import write_json_atomic

LATENCY = ("ttft_p99_s", "tpot_p99_s")


@dataclass(frozen=True)
class Constraints:
    """What the plan must meet: p99 latencies (seconds) and the accuracy floor (fraction)."""

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    accuracy_floor: float | None = None


@dataclass
class Evaluation:
    """One simulated fleet: its replicas, router settings, metrics and verdict."""

    replicas: dict[str, int]
    settings: dict[str, Any]
    metrics: dict[str, Any]
    cost_per_hour_usd: float
    margins: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        """True when every constraint is met."""
        return all(m["met"] for m in self.margins.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON form for plan.json."""
        return {"replicas": self.replicas, "settings": self.settings, "metrics": self.metrics,
                "cost_per_hour_usd": self.cost_per_hour_usd, "margins": self.margins,
                "feasible": self.feasible}


def _value(x: Any) -> float:
    """A metric as a float; missing (nothing completed) counts as infinitely bad."""
    return math.inf if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def margins(metrics: dict[str, Any], c: Constraints) -> dict[str, dict[str, Any]]:
    """Per constraint: limit, value, margin (positive = slack) and relative margin, met."""
    out = {}
    for key in LATENCY:
        limit = getattr(c, key)
        if limit is not None:
            value = _value(metrics.get(key))
            out[key] = {"limit": limit, "value": metrics.get(key), "margin": limit - value,
                        "margin_frac": (limit - value) / limit, "met": value <= limit}
    if c.accuracy_floor is not None:
        acc = metrics.get("accuracy")
        value = -math.inf if acc is None else float(acc)
        out["accuracy"] = {"limit": c.accuracy_floor, "value": metrics.get("accuracy"),
                           "margin": value - c.accuracy_floor,
                           "margin_frac": (value - c.accuracy_floor) / max(c.accuracy_floor,
                                                                            1e-12),
                           "met": value >= c.accuracy_floor}
    return out


class Planner:
    """Searches replica counts (and router settings) with a cache of simulated fleets."""

    def __init__(self, base: dict, source: str, constraints: Constraints,
                 runner: PointRunner = default_runner, max_replicas: int = 256):
        self.base, self.source, self.c = base, source, constraints
        self.runner, self.max_replicas = runner, max_replicas
        self.tiers = [t for t in base.get("tiers") or [] if isinstance(t, dict)]
        if not self.tiers or any("name" not in t for t in self.tiers):
            raise TiersimError(f"{source}: tiers: the planner needs a list of named tiers")
        self.names = [str(t["name"]) for t in self.tiers]
        self.cache: dict[tuple, Evaluation] = {}

    def unit_cost(self, name: str) -> float:
        """USD per hour of one replica of a tier."""
        tier = self.tiers[self.names.index(name)]
        return float(tier.get("gpus_per_replica", 1)) * float(tier.get("cost_per_gpu_hour", 1.0))

    def evaluate(self, replicas: dict[str, int], settings: dict[str, Any]) -> Evaluation:
        """Simulate one fleet (cached)."""
        key = (tuple(replicas[n] for n in self.names), tuple(sorted(settings.items(), key=str)))
        if key not in self.cache:
            values = {**{f"tiers.{n}.replicas": r for n, r in replicas.items()}, **settings}
            summary = self.runner(apply(self.base, values, self.source), self.source)
            metrics = _metrics(summary, self.names)
            cost = sum(r * self.unit_cost(n) for n, r in replicas.items())
            self.cache[key] = Evaluation(dict(replicas), dict(settings), metrics, cost,
                                         margins(metrics, self.c))
        return self.cache[key]

    def latency_ok(self, e: Evaluation) -> bool:
        """True when the latency constraints are met."""
        return all(m["met"] for k, m in e.margins.items() if k in LATENCY)

    def search(self, settings: dict[str, Any]) -> tuple[Evaluation | None, str]:
        """Cheapest feasible fleet for one router setting, or None and why not."""
        replicas = dict.fromkeys(self.names, 1)
        e = self.evaluate(replicas, settings)
        if "accuracy" in e.margins and not e.margins["accuracy"]["met"]:
            return None, (f"accuracy {e.metrics['accuracy']:.4g} is below the floor "
                          f"{self.c.accuracy_floor:.4g} with settings {settings or 'as given'}")
        e, why = self._double(replicas, settings, e)
        if e is None:
            return None, why
        return self._bisect(dict(e.replicas), settings), ""

    def _double(self, replicas: dict[str, int], settings: dict[str, Any],
                e: Evaluation) -> tuple[Evaluation | None, str]:
        """Double the replicas of missing tiers until latency is met."""
        history = [self._worst(e)]
        while not self.latency_ok(e):
            grow = self._violators(e) or self.names
            if any(replicas[n] * 2 > self.max_replicas for n in grow):
                return None, (f"latency SLO still missed with {replicas} replicas (limit "
                              f"--max-replicas {self.max_replicas}): {self._missed(e)}")
            for n in grow:
                replicas[n] *= 2
            e = self.evaluate(replicas, settings)
            history.append(self._worst(e))
            if not self.latency_ok(e) and _hopeless(history):
                return None, (f"more replicas do not help: {self._missed(e)} at {replicas} "
                              "replicas; a single request's step time is too slow for this SLO, "
                              "use a faster tier or a looser SLO")
        return e, ""

    def _bisect(self, replicas: dict[str, int], settings: dict[str, Any]) -> Evaluation:
        """Lower each tier to its smallest count that keeps latency met (most expensive first)."""
        for name in sorted(self.names, key=self.unit_cost, reverse=True):
            lo, hi = 0, replicas[name]  # lo: known too few (0 is never allowed), hi: known enough
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.latency_ok(self.evaluate({**replicas, name: mid}, settings)):
                    hi = mid
                else:
                    lo = mid
            replicas[name] = hi
        return self.evaluate(replicas, settings)

    def _violators(self, e: Evaluation) -> list[str]:
        """Tiers whose own p99 misses a latency SLO."""
        bad = []
        for n in self.names:
            for key in LATENCY:
                limit = getattr(self.c, key)
                value = e.metrics.get(f"tiers.{n}.{key}")
                if limit is not None and value is not None and value > limit:
                    bad.append(n)
                    break
        return bad

    def _worst(self, e: Evaluation) -> float:
        """The largest latency overshoot, as a fraction of its SLO."""
        return max((-m["margin_frac"] for k, m in e.margins.items() if k in LATENCY),
                   default=0.0)

    def _missed(self, e: Evaluation) -> str:
        """Which constraints an evaluation misses, in words."""
        return "; ".join(f"{k} {_fmt(m['value'])} > {m['limit']:g}" if k in LATENCY else
                         f"{k} {_fmt(m['value'])} < {m['limit']:g}"
                         for k, m in e.margins.items() if not m["met"])

    def one_fewer(self, e: Evaluation) -> dict[str, dict[str, Any]]:
        """For each tier: does one replica fewer miss a constraint? (simulated)."""
        out = {}
        for name in self.names:
            r = e.replicas[name]
            if r <= 1:
                out[name] = {"replicas": None, "misses": None,
                             "verdict": "already at 1 replica, the minimum"}
                continue
            fewer = self.evaluate({**e.replicas, name: r - 1}, e.settings)
            missed = self._missed(fewer)
            out[name] = {"replicas": r - 1, "misses": not fewer.feasible,
                         "verdict": f"misses: {missed}" if missed else
                         "still meets every constraint (latency was not monotone here)"}
        return out


def _hopeless(history: list[float]) -> bool:
    """True when doubling has stopped closing the gap to the SLO.

    ``history`` holds the worst overshoot (fraction of its SLO) after each doubling. Two drops
    ``d1, d2`` shrinking by ``q = d2 / d1`` promise at most ``d2 q / (1 - q)`` more (a geometric
    tail); when even that closes under half the remaining overshoot, or the last drop was under
    1% of it, more replicas will not meet the SLO.
    """
    if len(history) < 3:
        return False
    d1, d2, left = history[-3] - history[-2], history[-2] - history[-1], history[-1]
    if d2 <= 0.01 * left:
        return True
    q = d2 / d1 if d1 > 0 else 1.0
    return q < 1 and d2 * q / (1 - q) < 0.5 * left


def _fmt(value: Any) -> str:
    """A metric for a message."""
    return "none" if value is None else f"{value:.4g}"


def _metrics(summary: dict, names: list[str]) -> dict[str, Any]:
    """The numbers the planner looks at, from a run summary."""
    tiers = summary.get("tiers") or {}
    out = {k: summary.get(k) for k in ("ttft_p99_s", "tpot_p99_s", "accuracy", "cost_usd",
                                       "slo_attainment", "dropped")}
    for n in names:
        for key in LATENCY:
            out[f"tiers.{n}.{key}"] = (tiers.get(n) or {}).get(key)
    return out


def _choices(choose: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    """Every combination of the router settings to choose from (one empty one if none)."""
    choose = choose or {}
    keys = list(choose)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(
        *(choose[k] for k in keys))] or [{}]


def constraints_from(base: dict, ttft: float | None, tpot: float | None,
                     floor: float | None) -> Constraints:
    """Command-line values, else the scenario's ``slo`` and ``accuracy_floor``."""
    slo = base.get("slo") or {}
    return Constraints(ttft if ttft is not None else slo.get("ttft_p99_s"),
                       tpot if tpot is not None else slo.get("tpot_p99_s"),
                       floor if floor is not None else base.get("accuracy_floor"))


def plan_capacity(scenario: str | Path | dict, constraints: Constraints | None = None,
                  out_dir: str | Path | None = None, choose: dict[str, list[Any]] | None = None,
                  runner: PointRunner = default_runner, source: str | None = None,
                  max_replicas: int = 256, report: bool = True) -> dict[str, Any]:
    """Find the cheapest fleet meeting the constraints; write plan.json (and more) to out_dir."""
    if isinstance(scenario, dict):
        base, source = dict(scenario), source or "scenario"
    else:
        base, source = load_raw(scenario), source or str(scenario)
    base.pop("sweep", None)
    constraints = constraints or constraints_from(base, None, None, None)
    planner = Planner(base, source, constraints, runner, max_replicas)
    best, reasons = None, []
    for settings in _choices(choose):
        found, why = planner.search(settings)
        if found is None:
            reasons.append(why)
        elif best is None or (found.cost_per_hour_usd, -_value(found.metrics.get("accuracy"))) \
                < (best.cost_per_hour_usd, -_value(best.metrics.get("accuracy"))):
            best = found
    result = _result(planner, best, reasons, source)
    if out_dir is not None:
        _write(Path(out_dir), base, source, best, result, runner, report)
    return result


def _result(planner: Planner, best: Evaluation | None, reasons: list[str],
            source: str) -> dict[str, Any]:
    """The plan.json content."""
    return {"scenario": source,
            "constraints": {"ttft_p99_s": planner.c.ttft_p99_s, "tpot_p99_s": planner.c.tpot_p99_s,
                            "accuracy_floor": planner.c.accuracy_floor},
            "plan": best.as_dict() if best else None,
            "one_fewer": planner.one_fewer(best) if best else {},
            "reason": "; ".join(reasons) if best is None else None,
            "runs": len(planner.cache),
            "evaluated": [e.as_dict() for e in planner.cache.values()]}


def _write(out: Path, base: dict, source: str, best: Evaluation | None, result: dict,
           runner: PointRunner, report: bool) -> None:
    """plan.json, the planned scenario, its run (real runner only) and the report."""
    out.mkdir(parents=True, exist_ok=True)
    if best is not None:
        values = {**{f"tiers.{n}.replicas": r for n, r in best.replicas.items()}, **best.settings}
        planned = apply(base, values, source)
        (out / "scenario.yaml").write_text(yaml.safe_dump(planned, sort_keys=False))
        if runner is default_runner:
            from tiersim.runner import run_scenario
            from tiersim.scenario import scenario_from_dict

            run_scenario(scenario_from_dict(planned, source), out_dir=out, scenario_path=source)
    write_json_atomic(out / "plan.json", result)
    if report:
        from tiersim.report import write_report

        write_report(out)
