"""Round 54 (casc54): a router that gives a tier by its index among the scenario's tiers
(``cascade: {from_tier: 0, to_tier: 2}``) routes a design, a subset of those tiers, to the same
tiers: the plan writes the index as the tier's name. Before, the index counted the design's
kept tiers, and every two-tier design of a three-tier cascade was refused ("router:
s.yaml: router.cascade.to_tier: unknown tier 2; tiers are w4a16, bf16"), the cascade
itself (w4a16+bf16) among them, never sized."""

from __future__ import annotations

import yaml
from conftest import run_cli, tiny_doc, write_yaml


def _three_tiers(router: dict) -> dict:
    """tiny (30 s of it) with an FP8 tier between its two, routed by ``router``."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]})
    w4a16, bf16 = doc["tiers"]
    doc["tiers"] = [{**w4a16, "cost_per_gpu_hour": 2.5},
                    {"name": "fp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.0},
                    bf16]
    doc["router"] = router
    return doc


def test_a_cascade_given_by_index_routes_the_tiers_it_names(tmp_path):
    """w4a16+bf16 is the cascade 0 -> 2 names, and is sized; the subsets lacking one of them
    say so, by name."""
    path = write_yaml(tmp_path / "s.yaml", _three_tiers(
        {"policy": "cascade", "cascade": {"from_tier": 0, "to_tier": 2}}))
    proc = run_cli("plan", str(path), "--out", str(tmp_path / "plan"),
                   "--choose", "router.policy=cascade")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not [line for line in lines if "unknown tier" in line]
    assert [line for line in lines if line.startswith(
        "  runner-up w4a16+bf16 (w4a16 1 x 1 GPU + bf16 1 x 1 GPU; router.policy cascade): "
        "meets every constraint")]
    assert "  runner-up w4a16+fp8: not a cascade: it lacks bf16, the tier " \
           "router.cascade.to_tier escalates to" in lines


def test_the_planned_scenario_names_the_tiers_an_index_gave():
    """The planned scenario keeps w4a16 and bf16 only: written as indices, its cascade would
    read to_tier 2 of two tiers, and its run refuse it."""
    from tiersim.cli.plan import planned_scenario
    from tiersim.scenario import scenario_from_dict

    doc = _three_tiers({"policy": "cascade", "cascade": {"from_tier": 0, "to_tier": 2}})
    scenario = scenario_from_dict(yaml.safe_load(yaml.safe_dump(doc)), "s.yaml")
    plan = {"replicas": {"w4a16": 1, "bf16": 1}, "gpus_per_replica": {"w4a16": 1, "bf16": 1},
            "router": {"policy": "cascade"}}
    written = planned_scenario(scenario, plan, None)
    assert written["router"]["cascade"] == {"from_tier": "w4a16", "to_tier": "bf16"}
    assert [t["name"] for t in written["tiers"]] == ["w4a16", "bf16"]
