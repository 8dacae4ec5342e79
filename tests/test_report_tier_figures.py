"""The report's per-tier figures count each request under the tier summary.json counts it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiersim.report.figures import latency_cdfs
from tiersim.report.load import ReportData


def cascade_requests() -> pd.DataFrame:
    """Ten requests first sent to nvfp4; the four slow ones escalated to bf16."""
    ttft = [0.1] * 6 + [3.0, 3.1, 3.2, 3.3]
    return pd.DataFrame({"tier": ["nvfp4"] * 10, "final_tier": ["nvfp4"] * 6 + ["bf16"] * 4,
                         "ttft_s": ttft, "tpot_s": [0.01] * 10})


def test_latency_cdfs_count_an_escalated_request_under_the_tier_that_answered():
    """A cascade's CDF drew every request under its first tier: nvfp4's curve crossed 0.99
    at the escalated requests' 3.3 s (its summary p99 is 0.1 s) and bf16 had no curve."""
    fig = latency_cdfs(ReportData(Path("."), requests=cascade_requests())).fig
    ttft = {t.name: t for t in fig.data if t.xaxis == "x"}
    assert sorted(ttft) == ["bf16", "nvfp4"]
    assert max(ttft["nvfp4"].x) == pytest.approx(0.1)
    assert np.interp(0.99, ttft["bf16"].y, ttft["bf16"].x) == pytest.approx(
        np.percentile([3.0, 3.1, 3.2, 3.3], 99))


def test_latency_cdfs_of_a_table_without_final_tier_read_tier():
    frame = cascade_requests().drop(columns="final_tier")
    fig = latency_cdfs(ReportData(Path("."), requests=frame)).fig
    assert {t.name for t in fig.data} == {"nvfp4"}


def _kv_mean(scenario_tiers: list[dict]) -> float:
    """The figure's time-weighted KV use of tier ``t``: one replica sampled, 40% full over
    [0, 10) s; the tier's other replicas never ran (no sample)."""
    from tiersim.report.figures import load_over_time

    frame = pd.DataFrame({"tier": "t", "replica": 0, "time_s": [0.0, 10.0], "running": [1, 0],
                          "waiting": 0, "kv_blocks": [40, 0], "kv_capacity": 100})
    data = ReportData(Path("."), timeseries=frame, scenario={"tiers": scenario_tiers})
    kv = [t for t in load_over_time(data).fig.data if t.yaxis == "y3"][0].y
    return float(np.mean(kv))


def test_kv_use_is_the_mean_over_every_replica_of_the_tier_not_those_sampled():
    """A replica that never ran has no sample; the mean divided by the one replica sampled and
    showed 0.4 for a tier of four, whose blocks were 10% in use."""
    assert _kv_mean([{"name": "t", "replicas": 4}]) == pytest.approx(0.1)


def test_each_data_parallel_rank_counts_as_a_replica_of_the_kv_mean():
    assert _kv_mean([{"name": "t", "replicas": 2, "data_parallel": 2}]) == pytest.approx(0.1)


def test_without_a_count_the_kv_mean_is_over_the_replicas_sampled():
    assert _kv_mean([{"name": "t", "replicas": "4"}]) == pytest.approx(0.4)
