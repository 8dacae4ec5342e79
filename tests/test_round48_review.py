"""Round 48's review: what the round's hardening missed (each test says what failed before)."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli, tiny_with
from test_round47_fuzz13 import fp8_run_on
from test_round48_fuzz14 import CAL_FIX, SHIPPED_CALIBRATION


def edited_copy(manifested_run, tmp_path, old: str, new: str):
    """A copy of the tiny run folder whose scenario.yaml has ``old`` replaced by ``new``."""
    folder = copy_folder(manifested_run, tmp_path / "r")
    text = (folder / "scenario.yaml").read_text()
    assert old in text
    (folder / "scenario.yaml").write_text(text.replace(old, new, 1))
    return folder


def test_a_run_folders_scenario_whose_tiers_are_no_list_is_no_traceback(manifested_run, tmp_path,
                                                                       capsys):
    """A hand-edited ``tiers: 5`` in a run folder's scenario.yaml was a TypeError traceback
    ('int' object is not iterable) in the check of each tier's precision and replicas; the
    report was written before that check. It states no tier's settings, so nothing disagrees."""
    folder = edited_copy(manifested_run, tmp_path, "tiers:", "tiers: 5\nxtiers:")
    code, err = run_cli(capsys, "report", folder)
    assert (code, "Traceback" in err) == (0, False), err
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize("gpu", ["H200-SXM", "h200_sxm", "' h200 '"])
def test_a_run_folders_gpu_spelt_as_another_name_of_the_same_gpu_is_the_same(
        manifested_run, tmp_path, capsys, gpu):
    """``gpu: H200-SXM`` in a run folder's scenario.yaml was refused as another run ('gpu
    'H200-SXM' in scenario.yaml, 'H200' in summary.json'): it is the H200 a scenario reads it
    as (the catalogue's aliases), so only case was forgiven, not the catalogue's other names."""
    folder = edited_copy(manifested_run, tmp_path, "gpu: H200", f"gpu: {gpu}")
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err


@pytest.mark.parametrize(("old", "new", "said"), [
    # another GPU under an alias is still another run
    ("gpu: H200", "gpu: h100-sxm", "gpu 'H100' in scenario.yaml, 'H200'"),
    # the round compared every text fact without case to forgive ``h200``, which let a
    # scenario.yaml of scenario 'TINY' pass as the run of 'tiny' (before the round, names were
    # compared exactly); the GPU and the formats are now compared as the scenario reads them,
    # other text exactly
    ("name: tiny", "name: TINY", "scenario 'TINY' in scenario.yaml, 'tiny'"),
], ids=["gpu alias", "name case"])
def test_a_run_folders_other_gpu_or_name_is_another_run(manifested_run, tmp_path, capsys, old,
                                                        new, said):
    """A GPU is compared by its catalogue name, a scenario's name exactly."""
    folder = edited_copy(manifested_run, tmp_path, old, new)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder}: scenario.yaml describes another run than summary.json "
                    f"({said} in summary.json, whose run manifest.json vouches for); put back "
                    f"the scenario.yaml the run wrote, or rerun `tiersim run --out {folder}`")


