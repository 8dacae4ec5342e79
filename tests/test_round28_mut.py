"""Round 28 hand mutation audit: each test here kills a hand-made mutant that the suite let
live (a wrong price, a swapped percentile, a dropped term) with a hand-computed case."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tiersim import costs


def _tier(name: str, gpus: int, replicas: int = 1):
    """A built tier as the ledger sees it, at $3.6/GPU-hour ($0.001 per GPU-second)."""
    return SimpleNamespace(name=name, engine_replicas=replicas, gpus=replicas * gpus,
                           usd_per_replica_second=gpus * 3.6 / 3600.0,
                           config=SimpleNamespace(cost_per_request_usd=None))


def _cascade():
    """Two tiers ($0.001 and $0.004 per replica-second): request 0 runs 1 s on the cheap tier
    then escalates for 2 s on the top tier; request 1 runs 1 s on the top tier only."""
    fleet = SimpleNamespace(tiers=[_tier("cheap", gpus=1), _tier("top", gpus=4)])
    result = SimpleNamespace(first_tier=np.array([0, 1]), final_tier=np.array([1, 1]),
                             escalated=np.array([True, False]), dropped=np.array([False, False]),
                             gpu_s_first=np.array([1.0, 1.0]), gpu_s_final=np.array([2.0, 0.0]))
    return fleet, result


def test_an_escalation_pass_is_priced_at_the_tier_it_ran_on():
    fleet, result = _cascade()
    # request 0: 1 s x $0.001 + 2 s x $0.004; request 1: 1 s x $0.004
    assert costs.attributed_costs(fleet, result) == pytest.approx([0.009, 0.004])


def test_an_escalation_pass_shares_the_provisioned_cost_of_the_tier_it_ran_on():
    fleet, result = _cascade()
    # 10 s: cheap costs $0.01 (all request 0's); top costs $0.04, attributed 0.008 : 0.004
    cost = costs.provisioned_costs(fleet, result, duration_s=10.0)
    assert cost == pytest.approx([0.01 + 0.04 * 2 / 3, 0.04 / 3])
