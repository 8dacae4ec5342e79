"""Against the closed form: on the two-type setting with batching effects removed (a fixed price
per request), the planner's routed-vs-uniform saving is the two-type model's (docs/planning.md).

The planner sizes every design by simulation (each meets the SLOs), routes the two-tier design
with the oracle at the kink (easy requests on the cheap tier, hard ones on the top tier) and
compares it with the sized uniform fleets. The closed form is evaluated with p, eps and delta
estimated from the same requests (:func:`tiersim.analytic.estimate`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.analytic import TwoType, estimate, max_saving, savings_at_floor
from tiersim.plan import Constraints, Planner, SimEvaluator
from tiersim.routing import TierInfo
from tiersim.routing.accuracy import realised_matrix, true_expected_matrix
from tiersim.scenario import scenario_from_dict

C0, C1 = 0.002, 0.006  # USD per request on the cheap and the top tier


def two_type_scenario(p_easy: float) -> dict:
    """Five minutes of the Azure conversation trace on nvfp4 / bf16 at fixed prices."""
    return {
        "name": "two_type", "seed": 3, "model": "Qwen3-Coder-30B-A3B", "gpu": "H200",
        "profile": None,
        "trace": {"path": "azure2023_conv.parquet", "window": [0, 300]},
        "workload": {"difficulty": {"kind": "two_type", "p_easy": p_easy}},
        "tiers": [
            {"name": "cheap", "precision": "nvfp4", "replicas": 1, "cost_per_gpu_hour": 3.5,
             "cost_per_request_usd": C0, "accuracy": {"easy": 0.98, "hard": 0.55}},
            {"name": "top", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 3.5,
             "cost_per_request_usd": C1, "accuracy": {"easy": 1.0, "hard": 0.9}},
        ],
        # the oracle at the kink: 0.02 / (2/3) < lambda < 0.35 / (2/3)
        "router": {"policy": "oracle", "lambda": 0.2},
        "cost_model": "fixed_per_request",
        "slo": {"ttft_p99_s": 5.0, "tpot_p99_s": 0.2},
    }


@pytest.mark.parametrize("p_easy", [0.5, 0.8])
def test_planned_saving_matches_the_closed_form(p_easy):
    scenario = scenario_from_dict(two_type_scenario(p_easy), "two_type.yaml")
    evaluator = SimEvaluator(scenario)
    df = evaluator.df
    pair = [TierInfo("cheap"), TierInfo("top")]
    easy = (df["difficulty_class"] == "easy").to_numpy()
    est = estimate(true_expected_matrix(df, pair), realised_matrix(df, pair), easy)
    n = len(df)
    model = TwoType(est["p"], est["eps"], est["delta"], dc=n * (C1 - C0), c0=n * C0,
                    a_top=est["a_top"])
    kink_accuracy = est["a_top"] - est["p"] * est["eps"]
    floor = kink_accuracy - 1e-6
    c = Constraints.of(scenario, floor=floor)
    planner = Planner(scenario, c, evaluator, choose={"policy": ["oracle"], "lambda": [0.2]})
    result = planner.plan()
    plan = result.plan
    assert plan["tiers"] == ["cheap", "top"], result.reason
    assert plan["accuracy"] == pytest.approx(kink_accuracy, abs=1e-6)
    saved = plan["savings"]
    closed = savings_at_floor(model, floor)
    assert saved["baseline_uniform_tier"] == "top"
    assert saved["vs_uniform_usd"] == pytest.approx(closed["vs_uniform"], rel=0.05)
    d_c_star = max_saving(model.p, model.eps, model.delta, model.dc)
    assert saved["vs_static_split_usd"] == pytest.approx(d_c_star, rel=0.05)
    assert d_c_star > 0.05 * n * C0  # not a vanishing figure
    # and every planned fleet met its SLOs in simulation
    assert plan["margins"]["ttft_p99_s"]["met"] and plan["margins"]["tpot_p99_s"]["met"]
    assert np.isclose(plan["cost_usd"], saved["routed_cost_usd"])
