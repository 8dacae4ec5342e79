"""Dropped requests and per-request costs: what a planner reads must not count unanswered
requests as answered, charge passes that never ran, or bill one tier's idle replicas to another
tier's requests (found by an independent review)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tiersim.costs import escalations_run, ledger, provisioned_costs, request_costs
from tiersim.fleet import build_fleet
from tiersim.paths import bundled
from tiersim.routing.metrics import savings, score
from tiersim.routing.types import TierInfo
from tiersim.scenario import load_scenario

TIERS = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]


def _labels(n: int) -> pd.DataFrame:
    return pd.DataFrame({"correct_cheap": np.ones(n), "correct_top": np.ones(n),
                         "input_tokens": np.full(n, 100), "output_tokens": np.full(n, 10)})


def test_dropped_requests_count_as_wrong_and_the_interval_holds_the_mean():
    df = _labels(100)
    dropped = np.zeros(100, bool)
    dropped[:20] = True
    out = score(df, np.zeros(100, int), tiers=TIERS, dropped=dropped)
    assert out["accuracy"] == pytest.approx(0.8)
    lo, hi = out["accuracy_ci95"]
    assert lo <= out["accuracy"] <= hi


def test_a_dropped_request_does_not_move_the_uniform_cost_estimate():
    df = _labels(50)
    final = np.array([0, 1] * 25)
    cost = np.where(final == 0, 1.0, 2.0)
    base = savings(df, final, cost, TIERS)
    big = pd.concat([df, pd.DataFrame({"correct_cheap": [1.0], "correct_top": [1.0],
                                       "input_tokens": [1_000_000], "output_tokens": [1]})],
                    ignore_index=True)
    dropped = np.r_[np.zeros(50, bool), True]
    with_drop = savings(big, np.r_[final, 0], np.r_[cost, 0.0], TIERS, dropped=dropped)
    for name in ("cheap", "top"):
        assert with_drop["uniform"][name]["cost_usd"] == pytest.approx(
            base["uniform"][name]["cost_usd"])


def _result(first, final, escalated, dropped, gpu_first, gpu_final):
    return SimpleNamespace(first_tier=np.array(first), final_tier=np.array(final),
                           escalated=np.array(escalated), dropped=np.array(dropped),
                           gpu_s_first=np.array(gpu_first, float),
                           gpu_s_final=np.array(gpu_final, float))


def test_provisioned_cost_of_an_idle_tier_is_not_billed_to_other_tiers():
    scenario = load_scenario(bundled("scenarios", "tiny.yaml"))
    k = len(scenario.tiers)
    # two requests, both only on tier 0; every other tier idle
    res = _result([0, 0], [0, 0], [False, False], [False, False], [0, 0], [1.0, 3.0])
    cost = provisioned_costs(build_fleet(scenario), res, duration_s=100.0)
    t0 = scenario.tiers[0]
    tier0 = t0.replicas * t0.gpus_per_replica * t0.cost_per_gpu_hour / 3600.0 * 100.0
    assert cost.sum() == pytest.approx(tier0)  # exactly tier 0's own provisioned cost
    assert cost[1] == pytest.approx(3 * cost[0])
    assert k > 1


def test_fixed_price_charges_only_passes_that_ran():
    scenario = load_scenario(bundled("scenarios", "tiny.yaml")).model_copy(
        update={"cost_model": "fixed_per_request"})
    for i, tier in enumerate(scenario.tiers):
        tier.cost_per_request_usd = 1.0 + i
    last = len(scenario.tiers) - 1
    # served; dropped on arrival (its planned escalation never ran); escalated then dropped
    res = _result([0, 0, 0], [0, 0, last], [False, False, True], [False, True, True],
                  [0, 0, 1], [1, 0, 0])
    assert escalations_run(res).tolist() == [-1, -1, -1]
    fleet = build_fleet(scenario)
    cost = request_costs("fixed_per_request", fleet, res, 10.0)
    assert cost.tolist() == [1.0, 0.0, 1.0]
    res.busy_s = {t.name: [0.0] for t in scenario.tiers}
    book = ledger("fixed_per_request", fleet, res, 10.0)
    assert book.headline_usd == pytest.approx(cost.sum())  # the ledger and the column agree
    assert book.tiers[scenario.tiers[0].name].passes == 2


def test_a_dropped_request_is_not_a_silent_failure():
    df = pd.DataFrame({"correct_cheap": [0.0, 0.0], "correct_top": [1.0, 1.0],
                       "input_tokens": [10, 10], "output_tokens": [5, 5]})
    on_cheap = np.zeros(2, int)
    assert score(df, on_cheap, tiers=TIERS)["silent_failure_rate"] == 1.0
    assert score(df, on_cheap, tiers=TIERS,
                 dropped=np.array([True, False]))["silent_failure_rate"] == 0.5


def _escalated_then_dropped(tmp_path, baselines: bool = False):
    """Two long answers, both wrong on the cheap tier (a perfect verifier escalates them) and
    both too long for the top tier's context, which drops them: only their first passes run,
    for seconds after the last arrival (0.5 s). Routing by capability (round 35) cancels such an
    escalation, the cheap tier holding the request; it is switched off here, so the top tier
    refuses them as it refuses an escalation larger than its KV cache, the path kept."""
    from unittest import mock

    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario

    pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 0.5], "input_tokens": [500, 500],
                  "output_tokens": [2000, 2000], "correct_w4a16": [0.0, 0.0],
                  "correct_bf16": [1.0, 1.0]}).to_csv(tmp_path / "t.csv", index=False)
    doc = tiny_doc(trace={"path": "t.csv", "format": "canonical"},
                   workload={"difficulty": {"kind": "labels"}},
                   router={"policy": "cascade", "cascade": {"signal_noise": 0.0}})
    doc["tiers"][1]["scheduler"] = {"max_model_len": 1000}
    path = write_yaml(tmp_path / "s.yaml", doc)
    with mock.patch("tiersim.routing.base.by_capability", lambda a, df, tiers: a):
        return run_scenario(load_scenario(path), scenario_path=path, baselines=baselines)


def test_the_run_lasts_until_its_last_pass_ends(tmp_path):
    """A first pass whose escalation is dropped has no finish_s, yet the fleet ran it: the run
    lasts until it ends (docs/metrics.md, duration), so no tier is busy longer than it is
    paid for (before: duration 0.5 s, the cheap tier 1,857% utilised, attributed cost 18x the
    provisioned)."""
    run = _escalated_then_dropped(tmp_path)
    assert run.dropped == 2 and run.duration_s > 1.0
    cheap = next(t for t in run.tiers if t.name == "w4a16")
    assert 0.5 < cheap.utilization <= 1.0
    assert run.attributed_cost_usd <= run.provisioned_cost_usd
    assert run.provisioned_cost_usd == pytest.approx(2 * 3.5 * run.duration_s / 3600)


def test_simulated_savings_price_the_run_until_its_last_pass_ends(tmp_path):
    """The simulated savings price the routed fleet over the run's own duration, last
    unanswered pass included."""
    run = _escalated_then_dropped(tmp_path, baselines=True)
    assert run.savings.routed_cost_usd == pytest.approx(run.cost_usd, rel=1e-12)
