"""Lockstep data-parallel ranks (tiersim.engine.lockstep): steps start and end together on every
rank of a group, a step lasts as long as the slowest rank's, an idle rank pays the dummy batch,
fast-forward stays exact, nothing is lost, and a group of one is a plain replica."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_same_per_request

from tiersim.engine import SchedulerLimits, TierSpec, Workload, cluster, simulate
from tiersim.engine import lockstep as lockstep_mod
from tiersim.perf.base import LinearStepModel


def make_workload(n, seed, rate, max_in, max_out):
    """Poisson arrivals, uniform lengths, one tier."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    return Workload(arrival, rng.integers(1, max_in, n), rng.integers(1, max_out, n),
                    np.zeros(n, dtype=np.int64))


def make_tier(replicas, lockstep, num_blocks=300, balancer="least_tokens", **limits):
    """A tier with small test limits (preemption happens)."""
    lim = dict(max_num_seqs=12, max_num_batched_tokens=256, block_size=16, watermark=0.01)
    lim.update(limits)
    return TierSpec("t", replicas, num_blocks, LinearStepModel(), SchedulerLimits(**lim),
                    balancer=balancer, lockstep=lockstep)


workloads = st.builds(make_workload, n=st.integers(1, 50), seed=st.integers(0, 10_000),
                      rate=st.floats(2.0, 300.0), max_in=st.integers(2, 700),
                      max_out=st.integers(2, 200))
fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def step_log(monkeypatch):
    """Every group step as (group id, start, end, busy ranks) when it ends."""
    log = []
    original = lockstep_mod.LockstepGroup._finish_step

    def finish(self):
        busy = tuple(p is not None for p in self._plans)
        log.append((id(self), self._start, self.env.now, busy))
        original(self)

    monkeypatch.setattr(lockstep_mod.LockstepGroup, "_finish_step", finish)
    return log


@fast
@given(work=workloads, group=st.sampled_from([2, 3, 4]), groups=st.integers(1, 2),
       balancer=st.sampled_from(["least_tokens", "round_robin"]))
def test_ranks_step_together_and_nothing_is_lost(work, group, groups, balancer):
    """Every request finishes or is dropped; within a group every rank is busy for the same
    time (all ranks run every step, idle ones the dummy batch); each request's first token and
    finish fall on its group's step ends."""
    ends = {}
    original = lockstep_mod.LockstepGroup._finish_step

    def finish(self):
        ends.setdefault(id(self), set()).add(self.env.now)
        original(self)

    lockstep_mod.LockstepGroup._finish_step = finish
    try:
        tier = make_tier(group * groups, group, balancer=balancer)
        res = simulate([tier], work, sample_every=1e9)
    finally:
        lockstep_mod.LockstepGroup._finish_step = original
    done = ~res.dropped
    assert np.all(np.isfinite(res.finish_s[done]))
    assert np.all(res.finish_s[done] >= res.first_token_s[done])
    assert int(done.sum() + res.dropped.sum()) == len(work)
    busy = np.asarray(res.busy_s["t"]).reshape(groups, group)
    np.testing.assert_allclose(busy, busy[:, :1].repeat(group, axis=1), rtol=1e-12)
    step_ends = set().union(*ends.values()) if ends else set()
    for t in np.concatenate([res.first_token_s[done], res.finish_s[done]]):
        assert float(t) in step_ends


@fast
@given(work=workloads, group=st.sampled_from([2, 4]),
       budget=st.integers(32, 512), blocks=st.integers(80, 400))
def test_fast_forward_is_exact(work, group, budget, blocks):
    """Decode stretches across ranks (min length, max time per iteration, cut by any rank's
    arrival) give what stepping every iteration as its own event gives."""
    tier = make_tier(group, group, num_blocks=blocks, max_num_batched_tokens=budget)
    ff = simulate([tier], work, sample_every=1e9)
    slow = simulate([tier], work, fast_forward=False, sample_every=1e9)
    assert_same_per_request(ff, slow)


@fast
@given(work=workloads, replicas=st.integers(1, 3))
def test_group_of_one_is_a_plain_replica(work, replicas):
    """A lockstep group of one rank has no one to wait for: every replica run as its own group
    of one gives the plain replicas' results, fast-forwarded or not."""
    tier = make_tier(replicas, 1)
    plain = simulate([tier], work, sample_every=1e9)
    original = cluster.Replica

    class GroupOfOne(lockstep_mod.LockstepRank):
        def __init__(self, env, sched, model, on_finish, i, max_k, sample_every):
            super().__init__(env, sched, model, on_finish, i, max_k, sample_every)
            lockstep_mod.LockstepGroup(env, [self], model, max_k)

    cluster.Replica = GroupOfOne
    try:
        grouped = simulate([tier], work, sample_every=1e9)
        grouped_slow = simulate([tier], work, fast_forward=False, sample_every=1e9)
    finally:
        cluster.Replica = original
    assert_same_per_request(grouped, plain)
    assert_same_per_request(grouped_slow, plain)
    np.testing.assert_allclose(grouped.busy_s["t"], plain.busy_s["t"], rtol=1e-9)


