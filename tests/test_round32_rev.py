"""Review of round 31's plan/run savings: the words of a saving against a free baseline, and
the shares over the trace beside a saving on the plan's basis."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from tiersim.cli.plan import format_plan
from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario

TIERS = [FakeTier("a", 0.7), FakeTier("b", 0.9, 2.0)]
"""Sized by the fake at 10 requests/s: a+b plans at a=8 + b=4 x 1 GPU, 16 USD/hour."""


def _plan(baselines: list[FakeTier], cost_model: str = "provisioned"):
    """Plan :data:`TIERS` at a 75% floor with ``baselines`` as baseline-only tiers."""
    evaluator = FakeEvaluator([*TIERS, *baselines], cost_model=cost_model)
    scenario = fake_scenario(TIERS, floor=0.75)
    scenario.baselines = [SimpleNamespace(name=t.name) for t in baselines]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner(scenario, Constraints.of(scenario), evaluator).plan()


def test_a_plan_dearer_than_a_free_baseline_says_it_costs_more():
    """Baseline-only c is free and meets the floor: the plan (16 USD) costs 16 USD more. Before,
    the line read "saves -16 USD (the baseline costs 0 USD: no percentage) against the
    cheapest sized uniform fleet (c)", where a share below 0 reads "costs ... more than"."""
    for cost_model in ("provisioned", "attributed"):
        result = _plan([FakeTier("c", 0.8, 0.0)], cost_model)
        assert result.plan["savings"]["vs_uniform_usd"] == -16.0
        text = format_plan(result)
        assert "saves -16" not in text
        assert ("  costs 16 USD (the baseline costs 0 USD: no percentage) more than the "
                "cheapest sized uniform fleet (c), simulated") in text.splitlines()
