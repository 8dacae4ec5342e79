"""The planner never fits the floor router to a floor above 1: at accuracy_floor 0.99 its
+0.02 margin asked for 1.01 and the design's verdict was pydantic's "router: 1 validation
error for RouterConfig"."""

from __future__ import annotations

import json
import re

import yaml
from conftest import REPO, run_cli

from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario


def test_the_raised_floors_stop_at_one():
    tiers = [FakeTier("w4", accuracy=0.80), FakeTier("bf16", accuracy=0.90)]
    scenario = fake_scenario(tiers, floor=0.99)
    planner = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers))
    floors = [[dict(s)["floor"] for s in group] for group in planner.settings(("w4", "bf16"))]
    assert floors == [[0.99, 0.9925, 0.995, 1.0]]


def test_a_floor_near_one_is_missed_accuracy_not_a_validation_error(tmp_path):
    doc = yaml.safe_load((REPO / "scenarios" / "tiny.yaml").read_text())
    doc.update(accuracy_floor=0.99, profile=None)
    doc["trace"]["window"] = [240, 300]
    path = tmp_path / "u2.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "p"
    proc = run_cli("plan", str(path), "--out", str(out), "--max-replicas", "2",
                   "--gpus-per-replica", "1")
    assert proc.returncode == 1, proc.stderr  # no fleet meets the constraints
    plan = json.loads((out / "plan.json").read_text())
    assert "validation error" not in proc.stdout + json.dumps(plan)
    # the reason ends with the floor that would be met (round 50: every design missed it)
    assert re.search(r"w4a16\+bf16: accuracy \d\d\.\d\d% < floor 99\.00%; every design misses "
                     r"the accuracy floor 99\.00% \(the most accurate simulated, bf16, "
                     r"\d\d\.\d\d%\): lower it to at most 0\.\d+ ", plan["reason"])
