"""Round 54, base54: today's fleet as a plan's second baseline (``plan.current`` in the scenario,
``tiersim plan --current``). A capacity planner asks what the plan saves against the fleet run
today, per hour and per month; before, the plan quoted its saving only against the cheapest
sized uniform fleet, and docs/planning.md said to do the arithmetic by hand.

Every figure here is modelled (tiny's two minutes of Azure code traffic, roofline step times):
bf16 1 x 1 GPU is the plan at 3.50 USD/hour; today's bf16 2 x 1 GPU costs 7.00 USD/hour.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan import format_plan, plan_capacity
from tiersim.errors import TiersimError
from tiersim.results import PlanResult

TODAY = {"current": [{"tier": "bf16", "replicas": 2}]}


def _plan(folder: Path, *args: str, **doc) -> tuple[PlanResult, str, dict]:
    """Plan tiny with ``doc``'s top-level keys (no other seed checked): the result, its console
    text and plan.json as written."""
    folder.mkdir(parents=True, exist_ok=True)
    path = write_yaml(folder / "s.yaml", tiny_doc(**doc))
    result = plan_capacity(path, out_dir=folder / "plan", report=True)
    return result, format_plan(result), json.loads((folder / "plan" / "plan.json").read_text())


def _today_lines(text: str) -> list[str]:
    # round 55: the head line names today's fleet's seconds ("today's fleet: 0.1 s"), not one
    # of the lines on today's fleet: those are indented under it
    return [line for line in text.splitlines() if line.startswith("  ") and "today's fleet"
            in line]


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("today")
    return (*_plan(folder, plan=TODAY), folder / "plan")


def test_the_saving_against_today_is_plan_json_arithmetic(planned):
    """The saving per hour is today's USD/hour less the plan's, its share that over today's,
    and the month the hour times 730 (24/7, the default): each read from plan.json."""
    _, text, data, _ = planned
    current, plan = data["current"], data["plan"]
    assert (current["cost_per_hour_usd"], plan["cost_per_hour_usd"]) == (7.0, 3.5)
    assert current["vs_current_per_hour_usd"] == (current["cost_per_hour_usd"]
                                                  - plan["cost_per_hour_usd"])
    assert current["vs_current_frac"] == (current["vs_current_per_hour_usd"]
                                          / current["cost_per_hour_usd"])
    assert current["hours_per_month"] == 730.0
    assert current["vs_current_per_month_usd"] == current["vs_current_per_hour_usd"] * 730
    assert (current["meets_slos"], current["meets_floor"], current["missed"]) == (True, None,
                                                                                  None)
    assert current["seeds"] == [0] and current["given"] == "plan.current"
    assert _today_lines(text) == [
        "  today's fleet (plan.current: bf16 2 x 1 GPU), simulated on the plan's trace at seed 0:"
        " 7.00 USD/hour provisioned; p99 TTFT / TPOT (SLOs 2.00 s / 100 ms) 0.172 s / 22.2 ms;"
        " expected accuracy 95.00%: meets the SLOs",
        "  the plan saves 50.0 % per hour against today's fleet: 3.50 USD/hour less, 2,555 USD"
        " less a month of 730 hours (24/7, both fleets provisioned for the trace's load;"
        " modelled)",
        # round 54, head54: the saving split into right-sizing and the plan's design
        "  the saving per hour split: right-sizing today's fleet (7.00 USD/hour) to the sized"
        " uniform bf16 fleet (3.50 USD/hour) saves 3.50 USD/hour, and the plan's design against"
        " that uniform fleet saves nothing: 3.50 + 0 = 3.50 USD/hour, today's less the plan's"
        " (plan.json current and uniform; modelled)"]


def test_today_is_simulated_as_a_run_of_it_is(planned, tmp_path):
    """Today's p99s and cost are those of `tiersim run` of the same fleet, trace and seed."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(tiers=[{**tiny_doc()["tiers"][1], "replicas": 2}], router={"policy":
                                                                               "uniform"})
    run = run_scenario(load_scenario(write_yaml(tmp_path / "r.yaml", doc)))
    current = planned[2]["current"]
    assert math.isclose(run.ttft_p99_s, current["ttft_p99_s"], rel_tol=1e-9)
    assert math.isclose(run.tpot_p99_s, current["tpot_p99_s"], rel_tol=1e-9)
    assert math.isclose(run.cost_usd, current["cost_usd"], rel_tol=1e-9)


