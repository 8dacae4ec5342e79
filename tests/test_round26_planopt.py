"""Round 26 (planopt): ``tiersim plan`` against a brute force over the space it says it
searches, and the three limits it had (raised floors only on a shortfall, two GPU counts per
tier of a multi-tier design, one disaggregated tier's split chosen)."""

from __future__ import annotations

import json

from conftest import REPO
from test_round19 import run_cli

TWO_SPLITS = """\
name: two_splits
seed: 0
model: Qwen3-Coder-30B-A3B
gpu: H200
trace: {path: TRACE, window: [0, 300], time_scale: 5.0}
workload:
  difficulty: {kind: three_type, p_easy: 0.7, p_hopeless: 0.14, hint_auroc: 0.72}
tiers:
  - name: fp8
    precision: fp8
    replicas: 2
    cost_per_gpu_hour: 3.0
    accuracy: {easy: 1.0, hard: 0.76, hopeless: 0.0}
    disaggregation: {prefill_replicas: 1, decode_replicas: 1, link_gb_s: 50, latency_us: 10}
  - name: bf16
    precision: bf16
    replicas: 2
    cost_per_gpu_hour: 6.0
    accuracy: {easy: 1.0, hard: 0.80, hopeless: 0.0}
    disaggregation: {prefill_replicas: 1, decode_replicas: 1, link_gb_s: 50, latency_us: 10}
router: {policy: floor}
slo: {ttft_p99_s: 0.6, tpot_p99_s: 0.02}
accuracy_floor: 0.794
"""


def test_every_disaggregated_tier_of_a_plan_runs_at_the_split_it_was_sized_at(tmp_path, capsys):
    """Two tiers with a ``disaggregation`` block: the plan sized each at its best split (bf16
    6 at 4P 2D) but chose and wrote only the first tier's, so the planned scenario ran bf16 at
    a placeholder 5P 1D: plan.json said p99 TPOT 0.01603 s (SLO 0.02 s met) and 0.7352 USD,
    the run of its scenario.yaml 0.02074 s (missed) and 0.7426 USD."""
    path = tmp_path / "s.yaml"
    path.write_text(TWO_SPLITS.replace("TRACE", str(REPO / "traces" / "azure2023_code.parquet")))
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", path, "--gpus-per-replica", "1", "--out", out,
                        "--no-report")
    assert code == 0, err
    plan = json.loads((out / "plan.json").read_text())
    summary = json.loads((out / "summary.json").read_text())  # the planned scenario's run
    for key in ("cost_usd", "ttft_p99_s", "tpot_p99_s", "accuracy"):
        assert summary[key] == plan["plan"][key], key
    chosen = {s["tier"]: s["chosen"]["prefill_replicas"]
              for s in [plan["disaggregation"], *plan["other_splits"]]}
    assert chosen == {t: p["prefill"] or 0 for t, p in plan["plan"]["per_tier"].items()
                      if p["replicas"] >= 2}


def test_a_multi_tier_design_tries_every_gpu_count_below_its_tiers_uniform_one():
    """A tier's uniform fleet cheapest on 4 GPUs per replica (4 x 4) whose share behind the
    router needs 5 x 1 GPU, 1 x 2 or 1 x 4: the design started it at 4 and at 1 only, and
    planned cheap 2 x 1 + top 1 x 4 (6 USD/hour) where cheap 2 x 1 + top 1 x 2 (4 USD/hour)
    met every constraint."""
    import itertools

    from tiersim.plan.evaluate import Design
    from tiersim.plan.planner import Constraints, Planner, verdict
    from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario

    tiers = [FakeTier("cheap", accuracy=0.69, capacity_rps=10.0),
             FakeTier("top", accuracy=0.95, base_ttft_s=0.9)]
    evaluator = FakeEvaluator(tiers, p_easy=0.95)
    scenario = fake_scenario(tiers, ttft=1.0, tpot=0.05, floor=0.70)
    c = Constraints.of(scenario)
    result = Planner(scenario, c, evaluator, gpu_options=(1, 2, 4)).plan()
    assert {u["design"]: u.get("gpus_per_replica") for u in result.uniform}["top@4"] == {
        "top": 4}

    def rate(gc, gt, rc, rt):
        design = Design(("cheap", "top"), (gc, gt))
        o = evaluator.evaluate(design, {"cheap": rc, "top": rt})
        return o.cost_per_hour_usd if verdict(o, c).ok else float("inf")

    brute = min(rate(*k) for k in itertools.product((1, 2, 4), (1, 2, 4), range(1, 8),
                                                    range(1, 8)))
    assert brute == 4.0
    assert result.plan["cost_per_hour_usd"] == brute
    assert result.plan["gpus_per_replica"] == {"cheap": 1, "top": 2}


