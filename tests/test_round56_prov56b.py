"""Round 56 (helper prov56b): where the figures of a plan, a run's closed form and a tier's
over-SLO note come from, said where they are written."""

from __future__ import annotations

from tiersim.results import tier_over_slo_note


def test_a_tier_over_an_slo_says_its_p99_is_modelled():
    """The note on a tier over an SLO the fleet meets (the run's console, the plan's, the
    report's notes) read "is 0.110 s, over the 0.1 s SLO": a simulated figure with no label,
    beside the plan's margin lines' "(modelled)"."""
    assert tier_over_slo_note("bf16", "tpot_p99_s", 0.110, 0.1, 0.49) == (
        "note: tier bf16's own tpot_p99_s is 0.110 s (modelled), over the 0.1 s SLO, which "
        "the fleet's p99 meets (49% of the requests go to it)")
    assert tier_over_slo_note("fp8", "e2e_p99_s", 11.598, 11.57, 1.0, seeds=True) == (
        "note: tier fp8's own e2e_p99_s is 11.60 s (modelled), over the 11.57 s SLO, which "
        "the fleet's p99 meets (up to 100% of the requests go to it at a seed sized for)")


def test_a_runs_closed_form_says_where_dc_star_c0_and_dc_come_from():
    """summary.json's ``analytic`` block gave dC*, c0 and dc with no source where the report's
    closed-form row names one; it now carries ``sources``, in the report's words (the tiny
    scenario, as the golden test runs it: uniform fleets estimated, attributed cost)."""
    import json

    from tiersim.results import RunResult
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = "tiersim/scenarios/tiny.yaml"
    written = run_scenario(load_scenario(path), scenario_path=path).to_json()
    basis = "the uniform fleets estimated from this run's per-token cost (attributed)"
    assert written["analytic"]["sources"] == {
        "dC_star_usd": "two-type closed form of p / eps / delta and dc",
        "c0_usd": f"all w4a16's cost; {basis}",
        "dc_usd": f"all bf16's cost less all w4a16's; {basis}"}
    read = RunResult.from_json(json.loads(json.dumps(written)))  # reads back as written
    assert read.analytic["sources"] == written["analytic"]["sources"]


def test_closed_form_sources_under_provisioned_simulated_fleets():
    """Under provisioned cost with simulated fleets, dc is the top fleet's USD/hour over the
    cheap one's, as the report's closed-form row says it."""
    import dataclasses

    from tests.test_golden import GOLDEN
    from tiersim.results import RunResult

    savings = dataclasses.replace(RunResult.read(GOLDEN).savings, method="simulated",
                                  cost_model="provisioned")
    basis = "the uniform fleets sized by simulation (provisioned)"
    assert savings.closed_form_sources("fp8", "bf16") == {
        "dC_star_usd": "two-type closed form of p / eps / delta and dc",
        "c0_usd": f"all fp8's cost; {basis}",
        "dc_usd": f"all bf16's USD/hour over all fp8's, on all fp8's duration; {basis}"}