def test_plan_json_round_trips_through_the_strict_reader(planned):
    result, _, data, _ = planned
    assert PlanResult.from_json(data).to_json() == json.loads(json.dumps(result.to_json()))
    assert PlanResult.from_json(data).current == data["current"]


@pytest.mark.parametrize(("key", "value", "said"), [
    ("vs_current_per_month_usd", 2556.0, "'plan.current.vs_current_per_month_usd' must be "
     "vs_current_per_hour_usd times hours_per_month, got 2556.0"),
    ("vs_current_per_hour_usd", 3.0, "'plan.current.vs_current_per_hour_usd' must be today's "
     "cost_per_hour_usd less the plan's, got 3.0"),
    ("vs_current_frac", 0.4, "'plan.current.vs_current_frac' must be vs_current_per_hour_usd "
     "over today's cost_per_hour_usd (null where that is 0), got 0.4"),
    ("hours_per_month", 0, "'plan.current.hours_per_month' must be above 0 and at most 744, "
     "got 0"),
    ("replicas", {"fp8": 2}, "'plan.current.replicas' must give each of its tiers [\"bf16\"], "
     "got {\"fp8\": 2}"),
    ("meets_slos", "yes", "'plan.current.meets_slos'"),
    ("accuracy", 1.5, "'plan.current.accuracy' must be a fraction between 0 and 1, got 1.5"),
])
def test_a_hand_edited_current_is_one_malformed_line(planned, key, value, said):
    data = json.loads(json.dumps(planned[2]))
    data["current"][key] = value
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(data, "p/plan.json")
    text = str(err.value)
    assert text.startswith("p/plan.json: malformed plan (") and said in text
    assert text.endswith("rerun `tiersim plan` to rewrite it") and "\n" not in text


def test_the_report_gives_today_beside_the_plan(planned):
    import html
    import re

    page = (planned[3] / "report.html").read_text()
    text = html.unescape(re.sub(r"(<[^>]+>)+", " | ", page))
    assert "Against today's fleet (simulated on the plan's trace and seed)" in text
    assert ("the plan saves 50.0 % per hour against today's fleet: 3.50 USD/hour less, 2,555 "
            "USD less a month of 730 hours") in text
    assert "saved vs it (USD a month of 730 hours) | 2,555" in text


def test_the_planned_scenario_drops_today(planned):
    """The planned scenario.yaml is the plan's fleet; today's fleet is what it was compared
    with, not part of it (its tiers may be gone from the planned fleet)."""
    assert "plan" not in yaml.safe_load((planned[3] / "scenario.yaml").read_text())


def test_without_the_key_nothing_changes(tmp_path):
    """No ``plan`` key: no ``current`` in plan.json and no line of today's fleet (the goldens
    and every earlier plan read as before)."""
    _, text, data = _plan(tmp_path)
    assert "current" not in data and _today_lines(text) == []


def test_hours_per_month_sets_the_month(tmp_path):
    """``plan.hours_per_month: 500``: the month is the hour times 500, and says 500 hours (not
    24/7)."""
    _, text, data = _plan(tmp_path, plan={**TODAY, "hours_per_month": 500})
    current = data["current"]
    assert current["vs_current_per_month_usd"] == current["vs_current_per_hour_usd"] * 500
    assert _today_lines(text)[1] == (
        "  the plan saves 50.0 % per hour against today's fleet: 3.50 USD/hour less, 1,750 USD"
        " less a month of 500 hours (both fleets provisioned for the trace's load; modelled)")


def test_a_dearer_plan_costs_more_than_today(tmp_path):
    """Today's bf16 on one GPU meets the SLOs, but the plan may only use two GPUs per replica
    (``limits.gpus_per_replica: [2]``, each tier on 2): the plan is the dearer, and reads
    "costs 100 % more", never a saving of -100 %."""
    tiers = [{**t, "gpus_per_replica": 2} for t in tiny_doc()["tiers"]]
    _, text, data = _plan(tmp_path, tiers=tiers, limits={"gpus_per_replica": [2]},
                          plan={"current": [{"tier": "bf16", "replicas": 1,
                                             "gpus_per_replica": 1}]})
    current = data["current"]
    assert current["vs_current_frac"] == -1.0 and current["meets_slos"] is True
    assert current["vs_current_per_month_usd"] == -3.5 * 730
    assert _today_lines(text)[1] == (
        "  the plan costs 100 % more per hour than today's fleet: 3.50 USD/hour more, 2,555 USD"
        " more a month of 730 hours (24/7, both fleets provisioned for the trace's load;"
        " modelled)")


