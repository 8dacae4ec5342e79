"""Round 56, left56: a sweep point that missed only a tier's own p99 (``slo.scope: tier``) or
the task latency limit (``slo.session_p99_s``) read a bare "no" in the console's verdict lines
and the report's Points table, while a miss of the fleet's p99s or a drop was named. Those
misses are now named as ``tiersim run`` names them ("tier fp8's TTFT p99 3.63 s over its
2 s", "task latency p99 80.1 s over its 60 s").

The rows are hand-built sweep rows (flattened summary.json keys), not simulated figures.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from tiersim.report.point_slo import slo_cell, tier_p99_columns
from tiersim.sweep.verdicts import verdict_lines

FLEET = {
    "ttft_p99_s": 1.5,
    "slo_ttft_p99_s": 2.0,
    "tpot_p99_s": 0.05,
    "slo_tpot_p99_s": 0.1,
    "dropped": 0,
}
TIERS = {
    "tiers.fp8.ttft_p99_s": 3.63,
    "tiers.fp8.tpot_p99_s": 0.04,
    "tiers.bf16.ttft_p99_s": 1.2,
    "tiers.bf16.tpot_p99_s": 0.12,
}


def test_a_tiers_own_p99s_are_named_under_tier_scope():
    row = {**FLEET, **TIERS, "slo_scope": "tier"}
    assert slo_cell(False, row) == (
        "no (tier fp8's TTFT p99 3.63 s over its 2 s; tier bf16's TPOT p99 0.120 s over its 0.1 s)"
    )


def test_under_fleet_scope_a_tiers_p99s_are_not_held():
    assert slo_cell(False, {**FLEET, **TIERS, "slo_scope": "fleet"}) == "no"


def test_the_task_latency_limit_is_named():
    row = {**FLEET, "sessions.task_latency_p99_s": 80.1, "slo_session_p99_s": 60.0}
    assert slo_cell(False, row) == "no (task latency p99 80.1 s over its 60 s)"


def test_every_miss_in_the_runs_order():
    row = {
        **FLEET,
        **TIERS,
        "slo_scope": "tier",
        "ttft_p99_s": 2.5,
        "dropped": 3,
        "sessions.task_latency_p99_s": 80.1,
        "slo_session_p99_s": 60.0,
    }
    assert slo_cell(False, row) == (
        "no (TTFT p99 2.50 s over its 2 s; tier fp8's TTFT p99 3.63 s over its 2 s; tier "
        "bf16's TPOT p99 0.120 s over its 0.1 s; task latency p99 80.1 s over its 60 s; 3 "
        "requests dropped)"
    )


def test_the_console_reads_the_tier_columns(tmp_path):
    row = {
        "point_id": "p0",
        "status": "ok",
        "seed": 0,
        "savings.routed_slo_met": False,
        **FLEET,
        **TIERS,
        "slo_scope": "tier",
        "tiers.fp8.share": 0.5,
    }
    pd.DataFrame([row]).to_parquet(tmp_path / "sweep.parquet")
    lines = verdict_lines(tmp_path, ["seed"], report=False)
    assert lines[1] == (
        "  seed 0: meets SLOs: no (tier fp8's TTFT p99 3.63 s over its 2 s; "
        "tier bf16's TPOT p99 0.120 s over its 0.1 s)"
    )


def test_tier_columns_are_the_p99s_alone():
    columns = ["tiers.a.b.ttft_p99_s", "tiers.fp8.share", "ttft_p99_s", "tiers.x.e2e_p99_s"]
    assert tier_p99_columns(columns) == ["tiers.a.b.ttft_p99_s", "tiers.x.e2e_p99_s"]


@given(p99=st.floats(0.001, 1e4), limit=st.floats(0.001, 1e4))
def test_a_tier_over_its_limit_is_never_a_bare_no(p99, limit):
    """A bare "no" exactly where the tier's p99 is within its limit as the run reads it."""
    from tiersim.results_figures import within_limit

    row = {"slo_scope": "tier", "slo_ttft_p99_s": limit, "tiers.t.ttft_p99_s": p99}
    assert (slo_cell(False, row) == "no") == within_limit(p99, limit)
