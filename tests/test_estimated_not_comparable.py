"""`tiersim run --no-baselines` of a fleet that misses its SLOs: the estimated saving is not
comparable, on the console as in the report (the console printed "- (estimate)")."""

from __future__ import annotations

from conftest import tiny_doc, write_yaml

from tiersim.cli.run import router_rows
from tiersim.report.page import savings_section
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

WHY = ("this fleet misses its SLOs (TTFT p99 0.197 s over its 0.001 s), the uniform "
       "fleets are held to them")  # the p99 at 3 digits since round 48 (was 0.1972385773)


def test_an_estimate_for_a_fleet_missing_its_slos_is_not_comparable(tmp_path):
    """The report said "not comparable: this fleet misses its SLOs ..." and the console "-
    (estimate)" with no reason, for one summary.json (vs_uniform_frac null)."""
    doc = tiny_doc(slo={"ttft_p99_s": 0.001, "tpot_p99_s": 0.1})
    doc["trace"]["window"] = [240, 270]
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), baselines=False)
    assert run.savings.estimated and run.savings.routed_slo_met is False
    row = [r for r in router_rows(run, "prior") if "vs uniform" in r[0]]
    assert row == [("estimated saving vs uniform bf16", "not comparable",
                    f"{WHY}; size this one with tiersim plan")]
    assert f"<td>saved vs that tier</td><td>not comparable: {WHY}" in savings_section(run)
