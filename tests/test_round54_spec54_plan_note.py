"""Round 54 (spec54): in a plan, the note on a balancer with one replica to pick says the
planner chose that count. It read "give the tier more replicas, or remove the key", advice on
the user's file, where the file gave the tier 2 replicas and the plan sized it to 1 (fresh54:
bf16 with balancer prefix_aware on Mooncake)."""

from __future__ import annotations

import json

import yaml
from conftest import tiny_doc
from test_hostile_inputs import run_cli

PLANNED = ("note: tier bf16: the plan chose 1 replica for it (the scenario gives 2), so its "
           "balancer round_robin has one engine replica to pick and changes nothing in this "
           "plan; it would pick only with a second replica, 3.50 USD/hour more (1 GPU x 3.50 "
           "USD/GPU-hour, the scenario's price), which the plan's constraints do not need")


def _two_replica_balancer(tmp_path):
    """tiny on 30 s, its bf16 tier at 2 replicas with ``balancer: round_robin``: the plan
    sizes bf16 to 1 replica (modelled)."""
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    doc["tiers"][1].update(replicas=2, balancer="round_robin")
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_plan_says_it_chose_the_lone_replica(tmp_path, capsys):
    """The plan's console and its run's notes (the report's Notes) give the plan's words; the
    advice on the file is gone."""
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", _two_replica_balancer(tmp_path), "--out", out,
                        "--no-report", "--check-seeds", "0")
    assert code == 0, err
    assert PLANNED in err.splitlines()
    assert "give the tier more replicas" not in err
    plan = json.loads((out / "plan.json").read_text())
    assert plan["plan"]["replicas"]["bf16"] == 1
    notes = json.loads((out / "summary.json").read_text())["notes"]
    assert PLANNED.removeprefix("note: ") in notes


def test_the_note_is_the_files_own_outside_a_plan(tmp_path):
    """Outside a plan (the planned counts cleared), a one-replica tier keeps the note on the
    user's file."""
    import warnings

    from tiersim.errors import Note
    from tiersim.scenario import check_layouts, planned_counts, scenario_from_dict

    doc = tiny_doc()
    doc["tiers"][1]["balancer"] = "round_robin"
    scenario = scenario_from_dict(doc, str(tmp_path / "tiny.yaml"))
    for given, words in (({"bf16": 3}, "the plan chose 1 replica for it (the scenario gives 3)"),
                         (None, "give the tier more replicas, or remove the key")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", Note)
            if given is None:
                check_layouts(scenario)
            else:
                with planned_counts(given):
                    check_layouts(scenario)
        assert any(words in str(w.message) for w in caught), [str(w.message) for w in caught]
