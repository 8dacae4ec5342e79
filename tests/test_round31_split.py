"""The saving against a static split of the sized uniform fleets is on the basis the plan ranks
by (:func:`tiersim.routing.metrics.static_split_saving`, for ``tiersim plan`` and
``tiersim run`` alike): under provisioned cost the split is made of the fleets' USD/hour and the
share is per hour, the share over the trace kept beside it (``vs_static_split_over_trace_frac``);
under any other cost model both are over the trace. Before, the split's share was over the
trace beside a saving against the uniform fleet per hour, so a plan that costs 2.56 % more per
hour than uniform c and 13.0 % more per hour than a split of a and c read "saves 6.17 %"
against the split: the split's fleets drain longer after the last arrival."""

from __future__ import annotations

import pytest
from test_round29_agree import PageTables
from test_round31_plan import _plan as plan_with_drains
from test_round31_plan import run_held_fleet

from tiersim.report.page import plan_section

DRAINS = {("a", "b"): 200.0, ("a",): 3600.0, ("c",): 1800.0}
"""Uniform a and c drain long: over the trace the cheapest split at 0.76 is d alone (18 USD;
a 24, c 23.4); per hour it is 40 % a + 60 % c (14.16 USD/hour)."""


def _plan(cost_model: str = "provisioned"):
    """Plan test_round31_plan's fake fleet (a+b plans at 16 USD/hour, accuracy 0.76; uniform a
    12, d 18, b 24 and baseline-only c, accuracy 0.8, 15.6 USD/hour) at a 75% floor with
    :data:`DRAINS`."""
    return plan_with_drains(DRAINS, cost_model)


def test_the_plans_static_split_is_per_hour_with_the_trace_beside():
    """Before: vs_static_split_frac 0.0617 ("saved vs a static split" 6.17 %, 18 USD against
    the plan's 16.9 over the trace) beside "saved vs it per hour" -2.56 %; now -13.0 % per hour
    (16 USD/hour against 14.16), the 6.17 % kept as the share over the trace."""
    saving = _plan().plan["savings"]
    assert saving["saving_basis"] == "per_hour"
    assert saving["static_split_cost_per_hour_usd"] == pytest.approx(0.4 * 12.0 + 0.6 * 15.6)
    assert saving["vs_static_split_frac"] == pytest.approx(1 - 16.0 / 14.16)
    routed = 16.0 * 3800 / 3600
    # over the trace, the same split (test_round32_lead: it was d alone, 18 USD, the split
    # cheapest over the trace, another one than the per-hour figures' 40 % a + 60 % c)
    split = 0.4 * 24.0 + 0.6 * 23.4
    assert saving["static_split_cost_usd"] == pytest.approx(split)
    assert saving["vs_static_split_usd"] == pytest.approx(split - routed)
    assert saving["vs_static_split_over_trace_frac"] == pytest.approx(1 - routed / split)


def test_other_cost_models_keep_the_static_split_over_the_trace():
    """Under attributed cost the plan is ranked over the trace: the split's share is over the
    trace (the same figure in both fields) and no split per hour is given."""
    saving = _plan("attributed").plan["savings"]
    assert saving["saving_basis"] == "over_the_trace"
    assert saving["static_split_cost_per_hour_usd"] is None
    assert saving["vs_static_split_frac"] == saving["vs_static_split_over_trace_frac"] == \
        pytest.approx(1 - 16.0 * 3800 / 3600 / 18.0)


def test_the_plans_report_gives_the_baselines_cost_per_hour_beside_a_saving_per_hour():
    """Before, "its cost (USD)" 23.4 over the trace stood beside "saved vs it per hour"
    -2.56 % (of 15.6 USD/hour, shown nowhere), and the static split's row, over the trace, had
    no basis in its label; now the baseline's cost per hour is shown too and both rows say
    "per hour". The plan is the dearer on both: each row words it as ``tiersim plan`` does,
    the basis in the cell (round 49: "saved vs it per hour" read -2.56 %)."""
    rows = PageTables(plan_section(_plan())).table("Against uniform fleets")
    assert rows["its cost (USD)"] == ["23.4"]
    assert rows["its cost (USD per hour)"] == ["15.6"]
    assert rows["saved vs it"] == ["costs 2.56 % more per hour"]
    assert rows["saved vs a static split of equal accuracy"] == ["costs 13.0 % more per hour"]
    rows = PageTables(plan_section(_plan("attributed"))).table("Against uniform fleets")
    assert "its cost (USD per hour)" not in rows
    assert rows["saved vs a static split of equal accuracy"] == ["6.17 %"]


def test_a_run_compares_with_the_static_split_as_the_plan_does(tmp_path):
    """A run's split is through the plan's function: one BF16 replica held to 2 running
    requests at 3.5 USD/hour against baseline-only bf16 (3.5 USD/hour, drains sooner) and
    slow2 (as held, 3.495 USD/hour), all of one accuracy. Over the run the cheaper is bf16
    alone (by its drain); per hour slow2 alone, 0.143 % cheaper than the run's fleet, and the
    split is slow2 alone on both bases (test_round32_lead: its cost over the run was bf16's).
    Before, vs_static_split_frac was the share over the run; the report row says "per hour"
    (in its cell, the run's fleet being the dearer)."""
    from tiersim.report.page import savings_section
    from tiersim.results import RunResult

    run = run_held_fleet(tmp_path)
    saving = run.savings
    costs = {u.tier: u.cost_usd for u in saving.uniform}
    assert costs["bf16"] < costs["slow2"]
    assert saving.static_split_cost_usd == pytest.approx(costs["slow2"])
    assert saving.static_split_cost_per_hour_usd == pytest.approx(3.495)
    assert saving.vs_static_split_frac == pytest.approx(1 - 3.5 / 3.495)
    assert saving.vs_static_split_over_trace_frac == pytest.approx(
        1 - saving.routed_cost_usd / saving.static_split_cost_usd)
    path = tmp_path / "summary.json"
    path.write_text(run.dumps())
    back = RunResult.read(path).savings  # the new fields read back (to 10 figures)
    assert back.vs_static_split_over_trace_frac == pytest.approx(
        saving.vs_static_split_over_trace_frac, rel=1e-9)
    assert back.static_split_cost_per_hour_usd == saving.static_split_cost_per_hour_usd
    # the run's fleet is the dearer: worded as tiersim plan words it (round 49: "-0.143 %")
    assert ('<tr><td>saved vs a static split of equal accuracy</td><td>'
            'costs 0.143 % more per hour</td></tr>') in savings_section(run)
