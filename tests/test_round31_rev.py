"""Round 31 (rev): a review of round 30's changes: the planner's words beside the plan (ties,
figures that read alike or in e-notation), the disagg score's legend, and plan.json's shape as
the report reads it; each test failed before its fix."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from test_disagg_score_text import disagg_lines
from test_round5_analytic_report_plan import PLAN, error_line
from test_round30_tie import _plan

from tiersim.cli.plan import _tiers_over_slo
from tiersim.disagg import SplitResult
from tiersim.errors import Note
from tiersim.plan.planner import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario


def test_dearer_per_hour_prints_the_two_rates_apart():
    # fp8 at 1.0005 USD/hour: fp8 8 + bf16 4 cost 12.004 USD/hour against bf16 12's 12; to 3
    # figures both read 12.0 ("dearer per hour: 12.0 against 12.0 USD/hour")
    result = _plan(fp8_price=1.0005, routed_s=3400.0)
    assert result.plan["design"] == "bf16"
    routed = {r["design"]: r for r in result.runners_up}["fp8+bf16"]
    # since the share is per hour (test_round31_plan), the gap reads as a share, not two rates
    assert routed["missed"] == ("meets every constraint; 0.0333 % dearer than the plan per hour "
                                "(5.52 % cheaper than the plan over the trace: its drain after "
                                "the last arrival is shorter)")


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


def test_a_tie_kept_for_fewer_tiers_prints_the_accuracies_apart():
    # uniform mid (85%) at 12 USD/hour; small 8 + big 4 at 8 x 0.95 + 4 x 1.1 = 12 USD/hour,
    # 0.7 x 80% + 0.3 x 96.668% = 85.0004%: to 4 figures both read 85.00% ("the plan's accuracy
    # 85.00% against its 85.00%", as if no accuracy were given up)
    tiers = [FakeTier("small", accuracy=0.8, cost_per_gpu_hour=0.95),
             FakeTier("mid", accuracy=0.85),
             FakeTier("big", accuracy=0.96668, cost_per_gpu_hour=1.1)]
    scenario = fake_scenario(tiers, floor=0.82)
    with pytest.warns(Note):  # the router floors not tried (not at issue here)
        result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers),
                         gpu_options=(1,)).plan()
    assert result.plan["design"] == "mid"
    routed = {r["design"]: r for r in result.runners_up}["small+big"]
    assert "(the plan's accuracy 85.0000% against its 85.0004%: the floor is met" in \
        routed["missed"]


def test_two_free_fleets_tie():
    # prices of 0 (GPUs already paid for): uniform bf16 is the plan, more accurate than fp8
    # and simpler than fp8+bf16, all at 0 USD; each line read "meets every constraint; costs
    # 0 USD against the plan's 0", as if it cost more, without the rule that kept the plan
    tiers = [FakeTier("fp8", accuracy=0.9, cost_per_gpu_hour=0.0),
             FakeTier("bf16", accuracy=0.95, cost_per_gpu_hour=0.0)]
    scenario = fake_scenario(tiers)
    result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers),
                     gpu_options=(1,)).plan()
    assert result.plan["design"] == "bf16"
    routed = {r["design"]: r for r in result.runners_up}["fp8+bf16"]
    assert routed["missed"] == ("meets every constraint at the plan's cost (a tie); the plan "
                                "is kept as the simpler design, 1 tier against 2")
    fp8 = {u["design"]: u for u in result.uniform}["fp8"]
    assert fp8["missed"] == ("meets every constraint at the plan's cost (a tie); the plan is "
                             "kept for its higher accuracy, 95.00% against 90.00%")


def test_a_tier_over_the_slo_by_less_than_3_figures_reads_over():
    # a tier's own p99 of 1.0004 s beside a 1 s SLO read "is 1.00 s, over the 1 s SLO"
    chosen = {"tiers": ["a", "b"],
              "per_tier": {"a": {"ttft_p99_s": 1.0004, "requests": 10},
                           "b": {"ttft_p99_s": 0.5, "requests": 30}}}
    assert _tiers_over_slo(chosen, {"ttft_p99_s": 1.0}) == [
        "  note: tier a's own ttft_p99_s is 1.0004 s (modelled), "
        "over the 1 s SLO, which the fleet's p99 "
        "meets (25% of the requests go to it)"]


def test_disagg_names_its_slos_as_given(tmp_path, monkeypatch, capsys):
    # an SLO of 0.02345678 s read "TPOT 0.0234568 s" in the score's legend (:g, 6 figures)
    rows = [SplitResult(4, 1, 1.232, 0.0283, 0.233, 0.0231, 781, 0.616)]
    lines = disagg_lines(rows, 5, "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.02345678}\n", tmp_path,
                         monkeypatch, capsys)
    assert "(TTFT 2 s, TPOT 0.02345678 s): below 1 meets both" in lines[-1]


def test_a_baseline_fleet_tied_with_the_plan_is_named_a_baseline():
    # uniform big (95%, a tier under baselines:) at the plan's 12 USD/hour, 1 tier and 12
    # replicas as the plan: its line read "the plan is kept as found first (fewer tiers first,
    # then the scenario's order of tiers)", a rule that never compared the two
    tiers = [FakeTier("fp8", accuracy=0.8), FakeTier("bf16", accuracy=0.9),
             FakeTier("big", accuracy=0.95)]
    scenario = fake_scenario(tiers[:2], floor=0.82)
    scenario.baselines = [SimpleNamespace(name="big")]
    with pytest.warns(Note):  # the router floors not tried (not at issue here)
        result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers),
                         gpu_options=(1,)).plan()
    assert result.plan["design"] == "bf16"
    big = {u["design"]: u for u in result.uniform}["big"]
    assert big["cost_per_hour_usd"] == result.plan["cost_per_hour_usd"]
    assert big["missed"] == ("meets every constraint at the plan's cost (a tie); its tier is "
                             "listed under baselines:, never in a design")


@pytest.mark.parametrize(("fp8", "missed"), [
    ({"base_ttft_s": 1500.0}, "ttft_p99_s 1,500 vs limit 10"),  # read 1.5e+03
    ({"drops_below_gpus": 2}, "dropped 3,600 vs limit 0"),  # read 3.6e+03
])
def test_a_missed_constraint_of_thousands_reads_as_a_whole_number(fp8, missed):
    tiers = [FakeTier("fp8", accuracy=0.9, **fp8),
             FakeTier("bf16", accuracy=0.9, cost_per_gpu_hour=2.0)]
    scenario = fake_scenario(tiers, ttft=10.0)
    result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers, rate_rps=1.0),
                     gpu_options=(1,)).plan()
    assert missed in {u["design"]: u for u in result.uniform}["fp8"]["missed"]


CHOSEN = {"design": "bf16", "tiers": ["bf16"], "replicas": {"bf16": 1},
          "gpus_per_replica": {"bf16": 1}, "cost_usd": 1.0, "cost_per_hour_usd": 1.0,
          "per_tier": {"bf16": {"prefill": None}}}
"""A chosen plan the report draws (exit 0), each case below changes one field of it."""


@pytest.mark.parametrize(("change", "message"), [
    ({"tiers": 5}, "plan.tiers: expected a list, got the number 5"),  # TypeError
    ({"tiers": [["bf16"]]}, "plan.tiers[0]: expected a text, got a list"),  # TypeError
    ({"per_tier": {"bf16": 3}}, "plan.per_tier.bf16: expected an object, got the number 3"),
    ({"per_tier": {"bf16": {"prefill": "x"}}},
     "plan.per_tier.bf16.prefill: expected a whole number >= 0, got the text 'x'"),
])
def test_a_plan_json_with_tiers_of_another_kind_is_one_line(capsys, tmp_path, change, message):
    """``tiersim report`` of a plan folder whose chosen plan lists its tiers (the order its
    tables follow since round 30) or holds its per-tier figures as another kind: a traceback
    (TypeError, AttributeError) before."""
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps({**PLAN, "plan": {**CHOSEN, **change}}))
    assert error_line(capsys, "report", folder) == (
        f"Error: {folder / 'plan.json'}: {message}; rerun `tiersim plan` to rewrite it")


def test_a_design_dearer_per_hour_at_the_plans_cost_over_the_trace_is_no_tie():
    # fp8 at 1.1 USD/hour: fp8 8 + bf16 4 cost 12.8 USD/hour against bf16 12's 12, and over
    # its 3,375 s 12 USD, as the plan; the line read "at the plan's cost (a tie); the plan is
    # kept for its higher accuracy, 90.00% against 83.00%", but the plan won on its USD/hour
    result = _plan(fp8_price=1.1, routed_s=3375.0)
    routed = {r["design"]: r for r in result.runners_up}["fp8+bf16"]
    assert routed["cost_usd"] == result.plan["cost_usd"] == 12.0
    # no tie: since the share is per hour (test_round31_plan), it reads as dearer per hour
    assert routed["missed"] == "meets every constraint; 6.67 % dearer than the plan per hour"
