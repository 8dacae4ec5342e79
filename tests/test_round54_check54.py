"""Round 54 (helper check54): an independent check of burst54's decode batch counted on the
trace's arrivals (``tiersim.inputs.Arrivals``, ``pooled_busy_batch``), by other paths than
``tests/test_round54_burst54.py``: the closed form against ``scipy.stats.poisson`` and against
an event simulation of k replicas written here (not the engine); the count against one worked
out by hand, event by event; edge cases; that the rows' order is not read; what the count
costs. Every figure here is arithmetic on made-up arrivals; nothing is modelled or measured.
"""

from __future__ import annotations

import heapq
import time

import numpy as np
import pandas as pd
import pytest
from scipy.stats import poisson as scipy_poisson

from tiersim.inputs import (
    MIN_ARRIVALS,
    Arrivals,
    _counted_busy_batch,
    busy_batch,
    decode_batch,
    pooled_busy_batch,
    price_sample,
)


def direct(load: float, replicas: float) -> float:
    """``k x load / E[min(N, k)]``, ``N`` Poisson of mean ``k x load``, summed from
    scipy.stats' pmf term by term: ``E[min(N, k)] = sum_n min(n, k) P(N = n)``."""
    law = scipy_poisson(load * replicas)
    top = int(np.floor(replicas))
    n = np.arange(top + 1)
    expected = float((n * law.pmf(n)).sum() + replicas * law.sf(top))
    return max(1.0, load * replicas / expected)


