"""Round 54, fresh54b (a new capacity planner on a chat trace, Qwen3-30B-A3B on H200).

A runner-up's line gave its replicas and GPUs but not the router setting it was sized under.
The planner routes every multi-tier design by the ``floor`` router and tries floors from the
scenario's ``accuracy_floor`` up; a runner-up that "meets every constraint" may do so only at
a higher ``router.floor`` than the scenario's. plan.json kept it (``router``), the console
and the report's "Other designs" table did not. The case seen: ``tiersim plan`` on 20 minutes
of Azure conv at 16x (Qwen3-30B-A3B, nvfp4 / w4a16 / fp8 / bf16, floor 0.80) listed "runner-up
fp8+bf16 (fp8 3 x 1 GPU + bf16 3 x 1 GPU): meets every constraint at the plan's cost per hour",
sized at ``router.floor 0.805`` (54.1 % of requests to fp8, p99 TTFT 1.29 s, accuracy
80.21 %). ``tiersim run`` of that fleet as the line gives it (the scenario's floor, 0.80)
sent fp8 92.3 %, read p99 TTFT 42.4 s and accuracy 79.72 %: it missed the SLO and the floor
(modelled). Each runner-up that was sized now names its router setting as a scenario writes
it, as the plan's own ``router:`` line does.
"""

from __future__ import annotations

import html

from tiersim.cli.plan import format_plan
from tiersim.report.page import plan_section
from tiersim.results import PlanResult

PLAN = {"design": "bf16", "tiers": ["bf16"], "replicas": {"bf16": 6},
        "gpus_per_replica": {"bf16": 1}, "cost_usd": 0.503, "cost_model": "provisioned",
        "cost_per_hour_usd": 21.0, "accuracy": 0.8056, "margins": {}, "router": {}}
RUNNERS_UP = (
    {"design": "fp8+bf16", "tiers": ["fp8", "bf16"], "replicas": {"bf16": 3, "fp8": 3},
     "gpus_per_replica": {"fp8": 1, "bf16": 1}, "feasible": True, "cost_usd": 0.495,
     "router": {"floor": 0.805, "policy": "floor"},
     "missed": "meets every constraint at the plan's cost per hour (a tie)"},
    # never sized (its accuracy ruled it out first): the floors tried are in its verdict
    {"design": "nvfp4+fp8", "tiers": ["nvfp4", "fp8"], "replicas": None, "feasible": False,
     "router": {"floor": 0.82, "policy": "floor"}, "missed": "accuracy 79.57% < floor 80.00%"},
)
UNIFORM = ({"design": "fp8", "tiers": ["fp8"], "replicas": {"fp8": 6},
            "gpus_per_replica": {"fp8": 1}, "feasible": False, "cost_usd": 0.483, "router": {},
            "missed": "accuracy 79.57% < floor 80.00%"},)


def _plan() -> PlanResult:
    return PlanResult(scenario="s", constraints={}, plan=PLAN, runners_up=RUNNERS_UP,
                      uniform=UNIFORM, simulations=78, wall_s=62.0)


def test_a_sized_runner_up_names_the_router_setting_it_was_sized_under():
    lines = [line for line in format_plan(_plan()).splitlines() if "runner-up" in line]
    assert lines == [
        "  runner-up fp8+bf16 (fp8 3 x 1 GPU + bf16 3 x 1 GPU; router.policy floor, "
        "router.floor 0.805): meets every constraint at the plan's cost per hour (a tie)",
        "  runner-up nvfp4+fp8: accuracy 79.57% < floor 80.00%"]


def test_the_reports_other_designs_name_a_sized_runner_ups_router_setting():
    page = plan_section(_plan())
    other = page[page.index("<h3>Other designs</h3>"):]
    assert ("<tr><td>fp8+bf16</td><td>fp8 3 + bf16 3; router.policy floor, router.floor "
            "0.805</td>") in other
    assert "<tr><td>nvfp4+fp8</td><td>-</td>" in other
    assert "<tr><td>fp8</td><td>fp8 6</td>" in other  # a uniform fleet has no router setting


def test_two_tiers_in_one_current_flag_are_told_to_repeat_the_flag(tmp_path, capsys):
    """``--current bf16=12x1,fp8=2x1`` (commas, as ``--choose`` lists its values) was told
    "write TIER=REPLICAS or TIER=REPLICASxGPUS ... e.g. --current bf16=5x2", which names no way
    to give a second tier; the flag takes one tier and repeats."""
    from conftest import tiny_doc, write_yaml

    from tiersim.cli import main

    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    assert main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out",
                 str(tmp_path / "p"), "--current", "bf16=2x1, w4a16=1"]) == 1
    out = capsys.readouterr()
    assert (out.out + out.err).strip() == (
        "Error: --current 'bf16=2x1, w4a16=1': one tier a flag; repeat --current for each "
        "tier: --current bf16=2x1 --current w4a16=1")
    assert not (tmp_path / "p").exists()


CURRENT = {"accuracy": 0.8034, "accuracy_basis": "expected", "cost_per_hour_usd": 42.0,
           "cost_usd": 0.949, "design": "bf16", "dropped": 0, "duration_s": 81.3,
           "given": "plan.current", "gpus_per_replica": {"bf16": 1}, "hours_per_month": 730.0,
           "meets_floor": True, "meets_slos": True, "missed": None, "replicas": {"bf16": 12},
           "seeds": [0], "tiers": ["bf16"], "tpot_p99_s": 0.0331, "ttft_p99_s": 0.134,
           "vs_current_frac": 0.5, "vs_current_per_hour_usd": 21.0,
           "vs_current_per_month_usd": 15330.0}


def test_todays_fleet_heading_names_the_seeds_it_was_simulated_at():
    """Under ``--robust`` today's fleet is simulated at every seed sized for, each figure the
    worst (its line says "at seeds 0, 1, 2, 3"); the report's heading still read "simulated on
    the plan's trace and seed"."""
    from tiersim.report.page import current_section

    def heading(seeds):
        plan = PlanResult(scenario="s", constraints={"accuracy_floor": 0.8}, plan=PLAN,
                          current={**CURRENT, "seeds": seeds}, simulations=1, wall_s=1.0)
        page = current_section(plan)
        return html.unescape(page[:page.index("</h3>") + 5])  # the heading is escaped (report54)

    assert heading([0]) == ("<h3>Against today's fleet (simulated on the plan's trace and "
                            "seed)</h3>")
    assert heading([0, 1, 2, 3]) == ("<h3>Against today's fleet (simulated on the plan's trace "
                                     "at its seeds, each figure the worst)</h3>")
