"""Round 21 of hostile input (scenario YAML and sweeps), each a failure found from outside and
fixed: the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import axis_line
from test_round19 import error_line, run_cli
from test_sweep_cli import with_sweep

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny(tiny_short) -> Path:
    """scenarios/tiny.yaml copied next to the test, on a short window (conftest)."""
    return tiny_short


def test_a_name_axis_alone_is_refused_as_every_point_would_run_the_same(tiny, tmp_path,
                                                                        capsys):
    """`sweep: {name: [a, b]}` ran the same simulation once per name: the scenario's name only
    labels its summary, so the table held identical points under two labels."""
    with_sweep(tiny, {"name": ["a", "b"]})
    out = tmp_path / "o"
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                               "--no-baselines")) == (
        f"Error: {tiny}: line {axis_line(tiny, 'name')}: sweep: 'name': only labels the "
        "results (the summary's scenario name), so every point would run the same; drop the "
        "axis, or zip it with the axis it labels")
    assert not out.exists()


def test_a_name_zipped_with_another_axis_labels_its_points(tiny, tmp_path, capsys):
    """Zipped with an axis that changes the run, a name is a label of each point: it stays."""
    with_sweep(tiny, {"zip": {"name": ["one", "two"], "tiers.bf16.replicas": [1, 2]}})
    code, err = run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err


@pytest.mark.parametrize("name", ["/etc/hostname", "../outside.json", "sub/summary.json", ".."])
def test_a_manifest_naming_a_file_outside_its_folder_is_malformed(tiny, tmp_path, capsys, name):
    """A manifest.json whose files map named a path (``/etc/hostname``, ``../x``) had that file
    hashed, wherever it was (``/proc/kcore`` read for ever), and the report blamed it as 'does
    not belong to run ...': a manifest names the run's own files, in its folder."""
    import json

    out = tmp_path / "r"
    (tmp_path / "outside.json").write_text("{}")
    code, err = run_cli(capsys, "run", tiny, "-o", out, "--no-report", "--no-baselines")
    assert code == 0, err
    info = json.loads((out / "manifest.json").read_text())
    info["files"][name] = "0" * 64
    (out / "manifest.json").write_text(json.dumps(info))
    assert error_line(*run_cli(capsys, "report", out)) == (
        f"Error: {out / 'manifest.json'}: names {name!r}, which is no file of this run's folder "
        f"(a manifest lists the run's files by name); rerun `tiersim run --out {out}`")


def _swept(tiny: Path, tmp_path: Path, capsys) -> Path:
    """A finished 2-point sweep of ``tiny`` (estimated savings) in ``tmp_path / 'o'``."""
    with_sweep(tiny, {"seed": [0, 1]})
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    return out


def test_a_sweep_json_nested_too_deep_does_not_crash_the_resume(tiny, tmp_path, capsys):
    """A sweep.json of 10^5 nested lists (a damaged or hostile folder) ended a resume with a
    RecursionError traceback: it is read as the unreadable manifest it is (the points say
    what they are) and rewritten."""
    out = _swept(tiny, tmp_path, capsys)
    (out / "sweep.json").write_text("[" * 100_000 + "]" * 100_000)
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    assert "(0 run, 2 already done, 0 failed)" in err
    assert (out / "sweep.json").read_text().startswith("{")


def test_a_sweep_json_that_is_a_fifo_does_not_hang_the_resume(tiny, tmp_path, capsys):
    """A FIFO named sweep.json in the folder hung a resume for ever, reading it."""
    import os

    out = _swept(tiny, tmp_path, capsys)
    (out / "sweep.json").unlink()
    os.mkfifo(out / "sweep.json")
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    assert (out / "sweep.json").is_file()


def test_a_stored_scenario_nested_too_deep_does_not_crash_the_refusal(tiny, tmp_path,
                                                                     capsys):
    """A resume of another base into a folder whose scenario.yaml is 10^5 nested lists ended
    with a RecursionError traceback where it names the other scenario."""
    out = _swept(tiny, tmp_path, capsys)
    (out / "scenario.yaml").write_text("[" * 100_000 + "]" * 100_000)
    tiny.write_text(tiny.read_text().replace("seed: 0", "seed: 3"))
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                               "--no-baselines")) == (
        f"Error: {out}: holds a sweep of a different scenario (something outside `sweep:` "
        f"changed); use a new --out folder, or delete {out / 'points'} to start over")


def test_an_axis_value_map_with_a_number_key_beside_names_is_one_line(tiny, tmp_path, capsys):
    """`router: [{1: x, policy: static_split}]` as an axis value (a number key beside text keys)
    crashed with a TypeError traceback: the point id sorted the map's keys, and 1 < 'policy'
    cannot be compared. It is now the scenario's refusal of that key, as `{1: x}` alone was."""
    with_sweep(tiny, {"router": [{1: "x", "policy": "static_split"}]})
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1",
                               "--no-report", "--no-baselines")) == (
        f"Error: {tiny}: line {axis_line(tiny, 'router')}: sweep: 'router': router: key 1 is "
        "a number, where the keys are names; write the name, or quote it ('1') if it is one "
        "(value {1: 'x', policy: 'static_split'})")
    assert not (tmp_path / "o").exists()


