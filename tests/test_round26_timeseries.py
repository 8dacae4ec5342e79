"""The time series are exact time-weighted means: each replica's rows, held until its next row,
integrate to what requests.parquet says was running and waiting (Little's law), and each bucket
the report plots is the exact mean over its interval (round 26)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from hypothesis import given
from hypothesis import strategies as st
from reference_scheduler import assert_same_per_request
from test_engine import _tier, fast, limits, workloads

from tiersim.engine import simulate
from tiersim.engine.load_series import LoadSeries
from tiersim.report.figures import load_over_time
from tiersim.report.load import load_dir
from tiersim.report.timeseries import grid_edges, tier_peaks
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def area(rows: list[tuple], column: int) -> float:
    """The integral over time of one replica's rows (each holds until the next; the last row,
    the idle state, must hold 0)."""
    times = np.array([r[0] for r in rows])
    values = np.array([r[column] for r in rows], dtype=float)
    assert values[-1] == 0.0, rows[-1]
    return float(np.sum(values[:-1] * np.diff(times)))


@fast
@given(workloads, limits, st.integers(1, 3), st.sampled_from([None, 1e-9, 0.01, 0.3, 50.0]),
       st.booleans())
def test_the_series_integrate_to_the_time_requests_spent_running_and_waiting(work, lim, reps,
                                                                             every, lockstep):
    spec = _tier(lim)
    spec.replicas = reps
    spec.lockstep = reps if lockstep else 1  # data-parallel ranks stepped together
    res = simulate([spec], work, sample_every=every)
    rows = [r for r in res.samples["t"] if r]
    running = sum(area(r, 1) for r in rows)
    waiting = sum(area(r, 2) for r in rows)
    done = ~np.isnan(res.finish_s)
    in_fleet = float(np.sum(res.finish_s[done] - res.arrival_s[done]))
    assert running + waiting == pytest.approx(in_fleet, rel=1e-9, abs=1e-9)
    if not res.preemptions.any():  # a preempted request waits again, beyond its queue_s
        assert waiting == pytest.approx(float(res.queue_s[done].sum()), rel=1e-9, abs=1e-9)


def _exact_means(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket between ``edges``: the time-weighted mean count of intervals
    [start, end) covering it."""
    lo, hi = edges[:-1, None], edges[1:, None]
    overlap = np.clip(np.minimum(end[None, :], hi) - np.maximum(start[None, :], lo), 0.0, None)
    return overlap.sum(axis=1) / np.diff(edges)


def test_each_plotted_bucket_is_the_exact_mean_from_requests_parquet(tmp_path):
    run_scenario(load_scenario(TINY), tmp_path, scenario_path=TINY)
    req = pd.read_parquet(tmp_path / "requests.parquet")
    assert not req["preemptions"].any() and req["completed"].all()
    panel = load_over_time(load_dir(tmp_path))
    by_name = {(t.name, t.yaxis): t for t in panel.fig.data}
    edges = None
    for tier, rows in req.groupby("tier"):
        admitted = (rows["arrival_s"] + rows["queue_s"]).to_numpy()
        running = by_name[(tier, "y")]
        waiting = by_name[(tier, "y2")]
        x = np.asarray(running.x, dtype=float)
        edges = np.r_[x, 2 * x[-1] - x[-2]]
        want_run = _exact_means(admitted, rows["finish_s"].to_numpy(), edges)
        want_wait = _exact_means(rows["arrival_s"].to_numpy(), admitted, edges)
        np.testing.assert_allclose(running.y, want_run, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(waiting.y, want_wait, rtol=1e-9, atol=1e-9)
    assert edges[-1] >= req["finish_s"].max()


def test_a_series_row_holds_each_intervals_means_and_its_longest_queue():
    series = LoadSeries(1.0)
    series.record(0.5, 2, 0, 10)  # [0.5, 1.5): 2 running
    series.record(1.5, 1, 3, 12)  # [1.5, 2.25): 1 running, 3 waiting
    series.record(2.25, 0, 5, 12)  # a state that lasts no time: not a maximum
    series.record(2.25, 0, 0, 0)  # idle from 2.25
    rows = series.finish()
    assert rows == [(0.0, 1.0, 0.0, 5.0, 0), (1.0, 1.5, 1.5, 11.0, 3),
                    (2.0, 0.25, 0.75, 3.0, 3), (3.0, 0.0, 0.0, 0.0, 0)]


def test_an_idle_spell_is_one_row_and_the_state_holds_over_whole_intervals():
    series = LoadSeries(1.0)
    series.record(0.0, 4, 1, 8)
    series.record(3.5, 0, 0, 0)
    assert series.finish() == [(0.0, 4.0, 1.0, 8.0, 1), (3.0, 2.0, 0.5, 4.0, 1),
                               (4.0, 0.0, 0.0, 0.0, 0)]


def test_the_dotted_queue_is_the_longest_on_one_replica():
    frame = pd.DataFrame({"tier": "t", "replica": [0, 0, 1, 1], "time_s": [0.0, 1.0, 0.0, 2.0],
                          "waiting_max": [3, 0, 2, 0]})
    peak = tier_peaks(frame, "time_s", frame["waiting_max"], np.array([0.0, 1.0, 2.0, 3.0]))
    assert peak["t"].tolist() == [3.0, 2.0, 0.0]


def test_report_buckets_are_whole_grid_intervals():
    edges = grid_edges(0.3, 1000.0, 600)
    assert len(edges) - 1 <= 600 and edges[-1] >= 1000.0
    k = np.arange(len(edges)) * 6  # 3334 intervals, 6 to a bucket
    assert edges.tolist() == [float(i) * 0.3 for i in k]  # as the engine writes row times


@fast
@given(workloads, limits)
def test_a_run_without_series_serves_every_request_the_same(work, lim):
    with_series = simulate([_tier(lim)], work)
    without = simulate([_tier(lim)], work, series=False)
    assert without.samples == {"t": [[]]}
    assert_same_per_request(with_series, without)


def test_the_planners_sizing_runs_keep_no_series(monkeypatch):
    from types import SimpleNamespace

    from tiersim.plan import evaluate

    seen = []
    monkeypatch.setattr(evaluate, "simulate", lambda *a, **k: seen.append(k) or "result")
    counter = SimpleNamespace(sim_wall_s=0.0, simulations=0)
    assert evaluate.SimEvaluator._simulate(counter, [], None, None) == "result"
    assert seen == [{"series": False}] and counter.simulations == 1
