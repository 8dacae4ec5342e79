"""Round 26 (consistency): a figure shown in one output reads as the same figure, with the same
name, unit and source, in every other output (console, summary.json, report.html, sweep and
plan outputs)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tiersim.cli.run import baseline_table
from tiersim.report.page import savings_section
from tiersim.results import RunResult

GOLDEN = Path(__file__).parent / "golden"


def _console_text(renderable, width: int = 200) -> str:
    """A rich renderable as the console prints it, ``width`` columns wide."""
    console = Console(file=io.StringIO(), width=width, markup=False)
    console.print(renderable)
    return console.file.getvalue()


def test_baseline_accuracy_column_names_the_runs_basis():
    """cascade_models scores accuracy on realised draws, and so are its uniform fleets'
    accuracies (93.49% for all large; a `tiersim run` of that fleet reads 93.41% expected):
    the baseline table's column says so in the console and the report, as the headline does."""
    run = RunResult.read(GOLDEN / "cascade_models_summary.json")
    assert run.router.basis == "realised"
    assert "accuracy (realised draws)" in _console_text(baseline_table(run))
    assert "<th>accuracy (realised draws)</th>" in savings_section(run)


def test_baseline_table_fits_the_console_with_the_longer_accuracy_name():
    """At the console's least width (100 columns) the longer column name left the other
    headers and "routed (this run)" cut ("cost U…", "routed (this ru…"): the accuracy's name
    wraps instead, every other header and fleet name is whole."""
    run = RunResult.read(GOLDEN / "cascade_models_summary.json")
    text = _console_text(baseline_table(run), width=100)
    assert "…" not in text
    for whole in ("routed (this run)", "replicas x GPUs", "meets SLOs", "meets floor",
                  "cost USD", "accuracy (realised", "draws)", "93.49 %"):
        assert whole in text


def test_baseline_accuracy_column_expected_basis():
    """On the expected basis the column is the headline's "expected accuracy"."""
    run = RunResult.read(GOLDEN / "tiny_summary.json")
    assert run.router.basis == "expected"
    assert "expected accuracy" in _console_text(baseline_table(run))
    assert "<th>expected accuracy</th>" in savings_section(run)


def _split_plan():
    """A plan of tier bf16 at 5 x 2 GPUs split 4P 1D, as disagg.yaml plans it (plan.json)."""
    from tiersim.results import PlanResult

    splits = [{"label": "4P 1D", "prefill_replicas": 4, "decode_replicas": 1, "score": 0.616,
               "ttft_p99_s": 1.232, "tpot_p99_s": 0.02828},
              {"label": "aggregated", "prefill_replicas": 0, "decode_replicas": 0,
               "score": 1.596, "ttft_p99_s": 0.8972, "tpot_p99_s": 0.1596}]
    chosen = {"design": "bf16@2", "replicas": {"bf16": 5}, "gpus_per_replica": {"bf16": 2},
              "per_tier": {"bf16": {"replicas": 5, "prefill": 4}}, "cost_usd": 5.938,
              "cost_model": "provisioned"}
    return PlanResult(scenario="disagg", constraints={}, plan=chosen,
                      disaggregation={"tier": "bf16", "chosen": splits[0], "splits": splits})


def test_plan_report_shows_the_chosen_split():
    """`tiersim plan scenarios/disagg.yaml` prints "bf16 split: 4P 1D (of 4P 1D score 0.616;
    ...; aggregated score 1.60 ...)" and its scenario.yaml and the run report's uniform table
    read "5 (4P 1D)"; the plan report's sizes read "tier bf16: 5 x 2 GPU" with no split and
    left the splits compared out."""
    from tiersim.report.page import plan_section

    page = plan_section(_split_plan())
    assert "<td>tier bf16</td><td>5 (4P 1D) x 2 GPU</td>" in page
    assert "<td>aggregated</td>" in page and "<td>4P 1D</td>" in page


