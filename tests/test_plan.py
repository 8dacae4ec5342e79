"""Tests of the capacity planner: monotone search, margins, the one-fewer check, real re-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tiersim.sweep.plan import Constraints, plan_capacity
from tiersim.sweep.testing import synthetic_runner

ROOT = Path(__file__).resolve().parents[1]


def fleet(rate_rps: float = 12.0, **tier_overrides) -> dict:
    """A two-tier synthetic scenario (bf16 replica twice the price of w4a16)."""
    tiers = [{"name": "w4a16", "replicas": 7, "cost_per_gpu_hour": 2.0, "capacity_rps": 6.0},
             {"name": "bf16", "replicas": 7, "cost_per_gpu_hour": 4.0, "capacity_rps": 3.0}]
    for tier in tiers:
        tier.update(tier_overrides.get(tier["name"], {}))
    return {"tiers": tiers, "workload": {"rate_rps": rate_rps, "difficulty": {"p_easy": 0.5}}}


def brute_force(doc: dict, c: Constraints, top: int = 16) -> tuple[float, dict]:
    """Cheapest feasible (w4a16, bf16) by trying every pair up to ``top`` (the blind grid)."""
    best = (float("inf"), {})
    for a in range(1, top + 1):
        for b in range(1, top + 1):
            d = json.loads(json.dumps(doc))
            d["tiers"][0]["replicas"], d["tiers"][1]["replicas"] = a, b
            s = synthetic_runner(d)
            if s["ttft_p99_s"] <= c.ttft_p99_s and s["tpot_p99_s"] <= c.tpot_p99_s:
                best = min(best, (2.0 * a + 4.0 * b, {"w4a16": a, "bf16": b}),
                           key=lambda x: x[0])
    return best


@pytest.mark.parametrize("rate,ttft", [(12.0, 0.3), (30.0, 0.2), (5.0, 0.16), (50.0, 0.5)])
def test_plan_matches_blind_grid_with_fewer_runs(rate, ttft):
    doc, c = fleet(rate), Constraints(ttft_p99_s=ttft, tpot_p99_s=0.05)
    result = plan_capacity(doc, c, runner=synthetic_runner)
    cost, replicas = brute_force(doc, c)
    assert result["plan"]["replicas"] == replicas
    assert result["plan"]["cost_per_hour_usd"] == pytest.approx(cost)
    assert result["runs"] < 16 * 16 / 4


def test_margins_and_one_fewer_check():
    c = Constraints(ttft_p99_s=0.3, tpot_p99_s=0.05, accuracy_floor=0.7)
    result = plan_capacity(fleet(), c, runner=synthetic_runner)
    margins = result["plan"]["margins"]
    assert set(margins) == {"ttft_p99_s", "tpot_p99_s", "accuracy"}
    for m in margins.values():
        assert m["met"] and m["margin"] >= 0
    ttft = margins["ttft_p99_s"]
    assert ttft["margin"] == pytest.approx(ttft["limit"] - ttft["value"])
    for tier, check in result["one_fewer"].items():
        if result["plan"]["replicas"][tier] == 1:
            assert check["verdict"].startswith("already at 1")
        else:
            assert check["misses"] is True and "ttft_p99_s" in check["verdict"], check


def test_accuracy_floor_picks_router_setting():
    """Among FPR settings the cheapest meeting the floor wins; an impossible floor says why."""
    doc = fleet(18.0)
    doc["tiers"][0]["accuracy"], doc["tiers"][1]["accuracy"] = 0.6, 0.9
    c = Constraints(ttft_p99_s=0.3, tpot_p99_s=0.05, accuracy_floor=0.84)
    result = plan_capacity(doc, c, choose={"router.confusion.fpr": [0.0, 0.1, 0.3]},
                           runner=synthetic_runner)
    # fpr 0.3: accuracy 0.855 meets 0.84 and needs one bf16 replica fewer (22 vs 26 USD/h)
    assert result["plan"]["settings"] == {"router.confusion.fpr": 0.3}
    impossible = plan_capacity(doc, Constraints(0.3, 0.05, 0.99), runner=synthetic_runner)
    assert impossible["plan"] is None and "below the floor" in impossible["reason"]


def test_unreachable_slo_says_more_replicas_do_not_help():
    result = plan_capacity(fleet(), Constraints(ttft_p99_s=0.05, tpot_p99_s=0.05),
                           runner=synthetic_runner)
    assert result["plan"] is None
    assert "more replicas do not help" in result["reason"]


def test_plan_on_real_scenario_meets_slo_when_rerun(tmp_path):
    """Done-when 4 on the tiny scenario: re-running the planned scenario meets its SLOs."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    scenario = tmp_path / "tiny.yaml"
    shutil.copy(ROOT / "scenarios" / "tiny.yaml", scenario)
    out = tmp_path / "plan"
    c = Constraints(ttft_p99_s=0.12, tpot_p99_s=0.1)
    result = plan_capacity(scenario, c, out_dir=out, report=False)
    assert result["plan"] is not None, result["reason"]
    planned = out / "scenario.yaml"
    assert yaml.safe_load(planned.read_text())["tiers"][0]["replicas"] == \
        result["plan"]["replicas"]["w4a16"]
    summary = run_scenario(load_scenario(planned), scenario_path=scenario)
    assert summary["ttft_p99_s"] <= c.ttft_p99_s and summary["tpot_p99_s"] <= c.tpot_p99_s
    for tier, check in result["one_fewer"].items():
        assert check["misses"] or check["verdict"].startswith("already at 1"), (tier, check)
    assert (out / "summary.json").exists() and (out / "plan.json").exists()
