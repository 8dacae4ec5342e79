"""Round 55, plan55: the seed check's line on a fleet turned away at the plan's seed that meets
every constraint at the other seeds said "the choice of plan hinges on seed 0's draws" also
where that fleet costs what the plan costs per hour (fresh54b): the other seeds would pick
another fleet, but at the same price, so the saving does not hinge on the seed. The line now
says so; a fleet at another price keeps the "hinges" words. The console and the report's
"At other seeds" block both print :func:`tiersim.results_seeds.seed_check_lines`.

The records are plan.json ``seed_check`` as :func:`tiersim.cli.plan_seeds.rejected_check`
writes it (``dearer_than_plan_frac`` 0: a tie on USD/hour, ranked before the plan by the
tie's rules); no figure here is simulated.
"""

from __future__ import annotations

import pytest

from tiersim.results_seeds import rejected_lines

TAIL = " (`tiersim plan --robust` sizes every fleet for every seed checked)"


def _check(role: str, gap: float, basis: str = "per_hour") -> dict:
    """A seed check planned at seed 0 with one fleet (uniform w4a16 1 x 1 GPU) turned away
    there for p99 TPOT that meets the SLOs at seeds 1-3, ``gap`` dearer than the fleet it
    ranks before (the plan, or the saving's baseline uniform bf16)."""
    record = {"design": "w4a16", "tiers": ["w4a16"], "replicas": {"w4a16": 1},
              "gpus_per_replica": {"w4a16": 1}, "ranks_before": role,
              "missed_at_planned_seed": ["tpot_p99_s"], "dearer_than_plan_frac": gap,
              "met_seeds": [1, 2, 3],
              "per_seed": [{"seed": s, "vs_fleet_frac": 0.5} for s in (1, 2, 3)]}
    if role == "baseline":
        record["dearer_than_baseline_frac"] = gap
    return {"planned_seed": 0, "seeds": [0, 1, 2, 3], "saving_basis": basis,
            "baseline_uniform_tier": "bf16", "accuracy_floor": None, "rejected": [record]}


def test_a_fleet_at_the_plans_price_hinges_the_fleet_not_the_saving():
    assert rejected_lines(_check("plan", 0.0)) == [
        "    uniform w4a16 (1 x 1 GPU, at the same cost per hour as the plan) was turned away at "
        "seed 0 (p99 TPOT missed) but meets the SLOs at every seed checked (1, 2, 3): which of "
        "two fleets of the same cost per hour is planned hinges on seed 0's draws; the saving "
        "per hour does not" + TAIL]


def test_a_fleet_at_another_price_keeps_the_hinge():
    assert rejected_lines(_check("plan", -0.1)) == [
        "    uniform w4a16 (1 x 1 GPU, 10.0 % cheaper per hour than the plan) was turned away at "
        "seed 0 (p99 TPOT missed) but meets the SLOs at every seed checked (1, 2, 3): the "
        "choice of plan hinges on seed 0's draws" + TAIL]


@pytest.mark.parametrize(("gap", "said"), [
    (0.0, "which of two uniform fleets of the same cost per hour is the saving's baseline "
          "hinges on seed 0's draws; the saving per hour does not"),
    (-0.1, "the saving's baseline hinges on seed 0's draws"),
])
def test_the_savings_baseline_reads_the_same_way(gap, said):
    name = ("at the same cost per hour as" if gap == 0 else "10.0 % cheaper per hour than")
    assert rejected_lines(_check("baseline", gap)) == [
        f"    uniform w4a16 (1 x 1 GPU, {name} uniform bf16) was turned away at seed 0 (p99 "
        f"TPOT missed) but meets the SLOs at every seed checked (1, 2, 3): {said}; against it "
        "the plan saves 50.0 % per hour there" + TAIL]


def test_over_the_trace_the_same_cost_is_the_trace_cost():
    """Under a cost model that ranks by the cost over the trace, the tie is on that cost."""
    line, = rejected_lines(_check("plan", 0.0, basis="trace"))
    assert ("which of two fleets of the same cost is planned hinges on seed 0's draws; the "
            "saving does not" + TAIL) in line
