"""Routing policies, injected confusion, cascades and the metrics of one run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tiersim.errors import ScenarioError
from tiersim.routing import (
    ROUTERS,
    Assignment,
    RouterConfig,
    TierInfo,
    build_router,
    prepare_workload,
    routellm_metrics,
    savings,
    score,
)
from tiersim.routing.accuracy import needed_tier
from tiersim.routing.frontier import fixed_cost

TIERS3 = [
    TierInfo("w4", accuracy={"easy": 0.97, "hard": 0.4}, cost_weight=1.0),
    TierInfo("fp8", accuracy={"easy": 0.99, "hard": 0.7}, cost_weight=1.6),
    TierInfo("bf16", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=2.5),
]


def workload(n=20_000, seed=0, tiers=TIERS3, p_easy=0.6, kind="three_type"):
    """A three-type workload with realised and expected correctness per tier."""
    df = pd.DataFrame({"input_tokens": np.full(n, 200, np.int32),
                       "output_tokens": np.full(n, 100, np.int32)})
    cfg = {"difficulty": {"kind": kind, "p_easy": p_easy, "p_hopeless": 0.1}}
    return prepare_workload(df, tiers, cfg, np.random.default_rng(seed)).df


# labels only; a workload seed that the routing draws (seeds 0-1000) never share
LABELS = workload(20_000, seed=54_321).filter(regex="^(?!p_correct_)")


def route(cfg: dict, df, tiers=TIERS3, seed=1) -> Assignment:
    """Build a router from a config dict and assign df."""
    return build_router(cfg, tiers).assign(df, np.random.default_rng(seed))


def test_every_policy_is_registered_and_plain_uniform_works():
    assert set(ROUTERS) == {"uniform", "static_split", "threshold", "lagrangian", "oracle",
                            "cascade", "floor", "budget", "step_type"}
    a = route({"policy": "uniform"}, workload(100))
    assert np.all(a.tier == 2) and np.all(a.escalate_to == -1)
    assert np.all(route({"policy": "uniform", "tier": "w4"}, workload(100)).tier == 0)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"policy": "uniform", "tier": "int4"},
         "scenario: router.tier: unknown tier 'int4'; tiers are w4, fp8, bf16"),
        ({"policy": "static_split", "fractions": [0.5, 0.5]},
         "scenario: router.fractions: needs 3 value(s), one for each of w4, fp8, bf16 (got 2)"),
        ({"policy": "threshold", "thresholds": [0.5]},
         "scenario: router.thresholds: needs 2 value(s), one for each of w4, fp8 (got 1)"),
        ({"policy": "threshold", "thresholds": {"w4": 0.5, "bf16": 0.9}},
         "scenario: router.thresholds: names tier 'bf16', which takes no value here; give one "
         "for each of w4, fp8"),
        ({"policy": "cascade", "cascade": {"from_tier": "bf16", "to_tier": "w4"}},
         "scenario: router.cascade: from_tier must be cheaper (listed earlier) than to_tier "
         "(got from_tier 'bf16', listed after to_tier 'w4'); swap them"),
        ({"policy": "cascade", "cascade": {"from_tier": "bf16"}},
         "scenario: router.cascade: from_tier and to_tier both name tier 'bf16' (a to_tier or "
         "from_tier not given is the top or the cheapest tier); name two tiers, the cheaper "
         "(listed earlier) as from_tier"),
        ({"policy": "oracle", "confusion": {"fpr": 0.7, "fnr": 0.6}},
         "scenario: router.confusion: fpr + fnr must be <= 1 (got 1.3)"),
    ],
)
def test_router_options_are_checked_when_built(cfg, message):
    with pytest.raises(ScenarioError) as err:
        build_router(cfg, TIERS3)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "cfg",
    [
        {"policy": "lagrangian"},
        {"policy": "static_split"},
        {"policy": "static_split", "fractions": [0.5, 0.6]},
        {"policy": "uniform", "colour": "red"},
        {"policy": "oracle", "confusion": {"fpr": 1.5}},
        {"policy": "fastest"},
    ],
)
def test_config_rejects_bad_input(cfg):
    with pytest.raises(ValidationError):
        RouterConfig.model_validate(cfg)


def test_lambda_alias():
    assert RouterConfig.model_validate({"policy": "lagrangian", "lambda": 0.2}).lambda_ == 0.2


def test_static_split_shares():
    a = route({"policy": "static_split", "fractions": {"w4": 0.2, "fp8": 0.3, "bf16": 0.5}},
              workload(50_000))
    shares = np.bincount(a.tier, minlength=3) / len(a.tier)
    assert shares == pytest.approx([0.2, 0.3, 0.5], abs=0.01)


def test_oracle_on_labels_sends_each_request_to_its_needed_tier():
    df = workload()
    labels = df.drop(columns=[c for c in df if c.startswith("p_correct_")])
    s = score(labels, route({"policy": "oracle"}, labels), TIERS3)
    assert s["fpr"] == 0.0 and s["fnr"] == 0.0 and s["silent_failure_rate"] == 0.0


def test_oracle_knows_types_not_coin_flips():
    df = workload()
    a = route({"policy": "oracle"}, df)
    s = score(df, a, TIERS3)
    assert s["accuracy"] == pytest.approx(df["p_correct_bf16"].mean())
    assert s["fpr"] == 0.0 and s["silent_failure_rate"] == 0.0 and s["fnr"] > 0.0
    realised = df[["correct_w4", "correct_fp8", "correct_bf16"]].to_numpy()
    assert realised[np.arange(len(df)), a.final_tier].mean() == realised[:, 2].mean()
    assert fixed_cost(a, TIERS3).mean() < TIERS3[2].cost_weight


@settings(max_examples=20, deadline=None)
@given(fpr=st.floats(0.0, 0.6), fnr=st.floats(0.0, 0.4), seed=st.integers(0, 1000))
def test_injected_confusion_is_realised(fpr, fnr, seed):
    df = LABELS  # realised labels only: the oracle sends each request to its needed tier
    a = route({"policy": "oracle", "confusion": {"fpr": fpr, "fnr": fnr}}, df, seed=seed)
    s = score(df, a, TIERS3)
    assert a.tier.min() >= 0 and a.tier.max() <= 2
    need = needed_tier(LABELS[["correct_w4", "correct_fp8", "correct_bf16"]].to_numpy())
    for key, rate, among in (("fpr", fpr, (need > 0).sum()), ("fnr", fnr, (need < 2).sum())):
        sd = np.sqrt(max(rate * (1 - rate), 0.01) / among)  # binomial share of `among` draws
        assert s[key] == pytest.approx(rate, abs=4 * sd), (key, among)


def test_cascade_with_perfect_signal_escalates_exactly_the_wrong_answers():
    df = workload()
    a = route({"policy": "cascade", "cascade": {"signal_noise": 0.0}}, df)
    wrong = df["correct_w4"].to_numpy() < 0.5
    assert np.array_equal(a.escalated, wrong)
    assert np.all(a.tier == 0) and np.all(a.escalate_to[wrong] == 2)
    s = score(df, a, TIERS3)
    assert s["escalation_rate"] == pytest.approx(wrong.mean())
    # an escalated request pays both passes
    assert fixed_cost(a, TIERS3)[wrong] == pytest.approx(np.full(wrong.sum(), 3.5))


def test_cascade_noise_trades_escalations_for_silent_failures():
    df = workload()
    quiet = score(df, route({"policy": "cascade", "cascade": {"signal_noise": 0.0}}, df), TIERS3)
    noisy = score(df, route({"policy": "cascade", "cascade": {"signal_noise": 0.6}}, df), TIERS3)
    assert quiet["silent_failure_rate"] == 0.0 < noisy["silent_failure_rate"]
    assert noisy["accuracy"] < quiet["accuracy"]


def test_cascade_confusion_cancels_needed_escalations():
    df = workload()
    cfg = {"policy": "cascade", "cascade": {"signal_noise": 0.0}, "confusion": {"fpr": 0.5}}
    s = score(df, route(cfg, df), TIERS3)
    assert s["fpr"] == pytest.approx(0.5, abs=0.03)


def test_score_accepts_arrays_or_assignment():
    df = workload(2000)
    a = route({"policy": "static_split", "fractions": [0.3, 0.3, 0.4]}, df)
    by_arrays = score(df, a.final_tier, a.tier, a.escalated, TIERS3)
    assert by_arrays == score(df, a, TIERS3)
    lo, hi = by_arrays["accuracy_ci95"]
    assert lo < by_arrays["accuracy"] < hi
    assert sum(by_arrays["tier_shares"].values()) == pytest.approx(1.0)


def test_savings_against_uniform_and_static_split():
    df = workload()
    a = route({"policy": "oracle", "lambda": 0.1}, df)
    tokens = (df["input_tokens"] + df["output_tokens"]).to_numpy(float)
    price = np.array([t.cost_weight for t in TIERS3])
    cost = price[a.tier] * tokens * 1e-6  # per-token price: estimates are then exact
    s = savings(df, a.final_tier, cost, TIERS3, accuracy_floor=None)
    exact = savings(df, a.final_tier, cost, TIERS3, uniform_costs=price * tokens.sum() * 1e-6)
    assert s["uniform_costs_estimated"] and not exact["uniform_costs_estimated"]
    for key in ("vs_uniform_usd", "vs_static_split_usd", "static_split_cost_usd"):
        assert s[key] == pytest.approx(exact[key])
    assert s["vs_static_split_usd"] > 0
    assert s["baseline_uniform_tier"] == "bf16"


def test_routellm_metrics_random_vs_oracle_router():
    rng = np.random.default_rng(0)
    weak = rng.random(20_000) < 0.6
    strong = weak | (rng.random(20_000) < 0.5)
    random_router = routellm_metrics(rng.random(20_000), weak, strong)
    oracle_router = routellm_metrics((strong & ~weak) + 0.01 * rng.random(20_000), weak, strong)
    assert random_router["apgr"] == pytest.approx(0.5, abs=0.03)
    assert random_router["cpt_50"] == pytest.approx(0.5, abs=0.05)
    assert oracle_router["apgr"] > 0.8 and oracle_router["cpt_50"] < 0.2


def test_interval_of_many_accuracies_agrees_with_the_normal_interval():
    """Agresti and Coull's pseudo-values vanish as the sample grows: 50,000 values give the
    normal interval, mean +- 1.96 sd / sqrt(n) (this test held the bootstrap, which the
    interval replaced, to the same limit)."""
    from tiersim.routing import metrics

    values = np.random.default_rng(0).beta(8.0, 2.0, 50_000)
    half = 1.959963984540054 * values.std() / np.sqrt(len(values))
    normal = (values.mean() - half, values.mean() + half)
    assert metrics.accuracy_ci(values) == pytest.approx(normal, abs=5e-5)


def test_uniform_estimate_does_not_trust_a_nearly_idle_tier():
    from tiersim.routing.metrics import uniform_cost_estimates

    tiers = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]
    tokens = np.full(1000, 100.0)
    first = np.zeros(1000, dtype=np.int64)
    first[:3] = 1  # three requests alone on the top tier, at a ruinous price per token
    cost = np.where(first == 1, 50.0, 1.0)
    est = uniform_cost_estimates(tokens, first, np.zeros(1000, bool), cost, tiers)
    scale = cost.sum() / (np.array([1.0, 2.0])[first] * tokens).sum()
    assert est[0] == pytest.approx(1.0 / 100 * tokens.sum())  # measured
    assert est[1] == pytest.approx(scale * 2.0 * tokens.sum())  # weight x fitted scale
