"""Prefix caching: the engine matches the naive vLLM loop with the same cache model, fast-forward
stays exact, a cached prefix lowers TTFT, and with caching off the hashes change nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_matches_reference, assert_same_per_request

from tiersim.engine import Req, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.engine.prefix_cache import PrefixCache
from tiersim.perf.base import LinearStepModel


def shared_prefix_workload(n=40, seed=0, rate=20.0, max_in=600, max_out=100, families=3,
                           block=32):
    """Poisson arrivals; each prompt shares a random number of leading hash blocks with one of
    ``families`` common prefixes, the rest of its blocks are unique."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    prompt = rng.integers(1, max_in, n)
    hashes = []
    for i, p in enumerate(prompt):
        m = -(-int(p) // block)
        shared = int(rng.integers(0, m + 1))
        fam = int(rng.integers(0, families))
        own = [10**6 + 1000 * i + j for j in range(m - shared)]
        hashes.append(np.array([1000 * fam + j for j in range(shared)] + own, dtype=np.int64))
    return Workload(arrival, prompt, rng.integers(1, max_out, n), np.zeros(n, dtype=np.int64),
                    prefix_hashes=hashes, hash_block_tokens=block)


def cached_tier(num_blocks=400, replicas=1, **limits):
    """A small tier with prefix caching on."""
    lim = dict(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, watermark=0.01,
               enable_prefix_caching=True)
    lim.update(limits)
    return TierSpec("t", replicas, num_blocks, LinearStepModel(), SchedulerLimits(**lim))


workloads = st.builds(
    shared_prefix_workload,
    n=st.integers(1, 50),
    seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0),
    max_in=st.integers(2, 900),
    max_out=st.integers(2, 200),
    families=st.integers(1, 4),
    block=st.sampled_from([16, 32, 64]),
)
limits = st.fixed_dictionaries({
    "max_num_seqs": st.integers(1, 32),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(80, 600),
    "prefix_cache_fraction": st.sampled_from([0.05, 0.2, 1.0]),
})
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tier(lim, replicas=1):
    lim = dict(lim)
    return cached_tier(num_blocks=lim.pop("num_blocks"), replicas=replicas, **lim)


@fast
@given(workloads, limits)
def test_matches_naive_vllm_loop_with_prefix_cache(work, lim):
    spec = _tier(lim)
    assert_matches_reference(simulate([spec], work), work, spec)


@fast
@given(workloads, limits, st.integers(1, 3))
def test_fast_forward_equals_per_iteration_with_prefix_cache(work, lim, replicas):
    spec = _tier(lim, replicas)
    a = simulate([spec], work, fast_forward=True)
    b = simulate([spec], work, fast_forward=False)
    assert_same_per_request(a, b)


@fast
@given(workloads, limits)
def test_no_request_lost_and_kv_within_capacity_with_prefix_cache(work, lim):
    spec = _tier(lim)
    res = simulate([spec], work, sample_every=1e-9)
    done = ~np.isnan(res.finish_s)
    assert np.all(done ^ res.dropped)
    assert max(res.kv_peak_blocks["t"]) <= spec.num_blocks
    assert np.all(res.cache_hit_tokens < np.asarray(work.input_tokens))


@fast
@given(workloads, limits)
def test_cache_off_ignores_hashes(work, lim):
    lim = dict(lim, enable_prefix_caching=False)
    spec = _tier(lim)
    with_hashes = simulate([spec], work)
    bare = Workload(work.arrival_s, work.input_tokens, work.output_tokens, work.tier)
    without = simulate([spec], bare)
    np.testing.assert_array_equal(with_hashes.finish_s, without.finish_s)
    np.testing.assert_array_equal(with_hashes.first_token_s, without.first_token_s)
    assert not with_hashes.cache_hit_tokens.any()


def _two_requests(second_hashes):
    """Two 2000-token prompts; the second arrives long after the first has finished."""
    hashes = [np.arange(4), np.asarray(second_hashes)]
    return Workload(np.array([0.0, 100.0]), np.array([2000, 2000]), np.array([10, 10]),
                    np.zeros(2, dtype=np.int64), prefix_hashes=hashes)


