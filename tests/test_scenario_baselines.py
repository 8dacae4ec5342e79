"""A scenario's ``baselines:``: tiers sized and simulated only as uniform baselines for the
saving, never routed to; adding one leaves the routed run as it was (docs/planning.md)."""

from __future__ import annotations

import json

from conftest import write_yaml
from test_hostile_inputs import run_cli
from test_plan_rerun import three_tiers


def two_tiers_and_fp8_baseline(window: float = 30.0) -> dict:
    """The outside tester's fy.yaml with fp8 moved from ``tiers`` to ``baselines``."""
    doc = three_tiers(trace={**three_tiers()["trace"], "window": [0, window]})
    fp8 = doc["tiers"].pop(1)
    return {**doc, "baselines": [fp8]}


def test_a_baseline_tier_leaves_the_routed_run_s_requests_unchanged(tmp_path, capsys):
    # each request's correctness is one uniform number shared by every tier, so drawing fp8's
    # too must not move nvfp4's and bf16's (the routed run would differ from the plan's)
    with_fp8 = two_tiers_and_fp8_baseline()
    without = {k: v for k, v in with_fp8.items() if k != "baselines"}
    for name, doc in (("with", with_fp8), ("without", without)):
        path = write_yaml(tmp_path / f"{name}.yaml", doc)
        code, err = run_cli(capsys, "run", path, "--out", tmp_path / name, "--no-report")
        assert code == 0, err
    assert ((tmp_path / "with" / "requests.parquet").read_bytes()
            == (tmp_path / "without" / "requests.parquet").read_bytes())
    runs = {name: json.loads((tmp_path / name / "summary.json").read_text())
            for name in ("with", "without")}
    assert set(runs["with"]["tiers"]) == {"nvfp4", "bf16"}
    assert set(runs["with"]["savings"]["uniform"]) == {"nvfp4", "fp8", "bf16"}
    assert set(runs["without"]["savings"]["uniform"]) == {"nvfp4", "bf16"}
    assert runs["with"]["cost_usd"] == runs["without"]["cost_usd"]  # fp8 is never costed


def test_a_baseline_s_accuracy_out_of_range_names_its_key(tmp_path, capsys):
    doc = two_tiers_and_fp8_baseline()
    doc["baselines"][0]["accuracy"] = 0.99
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "r", "--no-report")
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"Error: {path}: line 48: baselines[0].accuracy: accuracy 0.99 must lie in (0, 0.8644), "
        "ends excluded: one number is fitted by a logistic curve over difficulty, which reaches "
        "0 and the ceiling (the share of requests that are not hopeless) only in the limit; "
        "give a number inside, or a table such as {easy: 1.0, hard: 1.0} (each class's "
        "accuracy as given, 0 and 1 allowed)")


def test_an_estimated_saving_says_it_leaves_the_baselines_out(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", two_tiers_and_fp8_baseline())
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "r", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    assert (f"note: {path}: baselines (fp8) are left out of the estimated saving: it scales "
            "this run's per-token costs, and they served nothing; run with simulated baselines "
            "(without --no-baselines) to size and compare them") in err


def test_a_baseline_without_its_label_is_named_at_its_key(tmp_path, capsys):
    """A labelled trace lacking a baseline tier's correct_<name> was blamed on
    workload.difficulty, a key the file does not have, with no line."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens,correct_w4a16,correct_bf16\n"
                     + "".join(f"{i * 0.5},100,10,1,1\n" for i in range(20)))
    doc = tiny_doc()
    doc["trace"] = {"path": str(trace)}
    doc["baselines"] = [{"name": "fp8", "precision": "fp8", "replicas": 1,
                         "cost_per_gpu_hour": 3.5}]
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report")
    assert code == 1
    assert err.startswith(f"Error: {path}: line ") and err.rstrip().endswith(
        ": baselines[0].name: trace has some correct_<tier> columns but lacks correct_fp8; add "
        "them or rename the tiers to match")


def test_baselines_with_every_item_commented_out_are_none():
    from conftest import tiny_doc

    from tiersim.scenario import scenario_from_dict

    assert scenario_from_dict({**tiny_doc(), "baselines": None}, "s.yaml").baselines == []


def test_a_baseline_needs_no_replica_count():
    """It is sized by simulation; its replicas were required and never used."""
    from conftest import tiny_doc

    from tiersim.scenario import scenario_from_dict

    doc = {**tiny_doc(), "baselines": [{"name": "fp8", "precision": "fp8",
                                        "cost_per_gpu_hour": 3.5}]}
    assert [b.name for b in scenario_from_dict(doc, "s.yaml").baselines] == ["fp8"]