def test_step_lasts_as_long_as_the_slowest_rank(step_log):
    """Two ranks, one short and one long prompt (round robin): both prefill in one step that
    lasts the long prefill; the short request's decodes wait for it. By hand."""
    model = LinearStepModel(overhead=0.01, per_prefill_token=1e-3, per_decode_seq=0.0,
                            per_context_token=0.0)
    work = Workload(np.zeros(2), np.array([10, 100]), np.array([3, 3]), np.zeros(2, np.int64))
    lim = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=512, block_size=16)
    locked = simulate([TierSpec("t", 2, 100, model, lim, balancer="round_robin", lockstep=2)],
                      work, sample_every=1e9)
    free = simulate([TierSpec("t", 2, 100, model, lim, balancer="round_robin")], work,
                    sample_every=1e9)
    prefill_long, decode = 0.01 + 0.1, 0.01
    np.testing.assert_allclose(locked.first_token_s, [prefill_long, prefill_long])
    np.testing.assert_allclose(locked.finish_s, [prefill_long + 2 * decode] * 2)
    np.testing.assert_allclose(free.first_token_s, [0.01 + 0.01, prefill_long])
    # the prefill step, then both decodes as one fast-forwarded stretch of two iterations
    assert [(end, busy) for _, _, end, busy in step_log] == [
        (pytest.approx(prefill_long), (True, True)),
        (pytest.approx(prefill_long + 2 * decode), (True, True)),
    ]


def test_idle_rank_pays_the_dummy_batch(step_log):
    """One request on a group of two: the idle rank runs every step too (busy time equal);
    steps last the larger of the busy rank's and the dummy batch's time."""
    model = LinearStepModel(overhead=0.002, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    work = Workload(np.zeros(1), np.array([20]), np.array([4]), np.zeros(1, np.int64))
    lim = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=512, block_size=16)
    res = simulate([TierSpec("t", 2, 100, model, lim, lockstep=2)], work, sample_every=1e9)
    assert res.busy_s["t"][0] == pytest.approx(res.busy_s["t"][1])
    assert res.busy_s["t"][1] == pytest.approx(4 * 0.002)
    assert all(busy == (True, False) for *_, busy in step_log)


@pytest.mark.parametrize("kw", [{"replicas": 3, "lockstep": 2}, {"replicas": 2, "lockstep": 0}])
def test_lockstep_must_divide_the_replicas(kw):
    """A group size that does not divide the replicas is refused in one line."""
    with pytest.raises(ValueError, match="lockstep"):
        TierSpec("t", kw["replicas"], 100, LinearStepModel(), lockstep=kw["lockstep"])


@pytest.mark.parametrize("model, dp, extra, expected", [
    ("qwen3-coder-30b-a3b", 4, {}, 4),  # MoE with data parallelism: ranks step together
    ("llama-3.1-8b", 4, {}, 1),  # dense: DP ranks are independent servers
    ("qwen3-coder-30b-a3b", 1, {}, 1),
    ("qwen3-coder-30b-a3b", 2, {"speculative": object()}, 1),  # not modelled together
])
def test_fleet_steps_moe_data_parallel_ranks_together(model, dp, extra, expected):
    """A scenario tier's lockstep group: its data_parallel ranks for a MoE model only."""
    from types import SimpleNamespace

    from tiersim.fleet import lockstep

    tier = SimpleNamespace(data_parallel=dp, speculative=None, disaggregation=None)
    tier.__dict__.update(extra)
    assert lockstep(model, tier) == expected


@fast
@given(work=workloads, group=st.sampled_from([2, 3, 4]), groups=st.integers(1, 2))
def test_requests_carry_every_rank_busy_time(work, group, groups):
    """The requests' attributed GPU time sums to the ranks' busy time: an idle rank's dummy
    batches are charged to the requests the group stepped for (before, no request paid them,
    so a data-parallel MoE tier's per-request costs summed to less than its attributed cost)."""
    res = simulate([make_tier(group * groups, group)], work, sample_every=1e9)
    charged = float(res.gpu_s_first.sum() + res.gpu_s_final.sum())
    assert charged == pytest.approx(float(np.sum(res.busy_s["t"])), rel=1e-9)


def test_idle_rank_time_goes_to_the_busy_rank_requests():
    """One request on a group of two: it pays its own rank's steps and the idle rank's dummy
    batches, twice the step time in all. By hand."""
    model = LinearStepModel(overhead=0.002, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    work = Workload(np.zeros(1), np.array([20]), np.array([4]), np.zeros(1, np.int64))
    lim = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=512, block_size=16)
    res = simulate([TierSpec("t", 2, 100, model, lim, lockstep=2)], work, sample_every=1e9)
    assert res.gpu_s_final[0] == pytest.approx(2 * 4 * 0.002)
