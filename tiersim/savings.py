"""What routing saves: the routed fleet against uniform fleets and a static split.

Moved out of the runner unchanged in method (H2 makes savings simulated and sized). Two ways:

- **simulated** (``run_scenario(..., baselines=True)``): per tier, the same trace with every
  request on that tier, served by as many of its replicas as the fleet's GPUs make; its cost in
  the run's ledger (:mod:`tiersim.costs`).
- **estimated** (default): uniform costs scaled from this run's per-token attributed costs
  (:func:`tiersim.routing.metrics.uniform_cost_estimates`), on the attributed ledger whatever the
  cost model. An estimate, labelled ``method: "estimated"``, never the headline.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tiersim import costs, metrics
from tiersim.fleet import Fleet, simulate
from tiersim.results import SavingsResult, UniformBaseline
from tiersim.routing import Assignment, TierInfo
from tiersim.routing import savings as routing_savings


@dataclasses.dataclass(frozen=True)
class UniformRun:
    """One simulated uniform fleet: its size, cost in the run's ledger, drops and p99s."""

    tier: str
    replicas: int
    cost_usd: float | None
    attributed_cost_usd: float
    dropped: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: float | None


def uniform_runs(cost_model: str, fleet: Fleet, df: pd.DataFrame) -> list[UniformRun]:
    """Per tier: the trace served entirely on that tier by the fleet's GPUs (as many replicas
    of the tier as the whole fleet's GPUs make), costed in ``cost_model``."""
    gpus = fleet.gpus
    n = len(df)
    out = []
    for k, tier in enumerate(fleet.tiers):
        replicas = max(1, gpus // tier.config.gpus_per_replica)
        alone = Fleet(tiers=tuple(
            dataclasses.replace(t, config=t.config.model_copy(update={"replicas": replicas}))
            if i == k else t for i, t in enumerate(fleet.tiers)))
        everyone = Assignment(tier=np.full(n, k, dtype=np.int64),
                              escalate_to=np.full(n, -1, dtype=np.int64))
        result = simulate(alone.specs(), df, everyone)
        table = metrics.add_latencies(pd.DataFrame({
            "arrival_s": df["arrival_s"].to_numpy(np.float64),
            "first_token_s": np.asarray(result.first_token_s, dtype=np.float64),
            "finish_s": np.asarray(result.finish_s, dtype=np.float64),
            "output_tokens": np.asarray(result.output_tokens, dtype=np.int64),
        }))
        ledger = costs.ledger(cost_model, alone, result, metrics.duration_s(table))
        out.append(UniformRun(  # the other tiers ran nothing and are not part of this fleet
            tier=tier.name, replicas=replicas, cost_usd=ledger.tier_headline(tier.name),
            attributed_cost_usd=ledger.tiers[tier.name].attributed_usd,
            dropped=int(np.sum(result.dropped)),
            ttft_p99_s=metrics.percentile(table["ttft_s"], 99),
            tpot_p99_s=metrics.percentile(table["tpot_s"], 99),
            e2e_p99_s=metrics.percentile(table["e2e_s"], 99)))
    return out


def savings_result(cost_model: str, fleet: Fleet, df: pd.DataFrame, result, infos: list[TierInfo],
                   accuracy_floor: float | None, basis: str,
                   uniform: list[UniformRun] | None = None) -> SavingsResult:
    """The routed run against the cheapest uniform tier meeting the floor and a static split.

    With ``uniform`` runs the comparison is in the run's ledger (``cost_model``) and
    ``method="simulated"``; without, it is the attributed ledger and ``method="estimated"``.
    """
    simulated = uniform is not None
    ledger_model = cost_model if simulated else "attributed"
    routed = costs.request_costs(ledger_model, fleet, result,
                                 duration_of(df, result)) if simulated else \
        costs.attributed_costs(fleet, result)
    uniform_costs = None if uniform is None else np.array([u.cost_usd for u in uniform])
    out = routing_savings(df, result.final_tier, routed, infos, accuracy_floor=accuracy_floor,
                          first_tier=result.first_tier, escalated=result.escalated,
                          uniform_costs=uniform_costs, dropped=result.dropped, basis=basis)
    if simulated and cost_model == "provisioned":
        out = _rebase(out, float(_provisioned_total(fleet, df, result)))
    runs = {u.tier: u for u in uniform or []}
    baselines = tuple(
        UniformBaseline(tier=name, accuracy=v["accuracy"], cost_usd=v["cost_usd"],
                        replicas=runs[name].replicas if name in runs else None)
        for name, v in out["uniform"].items())
    return SavingsResult(
        method="simulated" if simulated else "estimated", cost_model=ledger_model,
        routed_cost_usd=out["routed_cost_usd"], accuracy=out["accuracy"],
        accuracy_floor=out["accuracy_floor"], uniform=baselines,
        baseline_uniform_tier=out["baseline_uniform_tier"],
        vs_uniform_usd=out["vs_uniform_usd"], vs_uniform_frac=out["vs_uniform_frac"],
        static_split_cost_usd=out["static_split_cost_usd"],
        vs_static_split_usd=out["vs_static_split_usd"],
        vs_static_split_frac=out["vs_static_split_frac"],
    )


def duration_of(df: pd.DataFrame, result) -> float:
    """The run's duration: the later of the last arrival and the last finish."""
    return metrics.duration_s(pd.DataFrame({
        "arrival_s": df["arrival_s"].to_numpy(np.float64),
        "finish_s": np.asarray(result.finish_s, dtype=np.float64)}))


def _provisioned_total(fleet: Fleet, df: pd.DataFrame, result) -> float:
    """The routed fleet's provisioned cost (idle tiers included)."""
    return float(costs.provisioned_totals(fleet, duration_of(df, result)).sum())


def _rebase(out: dict, routed: float) -> dict:
    """Savings figures recomputed for a routed cost of ``routed`` (the provisioned total: the
    per-request column leaves idle tiers out)."""
    out = dict(out, routed_cost_usd=routed)
    base = out["baseline_uniform_tier"]
    if base is not None:
        cost = out["uniform"][base]["cost_usd"]
        out["vs_uniform_usd"] = cost - routed
        out["vs_uniform_frac"] = 1 - routed / cost if cost else None
    split = out["static_split_cost_usd"]
    if split is not None:
        out["vs_static_split_usd"] = split - routed
        out["vs_static_split_frac"] = 1 - routed / split if split else None
    return out
