"""Round 56, fresh56: a sweep point that misses its SLOs says which and by how much, on the
console's verdict line and in the report's Points table ("meets SLOs: no (TTFT p99 3.63 s over
its 2 s; ...)"), as ``tiersim run`` names a miss; it read a bare "no"."""

from __future__ import annotations

import pandas as pd

from tiersim.report.page import point_verdicts
from tiersim.report.point_slo import slo_cell
from tiersim.sweep.verdicts import verdict_lines

MISSED = {
    "ttft_p99_s": 3.634333,
    "slo_ttft_p99_s": 2.0,
    "tpot_p99_s": 0.061429,
    "slo_tpot_p99_s": 0.06,
    "e2e_p99_s": 20.0,
    "slo_e2e_p99_s": None,
    "dropped": 0,
}


def test_the_cell_names_each_p99_over_its_slo():
    assert slo_cell(False, MISSED) == (
        "no (TTFT p99 3.63 s over its 2 s; TPOT p99 0.0614 s over its 0.06 s)"
    )


def test_drops_are_named_and_a_met_or_unknown_verdict_is_unchanged():
    assert slo_cell(False, {**MISSED, "ttft_p99_s": 1.0, "tpot_p99_s": 0.05, "dropped": 3}) == (
        "no (3 requests dropped)"
    )
    assert slo_cell(True, MISSED) == "yes"
    assert slo_cell(None, MISSED) is None


def test_a_miss_it_cannot_name_stays_a_bare_no():
    # a tier's own p99 under slo.scope: tier, the fleet's within its SLOs
    assert slo_cell(False, {**MISSED, "ttft_p99_s": 1.0, "tpot_p99_s": 0.05}) == "no"


def test_a_p99_just_over_is_printed_apart_from_its_slo():
    assert slo_cell(False, {**MISSED, "ttft_p99_s": 2.0004, "tpot_p99_s": 0.05}) == (
        "no (TTFT p99 2.0004 s over its 2 s)"
    )


def _sweep(path):
    rows = [
        {
            "point_id": 0,
            "status": "ok",
            "router.confusion.fpr": 0.0,
            "savings.routed_slo_met": False,
            **MISSED,
        },
        {
            "point_id": 1,
            "status": "ok",
            "router.confusion.fpr": 0.1,
            "savings.routed_slo_met": True,
            **MISSED,
            "ttft_p99_s": 0.5,
            "tpot_p99_s": 0.05,
        },
    ]
    frame = pd.DataFrame(rows)
    frame.to_parquet(path / "sweep.parquet")
    return frame


def test_console_and_points_table_give_the_same_cell(tmp_path):
    frame = _sweep(tmp_path)
    lines = verdict_lines(tmp_path, ["router.confusion.fpr"], report=True)
    assert lines[1:] == [
        "  router.confusion.fpr 0.0: meets SLOs: no (TTFT p99 3.63 s over its 2 s; TPOT p99 "
        "0.0614 s over its 0.06 s)",
        "  router.confusion.fpr 0.1: meets SLOs: yes",
    ]
    assert point_verdicts(frame)["meets SLOs"] == [
        "no (TTFT p99 3.63 s over its 2 s; TPOT p99 0.0614 s over its 0.06 s)",
        "yes",
    ]
