"""Accuracy of routers that read realised correctness is scored on the realised values.

A cascade escalates on the cheap tier's realised answer (plus noise), and injected confusion acts
on each request's realised needed tier; scoring their final tiers on expected correctness would
credit a request kept because its cheap answer was right with its class's mean accuracy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.routing import TierInfo, build_router, prepare_workload, savings, score
from tiersim.routing.accuracy import realised_matrix

TIERS = [
    TierInfo("nvfp4", accuracy={"easy": 0.99, "hard": 0.55}, cost_weight=1.0),
    TierInfo("bf16", accuracy={"easy": 1.0, "hard": 0.8}, cost_weight=2.0),
]


def workload(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """A three-type workload with expected and realised correctness on both tiers."""
    df = pd.DataFrame({"input_tokens": np.full(n, 100, np.int32),
                       "output_tokens": np.full(n, 50, np.int32)})
    cfg = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14}}
    return prepare_workload(df, TIERS, cfg, np.random.default_rng(seed)).df


def assign(cfg: dict, df: pd.DataFrame, seed: int = 1):
    """Route ``df`` with a router built from ``cfg``."""
    return build_router(cfg, TIERS).assign(df, np.random.default_rng(seed))


def test_perfect_verifier_cascade_scores_as_the_top_tier():
    df = workload()
    a = assign({"policy": "cascade", "cascade": {"signal_noise": 0.0}}, df)
    s = score(df, a, TIERS)
    realised_top = df["correct_bf16"].mean()
    assert a.basis == "realised" and df.attrs == {}
    assert s["accuracy"] == pytest.approx(realised_top, abs=1e-12)
    # the expected-scored figure it replaces is well below the top tier's
    expected = df[["p_correct_nvfp4", "p_correct_bf16"]].to_numpy()
    assert expected[np.arange(len(df)), a.final_tier].mean() < realised_top - 0.02
    tokens = np.full(len(df), 150.0)
    cost = np.where(a.escalated, 3.0, 1.0)
    sv = savings(df, a.final_tier, cost, TIERS, first_tier=a.tier, escalated=a.escalated,
                 uniform_costs=tokens.sum() * np.array([1.0, 2.0]) / 150.0, basis=a.basis)
    assert sv["accuracy"] == s["accuracy"]
    assert sv["uniform"]["bf16"]["accuracy"] == pytest.approx(realised_top)


def test_the_basis_travels_with_each_assignment_not_the_table():
    df = workload(5000)
    before = assign({"policy": "oracle", "lambda": 0.1}, df)
    assert before.basis == "expected"
    cascade = assign({"policy": "cascade"}, df)
    assert cascade.basis == "realised" and df.attrs == {}
    after = assign({"policy": "oracle", "lambda": 0.1}, df)
    assert np.array_equal(before.tier, after.tier) and after.basis == "expected"
    s = score(df, assign({"policy": "uniform"}, df), TIERS)
    assert s["accuracy"] == pytest.approx(df["p_correct_bf16"].mean())
    # the same final tiers scored on each basis differ: the basis is an argument, not a mark
    on_realised = score(df, cascade.final_tier, cascade.tier, cascade.escalated, TIERS,
                        basis="realised")
    on_expected = score(df, cascade.final_tier, cascade.tier, cascade.escalated, TIERS)
    assert on_realised["accuracy"] == score(df, cascade, TIERS)["accuracy"]
    assert on_realised["accuracy"] != on_expected["accuracy"]


@pytest.mark.parametrize("cfg,basis", [
    ({"policy": "oracle"}, "expected"),
    ({"policy": "oracle", "confusion": {"fpr": 0.0}}, "realised"),
    ({"policy": "oracle", "confusion": {"fpr": 0.2}}, "realised"),
    ({"policy": "static_split", "fractions": [0.5, 0.5]}, "expected"),
])
def test_confusion_in_the_config_scores_realised_even_at_zero(cfg, basis):
    df = workload(2000)
    assert assign(cfg, df).basis == basis


@settings(max_examples=25, deadline=None)
@given(noise=st.floats(0.0, 2.0), threshold=st.floats(-0.5, 1.5), seed=st.integers(0, 10_000))
def test_cascade_accuracy_lies_between_its_two_tiers(noise, threshold, seed):
    # draws are shared across tiers, so a request right on nvfp4 is right on bf16: escalating
    # can only help, and accuracy is the mean realised correctness of the final tier
    df = workload(3000, seed=seed)
    a = assign({"policy": "cascade", "cascade": {"signal_noise": noise, "threshold": threshold}},
               df, seed=seed + 1)
    s = score(df, a, TIERS)
    realised = realised_matrix(df, TIERS)
    assert s["accuracy"] == pytest.approx(realised[np.arange(len(df)), a.final_tier].mean())
    lo, hi = realised.mean(axis=0)
    assert lo - 1e-12 <= s["accuracy"] <= hi + 1e-12
