"""Cache-aware balancing: send a request where its prefix is cached unless that replica is
busier by more than the cache saves; exact under fast-forward like every other policy."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel


def shared_prefix_workload(n=40, seed=0, groups=3, rate=20.0):
    """Requests in a few groups; each group's prompts share their first blocks."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, n)
    blocks = rng.integers(2, 6, n)
    hashes = [[int(g) * 1000 + b for b in range(k)] for g, k in zip(group, blocks)]
    prompt = blocks * 64 + rng.integers(1, 30, n)
    work = Workload(np.cumsum(rng.exponential(1 / rate, n)), prompt, rng.integers(2, 40, n),
                    np.zeros(n, int), prefix_hashes=hashes, hash_block_tokens=64)
    return work


def tier(balancer, replicas=3):
    limits = SchedulerLimits(max_num_seqs=16, max_num_batched_tokens=256, block_size=16,
                             enable_prefix_caching=True)
    return TierSpec("t", replicas, 800, LinearStepModel(), limits, balancer=balancer)


def test_prefix_aware_finds_more_cached_tokens_than_least_tokens():
    work = shared_prefix_workload(200, seed=3, rate=5.0)
    aware = simulate([tier("prefix_aware")], work)
    plain = simulate([tier("least_tokens")], work)
    assert aware.cache_hit_tokens.sum() > plain.cache_hit_tokens.sum()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 4), st.floats(2.0, 100.0))
def test_prefix_aware_is_exact_under_fast_forward(seed, replicas, rate):
    work = shared_prefix_workload(40, seed=seed, rate=rate)
    a = simulate([tier("prefix_aware", replicas)], work, fast_forward=True)
    b = simulate([tier("prefix_aware", replicas)], work, fast_forward=False)
    np.testing.assert_array_equal(a.replica, b.replica)
    np.testing.assert_allclose(a.finish_s, b.finish_s, rtol=1e-9, equal_nan=True)
