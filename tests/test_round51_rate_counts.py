"""Round 51: the router's FPR and FNR say how many requests they count.

``tiersim run tiny`` printed "FPR / FNR / escalated │ 40.0 % / 54.5 % / 0 %": the 40 % was 2
requests of the 5 that needed a dearer tier, which a planner cannot tell from a bare rate. The
console and the report now add a row "FPR / FNR as counts │ 2 of 5 / 170 of 312", and
summary.json keeps ``fpr_among`` / ``fnr_among``; a summary written before them still reads and
prints no such row.
"""

from __future__ import annotations

import json

import numpy as np
from conftest import tiny_doc, write_yaml

from tiersim.cli.run_summary import router_rows
from tiersim.results import RunResult
from tiersim.results_parts import RouterResult
from tiersim.routing.metrics import error_rates
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def test_error_rates_count_the_requests_each_rate_is_a_share_of():
    # needed tiers (cheapest right answer): 0, 1, 1, 2, 0 over three tiers
    realised = np.array([[1, 1, 1], [0, 1, 1], [0, 1, 1], [0, 0, 1], [1, 1, 1]], float)
    final = np.array([0, 0, 2, 2, 1])
    out = error_rates(final, realised)
    assert (out["fpr"], out["fpr_among"]) == (1 / 3, 3)  # request 1 sent below tier 1
    assert (out["fnr"], out["fnr_among"]) == (0.5, 4)  # requests 2 and 4 sent above need


def _router(**fields) -> RouterResult:
    base = dict(policy="static_split", basis="expected", accuracy=0.9, accuracy_ci95=(0.8, 0.95),
                fpr=0.4, fnr=170 / 312, escalation_rate=0.0, silent_failure_rate=0.0,
                first_tier_shares={})
    return RouterResult(**{**base, **fields})


def test_counts_give_the_count_and_only_where_it_is_known():
    r = _router(fpr_among=5, fnr_among=312)
    assert (r.rate_count("fpr"), r.rate_count("fnr")) == ("2 of 5", "170 of 312")
    assert _router().rate_count("fpr") is None  # a summary from before the counts
    assert _router(fpr=None, fpr_among=0).rate_count("fpr") is None
    assert _router(fnr_among=1_234_567, fnr=0.5).rate_count("fnr") == "617,284 of 1,234,567"
    assert r.counts_text() == "2 of 5 / 170 of 312"
    assert _router(fpr=None, fpr_among=0, fnr_among=312).counts_text() == "- / 170 of 312"
    assert _router().counts_text() is None


def test_the_run_prints_and_keeps_the_counts(tmp_path):
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", tiny_doc())),
                       baselines=False)
    r = run.router
    rates, counts = router_rows(run, "prior")[:2]
    assert rates[:2] == ("router (static_split): FPR / FNR / escalated", "40.0 % / 54.5 % / 0 %")
    assert counts == ("FPR / FNR as counts", "2 of 5 / 170 of 312",
                      "this run's routing, scored on prior")
    assert (r.fpr_among, r.fnr_among) == (5, 312)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(run.to_json()))
    back = RunResult.read(path).router
    assert (back.fpr_among, back.fnr_among) == (5, 312)


def test_a_summary_without_the_counts_still_reads(tmp_path):
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", tiny_doc())),
                       baselines=False)
    doc = run.to_json()
    for key in ("fpr_among", "fnr_among"):
        doc["router"].pop(key)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    back = RunResult.read(path)
    rows = router_rows(back, "prior")
    assert rows[0][1] == "40.0 % / 54.5 % / 0 %"
    assert all(row[0] != "FPR / FNR as counts" for row in rows)


def test_the_report_gives_the_counts_under_the_rates(tmp_path):
    from tiersim.report.page import run_headline

    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", tiny_doc())),
                       baselines=False)
    page = run_headline(run)
    assert ('<td>FNR</td><td class="num">54.5 %</td>' in page
            and "<td>FPR / FNR as counts</td><td>2 of 5 / 170 of 312</td>" in page)
