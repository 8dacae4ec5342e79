"""Round 23, README walk: what a new user running README.md's commands met."""

from __future__ import annotations

import pytest

from tiersim.errors import TiersimError
from tiersim.results import PlanResult


def _plan(**savings) -> dict:
    """A plan.json whose chosen plan carries ``savings`` and an accuracy margin just below 0."""
    return {"scenario": "plan_default", "constraints": {"ttft_p99_s": 2.0, "accuracy_floor": 0.8},
            "plan": {"cost_usd": 5.732, "replicas": {"fp8": 8, "bf16": 9},
                     "savings": {"vs_uniform_usd": -0.0012, "vs_uniform_frac": -0.0002,
                                 "vs_static_split_usd": -0.0012, **savings},
                     "margins": {"accuracy": {"limit": 0.8, "value": 0.8, "met": True,
                                              "margin": -4e-10, "margin_frac": -5e-10}}}}


def test_a_plan_dearer_than_its_static_split_reads_back():
    """`tiersim plan scenarios/plan_default.yaml --out DIR` (README) ended with 'malformed plan
    ('plan.plan.savings.vs_static_split_frac' must be >= 0, got -0.0002...)', exit 1 and no DIR:
    a saving nested in the plan was held to >= 0 as if it were a cost."""
    plan = PlanResult.from_json(_plan(vs_static_split_frac=-0.0002056220971))
    assert plan.plan["savings"]["vs_static_split_frac"] == pytest.approx(-0.0002056220971)
    assert plan.plan["margins"]["accuracy"]["margin"] == -4e-10


def test_a_negative_cost_nested_in_a_plan_is_still_refused():
    doc = _plan(vs_static_split_frac=0.1)
    doc["plan"]["savings"]["baseline_uniform_cost_usd"] = -1.0
    with pytest.raises(TiersimError, match=r"^plan.json: malformed plan \('plan\.plan\.savings\."
                       r"baseline_uniform_cost_usd' must be >= 0, got -1"):
        PlanResult.from_json(doc)


def test_a_tier_named_like_a_saving_keeps_its_share_a_fraction():
    """Only a saving's own key relaxes the check: a share map keeps its fraction rule whatever
    its tiers are called."""
    from tiersim.results import _in_range

    with pytest.raises(ValueError, match="must be a fraction between 0 and 1"):
        _in_range({"vs_uniform_usd": 1.5}, "first_tier_shares", "router.first_tier_shares")
