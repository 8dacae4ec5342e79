"""KV offload levels beneath the GPU prefix cache: the engine matches the naive loop (per-level
hits and times), fast-forward stays exact, no request is lost, no level outgrows its capacity,
evicted blocks move down and a hit from below pays its transfer (overlapped or not)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_same_per_request, reference_run
from test_prefix_cache import shared_prefix_workload

from tiersim.engine import KVLevel, Req, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.engine.kv_levels import step_seconds
from tiersim.engine.prefix_cache import PrefixCache
from tiersim.perf.base import LinearStepModel

BYTES_PER_TOKEN = 2.0


def offload_tier(num_blocks=400, replicas=1, host_blocks=0, ssd_blocks=0, read_bw=1e5,
                 write_bw=1e5, overlap=True, **limits):
    """A small cached tier with a host level (and an SSD level when ``ssd_blocks``), capacities
    in hash blocks of ``block`` tokens (passed as ``hbt``)."""
    hbt = limits.pop("hbt", 32)
    block_bytes = BYTES_PER_TOKEN * hbt
    levels = [KVLevel("host", host_blocks * block_bytes, read_bw, write_bw)]
    if ssd_blocks:
        levels.append(KVLevel("ssd", ssd_blocks * block_bytes, read_bw / 4, write_bw / 4))
    lim = dict(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, watermark=0.01,
               enable_prefix_caching=True, kv_levels=tuple(levels), kv_overlap=overlap,
               kv_bytes_per_token=BYTES_PER_TOKEN)
    lim.update(limits)
    return TierSpec("t", replicas, num_blocks, LinearStepModel(), SchedulerLimits(**lim))


workloads = st.builds(
    shared_prefix_workload, n=st.integers(1, 50), seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0), max_in=st.integers(2, 900), max_out=st.integers(2, 200),
    families=st.integers(1, 6), block=st.sampled_from([16, 32, 64]),
)
def offload_setups(read_bws=(1e4, 1e5, 1e8)):
    """Hypothesis strategy: scheduler, cache and offload settings, reads at ``read_bws``."""
    return st.fixed_dictionaries({
        "max_num_seqs": st.integers(1, 32),
        "max_num_batched_tokens": st.integers(32, 1024),
        "num_blocks": st.integers(80, 600),
        "prefix_cache_fraction": st.sampled_from([0.02, 0.05, 0.2, 1.0]),
        "host_blocks": st.integers(0, 40),
        "ssd_blocks": st.integers(0, 60),
        "read_bw": st.sampled_from(list(read_bws)),
        "overlap": st.booleans(),
    })


setups = offload_setups()
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tier(work, setup, replicas=1):
    return offload_tier(replicas=replicas, hbt=work.hash_block_tokens, **setup)


@fast
@given(workloads, setups)
def test_matches_naive_loop_with_offload_levels(work, setup):
    spec = _tier(work, setup)
    res = simulate([spec], work)
    ft, fin, dropped, cached = reference_run(
        work.arrival_s, work.input_tokens, work.output_tokens, spec.limits, spec.num_blocks,
        spec.step_model, hashes=work.prefix_hashes, hash_block_tokens=work.hash_block_tokens)
    per_level, _ = reference_run.last
    np.testing.assert_array_equal(res.dropped, dropped)
    np.testing.assert_array_equal(res.cache_hit_tokens, cached)
    np.testing.assert_allclose(res.first_token_s, ft, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(res.finish_s, fin, rtol=1e-9, equal_nan=True)
    stats = res.prefix_stats["t"]
    want = np.sum([p for p in per_level if p is not None] or [[0] * len(stats.levels)], axis=0)
    assert stats.hit_tokens == want.tolist()
    assert sum(stats.hit_tokens) == int(res.cache_hit_tokens.sum())


@fast
@given(workloads, setups, st.integers(1, 3))
def test_fast_forward_equals_per_iteration_with_offload(work, setup, replicas):
    spec = _tier(work, setup, replicas)
    assert_same_per_request(simulate([spec], work, fast_forward=True),
                            simulate([spec], work, fast_forward=False))


@fast
@given(workloads, setups)
def test_no_request_lost_no_level_over_capacity(work, setup):
    spec = _tier(work, setup)
    res = simulate([spec], work)
    assert np.all(~np.isnan(res.finish_s) ^ res.dropped)
    stats = res.prefix_stats["t"]
    assert sum(stats.hit_tokens) <= stats.bound_tokens <= stats.prompt_tokens
    reference_run(work.arrival_s, work.input_tokens, work.output_tokens, spec.limits,
                  spec.num_blocks, spec.step_model, hashes=work.prefix_hashes,
                  hash_block_tokens=work.hash_block_tokens)
    _, peak = reference_run.last
    cache = PrefixCache(int(spec.limits.prefix_cache_fraction * spec.num_blocks * 16)
                        // work.hash_block_tokens, work.hash_block_tokens,
                        spec.limits.kv_levels, BYTES_PER_TOKEN)
    assert all(p <= c for p, c in zip(peak, cache.caps))


ops = st.lists(st.tuples(st.lists(st.integers(0, 30), min_size=1, max_size=12),
                         st.booleans()), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ops, st.integers(0, 5), st.integers(0, 5), st.integers(0, 8))
def test_cache_levels_stay_within_capacity_and_exclusive(seq, gpu, host, ssd):
    levels = (KVLevel("host", host * 10.0, 1.0, 1.0), KVLevel("ssd", ssd * 10.0, 1.0, 1.0))
    cache = PrefixCache(gpu, 10, levels, kv_bytes_per_token=1.0)
    for i, (hashes, full) in enumerate(seq):
        req = Req(i, prompt=10 * len(hashes), output=1, arrival=0.0, hashes=hashes)
        cache.admit(req)
        cache.fill(req, req.prompt if full else 10 * (len(hashes) // 2))
        sizes = cache.level_sizes()
        assert all(s <= c for s, c in zip(sizes, [gpu, host, ssd]))
        held = [h for lv in cache._levels for h in lv]
        assert len(held) == len(set(held)) == len(cache._where)
        # what the levels hold together is at most the distinct hashes seen
        assert len(held) <= gpu + host + ssd


def test_evicted_block_moves_down_and_a_hit_from_below_pays_its_read():
    levels = (KVLevel("host", 2 * 20.0, read_bytes_per_s=10.0, write_bytes_per_s=40.0),)
    cache = PrefixCache(capacity=2, hash_block_tokens=10, levels=levels, kv_bytes_per_token=2.0)
    a = Req(0, prompt=20, output=1, arrival=0.0, hashes=[1, 2])
    cache.admit(a)
    cache.fill(a, 20)
    assert cache.take_transfer() == 0.0
    b = Req(1, prompt=20, output=1, arrival=0.0, hashes=[3, 4])
    cache.admit(b)
    cache.fill(b, 20)  # 1 and 2 move down to the host: two writes of 20 bytes at 40 B/s
    assert cache.level_sizes() == [2, 2]
    assert cache.take_transfer() == pytest.approx(1.0)
    c = Req(2, prompt=30, output=1, arrival=0.0, hashes=[1, 2, 9])
    assert cache.admit(c) == 20  # found below: two reads of 20 bytes at 10 B/s, 3 and 4 go down
    assert c.level_hits == [0, 20]
    assert cache.take_transfer() == pytest.approx(2 * 2.0 + 2 * 0.5)
    assert cache.hits([3, 4]) == 2 and cache.level_sizes() == [2, 2]


def test_step_time_overlaps_transfer_or_adds_it():
    assert step_seconds(1.0, 0.4, overlap=True) == 1.0
    assert step_seconds(1.0, 1.5, overlap=True) == 1.5
    assert step_seconds(1.0, 0.4, overlap=False) == pytest.approx(1.4)


def _evict_to_ssd(write_bytes_per_s: float) -> PrefixCache:
    """A 1-block GPU cache over a 1-block host level and a 10-block SSD writing 10-byte blocks
    at ``write_bytes_per_s``; blocks 1 to 6 are filled one by one, the last two 9.5 s later."""
    levels = (KVLevel("host", 10.0, 100.0, 100.0), KVLevel("ssd", 100.0, 1.0, write_bytes_per_s))
    cache = PrefixCache(capacity=1, hash_block_tokens=10, levels=levels, kv_bytes_per_token=1.0)
    for i, h in enumerate([1, 2, 3, 4, 5, 6]):
        cache.fill(Req(i, prompt=10, output=1, arrival=0.0, hashes=[h]), 10, 9.5 * (h > 4))
    return cache


def test_a_lower_level_takes_blocks_only_as_fast_as_it_writes_them():
    """Host-to-SSD moves were instant and unlimited: a 0.01 GB/s SSD held as many blocks as a
    3 GB/s one. Here a block takes 10 s to write: the host evicts 1 and 2 at 0 s, 3 and 4 at
    9.5 s; 1 is taken, 2 dropped (the writer is 10 s behind), 3 taken (0.5 s behind, under a
    second), 4 dropped (10.5 s behind)."""
    slow = _evict_to_ssd(write_bytes_per_s=1.0)
    assert slow._where == {1: 2, 3: 2, 5: 1, 6: 0}
    assert [slow.hits([h]) for h in range(1, 7)] == [1, 0, 1, 0, 1, 1]
    fast = _evict_to_ssd(write_bytes_per_s=1e6)
    assert fast._where == {1: 2, 2: 2, 3: 2, 4: 2, 5: 1, 6: 0}


def _recurring_prefixes(n=120, families=30, blocks=8, hbt=64):
    """``families`` long shared prefixes, each asked ``n / families`` times, round robin: a GPU
    cache smaller than all of them misses every time; a host level holding them hits."""
    hashes = [np.arange(blocks) + 1000 * (i % families) for i in range(n)]
    return Workload(np.arange(n) * 0.5, np.full(n, blocks * hbt), np.full(n, 4),
                    np.zeros(n, dtype=np.int64), prefix_hashes=hashes, hash_block_tokens=hbt)


def test_host_level_recovers_the_hits_a_small_gpu_cache_loses_and_lowers_ttft():
    work = _recurring_prefixes()
    kw = dict(num_blocks=2000, prefix_cache_fraction=0.1, hbt=64, max_num_batched_tokens=2048)
    gpu_only = simulate([offload_tier(host_blocks=0, **kw)], work)
    offload = simulate([offload_tier(host_blocks=400, read_bw=1e7, write_bw=1e7, **kw)], work)
    g, o = gpu_only.prefix_stats["t"], offload.prefix_stats["t"]
    assert g.bound_tokens == o.bound_tokens > 0
    assert sum(g.hit_tokens) < 0.1 * g.bound_tokens
    assert o.hit_tokens[1] > 0.8 * o.bound_tokens
    ttft = lambda r: np.mean(r.first_token_s - work.arrival_s)  # noqa: E731
    assert ttft(offload) < 0.7 * ttft(gpu_only)


def test_a_slow_level_without_overlap_costs_more_than_it_saves():
    work = _recurring_prefixes()
    kw = dict(num_blocks=2000, prefix_cache_fraction=0.1, hbt=64, max_num_batched_tokens=2048,
              host_blocks=400)
    fast_link = simulate([offload_tier(read_bw=1e7, write_bw=1e7, overlap=False, **kw)], work)
    slow_link = simulate([offload_tier(read_bw=1e3, overlap=False, **kw)], work)
    slow_overlap = simulate([offload_tier(read_bw=1e3, overlap=True, **kw)], work)
    ttft = lambda r: float(np.mean(r.first_token_s - work.arrival_s))  # noqa: E731
    assert ttft(fast_link) < ttft(slow_overlap) < ttft(slow_link)


def test_kv_levels_need_a_block_size_in_bytes():
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        SchedulerLimits(enable_prefix_caching=True, kv_levels=(KVLevel("host", 1e9, 1e9, 1e9),))


def test_host_to_ssd_moves_cost_no_gpu_time_but_an_ssd_hit_pays_its_read():
    levels = (KVLevel("host", 10.0, 100.0, 100.0), KVLevel("ssd", 100.0, 1.0, 1.0))
    cache = PrefixCache(capacity=1, hash_block_tokens=10, levels=levels, kv_bytes_per_token=1.0)
    for i, h in enumerate([1, 2, 3]):  # 1 -> host -> ssd, 2 -> host, 3 on the GPU
        req = Req(i, prompt=10, output=1, arrival=0.0, hashes=[h])
        cache.admit(req)
        cache.fill(req, 10)
    assert cache.level_sizes() == [1, 1, 1]
    assert cache.take_transfer() == pytest.approx(2 * 10 / 100.0)  # two GPU evictions only
    d = Req(3, prompt=20, output=1, arrival=0.0, hashes=[1, 5])
    assert cache.admit(d) == 10 and d.level_hits == [0, 0, 10]
    assert cache.take_transfer() == pytest.approx(10 / 1.0 + 10 / 100.0)  # SSD read, 3 out
