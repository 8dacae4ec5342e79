"""Round 31's speed work, exact: the least-outstanding board's reads, written out in
:meth:`OutstandingBoard.least` (one bisection of the decode stretch for both numbers), equal
``Replica.outstanding()`` and ``Replica.steady_until(now)`` for every entry read again, and a
run on boards equals the run with one loop over the replicas in every result field; a load
series, its rows written without a call each, equals a plain integration of the same records
bit for bit."""

from __future__ import annotations

import contextlib
from math import floor

from hypothesis import given
from hypothesis import strategies as st
from test_engine import make_workload
from test_engine_speed_paths import fast, limits, tier
from test_round30_bal import board_run_equals_loop_run, lazy_work, tied, wrapped_board_least

from tiersim.engine import simulate
from tiersim.engine.load_series import LoadSeries
from tiersim.engine.replica import OutstandingBoard, Replica


@contextlib.contextmanager
def reads_checked_against_methods():
    """Every least-tokens tier of two or more replicas on a board whose every pick is checked:
    each entry it read again holds its replica's ``outstanding()`` and ``steady_until(now)``,
    and the replica picked is ``min(replicas, key=Replica.outstanding)``; yields the list of
    picks, ``(replica index, entries read mid-stretch)``."""
    picks: list[tuple[int, int]] = []

    def check(board: OutstandingBoard, now: float, got: Replica, stale: list[int]) -> None:
        mid_stretch = 0
        for slot in stale:
            rep = board.replicas[slot]
            mid_stretch += rep._ends is not None
            assert board.value[slot] == rep.outstanding(), (now, slot)
            assert board.until[slot] == rep.steady_until(now), (now, slot)
        assert got is min(board.replicas, key=Replica.outstanding), now
        picks.append((got.index, mid_stretch))

    with wrapped_board_least(check):
        yield picks


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


def plain_series(every: float, records: list[tuple[float, int, int, int]]) -> list[tuple]:
    """The rows of :class:`LoadSeries` by a plain integration: per interval of the grid, each
    state's time in it times its value, added in record order, over the interval's width; a
    row equal to the one before it is not written."""
    rows: list[tuple] = []

    def write(t, run, wait, kv, peak):
        if (run, wait, kv, peak) != (rows[-1][1:] if rows else (0.0, 0.0, 0.0, 0)):
            rows.append((t, float(run), float(wait), float(kv), peak))  # as the columns hold

    k, t, state = 0, 0.0, (0, 0, 0)
    sums, peak = [0.0, 0.0, 0.0], 0
    for now, *new in [*records, (None, 0, 0, 0)]:
        end = (k + 1) * every
        if now is None or now >= end:  # close the interval (finish: the last one)
            dt = end - t
            peak = max(peak, state[1]) if dt > 0.0 else peak
            write(k * every, *((s + v * dt) / (end - k * every) for s, v in zip(sums, state)),
                  peak)
            nxt = floor((end if now is None else now) / every)
            nxt += (nxt + 1) * every <= (end if now is None else now)
            if nxt > k + 1:
                write(end, *state, state[1])
            k, t, sums, peak = nxt, nxt * every, [0.0, 0.0, 0.0], 0
            if now is None:
                write(k * every, *state, state[1])
                return rows
        dt = now - t
        sums = [s + v * dt for s, v in zip(sums, state)]
        if state[1] > peak and dt > 0.0:
            peak = state[1]
        t, state = now, tuple(new)
    return rows


@given(st.sampled_from([1e-3, 0.007, 0.3, 1.0, 2.5]),
       st.lists(st.tuples(st.floats(0.0, 3.0), st.integers(0, 5), st.integers(0, 5),
                          st.integers(0, 50)), max_size=60))
def test_series_rows_equal_a_plain_integration(every, steps):
    """Records at sorted times (several at one instant, idle spells over whole intervals),
    the rows compared as the bytes of their floats (a -0.0 for 0.0 would differ)."""
    t, records = 0.0, []
    for gap, *state in steps:
        t += gap if gap > 1.0 else gap * gap  # many records inside one interval too
        records.append((t, *state))
    series = LoadSeries(every)
    for record in records:
        series.record(*record)
    got, want = list(series.finish()), plain_series(every, records)
    assert [repr(row) for row in got] == [repr(row) for row in want]