def test_a_base_map_with_a_number_key_that_every_point_replaces_does_not_crash(tiny, tmp_path,
                                                                              capsys):
    """A base `router:` holding a number key beside text keys, replaced whole by a router axis
    at every point, ran no point: the base's digest sorted its keys and crashed (TypeError)."""
    doc = yaml.safe_load(tiny.read_text())
    doc["router"] = {1: "x", "policy": "static_split", "fractions": [0.5, 0.5]}
    doc["sweep"] = {"router": [{"policy": "static_split", "fractions": [0.5, 0.5]},
                               {"policy": "static_split", "fractions": [0.4, 0.6]}]}
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    assert "(2 run, 0 already done, 0 failed)" in err


def test_point_ids_of_maps_with_number_keys_are_unchanged():
    """Ids of values json could already write (a map of number keys alone) stay as they were,
    so stored points keep matching."""
    import hashlib
    import json

    from tiersim.sweep.axes import point_id

    values = {"router": {1: "x", 2: "y"}}
    text = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    assert point_id(values) == hashlib.sha1(text.encode()).hexdigest()[:12]
    assert point_id({"router": {1: "x", "policy": "p"}}) == point_id(
        {"router": {"1": "x", "policy": "p"}})


def test_a_choose_map_with_a_number_key_beside_names_is_one_line(tiny, tmp_path, capsys):
    """`tiersim plan --choose 'router.confusion={1: 0.1, fpr: 0.2}'` crashed with a TypeError
    traceback sorting the map's keys to find values given twice."""
    out = tmp_path / "p"
    assert error_line(*run_cli(capsys, "plan", tiny, "-o", out, "--no-report", "--choose",
                               "router.confusion={1: 0.1, fpr: 0.2},{fpr: 0.1}")) == (
        "Error: --choose router.confusion={1: 0.1, fpr: 0.2}: router.confusion: key 1 is a "
        "number, where the keys are names; write the name, or quote it ('1') if it is one")
    # round 52: told as a scenario file's number key is (it read pydantic's "router.confusion[1]:
    # keys should be strings (got 1)")
    assert not out.exists()


LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 131072}


def test_a_baseline_models_config_changed_since_its_points_ran_is_refused(tiny, tmp_path,
                                                                          capsys):
    """A baseline-only tier's model config was no input of a point: edited between two runs
    of a sweep (32 layers, then 64), the stored points were kept and a point added to the grid
    ran over the new file, so one table sized the baseline from two models (its uniform cost
    doubled from one row to the next)."""
    import json

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(LLAMA))
    doc = yaml.safe_load(tiny.read_text())
    doc["baselines"] = [{"name": "big", "model": str(model), "precision": "bf16",
                         "accuracy": 0.9, "cost_per_gpu_hour": 3.5}]
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    with_sweep(tiny, {"seed": [0, 1]})
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report")
    assert code == 0, err
    (model / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 64}))
    first = sorted(p.stem for p in (out / "points").glob("*.json"))[0]
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report")) == (
        f"Error: {out}: holds sweep points run over other input files (baselines[0].model "
        f"{model} of point {first} changed since it ran); use a new --out folder, or delete "
        f"{out / 'points'} to start over")


