"""The floor and budget policies: fitted on the calibration split, checked on held-out rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import ScenarioError
from tiersim.routing import TierInfo, build_router, prepare_workload, score
from tiersim.routing.config import RouterConfig
from tiersim.routing.constrained import (
    cut_grid,
    evaluate_cuts,
    with_scenario_floor,
)
from tiersim.routing.frontier import fixed_cost

TWO = [TierInfo("cheap", accuracy={"easy": 0.98, "hard": 0.5}, cost_weight=1.0),
       TierInfo("top", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=3.0)]


def two_type(n: int = 20_000, seed: int = 0, tiers=TWO, hint: float = 0.85) -> pd.DataFrame:
    """The two-type setting (70% easy) with a surface feature of AUROC ``hint``."""
    df = pd.DataFrame({"input_tokens": np.full(n, 200, np.int32),
                       "output_tokens": np.full(n, 100, np.int32)})
    cfg = {"difficulty": {"kind": "two_type", "p_easy": 0.7, "hint_auroc": hint}}
    return prepare_workload(df, tiers, cfg, np.random.default_rng(seed)).df


def fitted(cfg: dict, df: pd.DataFrame, tiers=TWO):
    """A router trained on ``df`` and its assignment of ``df``."""
    router = build_router(cfg, tiers, train_df=df, rng=np.random.default_rng(1))
    return router, router.assign(df, np.random.default_rng(2))


def held_out(router, df) -> np.ndarray:
    """Rows the classifier (and so the cuts) never trained on."""
    return np.setdiff1d(np.arange(len(df)), router.classifier.train_index)


def realised(df, a, rows, tiers=TWO) -> tuple[float, list, float]:
    """Accuracy, its 95% interval and the mean fixed cost on ``rows``."""
    s = score(df.iloc[rows].reset_index(drop=True), a.final_tier[rows], tiers=tiers)
    return s["accuracy"], s["accuracy_ci95"], float(fixed_cost(a, tiers)[rows].mean())


@pytest.mark.parametrize("floor", [0.86, 0.9, 0.93])
def test_floor_meets_its_floor_and_is_no_dearer_than_threshold_routing(floor):
    df = two_type()
    router, a = fitted({"policy": "floor", "floor": floor}, df)
    rows = held_out(router, df)
    acc, (lo, hi), cost = realised(df, a, rows)
    assert router.cuts.feasible and router.cuts.accuracy >= floor
    assert lo <= floor <= hi or acc >= floor  # met, or short only by sampling noise
    # the threshold policy's frontier on the same held-out rows, at the floor policy's accuracy
    points = []
    for th in np.linspace(0.3, 0.99, 24):
        r, b = fitted({"policy": "threshold", "thresholds": float(th)}, df)
        points.append(realised(df, b, rows)[::2])
    points = np.array(sorted(points))
    dearer = points[points[:, 0] >= acc]
    cheaper = points[points[:, 0] < acc]
    assert len(dearer) and len(cheaper)
    (a0, c0), (a1, c1) = cheaper[-1], dearer[0]
    threshold_cost = c0 + (acc - a0) / (a1 - a0) * (c1 - c0)
    assert cost <= threshold_cost * 1.01


def test_floor_is_fitted_on_the_calibration_split_not_the_evaluated_rows():
    """Refitting on another draw of the same workload moves the cuts only by sampling noise;
    the cuts depend on the training rows alone (changing held-out labels changes nothing)."""
    df = two_type(seed=3)
    router, _ = fitted({"policy": "floor", "floor": 0.9}, df)
    rows = held_out(router, df)
    flipped = df.copy()
    flipped.loc[rows, "p_correct_cheap"] = 0.0
    flipped.loc[rows, "correct_cheap"] = 0.0
    again, _ = fitted({"policy": "floor", "floor": 0.9}, flipped)
    assert again.cuts.thresholds == router.cuts.thresholds


def test_unreachable_floor_routes_all_to_the_top_and_says_so():
    df = two_type(n=4000)
    router, a = fitted({"policy": "floor", "floor": 0.99}, df)
    assert not router.cuts.feasible
    assert np.all(a.tier == 1)


@pytest.mark.parametrize("relative", [0.4, 0.6, 0.8])
def test_budget_respects_its_budget(relative):
    df = two_type()
    router, a = fitted({"policy": "budget", "budget_relative": relative}, df)
    budget = relative * 3.0
    assert router.cuts.cost <= budget + 1e-9
    rows = held_out(router, df)
    _, _, cost = realised(df, a, rows)
    share_sd = np.sqrt(0.25 / len(rows))  # binomial sd of the top share, at worst
    assert cost <= budget + 3 * share_sd * (3.0 - 1.0)
    # and it spends it: a bigger budget buys more accuracy
    richer, b = fitted({"policy": "budget", "budget_relative": relative + 0.15}, df)
    assert richer.cuts.accuracy > router.cuts.accuracy


def test_budget_in_usd_matches_the_relative_budget():
    df = two_type(n=6000)
    rel, _ = fitted({"policy": "budget", "budget_relative": 0.5}, df)
    usd, _ = fitted({"policy": "budget", "budget_usd_per_request": 1.5}, df)
    assert rel.cuts.thresholds == usd.cuts.thresholds


def test_a_dominated_middle_tier_gets_no_traffic():
    tiers = [TWO[0], TierInfo("dear", accuracy={"easy": 0.99, "hard": 0.6}, cost_weight=3.5),
             TWO[1]]
    df = two_type(n=8000, tiers=tiers)
    router, a = fitted({"policy": "floor", "floor": 0.9}, df, tiers)
    assert router.cuts.shares[1] == 0.0
    assert not np.any(a.tier == 1)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"policy": "floor"}, "scenario: router.floor: policy floor needs an accuracy floor: "
                              "set the scenario's accuracy_floor (e.g. 0.75) or router.floor"),
        ({"policy": "budget", "budget_relative": 0.2},
         "scenario: router.budget_relative: 0.2 of the top tier's cost per request (3) is 0.6, "
         "below the cheapest tier's 1; give at least 0.3334"),
    ],
)
def test_options_are_checked_when_built(cfg, message):
    with pytest.raises(ScenarioError) as err:
        build_router(cfg, TWO)
    assert str(err.value) == message


def test_budget_needs_exactly_one_budget():
    with pytest.raises(ValueError, match="exactly one of budget_relative"):
        RouterConfig.model_validate({"policy": "budget"})
    with pytest.raises(ValueError, match="exactly one of budget_relative"):
        RouterConfig.model_validate({"policy": "budget", "budget_relative": 0.5,
                                     "budget_usd_per_request": 1.0})


def test_scenario_floor_fills_the_router_floor_unless_set():
    cfg = RouterConfig.model_validate({"policy": "floor"})
    assert with_scenario_floor(cfg, 0.8).floor == 0.8
    own = RouterConfig.model_validate({"policy": "floor", "floor": 0.7})
    assert with_scenario_floor(own, 0.8).floor == 0.7


def test_cut_grid_enumerates_ordered_cuts_and_evaluates_them_exactly():
    cuts = cut_grid(4, 3)
    assert len(cuts) == 15 and np.all(np.diff(cuts, axis=1) >= 0)
    assert len(cut_grid(10_000, 3, max_candidates=5000)) <= 5000
    correct = np.array([[1, 1], [0, 1], [0, 0], [1, 1]], dtype=float)
    acc, cost = evaluate_cuts(correct, np.array([1.0, 2.0]), np.array([[0], [2], [4]]))
    assert acc.tolist() == [0.75, 0.5, 0.5] and cost.tolist() == [2.0, 1.5, 1.0]


def test_a_scenario_routes_by_floor_and_reports_whether_it_was_met(tmp_path):
    """End to end: the scenario's accuracy_floor reaches the floor router; the run says whether
    the floor was met, with the accuracy's interval. NVFP4 (weight-only on H200) costs 2.5
    USD an hour: priced at the decode batch this load runs (round 53), its step is dearer
    than BF16's, and at 3.5 the floor router sent it nothing."""
    import yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = {"name": "floor", "seed": 1, "profile": None,
           "trace": {"path": "azure2023_code.parquet", "window": [0, 900]},
           "workload": {"difficulty": {"kind": "two_type", "p_easy": 0.7, "hint_auroc": 0.85}},
           "tiers": [{"name": "nvfp4", "precision": "nvfp4", "replicas": 1,
                      "cost_per_gpu_hour": 2.5, "accuracy": {"easy": 0.98, "hard": 0.5}},
                     {"name": "bf16", "precision": "bf16", "replicas": 1,
                      "cost_per_gpu_hour": 3.5, "accuracy": {"easy": 1.0, "hard": 0.9}}],
           "router": {"policy": "floor"}, "accuracy_floor": 0.9}
    path = tmp_path / "floor.yaml"
    path.write_text(yaml.safe_dump(doc))
    router = run_scenario(load_scenario(path), scenario_path=path).router
    lo, hi = router.accuracy_ci95
    assert router.policy == "floor" and router.accuracy_floor == 0.9
    assert lo <= 0.9 <= hi or router.floor_met
    assert 0.0 < router.first_tier_shares["nvfp4"] < 1.0
