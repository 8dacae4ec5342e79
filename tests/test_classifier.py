"""The surface-feature classifier on RouteLLM's MMLU labels (Done-when 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiersim.analytic import upper_hull
from tiersim.routing import RouterConfig, TierInfo, build_router, score
from tiersim.routing.evaluation import expected_calibration_error, reliability_table
from tiersim.routing.frontier import lambda_sweep, static_split_frontier
from tiersim.routing.labels import as_trace, load_mmlu_labels, read_raw_mmlu

REPO = Path(__file__).resolve().parents[1]
RAW = REPO.parent / "shared" / "data" / "labels" / "routellm" / "mmlu"
TIERS = [TierInfo("weak", cost_weight=1.0), TierInfo("strong", cost_weight=3.0)]


@pytest.fixture(scope="module")
def mmlu() -> pd.DataFrame:
    """The MMLU labels as a trace fragment (raw shared files when present, else packaged)."""
    return as_trace(load_mmlu_labels(prefer_raw=RAW.exists()))


@pytest.fixture(scope="module")
def router(mmlu):
    """A lagrangian router whose classifier trained on half of MMLU."""
    cfg = RouterConfig.model_validate({"policy": "lagrangian", "lambda": 0.1})
    return build_router(cfg, TIERS, train_df=mmlu, rng=np.random.default_rng(0))


@pytest.mark.skipif(not RAW.exists(), reason="shared RouteLLM labels not checked out")
def test_packaged_labels_match_raw_files():
    raw = read_raw_mmlu(RAW)
    packaged = load_mmlu_labels()
    assert len(raw) == len(packaged) == 14_042 - 5
    pd.testing.assert_frame_equal(raw.reset_index(drop=True), packaged, check_categorical=False)


def test_label_shape_matches_routellm(mmlu):
    weak, strong = mmlu["correct_weak"] > 0.5, mmlu["correct_strong"] > 0.5
    assert (~weak & ~strong).mean() == pytest.approx(0.141, abs=0.002)  # hopeless
    assert (~weak & strong).mean() == pytest.approx(0.178, abs=0.002)


def test_heldout_auroc_and_ece(router):
    report = router.classifier.report
    wrong = report["cheapest_wrong"]
    print("held-out weak-wrong AUROC", wrong["auroc"], "ECE", wrong["ece"], "Brier", wrong["brier"])
    assert 0.66 < wrong["auroc"] < 0.80
    assert wrong["ece"] < 0.05
    assert report["good_enough"]["weak"]["ece"] < 0.05
    assert report["heldout_rows"] + report["train_rows"] == 14_037
    assert sum(r["count"] for r in wrong["reliability"]) == wrong["n"]
    routellm = report["routellm"]  # a random router has APGR 0.5 and CPT(50%) 0.5
    print("APGR", routellm["apgr"], "CPT(50%)", routellm["cpt_50"])
    assert routellm["apgr"] > 0.55 and routellm["cpt_50"] < 0.45


@pytest.mark.parametrize("tier", ["weak", "strong"])
def test_uniform_accuracy_equals_label_mean_exactly(mmlu, tier):
    cfg = RouterConfig(policy="uniform", tier=tier)
    a = build_router(cfg, TIERS).assign(mmlu, np.random.default_rng(0))
    result = score(mmlu, a, TIERS)
    assert result["accuracy"] == mmlu[f"correct_{tier}"].mean()
    assert result["tier_shares"][tier] == 1.0


def test_lambda_sweep_is_concave_and_above_static_split(mmlu, router):
    held = np.setdiff1d(np.arange(len(mmlu)), router.classifier.train_index)
    test = mmlu.iloc[held]
    points = lambda_sweep(test, TIERS, np.linspace(0.0, 0.6, 13), router=router)
    points = points[np.argsort(points[:, 0])]
    static = static_split_frontier(test, TIERS)
    line = np.interp(points[:, 0], static[:, 0], static[:, 1])
    assert np.all(points[:, 1] >= line - 0.003)
    hull = upper_hull(points)
    below_hull = np.interp(points[:, 0], hull[:, 0], hull[:, 1]) - points[:, 1]
    assert below_hull.max() < 0.005  # concave within noise
    slopes = np.diff(hull[:, 1]) / np.diff(hull[:, 0])
    assert np.all(np.diff(slopes) <= 1e-12)


def test_threshold_policy_routes_more_to_strong_as_threshold_rises(mmlu, router):
    shares = []
    for t in (0.75, 0.85, 0.95):
        r = build_router(RouterConfig(policy="threshold", thresholds=t), TIERS)
        r.classifier = router.classifier  # trained once in the fixture
        shares.append(score(mmlu, r.assign(mmlu, np.random.default_rng(1)), TIERS)
                      ["tier_shares"]["strong"])
    assert 0.0 < shares[0] < shares[1] < shares[2] < 1.0


def test_ece_of_perfectly_calibrated_bins_is_zero():
    prob = np.repeat([0.1, 0.25, 0.75], 4)
    outcome = np.array([0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0])
    assert expected_calibration_error(prob, outcome, bins=10) == pytest.approx(4 * 0.1 / 12)
    prob = np.repeat([0.1, 0.3, 0.8], 4)
    table = reliability_table(prob, outcome, bins=4)
    assert [r["count"] for r in table] == [4, 4, 0, 4]


def test_routing_the_training_table_uses_out_of_fold_scores(mmlu, router):
    from sklearn.metrics import roc_auc_score

    train = router.classifier.train_index
    wrong = (mmlu["correct_weak"] < 0.5).to_numpy()[train]
    honest = roc_auc_score(wrong, router.classifier.score(mmlu)[train])
    in_sample = roc_auc_score(wrong, router.classifier.score(mmlu.copy())[train])
    assert honest < 0.76 < 0.8 < in_sample
