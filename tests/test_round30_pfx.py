"""The prefix-aware balancer on a board (:class:`tiersim.engine.cluster.PrefixAware`: the
outstanding work on an :class:`OutstandingBoard`, the replicas holding a prompt's first hash
from an index) picks, at every arrival, the replica the plain scan
``min(replicas, key=outstanding - cached)`` picks, and a run with it equals the run with the
scan in every result field: lazy and event-driven replicas, shared prefixes evicted and
offloaded, speculative decoding, escalation, followers whose prompts hold their predecessors'
output blocks, arrivals tied with each other and with step ends."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_engine_speed_paths import fast, tier
from test_round30_bal import board_run_equals_loop_run

from tiersim.engine import Disagg, KVLevel, Workload, cluster
from tiersim.engine.prefix_cache import PrefixCache
from tiersim.engine.replica import Replica
from tiersim.engine.spec_decode import SpecDecoding

HBT = 16  # hash block tokens: small, so short prompts share several blocks


def scan(replicas: list[Replica], req) -> Replica:
    """The plain scan's pick: every replica's outstanding work less its cached tokens."""
    return min(replicas, key=lambda rep: rep.outstanding() - cluster.cached(rep, req))


@contextlib.contextmanager
def picks_checked_against_scan():
    """Every prefix-aware tier of two or more replicas on a board, each pick checked against
    :func:`scan` at the same instant; yields the picks checked, each with whether it is the
    least-loaded replica (the board's) or one the prompt's cache drew."""
    picks: list[tuple[int, bool]] = []
    board_pick, board_min = cluster.PrefixAware.pick, cluster.BOARD_MIN

    def pick(balancer: cluster.PrefixAware, req) -> Replica:
        least = balancer.board.least(balancer.replicas[0].env.now)
        got = board_pick(balancer, req)
        want = scan(balancer.replicas, req)
        assert got is want, (got.index, want.index)
        picks.append((got.index, got is least))
        return got

    cluster.PrefixAware.pick, cluster.BOARD_MIN = pick, 2
    try:
        yield picks
    finally:
        cluster.PrefixAware.pick, cluster.BOARD_MIN = board_pick, board_min


def board_run_equals_scan_run(tiers, work, **kw) -> list[tuple[int, bool]]:
    """The run on boards (each pick checked against the scan) and the board alone equal the
    run with the scan, field by field; returns the picks checked."""
    return board_run_equals_loop_run(tiers, work, checked=picks_checked_against_scan, **kw)


def shared_prefix_work(n: int, seed: int, rate: float, families: int, tiers: int = 1,
                       escalate: float = 0.0, follow: float = 0.0) -> Workload:
    """``n`` requests whose prompts start with one of ``families`` shared prefixes (1 to 12
    hash blocks of it, then 0 to 3 blocks of their own), arrivals rounded to 10 ms (ties);
    ``follow``: the share that follow the request before them, their prompt holding its
    output blocks."""
    rng = np.random.default_rng(seed)
    arrival = np.round(np.cumsum(rng.exponential(1.0 / rate, n)), 2)
    family = rng.integers(0, families, n)
    shared, own = rng.integers(1, 13, n), rng.integers(0, 4, n)
    hashes = [[int(f) * 100 + j for j in range(s)] + [10**6 + i * 10 + j for j in range(o)]
              for i, (f, s, o) in enumerate(zip(family, shared, own, strict=True))]
    prompt = np.array([len(h) * HBT for h in hashes]) - rng.integers(0, HBT, n)
    output = rng.integers(1, 60, n)
    tier = rng.integers(0, tiers, n)
    esc = np.where((rng.random(n) < escalate) & (tier < tiers - 1), tiers - 1, -1)
    follows, outputs = None, None
    if follow:
        follows = np.where(rng.random(n) < follow, np.arange(n) - 1, -1)
        follows[0] = -1
        outputs = [[2 * 10**6 + i * 10 + j for j in range(int(k) // HBT)]
                   for i, k in enumerate(output)]
        for i in np.flatnonzero(follows >= 0):
            hashes[i] = hashes[i - 1] + outputs[i - 1] + hashes[i]
            prompt[i] = len(hashes[i]) * HBT
    return Workload(arrival, prompt, output, tier, esc, follows=follows,
                    prefix_hashes=hashes, output_hashes=outputs, hash_block_tokens=HBT)


def offload(host_blocks: int) -> dict:
    """Limits for a host level of ``host_blocks`` hash blocks beneath each GPU cache."""
    if not host_blocks:
        return {}
    return {"kv_levels": (KVLevel("host", host_blocks * HBT, 50.0, 1e6),),
            "kv_bytes_per_token": 1.0}


cached_tier = st.fixed_dictionaries({
    "num_blocks": st.integers(60, 400),
    "prefix_cache_fraction": st.sampled_from([0.05, 0.2, 1.0]),
    "host": st.sampled_from([0, 4, 40]),
})


def prefix_tier(name: str, replicas: int, opts: dict, **kw):
    """A prefix-aware tier with prefix caching on, per ``opts`` (:data:`cached_tier`)."""
    opts = dict(opts)
    return tier(name, replicas, num_blocks=opts.pop("num_blocks"), balancer="prefix_aware",
                enable_prefix_caching=True, **offload(opts.pop("host")), **opts, **kw)


@fast
@given(st.integers(1, 80), st.integers(0, 10_000), st.floats(5.0, 500.0), st.integers(1, 6),
       st.integers(2, 12), cached_tier, st.booleans(), st.booleans(), st.booleans())
def test_prefix_aware_board_picks_the_scans_replica(n, seed, rate, families, replicas, opts,
                                                    spec, per_iteration, fast_paths):
    """One tier: lazy replicas (event-driven with ``fast_paths`` off), hot prefixes spreading,
    caches evicting and offloading, speculative decoding."""
    kw = {"spec_decoding": SpecDecoding(3, (0.7,), seed=1)} if spec else {}
    work = shared_prefix_work(n, seed, rate, families)
    picks = board_run_equals_scan_run([prefix_tier("a", replicas, opts, **kw)], work,
                                      fast_forward=not per_iteration, fast_paths=fast_paths)
    assert len(picks) == n


@fast
@given(st.integers(1, 60), st.integers(0, 10_000), st.floats(5.0, 400.0), st.integers(1, 4),
       st.integers(2, 6), st.integers(2, 4), cached_tier, st.booleans())
def test_prefix_aware_cascade_picks_the_scans_replica(n, seed, rate, families, first, second,
                                                      opts, fast_paths):
    """Escalation (event-driven replicas, a finished request dispatched from inside a step)
    and followers whose prompts hold their predecessors' output blocks."""
    work = shared_prefix_work(n, seed, rate, families, tiers=2, escalate=0.4, follow=0.4)
    tiers = [prefix_tier("a", first, opts), prefix_tier("b", second, opts)]
    board_run_equals_scan_run(tiers, work, fast_paths=fast_paths)


@fast
@given(st.integers(1, 60), st.integers(0, 10_000), st.floats(5.0, 400.0), st.integers(1, 4),
       st.integers(2, 4), st.integers(2, 4), cached_tier)
def test_prefix_aware_disaggregated_tier_picks_the_scans_replica(n, seed, rate, families,
                                                                 prefill, decode, opts):
    """A split tier: prefill replicas with caches hold a request's blocks until its KV has
    moved (their release wakes them), decode replicas without caches take it."""
    split = Disagg(prefill, decode, 1e6, 0.01, 100.0)
    work = shared_prefix_work(n, seed, rate, families)
    board_run_equals_scan_run([prefix_tier("a", prefill + decode, opts, disagg=split)], work)


def test_a_cache_away_from_the_least_loaded_replica_wins():
    """A hot prefix cached on one replica draws requests there though another one has less
    outstanding work (the board's least): the holders are scored, not the board's pick
    alone; and some picks are the board's, a replica holding no prefix of the prompt."""
    work = shared_prefix_work(30, seed=3, rate=400.0, families=1)
    picks = board_run_equals_scan_run(
        [prefix_tier("a", 4, {"num_blocks": 400, "prefix_cache_fraction": 1.0, "host": 0})],
        work)
    assert {least for _, least in picks} == {True, False}


def test_the_index_follows_each_hash_in_and_out_of_every_level():
    """``holders`` names a cache's slot exactly while the cache holds a hash, at any level:
    one put on the GPU, moved down to the host when evicted, dropped below the host."""
    cache = PrefixCache(1, 4, (KVLevel("host", 4.0, 1.0, 1e9),), kv_bytes_per_token=1.0)
    holders: dict[int, set[int]] = {}
    cache.index_into(holders, 7)
    cache.insert([1], now=0.0)
    assert holders == {1: {7}}
    cache.insert([2], now=0.0)  # 1 moves down to the host
    assert holders == {1: {7}, 2: {7}}
    cache.insert([3], now=0.0)  # 2 moves down, 1 drops out
    assert holders == {2: {7}, 3: {7}}
