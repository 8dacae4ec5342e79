"""Round 35 (consistency): what a planner reads agrees between ``tiersim plan``'s lines and the
report's capacity-plan section, on a plan whose own fleet is one of the sized uniform fleets."""

from __future__ import annotations

from test_round29_agree import PageTables

from tiersim.cli.plan import _uniform_line
from tiersim.report.page import plan_section
from tiersim.results import PlanResult, design_verdict

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
        verdict = others[fleet["design"]][1]
        assert verdict == design_verdict(fleet)
        assert f"): {verdict}, cost " in line
    assert others["fp8"] == ["0.102", "meets every constraint"]


def test_a_design_that_missed_keeps_its_reason_and_an_unsized_one_has_none():
    """A design's ``missed`` text is its verdict whatever its feasibility, and a design that
    is not feasible and says nothing has no verdict to invent."""
    assert design_verdict({"missed": "accuracy 77.13% vs limit 80.00%", "feasible": False}) \
        == "accuracy 77.13% vs limit 80.00%"
    assert design_verdict({"missed": None, "feasible": False}) is None
    assert design_verdict({"missed": None, "feasible": True}) == "meets every constraint"
