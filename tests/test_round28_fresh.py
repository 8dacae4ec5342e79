"""Round 28 (fresh): a new user installs the wheel and follows README.md from an empty folder;
what the installed package prints or writes reads as the README and the console say."""

from __future__ import annotations

from tiersim.results import PlanResult

#: plan.json's savings of `tiersim plan scenarios/plan_default.yaml` (wheel of 5e955fa): the
#: plan (FP8 8 + BF16 9) and uniform BF16 17 both cost 59.5 USD an hour.
DRAIN = ("both 59.5 USD/hour: the gap is the drain after the last arrival, 346.8 s against "
         "346.8 s, not a cheaper fleet")
TIE_SAVINGS = {"accuracy_floor": 0.8, "baseline_uniform_cost_per_hour_usd": 59.5,
               "baseline_uniform_cost_usd": 5.732159515, "baseline_uniform_tier": "bf16",
               "drain_gap": DRAIN, "routed_cost_usd": 5.731672321,
               "static_split_cost_usd": 5.730494005, "vs_static_split_frac": -0.0002056220971,
               "vs_static_split_usd": -0.001178316195, "vs_uniform_frac": 8.499316155e-05,
               "vs_uniform_usd": 0.0004871943597}


def _tie_plan(savings: dict) -> PlanResult:
    """The default plan's chosen design with ``savings`` as plan.json holds them."""
    chosen = {"design": "fp8+bf16", "replicas": {"fp8": 8, "bf16": 9},
              "gpus_per_replica": {"fp8": 1, "bf16": 1}, "cost_usd": 5.731672321,
              "cost_model": "provisioned", "cost_per_hour_usd": 59.5, "savings": savings}
    return PlanResult.from_json(PlanResult(scenario="plan_default", constraints={},
                                           plan=chosen).to_json())


def test_plan_report_says_why_a_tie_saves_a_sliver():
    """`tiersim plan scenarios/plan_default.yaml` prints "saves 0.0% against the cheapest sized
    uniform fleet (bf16), simulated (both 59.5 USD/hour: the gap is the drain after the last
    arrival ...)"; its report's "saved vs it" read "0.00850 %" with no word of why, as if the
    plan were a cheaper fleet. The report now gives the console's reason beside it."""
    from tiersim.cli.plan import format_plan
    from tiersim.report.page import plan_section

    plan = _tie_plan(TIE_SAVINGS)
    assert DRAIN in format_plan(plan)
    page = plan_section(plan)
    assert "0.00850 %" in page
    assert DRAIN in page


def test_plan_report_without_a_drain_gap_adds_no_row():
    """Fleets of different USD/hour have no drain gap (plan.json's ``drain_gap`` null): the
    report's table keeps its saving rows only."""
    from tiersim.report.page import plan_section

    page = plan_section(_tie_plan({**TIE_SAVINGS, "drain_gap": None}))
    assert "drain after the last arrival" not in page
    assert "<td>why the costs differ</td>" not in page


def _table_after(page: str, heading: str) -> list[list[str]]:
    """The rows (cells as text) of the first table after ``heading`` in a report page."""
    import re

    body = page.split(heading, 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in body.split("<tr>")[1:]]


def test_report_router_figures_say_where_they_come_from():
    """The report's router table (FPR, FNR, escalation, silent failures, accuracy and its
    interval) had no source, where `tiersim run`'s router rows say "this run's routing, scored
    on scenario" and the accuracy's source: each figure now carries the console's words."""
    from pathlib import Path

    from tiersim.cli.run import headline_table
    from tiersim.report.page import run_headline
    from tiersim.results import RunResult

    run = RunResult.read(Path(__file__).parent / "golden" / "cascade_models_summary.json")
    table = headline_table(run)
    labels, sources = (list(table.columns[i].cells) for i in (0, 2))
    routing = next(s for label, s in zip(labels, sources, strict=True)
                   if label.startswith("router ("))
    assert routing == "this run's routing, scored on scenario (illustrative)"
    rows = {cells[0]: cells[1:] for cells in
            _table_after(run_headline(run), "<h3>Router</h3>")}
    assert rows["metric"] == ["value", "source"]
    for name in ("FPR", "FNR", "escalation rate", "silent failure rate"):
        assert rows[name][1].replace("&#x27;", "'") == routing
    for name in ("accuracy", "accuracy 95% interval"):
        assert rows[name][1] == run.sources.accuracy
    assert all(cells[1] for name, cells in rows.items() if name != "metric")


def test_report_per_tier_table_says_where_its_figures_come_from():
    """The report's per-tier table (p99s, utilisation, KV peak, cost) said nothing of where
    its figures come from; a line under it now names the step-time sources it was simulated
    on and the cost's ledger, as the headline's source column does."""
    import html
    from pathlib import Path

    from tiersim.report.page import run_headline
    from tiersim.results import RunResult

    run = RunResult.read(Path(__file__).parent / "golden" / "tiny_summary.json")
    page = run_headline(run)
    after = page.split("<h3>Per tier</h3>", 1)[1].split("<h3>Router</h3>", 1)[0]
    note = after.split("</table>", 1)[1]
    assert html.escape(run.sources.latency) in note and html.escape(run.sources.cost) in note



def test_aiconfigurator_import_line_counts_with_separators(tmp_path, monkeypatch, capsys):
    """`tiersim calibrate --from aiconfigurator --out aic.json` (aiconfigurator-core 0.12.0,
    H200, vLLM) printed "wrote aic.json: profile 'h200_aiconfigurator_vllm', 1739 measured
    tables; 36 not in the data", where every other count tiersim prints reads 1,739."""
    from types import SimpleNamespace

    import tiersim.perf.aiconfigurator as aic
    from tiersim.cli.calibrate import import_aiconfigurator_main

    profile = SimpleNamespace(name="h200_aiconfigurator_vllm", tables=[None] * 1739,
                              overhead_source="fitted: on measured rows")
    monkeypatch.setattr(aic, "import_aiconfigurator",
                        lambda **kwargs: (profile, [f"gemm nvfp4 n={n} k=1024" for n in
                                                    range(1200)]))
    assert import_aiconfigurator_main(["--out", str(tmp_path / "aic.json")]) == 0
    out = capsys.readouterr().out
    assert "1,739 measured tables; 1,200 not in the data" in out
