"""Round 31 (rev): a review of round 30's planner words, engine board and trace reading; each
test failed before its fix."""

from __future__ import annotations

from test_round30_tie import _plan

from tiersim.plan.planner import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario


def test_dearer_per_hour_prints_the_two_rates_apart():
    # fp8 at 1.0005 USD/hour: fp8 8 + bf16 4 cost 12.004 USD/hour against bf16 12's 12; to 3
    # figures both read 12.0 ("dearer per hour: 12.0 against 12.0 USD/hour")
    result = _plan(fp8_price=1.0005, routed_s=3400.0)
    assert result.plan["design"] == "bf16"
    routed = {r["design"]: r for r in result.runners_up}["fp8+bf16"]
    assert routed["missed"].endswith("but dearer per hour: 12.004 against 12.000 USD/hour")


def test_a_tie_kept_as_the_smaller_fleet_of_one_replica():
    # uniform bf16 on 1 replica of 2 GPUs and uniform fp8 on 2 of 1 GPU, both 2 USD/hour: the
    # line read "kept as the smaller fleet, 1 replicas against 2"
    tiers = [FakeTier("fp8", accuracy=0.8, max_gpus=1), FakeTier("bf16", accuracy=0.9, min_gpus=2)]
    scenario = fake_scenario(tiers)
    result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers, rate_rps=1.0),
                     gpu_options=(1, 2)).plan()
    assert result.plan["replicas"] == {"bf16": 1}
    fp8 = {u["design"]: u for u in result.uniform}["fp8"]
    assert fp8["missed"] == ("meets every constraint at the plan's cost (a tie); the plan is "
                             "kept as the smaller fleet, 1 replica against 2")
