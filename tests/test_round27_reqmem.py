"""Round 27, requests in a burst: a waiting request costs a packed row, not a Req object.

A burst (every request at t = 0) queues the whole trace on its replica. Behind the queue's head
the requests wait as packed rows (:class:`tiersim.engine.request.Backlog`, 32 bytes each) and
get a :class:`Req` (about 400 bytes) only when they reach the head; the results are the
reference loop's, and the load series still counts them as waiting.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from reference_scheduler import assert_matches_reference, assert_same_per_request

from tiersim.engine import TierSpec, Workload, simulate
from tiersim.engine.request import Backlog, Req, SchedulerLimits
from tiersim.engine.scheduler import ReplicaScheduler
from tiersim.perf.base import LinearStepModel


def burst(n: int, seed: int = 0, max_in: int = 600, max_out: int = 200) -> Workload:
    """``n`` requests of random lengths, all arriving at t = 0, on tier 0."""
    rng = np.random.default_rng(seed)
    return Workload(np.zeros(n), rng.integers(1, max_in, n).astype(np.int32),
                    rng.integers(1, max_out, n).astype(np.int32), np.zeros(n, dtype=np.int64))


def tier(replicas: int = 1, num_blocks: int = 300, balancer: str = "least_tokens",
         **limits) -> TierSpec:
    """A small tier (preemption happens) of ``replicas`` replicas."""
    lim = dict(max_num_seqs=8, max_num_batched_tokens=256, block_size=16)
    lim.update(limits)
    return TierSpec("t", replicas, num_blocks, LinearStepModel(), SchedulerLimits(**lim),
                    balancer=balancer)


def traced_peak(fn) -> int:
    """Peak bytes traced by tracemalloc while ``fn()`` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_burst_costs_packed_rows_not_request_objects_at_its_peak():
    """20,000 requests at t = 0 on one replica: simulate's peak traced memory is under 300
    bytes a request, its result arrays (about 150) included (a waiting Req each: over 550)."""
    n = 20_000
    work, spec = burst(n), tier(num_blocks=20_000, max_num_seqs=256,
                                max_num_batched_tokens=8192)
    peak = traced_peak(lambda: simulate([spec], work, series=False))
    assert peak / n < 300, f"{peak / n:.0f} bytes a request"


@pytest.mark.parametrize("seed", [1, 2])
def test_burst_matches_the_reference_loop(seed):
    """A preempting burst on one replica (preempted requests go back in front of the
    backlog): the reference loop's times, drops and cache hits."""
    work, spec = burst(400, seed=seed, max_out=400), tier(num_blocks=150)
    res = simulate([spec], work)
    assert res.preemptions.sum() > 0
    assert_matches_reference(res, work, spec)


@pytest.mark.parametrize("balancer", ["round_robin", "least_tokens", "prefix_aware"])
def test_burst_on_several_replicas_same_with_and_without_fast_paths(balancer):
    """Three replicas, each balancer (prefix-aware without a cache picks by outstanding work
    alone): fast paths and the per-plan reference give the same per-request results."""
    work, spec = burst(600, seed=7), tier(replicas=3, balancer=balancer)
    a = simulate([spec], work)
    assert_same_per_request(a, simulate([spec], work, fast_paths=False, fast_forward=False))
    assert not a.dropped.any()


def test_the_load_series_counts_the_backlog_as_waiting():
    """Little's law, exactly: with no preemption the waiting series integrates to the
    requests' summed queueing time, the backlog's included (it alone is most of it)."""
    res = simulate([tier(num_blocks=4000)], burst(500), sample_every=1.0)
    rows = res.samples["t"][0]
    assert res.preemptions.sum() == 0
    held = [b[0] - a[0] for a, b in zip(rows, rows[1:])] + [1.0]  # a row holds till the next
    waited = sum(row[2] * s for row, s in zip(rows, held))
    assert waited == pytest.approx(res.queue_s.sum(), rel=1e-9)
    assert rows[0][4] >= 500 - 8  # at most max_num_seqs admitted at t = 0


def test_backlog_is_first_in_first_out():
    """Rows come out in order as fresh Reqs with their fields."""
    log = Backlog()
    for row in [(3, 10, 4, 1.0), (2**40, 2**33, 6, 0.1)]:
        log.push(*row)
    assert len(log) == 2
    first, second = log.pop(), log.pop()
    assert (first.idx, first.prompt, first.output, first.arrival) == (3, 10, 4, 1.0)
    assert (second.idx, second.prompt, second.output, second.arrival) == (2**40, 2**33, 6, 0.1)
    assert first.n_out == 0 and first.computed == 0 and first.hashes == ()
    assert not log


def test_a_request_object_queued_behind_the_backlog_waits_behind_it():
    """A scheduler driven by hand: rows queued with add_new, then a Req with add; the Req is
    admitted last, after the rows ahead of it became Reqs in their order."""
    sched = ReplicaScheduler(SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=64), 100)
    for i in range(3):
        assert sched.add_new(i, 4, 2, 0.0)
    assert (len(sched.waiting), len(sched.backlog)) == (1, 2)
    sched.add(Req(3, 4, 2, 0.0))
    assert sched.waiting_count() == 4 and not sched.backlog
    plan = sched.schedule(0.0)
    assert [req.idx for req, _ in plan.chunks] == [0, 1, 2, 3]
