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
