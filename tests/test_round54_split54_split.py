"""Round 54 (split54): a tier subset that lacks a tier its router names by name is not that
routing, and its verdict says so in plain words, as a cascade subset's does (casc54). Before,
``tiersim plan`` of a three-tier ``static_split`` with ``fractions: {w4a16: 0.4, fp8: 0.2,
bf16: 0.4}`` printed "runner-up w4a16+fp8: router: s3f.yaml: router.fractions: unknown tier
'bf16'; tiers are w4a16, fp8", a config error read as a fault of the scenario. The split is
not renormalised over the kept tiers: it is what the scenario asked for."""

from __future__ import annotations

import json
from types import SimpleNamespace

from conftest import run_cli, tiny_doc, write_yaml

from tiersim.plan.evaluate import Design
from tiersim.plan.planner import Planner
from tiersim.results import PlanResult
from tiersim.routing.config import RouterConfig


def _three_tier_split(tmp_path):
    """tiny (30 s of it) with an FP8 tier between its two, split 40/20/40 by name."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]})
    w4a16, bf16 = doc["tiers"]
    doc["tiers"] = [{**w4a16, "cost_per_gpu_hour": 2.5},
                    {"name": "fp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.0},
                    bf16]
    doc["router"] = {"policy": "static_split",
                     "fractions": {"w4a16": 0.4, "fp8": 0.2, "bf16": 0.4}}
    return write_yaml(tmp_path / "s3f.yaml", doc)


def test_a_subset_lacking_a_split_tier_is_not_this_split(tmp_path):
    """Each two-tier subset names the tier it lacks and the share the split sends it; the
    split of all three is sized as before; plan.json reads back under the strict reader."""
    out = tmp_path / "plan"
    proc = run_cli("plan", str(_three_tier_split(tmp_path)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    expected = {
        "w4a16+fp8": "not this split: it lacks bf16, which router.fractions sends 40 % of "
                     "requests",
        "w4a16+bf16": "not this split: it lacks fp8, which router.fractions sends 20 % of "
                      "requests",
        "fp8+bf16": "not this split: it lacks w4a16, which router.fractions sends 40 % of "
                    "requests",
    }
    for design, verdict in expected.items():
        assert f"  runner-up {design}: {verdict}" in lines
    assert not [line for line in lines if "unknown tier" in line]
    assert [line for line in lines if line.startswith("  runner-up w4a16+fp8+bf16 (")]
    data = json.loads((out / "plan.json").read_text())
    missed = {d["design"]: d["missed"] for d in data["runners_up"]}
    for design, verdict in expected.items():
        assert missed[design] == verdict
    PlanResult.from_json(data)  # strict: raises on a field it does not know


def _planner(router: dict, names=("w4a16", "fp8", "bf16")) -> Planner:
    """A planner whose evaluator gives ``router`` to every design, of a scenario of tiers
    ``names`` (planner unit: no simulation)."""
    cfg = RouterConfig.model_validate(router)
    planner = Planner.__new__(Planner)
    planner.evaluator = SimpleNamespace(
        router_config=lambda design: cfg,
        scenario=SimpleNamespace(tiers=[SimpleNamespace(name=n) for n in names]))
    return planner


def test_a_split_given_as_a_list_names_the_scenario_tier_at_each_place():
    """A ``fractions`` list gives its shares to the scenario's tiers in order: the subset
    w4a16+bf16 lacks fp8, the second; a tier given no share is said to be given 0."""
    planner = _planner({"policy": "static_split", "fractions": [0.5, 0.5, 0.0]})
    assert planner._not_a_cascade(Design(("w4a16", "bf16"), (1, 1))) == (
        "not this split: it lacks fp8, which router.fractions sends 50 % of requests")
    assert planner._not_a_cascade(Design(("w4a16", "fp8"), (1, 1))) == (
        "not this split: it lacks bf16, which router.fractions gives a share of 0")
    assert planner._not_a_cascade(Design(("w4a16", "fp8", "bf16"), (1, 1, 1))) == ""


def test_thresholds_tier_and_step_tiers_by_name():
    """A ``thresholds`` map, a uniform ``tier`` and a ``step_tiers`` value naming a tier the
    subset lacks: "not this routing"; the step map's keywords top and cheapest name none."""
    planner = _planner({"policy": "threshold", "thresholds": {"w4a16": 0.8, "fp8": 0.7}})
    assert planner._not_a_cascade(Design(("w4a16", "bf16"), (1, 1))) == (
        "not this routing: it lacks fp8, which router.thresholds gives a threshold of 0.7")
    planner = _planner({"policy": "uniform", "tier": "fp8"})
    assert planner._not_a_cascade(Design(("w4a16", "bf16"), (1, 1))) == (
        "not this routing: it lacks fp8, the tier router.tier sends every request to")
    planner = _planner({"policy": "step_type", "step_fallback": "static_split",
                        "fractions": {"w4a16": 0.5, "bf16": 0.5},
                        "step_tiers": {"planning": "bf16", "format": "cheapest"}})
    assert planner._not_a_cascade(Design(("w4a16", "fp8"), (1, 1))) == (
        "not this routing: it lacks bf16, the tier router.step_tiers.planning sends planning "
        "steps to, and bf16, which router.fractions sends 50 % of requests")
    assert planner._not_a_cascade(Design(("w4a16", "bf16"), (1, 1))) == ""


def test_a_name_of_no_scenario_tier_is_left_to_the_router():
    """A typo (a name that is no tier of the scenario) is the scenario's fault: the router's
    own refusal says so, not a verdict that the subset lacks it."""
    planner = _planner({"policy": "static_split",
                        "fractions": {"w4a16": 0.4, "fp8": 0.2, "bf61": 0.4}})
    assert planner._not_a_cascade(Design(("w4a16", "fp8"), (1, 1))) == ""
