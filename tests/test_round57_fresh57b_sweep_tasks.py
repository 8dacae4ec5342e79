"""Round 57, fresh57b: a sweep of agent sessions shows the figures its axis moves.

A sweep of the step_type router's fallback threshold (or ``router.confusion.fpr``) over the
bundled agentic scenario moved the cheap tier's share (60.6 % to 52.8 %) and task success
(0.679 to 0.709, modelled), yet its report's Points table showed neither, only per-request
figures, and read "SLO attainment 1.00" beside "meets SLOs: no (task latency p99 68.1 s over
its 60 s)". The table now shows each tier's share, task success, task latency p99 and cost per
task where points have them, and names the attainment per request where a task SLO is set.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.report.load import ReportData
from tiersim.report.page import sweep_headline


def _sweep(shares: list[float], task_slo: float | None = 60.0) -> pd.DataFrame:
    n = len(shares)
    return pd.DataFrame(
        {
            "point_id": [f"p{k}" for k in range(n)],
            "status": ["ok"] * n,
            "router.thresholds": [0.5 + k / 100 for k in range(n)],
            "slo_attainment": [1.0] * n,
            "slo_session_p99_s": [task_slo] * n,
            "tiers.fp8.share": shares,
            "tiers.bf16.share": [1 - s for s in shares],
            "sessions.task_success": [0.679] * n,
            "sessions.task_latency_p99_s": [68.14] * n,
            "sessions.cost_per_task_usd": [0.004165] * n,
        }
    )


def test_the_points_table_shows_shares_and_task_figures(tmp_path):
    data = ReportData(tmp_path, sweep=_sweep([0.6061946903]), sweep_axes=["router.thresholds"])
    text = sweep_headline(data)
    for header in (
        "share of requests, fp8 (fraction)",
        "share of requests, bf16 (fraction)",
        "task success (fraction; product of step correctness)",
        "task latency p99 (s)",
        "cost per task (USD)",
        "SLO attainment (fraction, per request)",
    ):
        assert f"<th>{header}</th>" in text
    assert (
        '<td class="num">0.606</td><td class="num">0.394</td><td class="num">0.679</td>'
        '<td class="num">68.1</td><td class="num">0.00417</td>'
    ) in text


def test_without_a_task_slo_the_attainment_header_is_as_before(tmp_path):
    data = ReportData(
        tmp_path, sweep=_sweep([0.5], task_slo=None), sweep_axes=["router.thresholds"]
    )
    assert "<th>SLO attainment (fraction)</th>" in sweep_headline(data)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_every_point_gets_one_share_cell_per_tier(tmp_path_factory, shares):
    data = ReportData(
        tmp_path_factory.mktemp("s"), sweep=_sweep(shares), sweep_axes=["router.thresholds"]
    )
    text = sweep_headline(data)
    assert text.count("<th>share of requests, fp8 (fraction)</th>") == 1
    assert text.count("<tr>") >= len(shares) + 1