def test_cached_prefix_lowers_ttft():
    tier = cached_tier(num_blocks=2000)
    warm = simulate([tier], _two_requests([0, 1, 2, 99]))
    cold = simulate([tier], _two_requests([7, 1, 2, 3]))  # first block differs: no prefix hit
    assert warm.cache_hit_tokens.tolist() == [0, 3 * 512]
    assert cold.cache_hit_tokens.tolist() == [0, 0]
    ttft_warm = warm.first_token_s[1] - 100.0
    ttft_cold = cold.first_token_s[1] - 100.0
    assert ttft_cold == pytest.approx(cold.first_token_s[0])
    assert ttft_warm < 0.5 * ttft_cold


def test_fully_cached_prompt_still_computes_its_last_block():
    # vLLM keeps at most prompt - 1 hit tokens in whole blocks of 16: 1999 // 16 x 16
    tier = cached_tier(num_blocks=2000)
    res = simulate([tier], _two_requests([0, 1, 2, 3]))
    assert res.cache_hit_tokens.tolist() == [0, 1984]
    assert res.first_token_s[1] > 100.0


def test_escalated_request_can_hit_on_each_tier():
    work = Workload(np.array([0.0, 50.0]), np.array([1024, 1024]), np.array([5, 5]),
                    np.zeros(2, dtype=np.int64), np.array([1, 1]),
                    prefix_hashes=[np.array([5, 6]), np.array([5, 6])])
    tiers = [cached_tier(num_blocks=2000), cached_tier(num_blocks=2000)]
    tiers[1].name = "u"
    res = simulate(tiers, work)
    assert res.cache_hit_tokens.tolist() == [0, 2 * 1008]  # 1023 // 16 x 16 on each tier


def test_lru_evicts_least_recently_used():
    cache = PrefixCache(capacity=3, hash_block_tokens=10)
    a = Req(0, prompt=30, output=1, arrival=0.0, hashes=[1, 2, 3])
    assert cache.admit(a) == 0
    cache.fill(a, 30)
    assert len(cache) == 3
    b = Req(1, prompt=25, output=1, arrival=0.0, hashes=[1, 4, 5])
    assert cache.cached_tokens(b) == 10
    assert cache.admit(b) == 10  # touches 1: the LRU order is now 2, 3, 1
    cache.fill(b, 19)  # block 4 is not complete yet
    assert len(cache) == 3 and cache.hits([2, 3]) == 2
    cache.fill(b, 25)  # the prompt is done: 4 and 5 evict 2 and 3
    assert cache.hits([1, 4, 5]) == 3 and cache.hits([2]) == 0 and cache.hits([3]) == 0


def test_bad_prefix_cache_fraction_is_rejected():
    with pytest.raises(ValueError, match="prefix_cache_fraction"):
        SchedulerLimits(enable_prefix_caching=True, prefix_cache_fraction=0.0)


SCENARIO = """
name: mooncake_prefix
seed: 0
model: Qwen3-Coder-30B-A3B
gpu: H200
profile: null
trace: {{path: mooncake_synthetic.parquet, window: [0, 120]}}
tiers:
  - {{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5,
     scheduler: {{enable_prefix_caching: {on}}}}}
router: {{policy: static_split, fractions: [1.0]}}
slo: {{ttft_p99_s: 2.0, tpot_p99_s: 0.1}}
"""


def test_runner_reports_cache_hits_on_the_mooncake_trace(tmp_path):
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    tables = {}
    for on in ("true", "false"):
        path = tmp_path / f"{on}.yaml"
        path.write_text(SCENARIO.format(on=on))
        run_scenario(load_scenario(path), out_dir=tmp_path / on)
        tables[on] = pd.read_parquet(tmp_path / on / "requests.parquet")
    hot, cold = tables["true"], tables["false"]
    assert (hot["prefix_hit_tokens"] > 0).mean() > 0.01 and not cold["prefix_hit_tokens"].any()
    assert hot["ttft_s"].mean() < cold["ttft_s"].mean()