def _sweep_data(basis: str = "realised"):
    """A two-point sweep of routing.yaml's router.confusion.fpr as its sweep.parquet holds it
    (the figures of the first two points; routing.yaml sets no cost_model: provisioned)."""
    import pandas as pd

    from tiersim.report.load import ReportData

    latency = "fitted on measured serving rows + public measured"
    sweep = pd.DataFrame({
        "status": ["ok", "ok"], "router.confusion.fpr": [0.0, 0.1],
        "accuracy": [0.8091, 0.8045], "cost_usd": [3.5003, 3.5003],
        "ttft_p99_s": [0.3896, 0.3896], "tpot_p99_s": [0.1319, 0.1319],
        "slo_attainment": [0.9596, 0.9596], "router.basis": [basis, basis],
        "cost_model": ["provisioned", "provisioned"], "sources.latency": [latency, latency],
        "sources.accuracy": ["scenario", "scenario"],
        "sources.cost": ["provisioned GPUs x duration x $/GPU-hour"] * 2})
    return ReportData(Path("."), sweep=sweep, sweep_axes=["router.confusion.fpr"],
                      scenario={"name": "routing", "router": {"policy": "lagrangian"}})


def test_sweep_report_names_units_basis_and_sources():
    """A sweep report's points read "accuracy", "cost_usd", "ttft_p99_s" with no unit, no
    basis (routing.yaml's points score accuracy on realised draws) and no cost model, and its
    provenance said nothing of where the latencies come from; each point's `tiersim run`
    report names all of them. Now the columns are named as the run report names them and
    the provenance gives the points' cost model and sources."""
    from tiersim.report.page import provenance, sweep_headline

    data = _sweep_data()
    points = sweep_headline(data)
    for name in ("accuracy (realised draws)", "cost of the run (USD, provisioned)", "TTFT p99 (s)",
                 "TPOT p99 (s)", "SLO attainment (fraction)"):
        assert f"<th>{name}</th>" in points
    page = provenance(data)
    assert "<td>cost model</td><td>provisioned</td>" in page
    assert "<td>latency comes from</td><td>fitted on measured serving rows + public " \
        "measured</td>" in page
    assert "<td>accuracy comes from</td><td>scenario</td>" in page


def test_plan_cost_printed_as_plan_json_and_report_read_it():
    """routing_example.yaml's plan costs 2,518 x 0.001 + 349 x 0.0025 USD: 3.3905000000000003
    in memory, 3.3905 in plan.json. `tiersim plan` printed "cost 3.391 USD" from memory and
    the report, reading plan.json, "3.39": the console now prints the figures plan.json holds."""
    from tiersim.cli.plan import format_plan
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    cost = 2518 * 0.001 + 349 * 0.0025
    chosen = {"design": "nvfp4+bf16", "replicas": {"nvfp4": 1, "bf16": 1},
              "gpus_per_replica": {"nvfp4": 1, "bf16": 1}, "cost_usd": cost,
              "cost_model": "fixed_per_request", "cost_per_hour_usd": 7.0}
    result = PlanResult(scenario="routing_example", constraints={}, plan=chosen)
    written = PlanResult.from_json(result.to_json())
    assert "cost 3.39 USD" in format_plan(result)
    assert '<td>cost of the trace (USD)</td><td class="num">3.39</td>' in plan_section(written)


def test_plan_missed_floor_in_percent_as_the_plans_accuracy_line():
    """`tiersim plan scenarios/routing_example.yaml` printed "accuracy (realised draws): 94.11%
    vs floor 94.00%" and, two lines on, "uniform nvfp4 (1 x 1 GPU): accuracy 0.9397 vs limit
    0.94" (the report's other designs the same): one accuracy in percent, the other as a
    fraction. A missed floor now reads in percent, the floor as the plan's line gives it."""
    from types import SimpleNamespace

    from tiersim.plan.planner import Constraints, _missed

    tier = SimpleNamespace(requests=2867)
    outcome = SimpleNamespace(ttft_p99_s=0.26, tpot_p99_s=0.018, dropped=0,
                              accuracy=0.9396581793, tiers={"nvfp4": tier})
    words = _missed(outcome, Constraints(2.0, 0.1, 0.94))
    assert words == "accuracy 93.97% < floor 94.00%"  # round 50: worded as a routed design's


