"""The least-outstanding balancer's board (:class:`tiersim.engine.replica.OutstandingBoard`)
picks, at every arrival, the replica ``min(replicas, key=Replica.outstanding)`` picks, and a run
with it equals the run with one loop over the replicas in every result field: lazy and
event-driven replicas, decode stretches cut by arrivals, preemption, prefix caching,
speculative decoding, disaggregated prefill (held blocks released), escalation and followers,
arrivals tied with each other and with step ends."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_engine import make_workload
from test_engine_speed_paths import assert_identical, fast, limits, tier

from tiersim.engine import Disagg, Workload, cluster, simulate
from tiersim.engine.replica import OutstandingBoard, Replica
from tiersim.engine.spec_decode import SpecDecoding


@contextlib.contextmanager
def wrapped_board_least(check):
    """Every least-tokens tier of two or more replicas on a board (``BOARD_MIN`` 2) whose every
    pick is handed to ``check(board, now, picked, stale)``, ``stale`` the board's slots read
    again at ``now`` (due by then)."""
    board_least, board_min = OutstandingBoard.least, cluster.BOARD_MIN

    def least(board: OutstandingBoard, now: float) -> Replica:
        stale = [slot for slot, until in enumerate(board.until) if until <= now]
        got = board_least(board, now)
        check(board, now, got, stale)
        return got

    OutstandingBoard.least, cluster.BOARD_MIN = least, 2
    try:
        yield
    finally:
        OutstandingBoard.least, cluster.BOARD_MIN = board_least, board_min


@contextlib.contextmanager
def board_checked_against_min():
    """Every least-tokens tier of two or more replicas on a board whose every pick is checked
    against ``min(replicas, key=Replica.outstanding)`` at the same instant; yields the list of
    picks checked."""
    picks: list[int] = []

    def check(board: OutstandingBoard, now: float, got: Replica, stale: list[int]) -> None:
        want = min(board.replicas, key=Replica.outstanding)
        assert got is want, (now, got.index, want.index)
        picks.append(got.index)

    with wrapped_board_least(check):
        yield picks


def board_run_equals_loop_run(tiers, work, checked=None, **kw):
    """The run on boards (each pick checked by ``checked``, a context manager yielding the
    picks; default :func:`board_checked_against_min`) and the board alone equal the run with
    one loop over the replicas (no board), field by field; returns the picks checked."""
    saved = cluster.BOARD_MIN
    cluster.BOARD_MIN = 10**9
    try:
        plain = simulate(tiers, work, **kw)
    finally:
        cluster.BOARD_MIN = saved
    with (checked or board_checked_against_min)() as picks:
        checked = simulate(tiers, work, **kw)
    cluster.BOARD_MIN = 2
    try:
        board = simulate(tiers, work, **kw)  # the board alone: nothing else catches up
    finally:
        cluster.BOARD_MIN = saved
    assert_identical(board, plain)
    assert_identical(checked, plain)
    return picks


def tied(work: Workload) -> Workload:
    """``work`` with arrivals rounded to 10 ms: many arrivals at one instant, some at a step's
    end."""
    work.arrival_s = np.round(work.arrival_s, 2)
    return work


lazy_work = st.builds(make_workload, n=st.integers(1, 80), seed=st.integers(0, 10_000),
                      rate=st.floats(5.0, 600.0), max_in=st.integers(2, 900),
                      max_out=st.integers(2, 300))


@fast
@given(lazy_work, limits, st.integers(2, 12), st.booleans(), st.booleans(), st.booleans(),
       st.booleans())
def test_lazy_fleet_picks_the_least_outstanding_replica(work, lim, replicas, cache, spec,
                                                        per_iteration, fast_paths):
    """One tier, no escalation: lazy replicas (event-driven with ``fast_paths`` off)."""
    kw = {}
    if spec:  # every decoder verifies its k = 3 tokens each step
        kw = {"spec_decoding": SpecDecoding(3, (0.7,), seed=1)}
        lim["max_num_batched_tokens"] = max(lim["max_num_batched_tokens"],
                                            4 * lim["max_num_seqs"])
    tiers = [tier("a", replicas, balancer="least_tokens", enable_prefix_caching=cache,
                  **kw, **lim)]
    picks = board_run_equals_loop_run(tiers, tied(work), fast_forward=not per_iteration,
                                      fast_paths=fast_paths, sample_every=0.01)
    assert len(picks) == len(work)


@fast
@given(st.builds(make_workload, n=st.integers(1, 60), seed=st.integers(0, 10_000),
                 rate=st.floats(5.0, 400.0), max_in=st.integers(2, 900),
                 max_out=st.integers(2, 300), tiers=st.just(2), escalate=st.just(0.4)),
       limits, st.integers(2, 6), st.integers(2, 4), st.booleans())
def test_cascade_picks_the_least_outstanding_replica(work, lim, first, second, fast_paths):
    """Escalation: event-driven replicas, a finished request dispatched to the next tier from
    inside a replica's step."""
    tiers = [tier("a", first, **lim), tier("b", second, **lim)]
    board_run_equals_loop_run(tiers, tied(work), fast_paths=fast_paths)


