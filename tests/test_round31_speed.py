"""Round 31's speed work, exact: the least-outstanding board's reads, written out in
:meth:`OutstandingBoard.least` (one bisection of the decode stretch for both numbers), equal
``Replica.outstanding()`` and ``Replica.steady_until(now)`` for every entry read again, and a
run on boards equals the run with one loop over the replicas in every result field."""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st
from test_engine import make_workload
from test_engine_speed_paths import fast, limits, tier
from test_round30_bal import board_run_equals_loop_run, lazy_work, tied

from tiersim.engine import cluster, simulate
from tiersim.engine.replica import OutstandingBoard, Replica


@contextlib.contextmanager
def reads_checked_against_methods():
    """Every least-tokens tier of two or more replicas on a board whose every pick is checked:
    each entry it read again holds its replica's ``outstanding()`` and ``steady_until(now)``,
    and the replica picked is ``min(replicas, key=Replica.outstanding)``; yields the list of
    picks, ``(replica index, entries read mid-stretch)``."""
    picks: list[tuple[int, int]] = []
    board_least, board_min = OutstandingBoard.least, cluster.BOARD_MIN

    def least(board: OutstandingBoard, now: float) -> Replica:
        stale = [slot for slot, until in enumerate(board.until) if until <= now]
        got = board_least(board, now)
        mid_stretch = 0
        for slot in stale:
            rep = board.replicas[slot]
            mid_stretch += rep._ends is not None
            assert board.value[slot] == rep.outstanding(), (now, slot)
            assert board.until[slot] == rep.steady_until(now), (now, slot)
        assert got is min(board.replicas, key=Replica.outstanding), now
        picks.append((got.index, mid_stretch))
        return got

    OutstandingBoard.least, cluster.BOARD_MIN = least, 2
    try:
        yield picks
    finally:
        OutstandingBoard.least, cluster.BOARD_MIN = board_least, board_min


@fast
@given(lazy_work, limits, st.integers(2, 16), st.booleans(), st.booleans())
def test_board_reads_equal_the_replicas_own(work, lim, replicas, cache, fast_paths):
    """Lazy replicas (event-driven with ``fast_paths`` off), arrivals tied with each other and
    with step ends, decode stretches cut by arrivals."""
    tiers = [tier("a", replicas, balancer="least_tokens", enable_prefix_caching=cache, **lim)]
    picks = board_run_equals_loop_run(tiers, tied(work), checked=reads_checked_against_methods,
                                      fast_paths=fast_paths)
    assert len(picks) == len(work)


@fast
@given(st.builds(make_workload, n=st.integers(1, 60), seed=st.integers(0, 10_000),
                 rate=st.floats(5.0, 400.0), max_in=st.integers(2, 900),
                 max_out=st.integers(2, 300), tiers=st.just(2), escalate=st.just(0.4)),
       limits, st.integers(2, 6), st.integers(2, 4))
def test_cascade_board_reads_equal_the_replicas_own(work, lim, first, second):
    """Escalation: event-driven replicas, a request dispatched from inside a replica's step."""
    tiers = [tier("a", first, **lim), tier("b", second, **lim)]
    board_run_equals_loop_run(tiers, tied(work), checked=reads_checked_against_methods)


def test_picks_read_replicas_in_the_middle_of_a_decode_stretch():
    """The written-out bisection is exercised: many arrivals land while replicas decode."""
    work = make_workload(300, seed=3, rate=400.0, max_in=200, max_out=300)
    with reads_checked_against_methods() as picks:
        simulate([tier("a", 8)], work)
    assert len(picks) == 300
    assert sum(mid for _, mid in picks) > 100

