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
        "the fleet's p99 meets (49% of the requests go to it)"
    )
    assert tier_over_slo_note("fp8", "e2e_p99_s", 11.598, 11.57, 1.0, seeds=True) == (
        "note: tier fp8's own e2e_p99_s is 11.60 s (modelled), over the 11.57 s SLO, which "
        "the fleet's p99 meets (up to 100% of the requests go to it at a seed sized for)"
    )


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
    sources = written["analytic"]["sources"]
    assert {key: sources[key] for key in ("dC_star_usd", "c0_usd", "dc_usd")} == {
        "dC_star_usd": "two-type closed form of p / eps / delta and dc",
        "c0_usd": f"all w4a16's cost; {basis}",
        "dc_usd": f"all bf16's cost less all w4a16's; {basis}",
    }  # and p, eps, delta and the frontiers since round 57 (test_round57_lead_analytic_sources)
    read = RunResult.from_json(json.loads(json.dumps(written)))  # reads back as written
    assert read.analytic["sources"] == written["analytic"]["sources"]


def test_closed_form_sources_under_provisioned_simulated_fleets():
    """Under provisioned cost with simulated fleets, dc is the top fleet's USD/hour over the
    cheap one's, as the report's closed-form row says it."""
    import dataclasses

    from tests.test_golden import GOLDEN
    from tiersim.results import RunResult

    savings = dataclasses.replace(
        RunResult.read(GOLDEN).savings, method="simulated", cost_model="provisioned"
    )
    basis = "the uniform fleets sized by simulation (provisioned)"
    assert savings.closed_form_sources("fp8", "bf16") == {
        "dC_star_usd": "two-type closed form of p / eps / delta and dc",
        "c0_usd": f"all fp8's cost; {basis}",
        "dc_usd": f"all bf16's USD/hour over all fp8's, on all fp8's duration; {basis}",
    }


# ------------------------------------------------------------- plan.json: sources of figures

STEPS = (
    "w4a16: fitted on another GPU's serving rows (1 op) + fitted on measured serving rows "
    "(1 op) + roofline (4 ops) + roofline, calibrated on H200's measured tables (1 op); "
    "bf16: fitted on measured serving rows (2 ops) + roofline (4 ops)"
)
PRICES = "w4a16 3.5, bf16 3.5 USD per GPU-hour (the scenario's cost_per_gpu_hour)"


def test_plan_json_says_where_its_latencies_and_costs_come_from(tmp_path, capsys):
    """plan.json named the source of its designs' accuracies alone (``plan.accuracy_sources``);
    their latencies and costs had none, where the planned run's summary.json has ``sources``.
    The latency words are the plan's own last line's; they read back (``tiersim report``)."""
    import json

    from tiersim.cli import main
    from tiersim.results import PlanResult

    capsys.readouterr()
    assert (
        main(["plan", "tiny", "--out", str(tmp_path / "p"), "--check-seeds", "0", "--no-report"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    data = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert data["sources"] == {
        "latency": f"simulated, step times from {STEPS}",
        "cost": f"provisioned GPUs x duration x $/GPU-hour at {PRICES}",
        "cost_per_hour": f"provisioned GPUs x $/GPU-hour at {PRICES}",
    }
    assert f"latencies simulated, step times from {STEPS}" in lines
    assert PlanResult.from_json(data).sources == data["sources"]


def test_a_plan_json_without_sources_reads_as_before_and_a_bad_one_is_one_line():
    """A plan.json written before round 56 has no ``sources``: it reads, and is written back,
    without one; a ``sources`` that is no map of texts is refused in one line."""
    import pytest

    from tiersim.errors import TiersimError
    from tiersim.results import PlanResult

    old = {"scenario": "tiny", "constraints": {"ttft_p99_s": 2.0}, "plan": None}
    plan = PlanResult.from_json(old)
    assert plan.sources is None and "sources" not in plan.to_json()
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json({**old, "sources": {"latency": 3}})
    assert str(err.value) == (
        "plan.json: malformed plan ('plan.sources.latency': input should "
        "be a valid string, got 3); rerun `tiersim plan` to rewrite it"
    )


def test_plan_sources_name_each_gpu_count_where_its_step_times_differ(monkeypatch):
    """A tier whose step times come from other tables at another GPU count is named at each
    (``fp8@2``, as plan.json labels designs); one read alike at every count is named once.
    Under per-request prices the cost names each tier's price per request."""
    from types import SimpleNamespace

    from tiersim.plan import sources

    monkeypatch.setattr(sources, "step_words", lambda built: built)
    assert sources.latency_words(
        [
            ("fp8", 1, "measured"),
            ("fp8", 2, "roofline"),
            ("bf16", 1, "measured"),
            ("bf16", 2, "measured"),
        ]
    ) == ("simulated, step times from fp8: measured; fp8@2: roofline; bf16: measured")
    assert sources.latency_words([]) == "simulated"
    tiers = [
        SimpleNamespace(name="fp8", cost_per_request_usd=0.0002, cost_per_gpu_hour=2.5),
        SimpleNamespace(name="bf16", cost_per_request_usd=0.0004, cost_per_gpu_hour=4.0),
    ]
    assert sources.cost_words("fixed_per_request", tiers) == (
        "price per request at fp8 0.0002, bf16 0.0004 USD (the scenario's cost_per_request_usd)"
    )
    assert sources.cost_words("attributed", tiers) == (
        "modelled busy GPU time x $/GPU-hour at fp8 2.5, bf16 4 USD per GPU-hour (the "
        "scenario's cost_per_gpu_hour)"
    )
    assert sources.cost_words("provisioned", []) == "provisioned GPUs x duration x $/GPU-hour"
    assert sources.gpu_hour_words(sources.PER_HOUR_WORDS, []) == "provisioned GPUs x $/GPU-hour"