def test_a_plan_says_higher_router_floors_were_not_tried_where_a_routed_design_met_all():
    """The router is fitted to the floor, or a raised one only while accuracy falls short; a
    higher floor moves traffic to the dearer tier and, replicas rounding up per tier, may cost
    less (a 0.835 floor planned cheaper than the 0.8 fitted on one scenario). The plan now
    says so where a multi-tier design met every constraint and no --choose router.floor was
    given and it could still undercut the plan; before, it said nothing."""
    from conftest import fake_plan_notes

    from tiersim.plan.testing import FakeTier

    tiers = [FakeTier("cheap", accuracy=0.69, capacity_rps=10.0), FakeTier("top", accuracy=0.95)]

    def notes(floor, choose=None):
        return fake_plan_notes(tiers, floor, choose)

    result, said = notes(0.70)
    assert result.plan["design"] == "cheap+top"
    assert said == ["each multi-tier design was routed at the lowest floor of 0.7 to 0.72 its "
                    "accuracy met; higher floors were not tried and may cost less (replicas "
                    "round up per tier): try them with --choose router.floor=F1,F2"]
    assert notes(0.70, {"router.floor": [0.8]})[1] == []  # floors chosen: tried
    assert notes(0.96)[1] == []  # no routed design meets the floor: nothing to lower
    tiers[1] = FakeTier("top", accuracy=0.95, capacity_rps=100.0)
    result, said = notes(0.70)
    assert result.plan["design"] == "top"  # 1 replica: cheap + top can never cost less
    assert said == []


def test_agent_sessions_choose_the_split_of_each_disaggregated_tier(tmp_path, capsys):
    """A design serving agent sessions is simulated whole; there only the first tier with a
    ``disaggregation`` block had its split chosen, a second ran at its configured proportion.
    Now each is chosen in turn, written, and the run of the planned scenario gives the plan's
    figures (AGENTIC_SPLIT with bf16 disaggregated too: fp8 3 at 1P 2D + bf16 2 at 1P 1D)."""
    from test_round25_planbrute import AGENTIC_SPLIT

    both = AGENTIC_SPLIT.replace(
        "TRACE", str(REPO / "traces" / "azure2023_code.parquet")).replace(
        "    accuracy: {easy: 1.0, hard: 0.85}\n    scheduler: {enable_prefix_caching: true}\n",
        "    accuracy: {easy: 1.0, hard: 0.85}\n    scheduler: {enable_prefix_caching: true}\n"
        "    disaggregation: {prefill_replicas: 1, decode_replicas: 1, link_gb_s: 50, "
        "latency_us: 10}\n")
    path = tmp_path / "s.yaml"
    path.write_text(both)
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", path, "--gpus-per-replica", "1", "--max-replicas", "5",
                        "--out", out, "--no-report")
    assert code == 0, err
    plan = json.loads((out / "plan.json").read_text())
    assert [s["tier"] for s in [plan["disaggregation"], *plan["other_splits"]]] == ["fp8",
                                                                                    "bf16"]
    assert {t: p["prefill"] for t, p in plan["plan"]["per_tier"].items()} == {
        s["tier"]: s["chosen"]["prefill_replicas"] or None
        for s in [plan["disaggregation"], *plan["other_splits"]]}
    summary = json.loads((out / "summary.json").read_text())  # the planned scenario's run
    for key in ("cost_usd", "ttft_p99_s", "tpot_p99_s", "accuracy"):
        assert summary[key] == plan["plan"][key], key


def test_the_plan_report_lists_every_split_tier_s_splits():
    """A plan with two split tiers: the report listed only the first tier's splits compared
    (``disaggregation``), leaving out the second's (``other_splits``), which ``tiersim plan``
    prints."""
    import dataclasses

    from test_round26_consistency import _split_plan

    from tiersim.report.page import plan_section

    plan = _split_plan()
    second = {**plan.disaggregation, "tier": "fp8"}
    page = plan_section(dataclasses.replace(plan, other_splits=(second,)))
    assert "Prefill/decode split of tier bf16" in page
    assert "Prefill/decode split of tier fp8" in page
    assert [s["tier"] for s in dataclasses.replace(plan, other_splits=(second,)).splits] == [
        "bf16", "fp8"]