@fast
@given(st.integers(1, 50), st.integers(0, 10_000), st.sampled_from([0.0, 0.02, 0.5]),
       st.integers(2, 5))
def test_closed_loop_picks_the_least_outstanding_replica(n, seed, think, replicas):
    """Followers sent when a request finishes, at once or after a think time."""
    rng = np.random.default_rng(seed)
    follows = np.where(rng.random(n) < 0.6, np.arange(n) - 1, -1)
    follows[0] = -1
    work = Workload(np.round(np.sort(rng.uniform(0, 1, n)), 2), rng.integers(1, 500, n),
                    rng.integers(1, 80, n), np.zeros(n, np.int64), follows=follows,
                    think_s=think)
    board_run_equals_loop_run([tier(replicas=replicas)], work)


@fast
@given(lazy_work, st.integers(2, 4), st.integers(2, 4), st.sampled_from([0.0, 0.01, 0.2]),
       st.integers(40, 300))
def test_disaggregated_tier_picks_the_least_outstanding_replica(work, prefill, decode,
                                                                latency, blocks):
    """A split tier: prefill replicas hold a request's blocks until its KV has moved (their
    release wakes them), decode replicas take requests handed over."""
    split = Disagg(prefill, decode, 1e6, latency, 100.0)
    picks = board_run_equals_loop_run(
        [tier(replicas=prefill + decode, disagg=split, num_blocks=blocks)], tied(work))
    assert len(picks) >= len(work)


def test_a_step_ending_at_the_pick_is_read_again():
    """An escalation dispatched from a step's end at ``t`` picks after another replica's step
    that ended at the same ``t`` (an event before it): that replica's entry, kept until ``t``,
    is read again at ``t``. Tier b's replica 0 prefills request 0 (500 tokens, one output)
    from 0 to ``t``; request 2 goes to replica 1 at 1 ms (replica 0's entry then: 499 until
    ``t``); request 1's same prefill on tier a ends at ``t`` too and escalates to b, where
    replica 0 is idle by then and is picked."""
    work = Workload(np.array([0.0, 0.0, 0.001]), np.array([500, 500, 10]),
                    np.array([1, 1, 5]), np.array([1, 0, 1]), np.array([-1, 1, -1]))
    tiers = [tier("a", 1), tier("b", 2)]
    picks = board_run_equals_loop_run(tiers, work)
    assert picks == [0, 1, 0]


def test_a_released_prefill_replica_is_read_again():
    """A prefill replica whose next request waits for the blocks of one still moving to the
    decoder is idle (its entry kept for good) until the transfer ends and frees them; that
    release marks its entry stale, so the pick at 0.291 s sees it busy again (a case found
    by search: without the mark the board picked replica 1 there, the loop replica 0)."""
    work = Workload(np.array([0.047, 0.057, 0.08, 0.118, 0.196, 0.217, 0.24, 0.291, 0.367,
                              0.401]),
                    np.array([97, 538, 334, 281, 286, 416, 372, 145, 455, 466]),
                    np.array([28, 23, 9, 10, 19, 19, 21, 26, 9, 28]), np.zeros(10, np.int64))
    split = Disagg(2, 1, 1e6, 0.01, 100.0)
    board_run_equals_loop_run([tier(replicas=3, disagg=split, num_blocks=40)], work)


def test_lockstep_ranks_get_no_board():
    """A request to one lockstep rank can cut every rank's stretch, which the board would not
    see: such a tier keeps the loop."""
    work = make_workload(40, seed=2, rate=200.0)
    with board_checked_against_min() as picks:
        simulate([tier(replicas=4, lockstep=2)], work)
    assert picks == []


def test_a_large_tier_is_on_a_board():
    """From BOARD_MIN replicas up, a least-tokens tier picks on its board."""
    reps = [Replica.__new__(Replica) for _ in range(cluster.BOARD_MIN)]
    for rep in reps:
        rep.board = None
    assert cluster.LeastTokens(reps).board is not None
    assert cluster.LeastTokens(reps[1:]).board is None