def poisson_times(n: int, rate: float, seed: int) -> np.ndarray:
    """``n`` Poisson arrival times of ``rate`` a second, from 0 (seeded)."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, n - 1)
    return np.concatenate(([0.0], np.cumsum(gaps)))


def simulate(times: np.ndarray, seconds: float, replicas: int, pooled: bool) -> float:
    """k replicas, each arrival sent to the replica holding the fewest requests (ties: the
    first), each request ``seconds`` in the engine: the time-average of the requests held over
    that of the replicas holding any, from an event heap. ``pooled``: when a replica empties
    while another holds two or more, one of those moves to it (the work shared as the count's
    ``min(N, k)`` takes it); else no request moves (join-the-shortest-queue)."""
    held = [0] * replicas
    ends: list[tuple[float, int, int]] = []  # (end, request, replica)
    where: dict[int, int] = {}
    now = float(times[0])
    seq_s = busy_s = 0.0
    i = 0
    while i < len(times) or ends:
        arrival = i < len(times) and (not ends or times[i] < ends[0][0])
        at = float(times[i]) if arrival else ends[0][0]
        seq_s += sum(held) * (at - now)
        busy_s += sum(1 for h in held if h) * (at - now)
        now = at
        if arrival:
            pick = min(range(replicas), key=lambda r: (held[r], r))
            held[pick] += 1
            where[i] = pick
            heapq.heappush(ends, (at + seconds, i, pick))
            i += 1
            continue
        _, req, _ = heapq.heappop(ends)
        gone = where.pop(req)
        held[gone] -= 1
        if pooled and held[gone] == 0:
            full = max(range(replicas), key=lambda r: held[r])
            if held[full] >= 2:
                moved = next(q for q, r in where.items() if r == full)
                where[moved], held[full], held[gone] = gone, held[full] - 1, 1
    return seq_s / busy_s


# (a) the closed form by other paths ------------------------------------------------------


@pytest.mark.parametrize("replicas", [1, 2, 3, 2.5, 4, 17, 64, 300])
def test_the_closed_form_is_scipy_s_poisson(replicas):
    """``pooled_busy_batch`` (``scipy.special.pdtr`` tail sums) equals the expectation summed
    from scipy.stats' pmf, at light to heavy loads and at a replica count between whole ones
    (the closed form's fractional term: ``min(N, k)`` is ``k`` where ``N`` passes it)."""
    for load in (1e-6, 0.01, 0.3, 1.0, 2.5, 7.0, 40.0, 500.0):
        assert pooled_busy_batch(load, replicas) == pytest.approx(direct(load, replicas),
                                                                  rel=1e-9), load


@pytest.mark.parametrize(("load", "replicas"), [(0.5, 2), (1.0, 4), (3.0, 4), (1.0, 17)])
def test_a_simulation_of_k_replicas_agrees(load, replicas):
    """4,000 Poisson arrivals to k replicas (a simulation written here, not the engine):
    with the work shared (a replica that empties takes a request off a fuller one) the
    simulated batch is the count's to rounding (the same ``N(t)``, reached by another path)
    and within 5 % of the closed form (at 4,000 arrivals the count scatters by about 0.6 %).
    Without moving requests (join-the-shortest-queue, as a dispatcher does) a replica can
    stand idle while another holds two, so fewer are busy than ``min(N, k)``: the batch is no
    smaller than the closed form, and no larger than one replica taking its share of the
    arrivals independently (round 53's ``load / (1 - exp(-load))``). The count is a lower
    bound on what such a dispatcher holds (0.3 % to 5 % below it here)."""
    times = poisson_times(4_000, rate=replicas * 1.0, seed=11)
    seconds = load  # one request a second a replica
    arrivals = Arrivals.of(times)
    counted = arrivals.busy_batch(seconds, arrivals.rate / replicas)
    assert simulate(times, seconds, replicas, pooled=True) == pytest.approx(counted, rel=1e-9)
    assert counted == pytest.approx(pooled_busy_batch(load, replicas), rel=0.05)
    shortest = simulate(times, seconds, replicas, pooled=False)
    assert counted - 1e-9 <= shortest <= busy_batch(load)


# (b) the count on a hand-made list ---------------------------------------------------------

HAND = np.array([0.0, 1.0, 1.0, 2.5, 6.0])
"""Five arrivals, each 2 s in the engine (ends 2, 3, 3, 4.5, 8). Event by event (an end
before an arrival at the same time): N = 1 on [0, 1), 3 on [1, 2), 2 on [2, 2.5), 3 on
[2.5, 3), 1 on [3, 4.5), 0 on [4.5, 6), 1 on [6, 8). The integral of N: 1 + 3 + 1 + 1.5 +
1.5 + 0 + 2 = 10 (5 x 2 s). Of min(N, 2): 1 + 2 + 1 + 1 + 1.5 + 0 + 2 = 8.5; of min(N, 1):
1 + 1 + 0.5 + 0.5 + 1.5 + 0 + 2 = 6.5; of min(N, 3): 10."""


def test_the_count_is_the_one_worked_out_by_hand():
    """:data:`HAND`'s batch: 10 / 6.5 on one replica, 10 / 8.5 on two, 1 on three or more;
    the same through :class:`Arrivals` with the list repeated 40 times 10 s apart (200
    arrivals, so the times are kept; no request spans two copies), the replicas read back as
    the table's rate over the rate given."""
    assert _counted_busy_batch(HAND, 2.0, 1.0) == pytest.approx(10 / 6.5, rel=1e-12)
    assert _counted_busy_batch(HAND, 2.0, 2.0) == pytest.approx(10 / 8.5, rel=1e-12)
    assert _counted_busy_batch(HAND, 2.0, 3.0) == 1.0
    assert _counted_busy_batch(HAND, 2.0, 1.5) == pytest.approx(10 / 7.5, rel=1e-12)
    # 1.5 replicas: min(N, 1.5) is 1, 1.5, 1.5, 1.5, 1, 0, 1 on those pieces: 7.5
    repeated = (HAND[None, :] + 10.0 * np.arange(40)[:, None]).ravel()
    arrivals = Arrivals.of(repeated)
    assert arrivals.times is not None and len(arrivals.times) == MIN_ARRIVALS
    for replicas, want in ((1, 10 / 6.5), (2, 10 / 8.5), (3, 1.0)):
        got = arrivals.busy_batch(2.0, arrivals.rate / replicas)
        assert got == pytest.approx(want, rel=1e-12), replicas


# (c) edge cases ---------------------------------------------------------------------------


def test_one_replica_of_a_short_table_prices_as_round_53_to_the_bit():
    """Under :data:`MIN_ARRIVALS` arrivals on one replica the decode batch is round 53's
    (``decode_batch`` without arrivals: ``busy_batch``), to the bit, at light to heavy loads;
    and ``pooled_busy_batch`` at one replica is ``busy_batch`` to the bit."""
    arrivals = Arrivals.of(poisson_times(150, rate=3.0, seed=2))
    assert arrivals.times is None
    prefill, output = np.array([0.02, 0.05]), np.array([100.0, 300.0])

    def step(seqs: float) -> float:
        return 0.01 + 0.0004 * seqs

    for scale in (0.01, 0.3, 1.0, 5.0):
        rate = arrivals.rate * scale
        scaled = Arrivals(rate=rate)  # the same table, its rate on one replica
        assert decode_batch(rate, prefill, output, step, 256, scaled) == decode_batch(
            rate, prefill, output, step, 256)
    for load in (0.0, 1e-13, 1e-6, 0.4, 2.0, 900.0):
        assert pooled_busy_batch(load, 1) == busy_batch(load)
        assert pooled_busy_batch(load, 0.5) == busy_batch(load)  # under one: one replica


def test_a_trace_shorter_than_the_time_in_the_engine():
    """300 arrivals evenly over 1 s, each 100 s in the engine, 3 replicas: the count is
    ``30,000 / (3 x 101 - 6 / 299)`` (min(N, 3) is 1 and 2 for a gap each while the first
    arrive, 2 and 1 for a gap each while the last leave), below the 100 sequences a replica
    carries on average: the fleet fills and drains once."""
    arrivals = Arrivals.of(np.linspace(0.0, 1.0, 300))
    rate = arrivals.rate / 3
    assert arrivals.busy_batch(100.0, rate) == pytest.approx(30_000 / (303 - 6 / 299),
                                                             rel=1e-12)
    assert arrivals.busy_batch(100.0, rate) < rate * 100.0


def test_no_span_no_load_and_tiny_times_are_one_sequence():
    """All arrivals at one instant, one arrival, none finite: no load (None, and the price
    sample's rate 0 gives a batch of 1); a time in the engine of 0, a subnormal or a rate of
    0: 1 sequence, with no division by zero."""
    assert Arrivals.of(np.full(600, 3.0)) is None
    assert Arrivals.of(np.array([3.0])) is None
    assert Arrivals.of(np.array([np.nan, np.inf, -np.inf])) is None
    df = pd.DataFrame({"input_tokens": np.full(600, 100), "output_tokens": np.full(600, 10),
                       "arrival_s": np.full(600, 3.0)})
    mix = price_sample(df, seed=1, replicas=4)
    assert mix.rate == 0.0 and mix.arrivals is None
    assert decode_batch(mix.rate, np.full(3, 0.1), np.full(3, 10.0), lambda b: 0.01, 64,
                        mix.arrivals) == 1.0
    arrivals = Arrivals.of(np.linspace(0.0, 10.0, 400))
    for seconds in (0.0, -1.0, 5e-324, 1e-300):
        assert arrivals.busy_batch(seconds, arrivals.rate) == 1.0, seconds
    assert arrivals.busy_batch(1.0, 0.0) == 1.0
    assert Arrivals(rate=5.0).busy_batch(5e-324, 1.0) == 1.0


def test_huge_replica_counts_and_the_cap():
    """More replicas than requests ever in the engine: every request a replica of its own,
    a batch of exactly 1 counted, and about 1 in the closed form (10^5 replicas, finite, no
    overflow); load past what the cap allows stops at ``max_num_seqs`` on both paths."""
    times = poisson_times(1_000, rate=10.0, seed=4)
    arrivals = Arrivals.of(times)
    for replicas in (1e3, 1e5, 1e9):
        assert arrivals.busy_batch(0.5, arrivals.rate / replicas) == 1.0
    assert pooled_busy_batch(1e-3, 1e5) == pytest.approx(1.0, abs=1e-9)
    assert np.isfinite(pooled_busy_batch(50.0, 1e5))
    prefill, output = np.zeros(2), np.full(2, 1_000.0)
    for given in (arrivals, Arrivals(rate=arrivals.rate)):  # counted; closed form
        got = decode_batch(arrivals.rate / 2, prefill, output, lambda b: 0.05, 48, given)
        assert got == 48.0


def test_no_nan_or_inf_over_random_tables():
    """Random tables (bursts, ties, every request at two instants, 200 to 900 arrivals),
    times in the engine from 1e-9 to 1e4 s and 1 to 50 replicas: the batch is finite, at
    least 1, and at most the table's size. From 1 ms up it is monotone in the time in the
    engine (the fixed point's rounds rise on it: ``decode_batch``'s least fixed point); under
    a microsecond against arrivals tens of seconds from the first the pieces' lengths are
    differences of times a billion times larger, and it wobbles by about 1e-8 of itself."""
    rng = np.random.default_rng(54)
    for trial in range(40):
        n = int(rng.integers(MIN_ARRIVALS, 900))
        kind = trial % 3
        if kind == 0:
            times = np.round(rng.uniform(0, 100, n), 1)  # ties
        elif kind == 1:
            times = np.repeat(rng.uniform(0, 50, n // 50 + 1), 50)[:n]  # bursts of 50
        else:
            times = np.where(rng.random(n) < 0.5, 0.0, 7.0)  # two instants
        arrivals = Arrivals.of(times)
        replicas = float(rng.integers(1, 51))
        rate = arrivals.rate / replicas
        batches = [arrivals.busy_batch(s, rate) for s in np.geomspace(1e-9, 1e4, 60)]
        assert all(np.isfinite(b) and 1.0 <= b <= n for b in batches), trial
        batches = [arrivals.busy_batch(s, rate) for s in np.geomspace(1e-3, 1e4, 60)]
        assert all(b2 >= b1 * (1 - 1e-12) for b1, b2 in zip(batches, batches[1:])), trial


# (d) determinism and the rows' order ------------------------------------------------------


def test_the_rows_order_is_not_read():
    """The same arrivals in shuffled rows give the same times, rate and batch to the bit; the
    price sample of a table of at most 256 rows with the same lengths on every row gives the
    same decode batch whatever the order; a fresh :class:`Arrivals` (no cache) gives what the
    cached one gave."""
    rng = np.random.default_rng(8)
    times = np.repeat(poisson_times(60, rate=0.5, seed=8), 4)  # 240 arrivals, bursts of 4
    shuffled = times[rng.permutation(len(times))]
    one, two = Arrivals.of(times), Arrivals.of(shuffled)
    assert np.array_equal(one.times, two.times) and one.rate == two.rate
    for seconds in (0.5, 3.0, 40.0):
        first = one.busy_batch(seconds, one.rate / 4)
        assert first == two.busy_batch(seconds, two.rate / 4)
        assert first == one.busy_batch(seconds, one.rate / 4)  # cached
        assert first == Arrivals.of(times).busy_batch(seconds, one.rate / 4)  # fresh
    df = pd.DataFrame({"input_tokens": np.full(240, 700), "output_tokens": np.full(240, 90),
                       "arrival_s": times})
    mixes = [price_sample(frame, seed=3, replicas=4)
             for frame in (df, df.iloc[rng.permutation(240)].reset_index(drop=True))]

    def step(seqs: float) -> float:
        return 0.02 + 0.001 * seqs

    got = [decode_batch(mix.rate, np.full(len(mix.prompt), 0.05),
                        mix.output.astype(float), step, 256, mix.arrivals) for mix in mixes]
    assert got[0] == got[1] > 1.0


# (e) the cost of the count ----------------------------------------------------------------


def test_the_count_is_cheap():
    """One count over 8,819 arrivals (the bundled Azure code trace's hour) takes a few
    milliseconds at most (0.44 ms on the shared 2-core machine, check54), and the cache
    makes a repeated ``seconds`` free. The bound is loose (a shared machine)."""
    arrivals = Arrivals.of(poisson_times(8_819, rate=24.5, seed=1))
    start = time.perf_counter()
    for seconds in np.linspace(0.5, 20.0, 50):
        arrivals.busy_batch(float(seconds), arrivals.rate / 17)
    assert (time.perf_counter() - start) / 50 < 0.02
    start = time.perf_counter()
    for seconds in np.linspace(0.5, 20.0, 50):
        arrivals.busy_batch(float(seconds), arrivals.rate / 17)
    assert time.perf_counter() - start < 0.05


def test_decode_batch_is_the_least_fixed_point_found_by_a_scan():
    """Bursty arrivals (Poisson bursts of 1 to 30 at once) on 4 replicas, a step growing with
    the batch: the least ``b`` where the counted batch at ``b``'s time in the engine is no more
    than ``b`` (a scan from 1 in steps of 0.05, then bisection to 1e-9) is where
    ``decode_batch``'s rounds stop (within the rounds' millionth): 4.70, 5.19 and 6.72
    sequences, where Poisson arrivals to one replica give 1.44-1.93; at the cap (64) where
    there is none below it."""
    rng = np.random.default_rng(21)
    starts = poisson_times(100, rate=0.05, seed=21)
    times = np.repeat(starts, rng.integers(1, 31, len(starts)))
    arrivals = Arrivals.of(times)
    rate = arrivals.rate / 4
    prefill, output = np.array([0.05, 0.2]), np.array([150.0, 450.0])
    prefilling = rate * float(np.mean(prefill))
    for base, slope in ((0.012, 0.0003), (0.02, 0.002), (0.005, 0.01), (0.05, 0.05)):

        def step(seqs: float, base: float = base, slope: float = slope) -> float:
            return base + slope * seqs

        def gap(b: float, step=step) -> float:
            seconds = float(np.mean(prefill + output * step(b) / (1.0 - prefilling)))
            return arrivals.busy_batch(seconds, rate) - b

        grid = np.arange(1.0, 64.0, 0.05)
        above = next((b for b in grid if gap(b) <= 0.0), None)
        got = decode_batch(rate, prefill, output, step, 64, arrivals)
        if above is None:
            assert got == 64.0, (base, slope)
            continue
        low, high = max(1.0, above - 0.05), above
        while high - low > 1e-9:
            low, high = (low, (low + high) / 2) if gap((low + high) / 2) <= 0 else (
                (low + high) / 2, high)
        assert got == pytest.approx(high, rel=1e-5), (base, slope)
