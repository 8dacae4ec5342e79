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
