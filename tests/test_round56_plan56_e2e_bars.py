"""Round 56, plan56: the report's "p99 latency per tier" bars give the end-to-end p99 per tier
where the run has it (its tiers' ``e2e_p99_s``, written where it holds ``slo.e2e_p99_s``), with
the SLO line; before, they showed TTFT and TPOT alone though the run held an end-to-end limit.
A run without one keeps its two panels.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tiersim.report.figures import build_panels
from tiersim.report.load import ReportData
from tiersim.results import RunResult

GOLDEN = Path(__file__).parent / "golden" / "tiny_summary.json"


def _bars(run: RunResult):
    panels = {p.key: p.fig for p in build_panels(ReportData(Path("."), run=run))}
    return panels["p99_per_tier"]


def _with_e2e(run: RunResult, limit: float | None) -> RunResult:
    """``run`` with each tier's end-to-end p99 (1.5 s, 2.5 s, ...) and ``limit`` as its SLO."""
    tiers = tuple(dataclasses.replace(t, e2e_p99_s=1.5 + k) for k, t in enumerate(run.tiers))
    return dataclasses.replace(run, tiers=tiers, slo_e2e_p99_s=limit)


def test_an_end_to_end_bar_per_tier_with_its_slo_line():
    run = _with_e2e(RunResult.read(GOLDEN), 2.0)
    fig = _bars(run)
    titles = [
        a.text
        for a in fig.layout.annotations
        if a.text in ("TTFT p99", "TPOT p99", "end-to-end p99")
    ]
    assert titles == ["TTFT p99", "TPOT p99", "end-to-end p99"]
    e2e = fig.data[2]
    assert list(e2e.x) == [t.name for t in run.tiers]
    assert list(e2e.y) == [1.5 + k for k in range(len(run.tiers))]
    lines = [s for s in fig.layout.shapes if s.xref == "x3 domain" or s.yref == "y3"]
    assert [s.y0 for s in lines] == [2.0]
    assert fig.layout.yaxis3.title.text == "p99 end-to-end time (s)"


def test_no_slo_line_where_the_run_sets_none():
    fig = _bars(_with_e2e(RunResult.read(GOLDEN), None))
    assert len(fig.data) == 3
    assert not [s for s in fig.layout.shapes if s.yref == "y3"]


def test_a_run_without_end_to_end_keeps_two_panels():
    run = RunResult.read(GOLDEN)
    assert all(t.e2e_p99_s is None for t in run.tiers)
    fig = _bars(run)
    assert len(fig.data) == 2
    assert fig.layout.yaxis2.title.text == "p99 time per output token (s)"