def test_response_cache_headline_latencies_say_they_cover_the_fleets_requests():
    """response_cache.yaml printed "TTFT p50 / p99  0.0779 s / 0.121 s" and "end-to-end p99
    5.16 s" in the headline and, below, "TTFT p50 with cache 0.0285" and "end-to-end p99 with
    cache 5.00": one name, two figures (the headline's cover the 1,995 requests the fleet
    served, the cache table's all 2,867). The headline's rows now say whose they are, in the
    console and the report alike."""
    from tiersim.cli.run import headline_table
    from tiersim.report.page import run_headline

    run = RunResult.read(GOLDEN / "response_cache_summary.json")
    assert run.response_cache is not None and run.response_cache.hits > 0
    console = list(headline_table(run).columns[0].cells)
    page = run_headline(run)
    for console_label, page_label in (("TTFT p50 / p99", "TTFT p99"),
                                      ("end-to-end p99", "end-to-end p99"),
                                      ("SLO attainment", "SLO attainment")):
        scoped = " (requests the fleet served)"
        assert f"{console_label}{scoped}" in console
        assert f"<td>{page_label}{scoped}</td>" in page


def test_headline_latency_labels_unscoped_without_a_response_cache():
    """Without a response cache the fleet served every request: the labels stay as they were."""
    from tiersim.cli.run import headline_table

    run = RunResult.read(GOLDEN / "tiny_summary.json")
    assert "TTFT p50 / p99" in list(headline_table(run).columns[0].cells)


def test_plan_report_margin_names_the_accuracy_as_the_console():
    """routing_example.yaml's plan printed "accuracy (realised draws): 94.11% vs floor 94.00%";
    its report's margins table named the same figure "accuracy" (0.9411), no basis."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    chosen = {"design": "nvfp4+bf16", "replicas": {"nvfp4": 1, "bf16": 1},
              "accuracy_sources": {"basis": "realised", "source": "prior"},
              "margins": {"accuracy": {"limit": 0.94, "value": 0.9411, "margin": 0.0011,
                                       "met": True}}}
    page = plan_section(PlanResult(scenario="routing_example", constraints={}, plan=chosen))
    assert "<td>accuracy (realised draws)</td>" in page


def test_agentic_rows_name_the_fraction_and_the_cost_model():
    """agentic.yaml printed "expected accuracy 94.02 %" in the headline and, in the per-task
    table, "success 0.940 | accuracy per request / ..." with no unit, and "cost 0.000714 USD
    per request" with no cost model where the headline says "cost (attributed)". The rows,
    shared by the console and the report, now name both."""
    from tiersim.report.agentic import session_rows

    run = RunResult.read(GOLDEN / "agentic_summary.json")
    units = {row[0]: row[-1] for row in session_rows(run)}
    assert units["success"].startswith("fraction: ")
    assert units["cost"] == f"USD ({run.cost_model}) per request / per task"


def test_report_router_basis_row_is_not_the_consoles_source_words():
    """The console's router row reads "this run's routing, scored on scenario" (where the
    correctness comes from) and the report's router table "accuracy scored on | realised" (the
    basis): one phrase, two meanings, two different answers for routing.yaml. The report's row
    now names the basis as such."""
    from tiersim.report.page import run_headline

    run = RunResult.read(GOLDEN / "cascade_models_summary.json")
    page = run_headline(run)
    assert "accuracy scored on" not in page
    assert "<td>accuracy basis</td><td>realised</td>" in page