@pytest.mark.parametrize(("value", "said"), [
    ("0.99999999999999999999", "0.99999999999999999999 is not a whole number (only a float's "
                               "16 digits would round it to 1); write the whole number meant"),
    ("1,2.00000000000000000001", "2.00000000000000000001 is not a whole number (only a "
                                 "float's 16 digits would round it to 2); write the whole "
                                 "number meant"),
])
def test_plan_gpus_per_replica_whole_only_as_a_float_is_refused(tmp_path, capsys, monkeypatch,
                                                                value, said):
    """``tiersim plan --gpus-per-replica 0.99999999999999999999`` planned 1 GPU per replica
    without a word: the round refused such text in every other whole-number flag, --choose
    and scenarios, but this flag reads its list by itself (``int(float)``). Nothing is made."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with())
    line = one_error_line(*run_cli(capsys, "plan", "s.yaml", "-o", "o", "--no-report",
                                   "--gpus-per-replica", value))
    assert line == f"Error: --gpus-per-replica: {said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_huge_window_out_of_order_is_not_written_out_in_digits(tmp_path, capsys,
                                                                 monkeypatch):
    """``window: [1e300, 1e299]`` was quoted as its 301 digits, cut at the line's end
    ('got [10000000000000000525047602552044202487044685811081591549158541...'); a whole float
    past a float's 16 digits is written as Python writes it. Round 50: as the file writes it
    (it read "got [1e+300, 1e+299]", Python's spelling)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("window: [240, 360]", "window: [1e300, 1e299]")))
    assert one_error_line(*run_cli(capsys, "run", "s.yaml")) == (
        "Error: s.yaml: line 11: trace.window: must be [start_s, end_s] with 0 <= start < end "
        "(got [1e300, 1e299])")


def test_a_calibration_format_with_factors_and_no_compute_dtype_is_refused(
        tmp_path, capsys, monkeypatch, calibration_file):
    """The round refused ``compute.fp8: "bf16"`` (FP8's factors silently off), but a file with
    no ``compute.fp8`` at all turned them off the same way: Calibration.applies compared None
    with FP8's dtype, and every FP8 tier ran on the bare roofline with the calibrated
    roofline's fidelity record. A format with factors and no dtype is one line with the fix."""
    doc = json.loads(json.dumps(SHIPPED_CALIBRATION))
    del doc["compute"]["fp8"]
    line = fp8_run_on(json.dumps(doc), tmp_path, capsys, monkeypatch, calibration_file)
    assert line == (f"Error: {calibration_file}: compute: names no dtype for fp8, whose factors "
                    "then never apply; add \"fp8\": \"fp8\", the dtype FP8 computes in on H200; "
                    f"{CAL_FIX}")


def test_a_folder_whose_summary_keeps_the_gpu_as_written_is_one_run(manifested_run, tmp_path,
                                                                    capsys):
    """A summary.json written before tiersim kept the catalogue's GPU name holds the text the
    scenario wrote (``H200_SXM``), as its scenario.yaml does: comparing only scenario.yaml's
    by the catalogue's name refused such a folder as another run."""
    folder = edited_copy(manifested_run, tmp_path, "gpu: H200", "gpu: H200_SXM")
    (folder / "manifest.json").unlink()  # the summary is edited: no manifest vouches for it
    summary = json.loads((folder / "summary.json").read_text())
    summary["gpu"] = "H200_SXM"
    (folder / "summary.json").write_text(json.dumps(summary))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err


@pytest.mark.parametrize(("value", "got"), [("true", "true"), ("null", "null"), ("~", "null")])
def test_a_sweeps_max_sweep_points_is_quoted_as_yaml_writes_it(tmp_path, capsys, monkeypatch,
                                                               value, got):
    """The round spelt a sweep's values as YAML writes them (true, null), but the sweep's own
    read of ``limits.max_sweep_points`` still quoted Python's: 'must be a whole number >= 1
    (got True)' for ``max_sweep_points: true``."""
    monkeypatch.chdir(tmp_path)
    text = tiny_with(extra=f"limits:\n  max_sweep_points: {value}\nsweep:\n  seed: [1, 2]\n")
    (tmp_path / "s.yaml").write_text(text)
    line = len(text.splitlines()) - 2
    assert one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o")) == (
        f"Error: s.yaml: line {line}: limits.max_sweep_points: must be a whole number >= 1 "
        f"(got {got})")


def test_an_accuracy_table_without_its_keys_is_quoted_as_yaml_writes_it(tmp_path, capsys,
                                                                         monkeypatch):
    """``accuracy: {easy: 0.9, medium: 0.8}`` was quoted as Python writes a dict ('got
    {'easy': 0.9, 'medium': 0.8}'), after the round spelt the scenario's other 'got' values
    as YAML."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with((
        "cost_per_gpu_hour: 3.50\n  - name: bf16",
        "cost_per_gpu_hour: 3.50\n    accuracy: {easy: 0.9, medium: 0.8}\n  - name: bf16")))
    assert one_error_line(*run_cli(capsys, "run", "s.yaml")) == (
        "Error: s.yaml: line 18: tiers[0].accuracy: table needs keys easy and hard (optional "
        "hopeless); got {easy: 0.9, medium: 0.8}")


@pytest.mark.parametrize("summary_says", ["bf16", " BF16"], ids=["now", "older"])
def test_a_run_folders_format_spelt_as_the_scenario_reads_it_is_the_same(
        manifested_run, tmp_path, capsys, summary_says):
    """``precision: ' BF16'`` is the bf16 a scenario reads; a summary.json written before
    tiersim kept one spelling holds it as written (no manifest then vouches for it)."""
    folder = edited_copy(manifested_run, tmp_path, "precision: bf16", "precision: ' BF16'")
    summary = json.loads((folder / "summary.json").read_text())
    if summary_says != "bf16":
        (folder / "manifest.json").unlink()
        summary["tiers"]["bf16"]["precision"] = summary_says
        (folder / "summary.json").write_text(json.dumps(summary))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err


def test_deepgemm_experts_on_the_roofline_count_as_on_the_roofline():
    """benchmarks/fidelity_silicon.py's ``on_roofline`` took the round's ``roofline;
    calibrated:`` labels, but not DeepGEMM's experts on the roofline (``deepgemm: roofline;
    calibrated: ...``, ``deepgemm: roofline`` before the round too): a --roofline replay of a
    block-FP8 row on DeepGEMM counted 4 of its 5 tables on the roofline ('partly on the
    roofline')."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    from tiersim.perf import build_step_model

    step = build_step_model("Qwen3-Coder-30B-A3B", "fp8_block", "H200", profile=None,
                            moe_backend="deepgemm")
    tables = sorted(k for k in step.sources() if k not in fs.HOST_TIME)
    assert sorted(fs.on_roofline(step.sources())) == tables
    assert "moe deepgemm" in tables
    assert fs.on_roofline({"moe deepgemm": "deepgemm: measured:aiconfigurator vllm"}) == []
