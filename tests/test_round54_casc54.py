"""Round 54, a new user's ``tiersim plan --choose router.policy=cascade`` (fresh54b): a tier
subset that lacks a tier the cascade names (``router.cascade.from_tier`` / ``to_tier``) is not
a cascade design, and its verdict says so in plain words. Before, it read as the router's
config error ("router: s.yaml: router.cascade.to_tier: unknown tier 'bf16'; tiers are w4a16,
fp8"), which a planner reads as a fault of the scenario."""

from __future__ import annotations

import json

from conftest import run_cli, tiny_doc, write_yaml

from tiersim.results import PlanResult


def _three_tier_cascade(tmp_path):
    """tiny (30 s of it) with an FP8 tier between its two, and a cascade from W4A16 to BF16
    named by tier: every two-tier subset but w4a16+bf16 lacks one of them."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]})
    w4a16, bf16 = doc["tiers"]
    doc["tiers"] = [{**w4a16, "cost_per_gpu_hour": 2.5},
                    {"name": "fp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.0},
                    bf16]
    doc["router"] = {"policy": "cascade", "cascade": {"from_tier": "w4a16", "to_tier": "bf16"}}
    return write_yaml(tmp_path / "s.yaml", doc)


def test_a_subset_lacking_a_cascade_tier_is_not_a_cascade(tmp_path):
    """The two subsets without w4a16 or bf16 say which tier they lack and what the cascade
    does with it; the cascade itself (w4a16+bf16) is sized as before, and plan.json, its
    verdicts among its designs, reads back under the strict reader."""
    path = _three_tier_cascade(tmp_path)
    out = tmp_path / "plan"
    proc = run_cli("plan", str(path), "--out", str(out), "--choose", "router.policy=cascade")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "  runner-up w4a16+fp8: not a cascade: it lacks bf16, the tier " \
           "router.cascade.to_tier escalates to" in lines
    assert "  runner-up fp8+bf16: not a cascade: it lacks w4a16, the tier " \
           "router.cascade.from_tier answers first on" in lines
    assert not [line for line in lines if "unknown tier" in line]
    assert [line for line in lines if line.startswith("  runner-up w4a16+bf16 (")]
    data = json.loads((out / "plan.json").read_text())
    missed = {d["design"]: d["missed"] for d in data["runners_up"]}
    assert missed["w4a16+fp8"] == ("not a cascade: it lacks bf16, the tier "
                                   "router.cascade.to_tier escalates to")
    assert missed["fp8+bf16"] == ("not a cascade: it lacks w4a16, the tier "
                                  "router.cascade.from_tier answers first on")
    PlanResult.from_json(data)  # strict: raises on a field it does not know


def test_both_cascade_tiers_lacking_are_named_together():
    """A subset lacking both tiers names both, in the cascade's order (planner unit: routed
    by the planner's own check, no simulation)."""
    from types import SimpleNamespace

    from tiersim.plan.evaluate import Design
    from tiersim.plan.planner import Planner
    from tiersim.routing.config import RouterConfig

    cfg = RouterConfig.model_validate(
        {"policy": "cascade", "cascade": {"from_tier": "w4a16", "to_tier": "bf16"}})
    planner = Planner.__new__(Planner)
    planner.evaluator = SimpleNamespace(router_config=lambda design: cfg)
    design = Design(("fp8", "nvfp4"), (1, 1), (("policy", "cascade"),))
    assert planner._not_a_cascade(design) == (
        "not a cascade: it lacks w4a16, the tier router.cascade.from_tier answers first on, "
        "and bf16, the tier router.cascade.to_tier escalates to")
    assert planner._not_a_cascade(Design(("w4a16", "fp8", "bf16"), (1, 1, 1))) == ""
