"""Round 55, review55: the seed check runs the planned fleet at the split its scenario writes.

The seed check says it simulates "the planned scenario with only its seed changed"
(``tiersim.cli.plan_seeds``), but its evaluator ran a disaggregated tier at every split and
kept the best at the checked seed, as the search does for a design it sizes: a planned
scenario.yaml at 1 prefill + 2 decode replicas read p99 TTFT 0.173 s at seed 1 (the 2P 1D
split's) where ``tiersim run`` of that scenario at seed 1 gives 0.329 s (tiny, modelled). The
plan writes the split best at its own seed; at another seed another split may be better, and
the check then judged a fleet the plan does not write. The planned fleet now runs at its
written split (``SimEvaluator.as_configured``), as a run of the planned scenario.yaml does; a
``--robust`` plan's check read the search's runs at the split it chose already.
"""

from __future__ import annotations

import math

from conftest import tiny_doc, write_yaml

from tiersim.cli.plan_seeds import _seed_row
from tiersim.plan.constraints import Constraints
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def test_the_checked_fleet_is_the_planned_scenario_at_the_seed(tmp_path):
    split = {**tiny_doc()["tiers"][1], "replicas": 3,
             "disaggregation": {"prefill_replicas": 1, "decode_replicas": 2}}
    doc = tiny_doc(tiers=[split], router={"policy": "uniform"})
    path = write_yaml(tmp_path / "s.yaml", doc)
    scenario = load_scenario(path)
    row = _seed_row(scenario, doc, str(path), 1, Constraints.of(scenario), None, False,
                    "provisioned", {})
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s1.yaml", {**doc, "seed": 1})))
    assert math.isclose(row["ttft_p99_s"], run.ttft_p99_s, rel_tol=1e-9), (row["ttft_p99_s"],
                                                                           run.ttft_p99_s)
    assert math.isclose(row["tpot_p99_s"], run.tpot_p99_s, rel_tol=1e-9)