def test_today_missing_an_slo_is_said_beside_the_saving(tmp_path):
    """A p99 TTFT SLO of 0.3 s: today's bf16 1 x 1 GPU (0.334 s) misses it, so the comparison
    is with a fleet that does not meet the constraints, and the line says so."""
    _, text, data = _plan(tmp_path, slo={"ttft_p99_s": 0.3, "tpot_p99_s": 0.1},
                          plan={"current": [{"tier": "bf16", "replicas": 1}]})
    current = data["current"]
    assert (current["meets_slos"], current["missed"]) == (False, "ttft_p99_s 0.334 vs limit 0.3")
    assert _today_lines(text) == [
        "  today's fleet (plan.current: bf16 1 x 1 GPU), simulated on the plan's trace at seed 0:"
        " 3.50 USD/hour provisioned; p99 TTFT / TPOT (SLOs 0.300 s / 100 ms) 0.334 s / 78.2 ms;"
        " expected accuracy 95.00%: misses the SLOs (ttft_p99_s 0.334 vs limit 0.3)",
        "  the plan costs 100 % more per hour than today's fleet: 3.50 USD/hour more, 2,555 USD"
        " more a month of 730 hours (24/7, both fleets provisioned for the trace's load;"
        " modelled); today's fleet misses ttft_p99_s 0.334 vs limit 0.3, so this compares the"
        " plan with a fleet that does not meet the constraints",
        # round 54, head54: the gap split; right-sizing a fleet that misses the SLO costs
        "  the gap per hour split: right-sizing today's fleet (3.50 USD/hour) to the sized"
        " uniform bf16 fleet (7.00 USD/hour) costs 3.50 USD/hour more, and the plan's design"
        " against that uniform fleet saves nothing: -3.50 + 0 = -3.50 USD/hour, today's less the"
        " plan's (plan.json current and uniform; modelled)"]


def test_today_missing_the_floor_is_said(tmp_path):
    """A floor of 0.96 no tier reaches (tiny's prior gives 95.00 %): no plan, and today's
    fleet is still given, missing the floor, with no saving."""
    _, text, data = _plan(tmp_path, accuracy_floor=0.96, plan=TODAY)
    current = data["current"]
    assert (current["meets_floor"], current["vs_current_frac"]) == (False, None)
    assert data["plan"] is None
    import html

    page = html.unescape((tmp_path / "plan" / "report.html").read_text())
    assert "Against today's fleet" in page and "misses the accuracy floor" in page
    assert _today_lines(text) == [
        "  today's fleet (plan.current: bf16 2 x 1 GPU), simulated on the plan's trace at seed 0:"
        " 7.00 USD/hour provisioned; p99 TTFT / TPOT (SLOs 2.00 s / 100 ms) 0.172 s / 22.2 ms;"
        " expected accuracy 95.00% vs floor 96.00%: misses the accuracy floor (accuracy 95.00% <"
        " floor 96.00%)"]


def test_the_flag_names_a_routed_fleet_in_the_scenarios_order(tmp_path, capsys):
    """``--current`` (typed bf16 first) replaces ``plan.current`` and ``--hours-per-month``
    its hours; a fleet of two tiers is routed by the scenario's router as written (tiny's 50/50
    static split), its tiers listed in the scenario's order."""
    from tiersim.cli import main

    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan=TODAY))
    assert main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out",
                 str(tmp_path / "p"), "--current", "bf16=1", "--current", "w4a16=1x1",
                 "--hours-per-month", "365"]) == 0
    out = capsys.readouterr().out
    current = json.loads((tmp_path / "p" / "plan.json").read_text())["current"]
    assert (current["given"], current["tiers"], current["hours_per_month"]) == (
        "--current", ["w4a16", "bf16"], 365.0)
    assert current["vs_current_per_month_usd"] == current["vs_current_per_hour_usd"] * 365
    assert "today's fleet (--current: w4a16 1 x 1 GPU + bf16 1 x 1 GPU)" in out
    assert "1,278 USD less a month of 365 hours (both fleets" in out


def test_a_robust_plan_gives_today_at_every_seed_it_sized_for(tmp_path):
    """Under ``--robust`` today's fleet is judged as every design is, the worst over the seeds
    sized for, and says so."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan=TODAY))
    result = plan_capacity(path, check_seeds=1, robust=True)
    assert result.current["seeds"] == [0, 1]
    assert _today_lines(format_plan(result))[0].startswith(
        "  today's fleet (plan.current: bf16 2 x 1 GPU), simulated on the plan's trace at seeds "
        "0, 1 (each figure the worst over them): 7.00 USD/hour provisioned;")
