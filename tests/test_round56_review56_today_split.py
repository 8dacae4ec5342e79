"""Round 56, review56: today's fleet at other seeds runs at its own disaggregated split.

plan.json ``current`` simulates today's fleet at the split its scenario gives it
(``SimEvaluator.as_configured``, review55), but the seed check's ``current`` rows
(:func:`tiersim.cli.plan_seeds.today_check`) ran it at the best of its splits at each checked
seed, as the search sizes a design: a fleet that misses at its real split could read "meets"
at the other seeds, and the two figures for one fleet disagreed. Tiny, modelled.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from conftest import tiny_doc, write_yaml

from tiersim.cli.plan_current import Today, TodayTier
from tiersim.cli.plan_seeds import today_check
from tiersim.plan.constraints import Constraints
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def test_today_at_another_seed_is_a_run_of_its_scenario_there(tmp_path):
    split = {
        **tiny_doc()["tiers"][1],
        "replicas": 3,
        "disaggregation": {"prefill_replicas": 1, "decode_replicas": 2},
    }
    doc = tiny_doc(tiers=[split], router={"policy": "uniform"})
    path = write_yaml(tmp_path / "s.yaml", doc)
    scenario = load_scenario(path)
    today = Today((TodayTier(split["name"], 3, 1, "--current"),), 730.0, "--current")
    result = SimpleNamespace(
        plan={"tiers": [split["name"]]}, runners_up=[], cost_model="provisioned"
    )
    row = today_check(scenario, result, str(path), Constraints.of(scenario), today, [1])[
        "per_seed"
    ][0]
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s1.yaml", {**doc, "seed": 1})))
    assert math.isclose(row["ttft_p99_s"], run.ttft_p99_s, rel_tol=1e-9), (
        row["ttft_p99_s"],
        run.ttft_p99_s,
    )
    assert math.isclose(row["tpot_p99_s"], run.tpot_p99_s, rel_tol=1e-9)


def test_today_at_another_seed_gives_the_held_p99s_it_is_judged_on(tmp_path):
    """Under an end-to-end limit, today's row at a checked seed gives its p99 end-to-end, as
    the plan's rows there do (it gave only TTFT and TPOT, and a miss of "p99 end-to-end" with
    no figure), and plan.json holding it reads back."""
    doc = tiny_doc(slo={"ttft_p99_s": 2.0, "tpot_p99_s": 0.1, "e2e_p99_s": 2.5})
    path = write_yaml(tmp_path / "s.yaml", doc)
    scenario = load_scenario(path)
    bf16 = doc["tiers"][1]["name"]
    today = Today((TodayTier(bf16, 1, 1, "--current"),), 730.0, "--current")
    result = SimpleNamespace(plan={"tiers": [bf16]}, runners_up=[], cost_model="provisioned")
    row = today_check(scenario, result, str(path), Constraints.of(scenario), today, [1])[
        "per_seed"
    ][0]
    run = run_scenario(
        load_scenario(
            write_yaml(
                tmp_path / "s1.yaml",
                {**doc, "seed": 1, "tiers": [doc["tiers"][1]], "router": {"policy": "uniform"}},
            )
        )
    )
    assert math.isclose(row["e2e_p99_s"], run.e2e_p99_s, rel_tol=1e-9)
    assert row["missed"] == ["e2e_p99_s"]  # 2.71 s over 2.5 s


def test_a_plan_holding_todays_e2e_at_other_seeds_reads_back(tmp_path):
    import json

    from test_round51_seeds import plan

    from tiersim.results import PlanResult

    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    code, out, _ = plan(
        str(path),
        "--out",
        str(tmp_path / "p"),
        "--current",
        "bf16=1",
        "--slo-e2e-p99",
        "2.5",
        "--check-seeds",
        "1",
        "--no-report",
    )
    assert code == 0, out
    data = json.loads((tmp_path / "p" / "plan.json").read_text())
    row = data["seed_check"]["current"]["per_seed"][0]
    assert row["e2e_p99_s"] > 2.5 and row["missed"] == ["e2e_p99_s"]
    PlanResult.from_json(data, "p/plan.json")  # read strictly: the key is one it knows
