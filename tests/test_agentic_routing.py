"""The step-type router, per-task figures and the response cache."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import ScenarioError
from tiersim.response_cache import ResponseCacheConfig, hits, keys
from tiersim.results import RunResult
from tiersim.routing import TierInfo, build_router, prepare_workload
from tiersim.session_metrics import session_result

TIERS = [TierInfo("cheap", accuracy={"easy": 0.99, "hard": 0.6}, cost_weight=1.0),
         TierInfo("strong", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=2.0)]
KINDS = ["planning", "tool_call", "code", "verify", "recovery", "final", "boilerplate"]


def steps_table(n=2000, seed=0) -> pd.DataFrame:
    """Agent steps of every type, with correctness drawn (two-type, a learnable hint)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"input_tokens": np.full(n, 300, np.int32),
                       "output_tokens": np.full(n, 50, np.int32),
                       "step_type": rng.choice(KINDS, n)})
    cfg = {"difficulty": {"kind": "two_type", "p_easy": 0.7, "hint_auroc": 0.9}}
    return prepare_workload(df, TIERS, cfg, np.random.default_rng(seed + 1)).df


def test_default_map_sends_deciding_steps_to_the_strong_tier():
    """planning/recovery/final -> strong, tool_call/boilerplate -> cheap, others -> fallback
    (uniform: the top tier)."""
    df = steps_table()
    a = build_router({"policy": "step_type"}, TIERS).assign(df, np.random.default_rng(0))
    tier = pd.Series(a.tier, index=df.index)
    for kind, want in {"planning": 1, "recovery": 1, "final": 1, "tool_call": 0,
                       "boilerplate": 0, "code": 1}.items():
        assert (tier[df["step_type"] == kind] == want).all(), kind


def test_step_map_combines_with_the_difficulty_classifier():
    """With step_fallback: threshold, unmapped steps split by the classifier, mapped ones not."""
    df = steps_table()
    cfg = {"policy": "step_type", "step_tiers": {"planning": "strong", "tool_call": 0},
           "step_fallback": "threshold", "thresholds": 0.9}
    a = build_router(cfg, TIERS, train_df=df).assign(df, np.random.default_rng(0))
    rest = ~df["step_type"].isin(["planning", "tool_call"]).to_numpy()
    assert 0 < a.tier[rest].mean() < 1
    assert (a.tier[df["step_type"].to_numpy() == "planning"] == 1).all()
    hard = (df["difficulty_class"] == "hard").to_numpy()
    assert a.tier[rest & hard].mean() > a.tier[rest & ~hard].mean()


def test_step_type_router_errors_name_the_key():
    """An unknown tier in the map, a missing column and a bad fallback are one-line errors."""
    with pytest.raises(ScenarioError, match=r"router.step_tiers.planning: unknown tier 'big'"):
        build_router({"policy": "step_type", "step_tiers": {"planning": "big"}}, TIERS)
    with pytest.raises(ScenarioError, match="router.step_fallback: policy lagrangian needs"):
        build_router({"policy": "step_type", "step_fallback": "lagrangian"}, TIERS)
    router = build_router({"policy": "step_type"}, TIERS)
    with pytest.raises(ScenarioError, match="needs a step_type column"):
        router.assign(steps_table().drop(columns="step_type"), np.random.default_rng(0))


def test_task_success_is_the_product_of_step_correctness():
    """Two tasks by hand: success, latency, cost, steps and the per-request misjudgement."""
    df = pd.DataFrame({"session_id": [1, 1, 1, 2], "step_type": ["planning", "code", "final",
                                                                "planning"],
                       "follows_id": [-1, 0, 1, -1]})
    req = pd.DataFrame({"arrival_s": [0.0, 2.0, 5.0, 1.0], "finish_s": [1.0, 4.0, 9.0, 3.0],
                        "expected_accuracy": [0.9, 0.8, 0.5, 1.0],
                        "cost_usd": [0.1, 0.2, 0.3, 0.5], "completed": [True] * 4,
                        "e2e_s": [1.0, 2.0, 4.0, 2.0], "final_tier": ["a", "b", "b", "a"]})
    s = session_result(df, req)
    assert s.tasks == 2 and s.steps_per_task_mean == 2.0 and s.steps_per_task_max == 3
    assert s.task_success == pytest.approx((0.9 * 0.8 * 0.5 + 1.0) / 2)
    assert s.per_request_accuracy == pytest.approx(0.8)
    assert s.success_misjudged_by == pytest.approx(0.8 - (0.36 + 1.0) / 2)
    assert s.task_latency_p50_s == pytest.approx(np.median([9.0, 2.0]))
    assert s.cost_per_task_usd == pytest.approx((0.6 + 0.5) / 2)
    assert s.latency_ratio_p50 == pytest.approx(5.5 / 2.0)
    code = next(k for k in s.step_types if k.step_type == "code")
    assert code.final_tier_shares == {"b": 1.0}
    # Under `provisioned` an idle tier's cost ($0.9 here) is in no request's cost_usd: the
    # per-task figure carries it, so tasks x cost per task is the headline, as per request.
    carried = session_result(df, req, total_cost_usd=2.0)
    assert carried.cost_per_task_usd * carried.tasks == pytest.approx(2.0)
    assert carried.cost_per_task_usd == pytest.approx((0.6 + 0.5) / 2 * 2.0 / 1.1)


