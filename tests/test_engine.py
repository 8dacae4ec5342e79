"""Engine invariants: nothing lost, KV within capacity, fast-forward exact, vLLM-faithful,
deterministic, and an M/G/1 queue matching Pollaczek-Khinchine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_matches_reference, assert_same_per_request

from tiersim.engine import (
    ReplicaScheduler,
    Req,
    SchedulerLimits,
    TierSpec,
    Workload,
    simulate,
)
from tiersim.perf.base import LinearStepModel


def make_workload(n=50, seed=0, rate=20.0, max_in=600, max_out=200, tiers=1, escalate=0.0):
    """Random requests: Poisson arrivals, uniform token counts, random tiers."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    tier = rng.integers(0, tiers, n)
    esc = np.where(rng.random(n) < escalate, tiers - 1, -1)
    esc[tier == tiers - 1] = -1
    return Workload(arrival, rng.integers(1, max_in, n), rng.integers(1, max_out, n), tier, esc)


def make_tier(name="t", replicas=1, num_blocks=400, model=None, **limits):
    """A tier with test limits (small by default so preemption happens)."""
    lim = dict(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, watermark=0.01)
    lim.update(limits)
    return TierSpec(name, replicas, num_blocks, model or LinearStepModel(),
                    SchedulerLimits(**lim))


workloads = st.builds(
    make_workload,
    n=st.integers(1, 60),
    seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0),
    max_in=st.integers(2, 900),
    max_out=st.integers(2, 300),
)
limits = st.fixed_dictionaries({
    "max_num_seqs": st.integers(1, 32),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(80, 600),
})
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tier(lim):
    lim = dict(lim)
    nb = lim.pop("num_blocks")
    return make_tier(num_blocks=nb, **lim)


@fast
@given(workloads, limits)
def test_no_request_lost(work, lim):
    res = simulate([_tier(lim)], work)
    done = ~np.isnan(res.finish_s)
    assert np.all(done ^ res.dropped)
    assert np.all(res.finish_s[done] >= work.arrival_s[done])
    assert np.all(res.first_token_s[done] <= res.finish_s[done])


@fast
@given(workloads, limits)
def test_kv_blocks_never_exceed_capacity(work, lim):
    spec = _tier(lim)
    res = simulate([spec], work, sample_every=1e-9)
    assert max(res.kv_peak_blocks["t"]) <= spec.num_blocks
    blocks = [s[3] for s in res.samples["t"][0]]
    assert all(0 <= b <= spec.num_blocks for b in blocks)


@fast
@given(workloads, limits, st.integers(1, 3))
def test_fast_forward_equals_per_iteration(work, lim, replicas):
    spec = _tier(lim)
    spec.replicas = replicas
    a = simulate([spec], work, fast_forward=True)
    b = simulate([spec], work, fast_forward=False)
    assert_same_per_request(a, b)


@fast
@given(workloads, limits)
def test_matches_naive_vllm_loop(work, lim):
    spec = _tier(lim)
    assert_matches_reference(simulate([spec], work), work, spec)


