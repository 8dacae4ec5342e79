"""Round 54 (split54): in a plan, the note on a disaggregated tier's balancer with one prefill
replica to pick says the plan chose that count, as the plain-replica note does (spec54). It
read "give the tier more prefill replicas, or remove the key", advice on the user's file,
where the file gave bf16 a 1P 2D split of 3 replicas and the plan sized it to 1P 1D."""

from __future__ import annotations

import json

import yaml
from conftest import tiny_doc
from test_hostile_inputs import run_cli

PLANNED = ("note: tier bf16: the plan chose 1 prefill replica for it (1P 1D of the 2 replicas "
           "it sized; the scenario gives 1P 2D), so its balancer round_robin, which picks "
           "among the prefill replicas (the decode ones by least outstanding tokens), has one "
           "to pick and changes nothing in this plan; it would pick only with a second "
           "prefill replica: one more replica, 3.50 USD/hour more (1 GPU x 3.50 USD/GPU-hour, "
           "the scenario's price)")


def _disaggregated(tmp_path):
    """tiny's bf16 tier alone on 30 s of its trace played 8 times as fast, at 3 replicas
    split 1P 2D with ``balancer: round_robin``: the plan sizes it to 2 replicas, 1P 1D
    (modelled; one replica misses the TPOT SLO)."""
    doc = tiny_doc()
    doc["trace"].update(window=[240, 270], time_scale=8)
    bf16 = doc["tiers"][1]
    bf16.update(replicas=3, balancer="round_robin",
                disaggregation={"prefill_replicas": 1, "decode_replicas": 2})
    doc["tiers"] = [bf16]
    doc["router"] = {"policy": "uniform"}
    path = tmp_path / "dis.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_plan_says_it_chose_the_lone_prefill_replica(tmp_path, capsys):
    """The plan's console and its run's notes give the plan's words; the advice on the file
    is gone."""
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", _disaggregated(tmp_path), "--out", out,
                        "--no-report", "--check-seeds", "0")
    assert code == 0, err
    assert PLANNED in err.splitlines()
    assert "give the tier more prefill replicas" not in err
    plan = json.loads((out / "plan.json").read_text())
    assert plan["plan"]["replicas"]["bf16"] == 2
    notes = json.loads((out / "summary.json").read_text())["notes"]
    assert PLANNED.removeprefix("note: ") in notes


def test_a_split_with_decode_replicas_to_spare_names_another_split(tmp_path):
    """A planned 1P 3D could give a prefill replica up from its decode ones: the note names
    that split as one the plan did not choose; outside a plan the note is the file's own."""
    import warnings

    from tiersim.errors import Note
    from tiersim.scenario import check_layouts, planned_counts, scenario_from_dict

    doc = tiny_doc()
    doc["tiers"][1].update(replicas=4, balancer="round_robin",
                           disaggregation={"prefill_replicas": 1, "decode_replicas": 3})
    scenario = scenario_from_dict(doc, str(tmp_path / "tiny.yaml"))
    for given, words in (
            (({"bf16": 2}, {"bf16": (1, 1)}),
             "tier bf16: the plan chose 1 prefill replica for it (1P 3D of the 4 replicas it "
             "sized; the scenario gives 1P 1D), so its balancer round_robin, which picks "
             "among the prefill replicas (the decode ones by least outstanding tokens), has "
             "one to pick and changes nothing in this plan; it would pick only with a second "
             "prefill replica: another split of its replicas, one the plan did not choose, or "
             "one more replica, 3.50 USD/hour more (1 GPU x 3.50 USD/GPU-hour, the "
             "scenario's price)"),
            (None, "tier bf16: balancer round_robin picks one of the tier's prefill replicas "
                   "for each request (its decode replicas by least outstanding tokens), and it "
                   "has one (disaggregation.prefill_replicas 1), so the key changes nothing; "
                   "give the tier more prefill replicas, or remove the key")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", Note)
            if given is None:
                check_layouts(scenario)
            else:
                with planned_counts(*given):
                    check_layouts(scenario)
        assert words in [str(w.message) for w in caught], [str(w.message) for w in caught]
