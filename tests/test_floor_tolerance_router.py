"""The router's floor verdict uses the same tolerance as the savings and the plan: an accuracy
that is the floor up to float summation meets it everywhere, not "MISSED" in one row and "yes"
in the next."""

from __future__ import annotations

from conftest import tiny_doc, write_yaml

from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def _doc() -> dict:
    """One BF16 tier whose mean accuracy over these 63 requests sums to 0.7999999999999998."""
    bf16 = dict(tiny_doc()["tiers"][1], accuracy={"easy": 1.0, "hard": 0.80, "hopeless": 0.0})
    doc = tiny_doc(tiers=[bf16], router={"policy": "uniform"}, accuracy_floor=0.80,
                   workload={"difficulty": {"kind": "three_type", "p_easy": 0.7,
                                            "p_hopeless": 0.14, "hint_auroc": 0.72}})
    doc["trace"] = {"path": "azure2023_code.parquet", "window": [0, 60], "time_scale": 10.0}
    return doc


def test_an_accuracy_at_the_floor_up_to_rounding_meets_it(tmp_path):
    """`tiersim plan scenarios/plan_default.yaml` (trace window [0, 60]) planned 4 BF16
    replicas at 80.00% against a floor of 80% ("met"); the run of its scenario printed
    "accuracy floor 80.0 % MISSED" above a uniform-fleets table whose routed row met the floor."""
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", _doc())), baselines=False)
    assert run.accuracy != 0.8 and abs(run.accuracy - 0.8) < 1e-12  # below by float rounding
    assert run.router.floor_met is True
    assert run.router.floor_met_ci95 is False  # the interval's low end is far below