@fast
@given(st.integers(0, 1000))
def test_same_seed_same_result(seed):
    work = make_workload(80, seed=seed, tiers=2, escalate=0.3)
    tiers = [make_tier("a", 2), make_tier("b", 2)]
    tiers[0].balancer = "round_robin"
    a, b = simulate(tiers, work), simulate(tiers, work)
    for f in ("finish_s", "first_token_s", "gpu_s_final", "gpu_s_first", "queue_s"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_escalated_request_pays_both_passes():
    work = Workload(np.array([0.0]), np.array([100]), np.array([10]), np.array([0]),
                    np.array([1]))
    res = simulate([make_tier("cheap"), make_tier("big")], work)
    alone = simulate([make_tier("big")], Workload(np.array([0.0]), np.array([100]),
                                                  np.array([10]), np.array([0])))
    assert res.escalated[0] and res.final_tier[0] == 1
    assert res.gpu_s_first[0] > 0 and res.gpu_s_final[0] > 0
    assert res.finish_s[0] == pytest.approx(2 * alone.finish_s[0])


def test_request_that_never_fits_is_dropped_and_reported():
    work = Workload(np.array([0.0, 0.1]), np.array([10_000, 10]), np.array([5, 5]),
                    np.array([0, 0]))
    res = simulate([make_tier(num_blocks=100)], work)
    assert res.dropped.tolist() == [True, False]
    assert np.isnan(res.finish_s[0]) and not np.isnan(res.finish_s[1])


def test_request_longer_than_the_models_context_is_dropped_even_when_kv_would_hold_it():
    """vLLM rejects prompt + output above max_model_len; the engine drops such a request."""
    work = Workload(np.array([0.0, 0.1, 0.2]), np.array([300, 290, 10]), np.array([5, 10, 5]),
                    np.array([0, 0, 0]))
    res = simulate([make_tier(num_blocks=400, max_model_len=300)], work)
    assert res.dropped.tolist() == [True, False, False]  # 305 > 300; 300 is the limit itself
    assert simulate([make_tier(num_blocks=400)], work).dropped.tolist() == [False] * 3


def test_scheduler_steps_by_hand():
    """Prefill then decode: the first token ends the prefill step, one token per step after."""
    sched = ReplicaScheduler(SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64), 100)
    req = Req(0, prompt=100, output=3, arrival=0.0)
    assert sched.add(req)
    p1 = sched.schedule(0.0)
    assert [(c) for _, c in p1.chunks] == [64]  # chunked prefill
    sched.complete(p1, 1, 1.0, 1.0)
    p2 = sched.schedule(1.0)
    assert [c for _, c in p2.chunks] == [36]
    sched.complete(p2, 1, 2.0, 1.0)
    assert req.first_token == 2.0
    p3 = sched.schedule(2.0, max_k=100)
    assert p3.decode_only and p3.k == 2 and p3.n_dec == 1 and p3.dec_ctx == 101
    done = sched.complete(p3, 2, 4.0, 2.0)
    assert done == [req] and req.finish == 4.0 and sched.idle() and sched.free == 100


def test_balancer_least_tokens_spreads_load():
    work = make_workload(200, rate=50.0)
    res = simulate([make_tier(replicas=4, num_blocks=2000)], work)
    counts = np.bincount(res.replica[~res.dropped], minlength=4)
    assert counts.min() > 20


def test_mg1_mean_wait_matches_pollaczek_khinchine():
    """One server, one request at a time, prefill-only requests with geometric prompt lengths
    (close to exponential service): the mean wait must match P-K's closed form."""
    rng = np.random.default_rng(7)
    n, mean_tokens, sec_per_token, rho = 60_000, 400.0, 1e-4, 0.7
    p = 1.0 / mean_tokens
    prompt = rng.geometric(p, n)
    es = sec_per_token / p
    es2 = sec_per_token**2 * (2 - p) / p**2  # E[S^2] for S = c * Geometric(p)
    lam = rho / es
    arrival = np.cumsum(rng.exponential(1.0 / lam, n))
    model = LinearStepModel(overhead=0.0, per_prefill_token=sec_per_token, per_decode_seq=0.0,
                            per_context_token=0.0)
    tier = TierSpec("q", 1, 10**7, model,
                    SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=10**6, block_size=16,
                                    watermark=0.0))
    res = simulate([tier], Workload(arrival, prompt, np.ones(n, dtype=int), np.zeros(n, int)))
    waits = res.queue_s[n // 10:]  # drop warm-up
    batches = waits[: len(waits) // 30 * 30].reshape(30, -1).mean(axis=1)
    half_ci = 2.05 * batches.std(ddof=1) / np.sqrt(len(batches))
    expected = lam * es2 / (2 * (1 - rho))
    assert abs(waits.mean() - expected) < max(half_ci, 0.02 * expected), (waits.mean(), expected)
    mm1 = rho / (1 / es - lam)  # M/M/1 with the same mean service: geometric ~ exponential
    assert abs(waits.mean() - mm1) < max(half_ci, 0.02 * mm1), (waits.mean(), mm1)


def test_closed_loop_clients_send_next_request_when_previous_finishes():
    """Two clients, three requests each: each request arrives when its predecessor finishes,
    so a client never has two requests in flight."""
    n = 6
    follows = np.array([-1, -1, 0, 1, 2, 3])
    work = Workload(np.zeros(n), np.full(n, 200), np.full(n, 20), np.zeros(n, int),
                    follows=follows)
    res = simulate([make_tier(num_blocks=2000)], work)
    assert not res.dropped.any()
    for i in range(2, n):
        assert res.arrival_s[i] == res.finish_s[follows[i]]
        assert res.first_token_s[i] > res.finish_s[follows[i]]
    with_think = simulate([make_tier(num_blocks=2000)],
                          Workload(np.zeros(n), np.full(n, 200), np.full(n, 20),
                                   np.zeros(n, int), follows=follows, think_s=0.5))
    assert with_think.arrival_s[2] == pytest.approx(with_think.finish_s[0] + 0.5)
