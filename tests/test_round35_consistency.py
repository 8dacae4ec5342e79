"""Round 35 (consistency): what a planner reads agrees between ``tiersim plan``'s lines and the
report's capacity-plan section, on a plan whose own fleet is one of the sized uniform fleets;
and the agentic, response-cache and prefix-cache figures say where they come from."""

from __future__ import annotations

import html
from pathlib import Path

from test_round29_agree import PageTables

from tiersim.cli.plan import _uniform_line
from tiersim.report.page import plan_section
from tiersim.results import PlanResult, RunResult, design_verdict

MARGINS = {"ttft_p99_s": {"limit": 1.0, "value": 0.187, "margin": 0.813, "met": True},
           "tpot_p99_s": {"limit": 0.02, "value": 0.01999, "margin": 1e-05, "met": True}}
"""The margins of the plan below (a helper's 2-minute conversation-trace plan, fp8 1 x 1)."""


def _plan() -> PlanResult:
    """A plan of uniform fp8 1 x 1 GPU, with fp8's uniform fleet (the plan itself: no
    comparison, ``missed`` None) and bf16's (2.67 times the plan's rate) beside it."""
    fp8 = {"design": "fp8", "tiers": ["fp8"], "replicas": {"fp8": 1},
           "gpus_per_replica": {"fp8": 1}, "feasible": True, "missed": None,
           "cost_usd": 0.1018043999, "cost_per_hour_usd": 3.0, "cost_model": "provisioned",
           "margins": MARGINS, "router": {}, "one_fewer": {}, "savings": {}}
    bf16 = {**fp8, "design": "bf16@2", "tiers": ["bf16"], "replicas": {"bf16": 1},
            "gpus_per_replica": {"bf16": 2}, "cost_usd": 0.2712059329,
            "cost_per_hour_usd": 8.0,
            "missed": "meets every constraint; 167 % dearer than the plan per hour"}
    return PlanResult(scenario="p2_three", constraints={}, plan=fp8, uniform=(fp8, bf16),
                      cost_model="provisioned", simulations=17, wall_s=4.2)


def test_the_plans_own_uniform_fleet_reads_alike_in_its_line_and_its_report():
    """The uniform fleet that is the plan: `tiersim plan` printed "uniform fp8 (1 x 1 GPU):
    meets every constraint, cost 0.102 USD" and the report's "Other designs" row for it read
    "fp8 | 0.102 | -" (a bare dash for its verdict). Both now give the verdict, and every
    uniform fleet's verdict in the report is the one its console line prints."""
    plan = _plan()
    others = dict((row[0], row[1:]) for heading, rows in PageTables(plan_section(plan)).tables
                  if heading == "Other designs" for row in rows[1:])
    for fleet in plan.uniform:
        line = _uniform_line(fleet)
        verdict = others[fleet["design"]][2]
        assert verdict == design_verdict(fleet)
        assert f"): {verdict}, cost " in line
    assert others["fp8"] == ["fp8 1", "0.102", "meets every constraint"]


def test_a_design_that_missed_keeps_its_reason_and_an_unsized_one_has_none():
    """A design's ``missed`` text is its verdict whatever its feasibility, and a design that
    is not feasible and says nothing has no verdict to invent."""
    assert design_verdict({"missed": "accuracy 77.13% < floor 80.00%", "feasible": False}) \
        == "accuracy 77.13% < floor 80.00%"
    assert design_verdict({"missed": None, "feasible": False}) is None
    assert design_verdict({"missed": None, "feasible": True}) == "meets every constraint"


GOLDEN = Path(__file__).parent / "golden"


def _golden(name: str) -> RunResult:
    """A bundled example's pinned summary, read back as the report reads it."""
    return RunResult.from_json((GOLDEN / f"{name}_summary.json").read_text())


def test_agentic_cache_and_prefix_figures_say_where_they_come_from():
    """The agentic tasks, step types, response cache and prefix-cache figures (latencies, a
    cost, accuracies, hit rates) were printed, and shown in the report, with no source, where
    every headline figure has one. Each now carries it under its table, in the console and the
    report alike: the step times' source for what was simulated, the cost's ledger, the
    accuracy's source."""
    from tiersim.cli.run import agentic_tables, prefix_source_lines
    from tiersim.report.page import agentic_section, prefix_cache_section

    agentic, cache = _golden("agentic"), _golden("response_cache")
    for run in (agentic, cache):
        tables = agentic_tables(run)
        assert tables and all(t.caption and t.caption.startswith("source: ") for t in tables)
        section = html.unescape(agentic_section(run))
        for t in tables:
            if run.sources.latency in t.caption:
                assert run.sources.latency in section and run.sources.cost in section
    assert agentic.sources.accuracy in tables_text(agentic_tables(agentic))
    (line,) = prefix_source_lines(agentic)
    assert line.startswith("prefix cache source: ") and agentic.sources.latency in line
    assert "unbounded cache: counted" in html.unescape(prefix_cache_section(agentic))
    assert prefix_source_lines(cache) == []  # no tier caches prefixes: no source line


def tables_text(tables) -> str:
    """Every caption of ``tables``, one after another."""
    return " ".join(str(t.caption) for t in tables)