def test_tasks_carry_the_headline_when_no_step_was_charged():
    """Every step dropped (none charged) on a provisioned fleet that cost 1.2 USD: the two
    tasks carry it in equal shares, as tasks x cost per task is the headline (it read 0)."""
    df = pd.DataFrame({"session_id": [1, 1, 2], "follows_id": [-1, 0, -1]})
    req = pd.DataFrame({"arrival_s": [0.0, 0.0, 1.0], "finish_s": [np.nan] * 3,
                        "expected_accuracy": [0.0] * 3, "cost_usd": [0.0] * 3,
                        "completed": [False] * 3, "e2e_s": [np.nan] * 3,
                        "final_tier": ["a"] * 3})
    assert session_result(df, req, total_cost_usd=1.2).cost_per_task_usd == pytest.approx(0.6)
    assert session_result(df, req).cost_per_task_usd == 0.0


def test_top_n_answers_every_request_of_the_n_most_frequent_prompts():
    """Counts 5, 3, 3 (tie: first seen wins), 1: top-2 = the 5 and the first 3."""
    key = np.array([9, 4, 9, 7, 4, 9, 7, 9, 4, 7, 9, 2])
    got = hits(key, ResponseCacheConfig(mode="top_n", size=2))
    assert got.tolist() == [k in (9, 4) for k in key]


def test_lru_misses_first_sight_and_evicts_the_least_recent():
    """Size 2: a b a c b -> miss miss hit miss(c evicts b) miss."""
    key = np.array([1, 2, 1, 3, 2])
    assert hits(key, ResponseCacheConfig(mode="lru", size=2)).tolist() == [
        False, False, True, False, False]


@pytest.mark.parametrize("none", [None, np.nan, pd.NA])
@pytest.mark.parametrize("mode", ["lru", "top_n"])
def test_a_row_without_a_prompt_hash_is_never_a_hit(mode, none):
    """The LRU cache treated every row without a hash as one prompt: all but the first hit.
    Such a row is a prompt of its own: a miss that puts nothing in the cache."""
    key = np.array(["a", none, none, "a", none, "b"], dtype=object)
    cfg = ResponseCacheConfig(mode=mode, size=2)
    assert hits(key, cfg).tolist() == [mode == "top_n", False, False, True, False,
                                       mode == "top_n"]
    df = pd.DataFrame({"prompt_hash": key})
    assert keys(df, cfg, np.random.default_rng(0))[1] == (
        "trace column prompt_hash (3 rows without one: never a hit)")


def test_keys_come_from_the_column_the_prefix_hashes_or_the_generator():
    """prompt_hash column first; else whole prefix-hash lists; else an error naming the fix."""
    df = pd.DataFrame({"input_tokens": [10, 10, 10],
                       "prefix_hashes": [np.array([1, 2]), np.array([1, 2]), np.array([1])]})
    k, where = keys(df, ResponseCacheConfig(size=1), np.random.default_rng(0))
    assert k[0] == k[1] != k[2] and "prefix_hashes" in where
    with pytest.raises(ScenarioError, match="popularity"):
        keys(df.drop(columns="prefix_hashes"), ResponseCacheConfig(size=1),
             np.random.default_rng(0))
    cfg = ResponseCacheConfig(size=1, popularity={"distinct": 50, "exponent": 1.2})
    drawn = keys(pd.DataFrame({"x": range(5000)}), cfg, np.random.default_rng(0))[0]
    share = np.bincount(drawn, minlength=50) / 5000
    assert share[0] == pytest.approx(1 / sum(r ** -1.2 for r in range(1, 51)), abs=0.02)


def test_summary_sections_read_back():
    """sessions and response_cache survive summary.json; absent when the run has none."""
    from conftest import REPO

    base = RunResult.read(REPO / "tests" / "golden" / "tiny_summary.json")
    assert "sessions" not in base.to_json() and "response_cache" not in base.to_json()


def test_a_tier_named_top_or_cheapest_is_that_tier_not_the_keyword():
    """Tiers named 'top' (listed first) and 'cheapest' (last): step_tiers {planning: top}
    means the tier named top, not the last tier."""
    from tiersim.routing import ROUTERS, TierInfo
    from tiersim.routing.config import RouterConfig

    cfg = RouterConfig.model_validate({"policy": "step_type",
                                       "step_tiers": {"planning": "top", "format": "cheapest"}})
    router = ROUTERS["step_type"](cfg, [TierInfo("top"), TierInfo("cheapest")], "")
    assert router.routes == {"planning": 0, "format": 1}