def test_a_point_another_version_ran_is_rerun_not_held_to_its_inputs(tiny, tmp_path, capsys):
    """A point stored by another tiersim version runs again (the table holds one version), so
    the inputs it recorded are not compared: an older version recorded no baseline model, and
    its folder was refused as 'run over other input files' instead of resumed."""
    import json

    out = _swept(tiny, tmp_path, capsys)
    path = sorted((out / "points").glob("*.json"))[0]
    record = json.loads(path.read_text())
    record.update(tiersim="0.0.1+000000000000", inputs={**record["inputs"], "trace": "0" * 16})
    path.write_text(json.dumps(record))
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    assert "(1 run, 1 already done, 0 failed)" in err


@pytest.mark.parametrize("limits", [5, [1], "many"])
def test_limits_that_is_no_map_is_named_as_run_names_it(tiny, tmp_path, capsys, limits):
    """`limits: 5` in a sweep's scenario was refused as 'limits.max_sweep_points: must be a
    whole number >= 1 (got None)', a key the file does not have; `tiersim run` names `limits`
    itself."""
    doc = yaml.safe_load(tiny.read_text())
    doc["limits"] = limits
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    ran = error_line(*run_cli(capsys, "run", tiny, "--no-baselines"))
    assert ran.startswith(f"Error: {tiny}: line ")
    assert ran.endswith(f": limits: must be a mapping of keys (got {limits!r})")
    with_sweep(tiny, {"seed": [0, 1]})
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1",
                               "--no-report", "--no-baselines")) == ran


def test_a_limits_axis_setting_max_sweep_points_is_refused(tiny, tmp_path, capsys):
    """`sweep: {limits: [{max_sweep_points: 4}, {max_sweep_points: 8}]}` ran the same scenario
    twice under two labels (the grid's bound is the base scenario's, so neither value bounded
    anything), where the axis limits.max_sweep_points is refused."""
    with_sweep(tiny, {"limits": [{"max_sweep_points": 4}, {"max_sweep_points": 8}]})
    assert error_line(*run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1",
                               "--no-report", "--no-baselines")) == (
        f"Error: {tiny}: line {axis_line(tiny, 'limits')}: sweep: 'limits': a value sets "
        "limits.max_sweep_points, which shapes the sweep itself (the base scenario's bounds the "
        "grid), so no point may change it; set it in the base scenario's limits")
    assert not (tmp_path / "o").exists()


def test_a_limits_axis_of_other_limits_still_runs(tiny, tmp_path, capsys):
    """A whole-limits axis that leaves max_sweep_points alone is an axis like any other (with
    the simulated baselines, whose sizing it caps: under --no-baselines it is refused as read
    by no point, test_round28_fzs)."""
    with_sweep(tiny, {"limits": [{"max_replicas": 4}, {"max_replicas": 8}]})
    code, err = run_cli(capsys, "sweep", tiny, "-o", tmp_path / "o", "-w", "1", "--no-report")
    assert code == 0, err


@pytest.mark.parametrize("edited", [0, 1])
def test_an_input_changed_under_any_later_point_is_refused(tiny, tmp_path, capsys, edited):
    """The version check's name was reused for the first point's inputs, so every point after
    the first was skipped: a trace changed under the second point alone was kept silently."""
    import pandas as pd

    trace = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
    copies = [tmp_path / f"t{i}.parquet" for i in range(2)]
    for copy in copies:
        shutil.copy(trace, copy)
    with_sweep(tiny, {"trace.path": [str(c) for c in copies]})
    out = tmp_path / "o"
    argv = ("sweep", tiny, "-o", out, "-w", "1", "--no-report", "--no-baselines")
    code, err = run_cli(capsys, *argv)
    assert code == 0, err
    frame = pd.read_parquet(copies[edited])
    frame.iloc[::-1].reset_index(drop=True).to_parquet(copies[edited])
    line = error_line(*run_cli(capsys, *argv))
    assert "holds sweep points run over other input files" in line
