"""One design's sized result (:class:`DesignResult`) and the router settings a design is tried
at: the raised floors the ``floor`` router is fitted to (:func:`raised_floors`), every
combination of ``--choose`` values, and the kept tiers a routing sends nothing to."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tiersim.plan.constraints import Constraints, held_figures, margins
from tiersim.plan.evaluate import Design, Outcome
from tiersim.routing.config import policies_in_play, unread_key_problem

FLOOR_MARGINS = (0.0, 0.0025, 0.005, 0.01, 0.02)
"""Added to the floor the ``floor`` router is fitted to, in turn, while the realised accuracy
(all requests) misses the floor the router was fitted to on its calibration split."""


def raised_floors(floor: float) -> list[float]:
    """The floors the ``floor`` router is fitted to for an accuracy floor ``floor``: it plus
    each of :data:`FLOOR_MARGINS`, in turn, none above 1 (no routing is more accurate than
    every request answered right; a floor of 0.99 tries 0.99, 0.9925, 0.995 and 1)."""
    return list(dict.fromkeys(min(1.0, round(floor + m, 6)) for m in FLOOR_MARGINS))


def read_setting(setting: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """A design's router setting as plan.json and the report show it: less the keys that the
    policy it names does not read. A ``--choose router.policy=cascade`` design is tried at
    the floor router's floors too, and plan.json and the report's capacity plan read "router
    floor 0.85" beside "router policy cascade", a floor the cascade never reads (its planned
    scenario already left it out). A setting naming no policy (the scenario's then routes) or
    ``step_type`` (whose fallback the scenario may name) is shown whole. A key is a
    ``--choose`` path less ``router.`` (``cascade.threshold``): the top key (``cascade``) is
    the one a policy reads or not (the dotted path named no policy's key, so a floor design
    kept a chosen ``cascade.threshold`` and was sized once per threshold)."""
    doc = dict(setting)
    if doc.get("policy") in (None, "step_type"):
        return doc
    playing = policies_in_play(doc)
    return {k: v for k, v in doc.items()
            if unread_key_problem(str(k).split(".", 1)[0], playing) is None}


@dataclass
class DesignResult:
    """The best sizing of one design: its outcome when it meets every constraint, else the
    constraint it missed."""

    design: Design
    replicas: dict[str, int] | None
    outcome: Outcome | None
    missed: str | None
    tried_gpus: dict[str, list[int]]
    infeasible: str | None = None
    """Why no size of the design meets the SLOs, in a few words (a run's uniform baseline
    gives them instead of the last count its search tried); None when a size does."""

    @property
    def feasible(self) -> bool:
        """True when every constraint is met."""
        return self.missed is None and self.outcome is not None

    def as_dict(self, c: Constraints) -> dict[str, Any]:
        """JSON form for plan.json."""
        o = self.outcome
        out: dict[str, Any] = {
            "design": self.design.label, "tiers": list(self.design.tiers),
            "router": read_setting(self.design.router), "feasible": self.feasible,
            "missed": self.missed, "gpus_per_replica_tried": self.tried_gpus,
        }
        if o is None:
            return out
        out.update({
            "replicas": self.replicas,
            "gpus_per_replica": dict(zip(self.design.tiers, self.design.gpus_per_replica,
                                         strict=True)),
            "gpus": sum(self.replicas[n] * self.design.gpus(n) for n in self.design.tiers),
            "cost_usd": o.cost_usd, "cost_per_hour_usd": o.cost_per_hour_usd,
            "accuracy": o.accuracy, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
            # the fleet's, where their limits are held (margins: the held one, under
            # slo.scope tier the worst of the fleet's and each tier's own)
            **held_figures(o, c),
            "dropped": o.dropped, "duration_s": o.duration_s,
            "per_tier": {n: _tier_json(t, c) for n, t in o.tiers.items()},
            "margins": margins(o, c),
        })
        if o.accuracy_by_class is not None:  # requests with difficulty classes only
            out["accuracy_by_class"] = o.accuracy_by_class
        if o.task_success is not None:  # traffic with agent sessions only
            out["task_success"] = o.task_success
        return out


def _tier_json(tier, c: Constraints | None = None) -> dict[str, Any]:
    """A tier's outcome as plan.json's ``per_tier`` gives it: ``techniques`` (``spec decode
    k=3``) only where the tier runs one, and ``e2e_p99_s`` only where ``c`` holds an
    end-to-end limit, so a plain fleet's entry is as it was."""
    out = dict(vars(tier))
    if out.get("techniques") is None:
        out.pop("techniques", None)
    if c is None or c.e2e_p99_s is None:
        out.pop("e2e_p99_s", None)
    return out


def _combinations(chosen: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the chosen router settings' values, key -> value."""
    return [dict(zip(chosen, values, strict=True))
            for values in itertools.product(*chosen.values())]


def _floor_setting(floor: float, chosen: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The floor router at ``floor`` with the chosen settings over it, as a design's setting."""
    return tuple(sorted({"policy": "floor", "floor": floor, **chosen}.items()))


def _idle_tiers(design: Design, assignment) -> list[str]:
    """Kept tiers the routing sends nothing to (none for a fake evaluator's routing)."""
    if assignment is None or len(design.tiers) == 1:
        return []
    used = set(np.unique(assignment.tier)) | set(np.unique(assignment.escalate_to))
    return [n for k, n in enumerate(design.tiers) if k not in used]


def _latency_met(r: DesignResult) -> bool:
    """Whether a sized design met the SLOs and dropped nothing (its accuracy aside)."""
    return r.outcome is not None and not (r.missed or "").startswith("latency")


def _by_cost(results: list[DesignResult]) -> list[DesignResult]:
    """Feasible designs by cost, then the rest."""
    return sorted(results, key=lambda r: (not r.feasible,
                                          r.outcome.cost_usd if r.outcome else math.inf))
