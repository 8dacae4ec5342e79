"""Cost-accuracy frontiers of a policy over a lambda (or threshold) sweep, at fixed cost per
request per tier (each tier's ``cost_weight``), with no simulation.

This is the setting where the two-type closed form applies exactly; the simulated, attributed
cost of the same sweep is what ``benchmarks/routing_gap.py`` compares against it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.config import RouterConfig
from tiersim.routing.policies import Router, build_router
from tiersim.routing.types import Assignment, TierInfo


def fixed_cost(a: Assignment, tiers: list[TierInfo]) -> np.ndarray:
    """Per-request cost at fixed price per request per tier; an escalation pays both passes."""
    price = np.array([t.cost_weight for t in tiers], dtype=np.float64)
    second = np.where(a.escalated, price[np.maximum(a.escalate_to, 0)], 0.0)
    return price[a.tier] + second


def point(df: pd.DataFrame, a: Assignment, tiers: list[TierInfo]) -> tuple[float, float]:
    """(mean cost per request, expected accuracy) of one assignment."""
    acc = expected_matrix(df, tiers, a.basis)[np.arange(len(df)), a.final_tier].mean()
    return float(fixed_cost(a, tiers).mean()), float(acc)


def uniform_points(df: pd.DataFrame, tiers: list[TierInfo]) -> np.ndarray:
    """(cost, accuracy) of every uniform tier, cheapest first."""
    acc = expected_matrix(df, tiers).mean(axis=0)
    return np.column_stack([[t.cost_weight for t in tiers], acc])


def static_split_frontier(df: pd.DataFrame, tiers: list[TierInfo]) -> np.ndarray:
    """The static-split frontier: the concave hull of the uniform points (random mixes)."""
    from tiersim.analytic import upper_hull

    return upper_hull(uniform_points(df, tiers))


def lambda_sweep(
    df: pd.DataFrame,
    tiers: list[TierInfo],
    lambdas,
    policy: str = "lagrangian",
    rng: np.random.Generator | None = None,
    router: Router | None = None,
    extra: dict | None = None,
) -> np.ndarray:
    """(cost, accuracy) per lambda for the ``lagrangian`` or ``oracle`` policy.

    A classifier is trained once (on ``df`` unless ``router`` is given already fitted) and
    reused for every lambda, so the points differ only by lambda.
    """
    rng = rng or np.random.default_rng(0)
    base = router or build_router(
        RouterConfig.model_validate({"policy": policy, "lambda": 0.0, **(extra or {})}),
        tiers, train_df=df if policy == "lagrangian" else None, rng=rng,
    )
    points = []
    for lam in lambdas:
        base.cfg = base.cfg.model_copy(update={"lambda_": float(lam)})
        points.append(point(df, base.assign(df, rng), tiers))
    return np.array(points)
