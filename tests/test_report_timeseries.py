"""The report's time series are time-weighted per bucket, checked against a hand-built case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.report.timeseries import Step, add_steps, bucket, bucketed, replica_step


def hand_built() -> pd.DataFrame:
    """Two replicas of one tier.

    replica 0: queue 2 on [0, 1), 0 from 1 (it went idle), 3 on [5, 6), 0 from 6.
    replica 1: queue 1 on [2, 8), 0 from 8.
    Tier sum: 2 on [0,1), 0 on [1,2), 1 on [2,5), 4 on [5,6), 1 on [6,8), 0 from 8.
    """
    rows = [("t", 0, 0.0, 2), ("t", 0, 1.0, 0), ("t", 0, 5.0, 3), ("t", 0, 6.0, 0),
            ("t", 1, 2.0, 1), ("t", 1, 8.0, 0)]
    return pd.DataFrame(rows, columns=["tier", "replica", "time_s", "waiting"])


def test_buckets_are_time_weighted_means_and_maxima_of_the_held_samples():
    frame = hand_built()
    edges = np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
    mean, peak = bucketed(frame, "time_s", frame["waiting"], edges, "sum")["t"]
    # [0,2): 2 for 1 s, 0 for 1 s; [2,4): 1; [4,6): 1 for 1 s, 4 for 1 s; [6,8): 1; [8,10): 0
    assert mean.tolist() == pytest.approx([1.0, 1.0, 2.5, 1.0, 0.0])
    assert peak.tolist() == [2.0, 1.0, 4.0, 1.0, 0.0]


def test_a_burst_is_not_held_over_an_idle_gap():
    # the old report held the value seen at each grid instant: a queue of 2 sampled at t=0
    # would show for the whole first bucket; time weighting gives its real share
    frame = pd.DataFrame({"tier": "t", "replica": 0, "time_s": [0.0, 0.01], "waiting": [2, 0]})
    mean, peak = bucketed(frame, "time_s", frame["waiting"], np.array([0.0, 100.0]), "sum")["t"]
    assert mean[0] == pytest.approx(2 * 0.01 / 100.0)
    assert peak[0] == 2.0


def test_kv_use_is_the_mean_over_replicas():
    frame = pd.DataFrame({"tier": "t", "replica": [0, 1], "time_s": [0.0, 0.0],
                          "kv": [1.0, 0.0]})
    mean, _ = bucketed(frame, "time_s", frame["kv"], np.array([0.0, 1.0]), "mean")["t"]
    assert mean[0] == pytest.approx(0.5)


def test_before_the_first_sample_a_replica_is_idle():
    step = replica_step(np.array([5.0]), np.array([4.0]))
    mean, peak = bucket(step, np.array([0.0, 5.0, 10.0]))
    assert mean.tolist() == [0.0, 4.0] and peak.tolist() == [0.0, 4.0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 50), st.integers(0, 20)), min_size=1, max_size=30),
       st.integers(1, 20))
def test_bucket_means_integrate_to_the_step_functions_area(samples, bins):
    times = np.array([t for t, _ in samples])
    values = np.array([v for _, v in samples], dtype=float)
    step = replica_step(times, values)
    edges = np.linspace(0.0, 60.0, bins + 1)
    mean, peak = bucket(step, edges)
    # exact area of the step function on [0, 60]
    t = np.r_[step.times, 60.0]
    area = float(np.sum(step.values * np.diff(t)))
    assert float(np.sum(mean * np.diff(edges))) == pytest.approx(area, rel=1e-9, abs=1e-9)
    assert np.all(peak >= mean - 1e-9)
    assert peak.max() <= values.max() + 1e-12


def test_summing_steps_adds_values_at_every_time():
    a = Step(np.array([0.0, 2.0]), np.array([1.0, 3.0]))
    b = Step(np.array([1.0]), np.array([5.0]))
    total = add_steps([a, b])
    assert total.times.tolist() == [0.0, 1.0, 2.0]
    assert total.values.tolist() == [1.0, 6.0, 8.0]


def test_the_report_figure_draws_the_buckets(tmp_path):
    from pathlib import Path

    from tiersim.report.figures import TIME_BINS, load_over_time
    from tiersim.report.load import ReportData

    frame = hand_built().assign(running=0, kv_blocks=0, kv_capacity=10)
    panel = load_over_time(ReportData(Path(tmp_path), timeseries=frame))
    queue = [t for t in panel.fig.data if t.yaxis == "y2"]
    mean, peak = queue[0].y, queue[1].y
    assert len(mean) == TIME_BINS
    edges = np.linspace(0.0, 8.0, TIME_BINS + 1)
    want, want_peak = bucketed(frame, "time_s", frame["waiting"], edges, "sum")["t"]
    assert np.allclose(mean, want) and np.allclose(peak, want_peak)
    assert max(peak) == 4.0
