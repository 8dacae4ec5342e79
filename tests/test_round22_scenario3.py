"""Round 22 of hostile input on a scenario's values (names, limits, settings): each a failure
found from outside and fixed, with the exact line a user sees or the number that was wrong."""

from __future__ import annotations

import json
from pathlib import Path

from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"


def tiny(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The bundled tiny scenario with ``edits`` (old, new) made to its text."""
    text = (SCENARIOS / "tiny.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def test_a_gpu_written_in_another_case_is_reported_by_its_catalogue_name(tmp_path, capsys):
    """``gpu: 'h200 '`` ran as an H200 but summary.json and the written scenario.yaml said
    ``'h200 '``: one GPU under two names beside runs that wrote ``H200``."""
    scenario = tiny(tmp_path, ("gpu: H200", "gpu: ' h200 '"))
    out = tmp_path / "out"
    code, _ = run_cli(capsys, "run", scenario, "--no-baselines", "--no-report", "--out", out)
    assert code == 0
    assert json.loads((out / "summary.json").read_text())["gpu"] == "H200"
    assert "gpu: H200\n" in (out / "scenario.yaml").read_text()


def test_a_gpu_name_with_a_hyphen_is_the_one_with_a_space_or_underscore(tmp_path, capsys):
    """``H200_SXM`` and ``H200 SXM`` were an H200, but ``H200-SXM`` (NVIDIA's own product
    pages write it so) was 'unknown GPU'."""
    from tiersim.hardware import get_gpu

    assert [get_gpu(n).name for n in ("H200-SXM", "h100--sxm", "H100-80GB-HBM3")] == [
        "H200", "H100", "H100"]
    scenario = tiny(tmp_path, ("gpu: H200", "gpu: H200-SXM"))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "--no-report")
    assert code == 0, err


def test_a_train_fraction_that_holds_out_no_request_is_one_line(tmp_path, capsys):
    """``train_fraction: 0.999999`` of 317 requests trained on all of them and ended in
    scikit-learn's 'Found array with 0 sample(s)' traceback (the held-out report had no row);
    a fraction that trains on none was already one line."""
    scenario = tiny(tmp_path, ("policy: static_split\n  fractions: [0.5, 0.5]",
                               "policy: threshold\n  classifier: {train_fraction: 0.999999}"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line == (f"Error: {scenario}: line 25: router.classifier.train_fraction: 0.999999 "
                    "of 317 requests leaves none held out to check the classifier on; lower "
                    "train_fraction or use more requests")


def test_class_difficulty_easy_above_hard_is_refused(tmp_path, capsys):
    """``class_difficulty: {easy: 0.8, hard: 0.2}`` ran with the classes swapped: a tier of
    accuracy 0.7 answered 'easy' requests 62 % of the time and 'hard' ones 99.97 %, and the
    report's classes read the other way round."""
    scenario = tiny(tmp_path, ("slo:", "workload:\n  difficulty:\n    class_difficulty: "
                               "{easy: 0.8, hard: 0.2}\nslo:"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line == (f"Error: {scenario}: line 29: workload.difficulty.class_difficulty: easy "
                    "(0.8) is above hard (0.2): easy requests would be answered less often "
                    "than hard ones; place easy at or below hard (default {easy: 0.2, hard: "
                    "0.8})")
    scenario = tiny(tmp_path, ("slo:", "workload:\n  difficulty:\n    class_difficulty: "
                               "{easy: 0.9}\nslo:"))
    assert "easy (0.9) is above hard (0.8)" in error_line(
        *run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))


def test_a_sized_gpu_count_the_model_cannot_split_over_is_noted(tmp_path, capsys):
    """``limits.gpus_per_replica: [3]`` (32 attention heads) sized every uniform fleet on the
    tiers' own 1 GPU and never said that 3 was left out."""
    scenario = tiny(tmp_path, ("slo:", "limits: {gpus_per_replica: [3]}\nslo:"))
    code, err = run_cli(capsys, "run", scenario, "--no-report")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "is left out" in line]
    assert notes == [f"note: tier {t}: limits.gpus_per_replica 3 is left out of its sizing: "
                     "Qwen3-Coder-30B-A3B cannot be split over 3 GPUs: 32 attention heads are "
                     "not divisible by 3; use gpus_per_replica in {1, 2, 4, 8, 16, 32}"
                     for t in ("w4a16", "bf16")]
    code, err = run_cli(capsys, "run", tiny(tmp_path), "--no-report")  # default counts: no note
    assert code == 0 and "is left out" not in err


def test_an_unknown_step_tier_is_told_the_keywords_too(tmp_path, capsys):
    """``step_tiers: {planning: TOP}`` was told 'tiers are w4a16, bf16', as if only names
    were taken, where ``top`` and ``cheapest`` are (the default map uses them)."""
    scenario = tiny(tmp_path, ("policy: static_split\n  fractions: [0.5, 0.5]",
                               "policy: step_type\n  step_tiers: {planning: TOP}"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line == (f"Error: {scenario}: line 25: router.step_tiers.planning: unknown tier "
                    "'TOP'; tiers are w4a16, bf16; top and cheapest name the last and the first")


def test_a_hopeless_accuracy_beside_two_type_is_noted(tmp_path, capsys):
    """``accuracy: {easy: 0.9, hard: 0.5, hopeless: 0.3}`` under the default kind two_type
    (which draws no hopeless request) ran without a word, as ``p_hopeless`` there is noted."""
    scenario = tiny(tmp_path, ("    precision: w4a16\n", "    precision: w4a16\n    accuracy: "
                               "{easy: 0.9, hard: 0.5, hopeless: 0.3}\n"))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "--no-report")
    assert code == 0, err
    # (the folder is named for the test: round 53's tier-order note on tiny names it)
    assert [line for line in err.splitlines()
            if "hopeless" in line.replace(str(tmp_path), "")] == [
        f"note: {scenario}: the accuracy table of tier(s) w4a16 gives hopeless, and "
        "workload.difficulty.kind two_type draws no hopeless request (only three_type does), "
        "so it changes nothing; remove it, or set kind: three_type"]
