"""Round 28 hand mutation audit: each test here kills a hand-made mutant that the suite let
live (a wrong price, a swapped percentile, a dropped term) with a hand-computed case."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

from tiersim import analytic, costs, metrics, savings
from tiersim.paths import bundled
from tiersim.routing import TierInfo, build_router
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario
from tiersim.session_metrics import session_result


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


def _uniform(tier: str, accuracy: float, dropped: int = 0, cost: float = 1.0):
    """A sized uniform fleet that met the SLOs at ``cost``."""
    return savings.UniformRun(tier=tier, replicas=1, gpus_per_replica=1, slo_met=True,
                              cost_usd=cost, attributed_cost_usd=cost, accuracy=accuracy,
                              dropped=dropped, ttft_p99_s=None, tpot_p99_s=None, e2e_p99_s=None)


def test_a_provisioned_fleet_is_paid_until_the_run_ends():
    outcome = SimpleNamespace(cost_usd=1.0, duration_s=100.0, cost_per_hour_usd=36.0)
    assert savings.stretched_cost("provisioned", outcome, end_s=200.0) == pytest.approx(2.0)
    assert savings.stretched_cost("provisioned", outcome, end_s=50.0) == 1.0
    assert savings.stretched_cost("attributed", outcome, end_s=200.0) == 1.0


def test_a_dropped_request_scores_zero_in_the_routed_accuracy():
    df = pd.DataFrame({"correct_cheap": [1.0, 1.0, 0.0, 1.0], "correct_top": [1.0] * 4})
    result = SimpleNamespace(final_tier=np.array([0, 1, 1, 0]),
                             dropped=np.array([False, True, False, False]))
    infos = [TierInfo("cheap"), TierInfo("top")]
    assert savings.routed_accuracy(df, result, infos, "realised") == pytest.approx(0.75)


def test_a_uniform_fleet_that_dropped_requests_keeps_its_simulated_accuracy():
    df = pd.DataFrame({"correct_cheap": [1.0, 0.0, 1.0, 1.0], "correct_top": [1.0] * 4})
    infos = [TierInfo("cheap"), TierInfo("top")]
    runs = savings.same_basis([_uniform("cheap", 0.1), _uniform("top", 0.5, dropped=2)],
                              df, infos, "realised")
    assert [u.accuracy for u in runs] == pytest.approx([0.75, 0.5])


def test_a_request_exactly_as_long_as_the_context_fits():
    tier = SimpleNamespace(name="fp8", limits=SimpleNamespace(max_model_len=100),
                           config=SimpleNamespace(output_length_multiplier=1.0))
    df = pd.DataFrame({"input_tokens": [90, 90], "output_tokens": [10, 11]})
    longer, why = savings.longer_than_context(SimpleNamespace(tiers=[tier]), df)
    assert longer[:, 0].tolist() == [False, True]
    assert why["fp8"].startswith("drops 1 request longer")


def _one_tier_run(busy_until_s: float):
    """One request on one tier, 1 GPU-second of work, arriving at 0 and done at 3 s."""
    return SimpleNamespace(first_tier=np.array([0]), final_tier=np.array([0]),
                           escalated=np.array([False]), dropped=np.array([False]),
                           gpu_s_first=np.array([1.0]), gpu_s_final=np.array([0.0]),
                           busy_s={"cheap": [1.0]}, arrival_s=np.array([0.0]),
                           finish_s=np.array([3.0]), busy_until_s=busy_until_s)


def test_the_run_lasts_until_its_last_step_ends():
    assert savings.duration_of(_one_tier_run(busy_until_s=5.0)) == 5.0
    assert savings.duration_of(_one_tier_run(busy_until_s=1.0)) == 3.0


def test_the_routed_fleet_is_paid_until_the_response_cache_last_answers():
    fleet = SimpleNamespace(tiers=[_tier("cheap", gpus=1)])
    df = pd.DataFrame({"correct_cheap": [1.0]})
    out = savings.savings_result("provisioned", fleet, df, _one_tier_run(3.0),
                                 [TierInfo("cheap")], None, "realised",
                                 uniform=[_uniform("cheap", 1.0, cost=1.0)], end_s=100.0)
    # one replica at $0.001/s for 100 s, not for the 3 s its requests took
    assert out.routed_cost_usd == pytest.approx(0.1)
    assert out.vs_uniform_usd == pytest.approx(0.9)


def _two_requests():
    """Request 0 answered (TTFT 1 s, 11 tokens, TPOT 0.1 s); request 1, of 100 output tokens
    and 50 prompt tokens, dropped."""
    return metrics.add_latencies(pd.DataFrame({
        "arrival_s": [0.0, 1.0], "first_token_s": [1.0, np.nan], "finish_s": [2.0, np.nan],
        "queue_s": [0.0, np.nan], "input_tokens": [100, 50], "output_tokens": [11, 100],
        "expected_accuracy": [1.0, 0.0]}))


def test_a_request_exactly_at_the_slo_meets_it():
    met = metrics.slo_met(_two_requests(), metrics.Slo(ttft_s=1.0, tpot_s=0.1))
    assert met.tolist() == [True, False]


def test_a_dropped_requests_tokens_are_not_counted_as_served():
    stats = metrics.request_stats(_two_requests(), metrics.Slo(ttft_s=1.0, tpot_s=0.1))
    assert (stats.input_tokens, stats.output_tokens) == (100, 11)
    assert stats.throughput_tok_s == pytest.approx(11 / 2.0)  # over the 2 s the run lasted
    assert stats.slo_attainment == pytest.approx(0.5)


def test_a_split_is_scored_by_the_worse_of_its_two_latencies():
    assert metrics.slo_score(2.0, 0.05, (1.0, 0.1), dropped=False) == pytest.approx(2.0)
    assert metrics.slo_score(0.5, 0.3, (1.0, 0.1), dropped=False) == pytest.approx(3.0)
    assert metrics.slo_score(0.5, None, (1.0, 0.1), dropped=False) == pytest.approx(0.5)
    assert metrics.slo_score(0.5, 0.05, (1.0, 0.1), dropped=True) == float("inf")


def test_a_task_with_a_dropped_step_has_no_latency():
    # task a: steps 0-2 s and 2-5 s (5 s); task b: a step 1-2 s, then a dropped one
    df = pd.DataFrame({"session_id": ["a", "a", "b", "b"], "follows_id": [None, 0, None, 2]})
    finish = np.array([2.0, 5.0, 2.0, np.nan])
    requests = pd.DataFrame({
        "arrival_s": [0.0, 2.0, 1.0, 2.0], "finish_s": finish, "e2e_s": finish - [0, 2, 1, 2],
        "expected_accuracy": [1.0, 1.0, 1.0, 0.0], "cost_usd": [1.0] * 4,
        "completed": np.isfinite(finish), "final_tier": [0] * 4})
    out = session_result(df, requests)
    assert out.completed_tasks == 1
    assert (out.task_latency_p50_s, out.task_latency_mean_s) == (5.0, 5.0)


def test_given_classes_whose_easy_loss_is_larger_cap_eps_at_delta():
    # class "easy" loses 0.3 on the cheap tier, class "hard" 0.1: eps is capped at 0.1
    expected = np.array([[0.7, 1.0], [0.9, 1.0]])
    est = analytic.estimate(expected, expected, easy=np.array([True, False]))
    assert (est["eps"], est["eps_raw"], est["delta"]) == pytest.approx((0.1, 0.3, 0.1))


def test_busy_gpu_hours_count_each_engine_replicas_own_gpus():
    scenario = load_scenario(bundled("scenarios", "tiny.yaml"))
    for tier in scenario.tiers:  # every tier 2 replicas of 1 GPU at one price
        tier.replicas, tier.gpus_per_replica, tier.cost_per_gpu_hour = 2, 1, 3.6
    out = run_scenario(scenario)
    # busy replica-seconds x 1 GPU is busy GPU-seconds; at $3.6/GPU-hour that is the
    # attributed cost (busy replica-seconds x $0.001)
    assert out.gpu_hours_busy * 3.6 == pytest.approx(out.attributed_cost_usd)
    assert out.gpu_hours_busy <= out.gpu_hours


def test_a_request_dropped_on_one_tier_is_counted_on_that_tier_and_scores_zero(tmp_path, capsys):
    # every request on w4a16, whose max_model_len 4,096 cannot hold request 1 (10,010 tokens);
    # nor can bf16's (routed by capability, round 35, it would go there if bf16's could)
    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1, 2], "arrival_s": [0.0, 0.0, 1.0],
                  "input_tokens": [100, 10_000, 100],
                  "output_tokens": [10, 10, 10]}).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)},
                   router={"policy": "static_split", "fractions": [1, 0]})
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 4096}
    out = tmp_path / "o"
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out", out,
                        "--no-baselines", "--no-report")
    assert code == 0, err
    tiers = json.loads((out / "summary.json").read_text())["tiers"]
    assert (tiers["w4a16"].get("dropped"), tiers["bf16"].get("dropped")) == (1, None)
    rows = pd.read_parquet(out / "requests.parquet").set_index("request_id")
    assert not rows.loc[1, "completed"] and rows.loc[1, "expected_accuracy"] == 0.0


TWO = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]


def _route(cfg: dict, df: pd.DataFrame):
    """The assignment of a router built from ``cfg`` over :data:`TWO`."""
    return build_router(cfg, TWO).assign(df, np.random.default_rng(0))


def test_lambda_charges_a_tiers_relative_cost():
    # relative costs 0.5 and 1; at lambda 0.4: request 0 values 0.9 - 0.2 = 0.7 on cheap
    # against 1.0 - 0.4 = 0.6 on top; request 1 values 0.5 - 0.2 = 0.3 against 0.6
    df = pd.DataFrame({"p_correct_cheap": [0.9, 0.5], "p_correct_top": [1.0, 1.0],
                       "correct_cheap": [1.0, 0.0], "correct_top": [1.0, 1.0]})
    assert _route({"policy": "oracle", "lambda": 0.4}, df).tier.tolist() == [0, 1]


def test_a_cascade_escalates_only_a_signal_below_its_threshold():
    # no noise: the signal is the cheap tier's 0/1 correctness; 1.0 is not below 1.0
    df = pd.DataFrame({"correct_cheap": [1.0, 0.0], "correct_top": [1.0, 1.0]})
    cfg = {"policy": "cascade", "cascade": {"threshold": 1.0, "signal_noise": 0.0}}
    assert _route(cfg, df).escalate_to.tolist() == [-1, 1]


def test_a_floor_router_takes_a_routing_within_rounding_of_its_floor():
    router = build_router({"policy": "floor", "floor": 0.9}, TWO)
    cost = np.array([1.0, 2.0])
    assert router.pick(np.array([0.9 - 1e-10, 1.0]), cost) == (0, True)  # rounding: met
    assert router.pick(np.array([0.9 - 1e-6, 1.0]), cost) == (1, True)  # below: the top
