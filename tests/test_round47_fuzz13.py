"""Round 47, hostile input (helper fuzz13): the roofline's shipped calibration and the edges the
earlier rounds left. Each test names what a user saw before its fix."""

from __future__ import annotations

import json
import re

import pytest
from conftest import copy_folder
from test_hostile_inputs import CHEAP_FIRST, one_error_line, run_cli, tiny_with

from tiersim.cli import main
from tiersim.metrics import score_text
from tiersim.perf import roofline_calibration as rc

SHIPPED = json.loads(rc.CALIBRATION_FILE.read_text())
FIX = ("reinstall tiersim, or rewrite it with python benchmarks/roofline_ratios.py --write in "
       "tiersim's source repository")


def edited(change) -> str:
    """The shipped calibration's JSON after ``change(document)``."""
    document = json.loads(json.dumps(SHIPPED))
    change(document)
    return json.dumps(document)


CALIBRATIONS = {
    # tracebacks mid-run (TypeError, numpy's DTypePromotionError), on an FP8 tier
    "a factor of null": (edited(lambda d: d["moe"]["fp8"].update(factor=None)),
                         "moe.fp8.factor: must be a ratio from 0.01 to 100 (got null)"),
    "a GEMM factor of null": (edited(lambda d: d["gemm"]["fp8"].update(small=[None] * 3)),
                              "gemm.fp8.small[0]: must be a ratio from 0.01 to 100 (got null)"),
    "GEMM factors as text": (edited(lambda d: d["gemm"]["fp8"].update(small="0.75")),
                             "gemm.fp8.small: must be a list of 3 factors, one per weight-size "
                             "bin (got '0.75')"),
    # a message of Python's words: now the place
    "a list": ("[]", "top level: must be a JSON object (got [])"),
    "moe a list": (edited(lambda d: d.update(moe=[])), "moe: must be a JSON object (got [])"),
    # accepted with exit 0: an FP8 tier of infinite cost, negative times, NaN, a typo dropped
    "a factor of 0": (edited(lambda d: d["moe"]["fp8"].update(factor=0)),
                      "moe.fp8.factor: must be a ratio from 0.01 to 100 (got 0)"),
    "a negative factor": (edited(lambda d: d["gemm"]["fp8"]["large"].__setitem__(2, -1)),
                          "gemm.fp8.large[2]: must be a ratio from 0.01 to 100 (got -1)"),
    "a factor of NaN": (json.dumps(SHIPPED).replace("0.44", "NaN"),
                        "moe.w4a16.factor: must be a ratio from 0.01 to 100 (got NaN)"),
    "a factor of true": (edited(lambda d: d["moe"]["fp8"].update(factor=True)),
                         "moe.fp8.factor: must be a ratio from 0.01 to 100 (got true)"),
    "two GEMM factors of three": (edited(lambda d: d["gemm"]["fp8"].update(small=[0.5, 0.5])),
                                  "gemm.fp8.small: must be a list of 3 factors, one per "
                                  "weight-size bin (got [0.5, 0.5])"),
    "another schema": (edited(lambda d: d.update(schema="tiersim.roofline_calibration/2")),
                       "schema: must be 'tiersim.roofline_calibration/1' (got "
                       "'tiersim.roofline_calibration/2')"),
    "another row split": (edited(lambda d: d.update(small_rows=128)),
                          "small_rows: must be 256, the rows this tiersim splits a GEMM's "
                          "factors at (got 128)"),
    "a GPU not in the catalogue": (edited(lambda d: d.update(source_gpu="h200")),
                                   "source_gpu: must be a catalogue GPU's name, such as 'H200' "
                                   "(got 'h200')"),
    "a format misspelt": (edited(lambda d: d["moe"].update(w4a6=d["moe"].pop("w4a16"))),
                          "moe: 'w4a6' is no format; formats: bf16, fp8, w4a16, nvfp4, "
                          "fp8_block, mxfp4"),
    "a kernel path left out": (edited(lambda d: d["cpp_moe"].pop("hopper_ep1")),
                               "cpp_moe: 'hopper_ep1' is missing (each of hopper_ep1, hopper_ep, "
                               "blackwell_ep1, blackwell_ep lists its formats, [] for none)"),
    "kernel formats as text": (edited(lambda d: d["cpp_moe"].update(hopper_ep="fp8")),
                               "cpp_moe.hopper_ep: must be a list of format names (got 'fp8')"),
    "a compute dtype unknown": (edited(lambda d: d["compute"].update(fp8="fp6")),
                                "compute.fp8: must be one of bf16, fp4, fp8 (got 'fp6')"),
    # one line already (the JSON and profile readers'), now with the fix
    "a negative overhead": (edited(lambda d: d["host"]["overhead_s"].update(value=-1)),
                            "overhead_s.value: must be a number of seconds from 0 to 3600 "
                            "(got -1)"),
    "empty": ("", "empty; the roofline calibration is a UTF-8 JSON file"),
}


@pytest.mark.parametrize(("text", "said"), CALIBRATIONS.values(), ids=CALIBRATIONS)
def test_a_hand_edited_calibration_is_one_line_naming_the_fix(tmp_path, capsys, monkeypatch,
                                                              calibration_file, text, said):
    """A run with no profile read tiersim/data/roofline_calibration.json (package data) with
    no checks of its values: a key missing was one line (test_roofline_calibration), but a
    factor of null or GEMM factors written as text stopped an FP8 tier's run in a TypeError
    or numpy traceback, and a factor of 0, -1, NaN or true, two GEMM factors of three, another
    schema or row split, a misspelt format or a kernel path left out ran with exit 0 on what
    it made of them (a factor of 0 priced a tier at inf USD a request). The JSON and profile
    readers' lines named no fix. Each is now one line naming the file, the place and the fix,
    and the run's --out folder is not made."""
    line = fp8_run_on(text, tmp_path, capsys, monkeypatch, calibration_file)
    assert line == f"Error: {calibration_file}: {said}; {FIX}"


def fp8_run_on(text: str, tmp_path, capsys, monkeypatch, calibration_file) -> str:
    """The one error line of ``tiny.yaml`` with an FP8 tier run on calibration file ``text``
    (checked to leave no --out folder)."""
    monkeypatch.chdir(tmp_path)
    calibration_file.write_text(text)
    (tmp_path / "s.yaml").write_text(tiny_with(("precision: w4a16", "precision: fp8")))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-baselines",
                                   "--no-report"))
    assert not (tmp_path / "o").exists()
    return line


@pytest.mark.parametrize("command", [["plan"], ["sweep"], ["disagg", "--tier", "bf16"]],
                         ids=["plan", "sweep", "disagg"])
def test_a_broken_calibration_is_not_blamed_on_a_tier(tmp_path, capsys, monkeypatch,
                                                      calibration_file, command):
    """``tiersim plan`` read the broken calibration while sizing the tiers, took its error as
    the tier's refusal to fit and blamed the scenario: 'tiny.yaml: line 14: tiers[0]: tier
    'w4a16': .../roofline_calibration.json: ...'. The calibration is now read as the scenario
    is, before any tier is built, so every command says only the install's fault."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with())
    calibration_file.write_text("[]")
    argv = [command[0], "s.yaml", *command[1:]]
    if command[0] != "disagg":
        argv += ["--out", "o"]
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == f"Error: {calibration_file}: top level: must be a JSON object (got []); {FIX}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal", "s.yaml"]


@pytest.mark.parametrize(("written", "got"), [('"yes"', '"yes"'), ("1", "1")])
def test_a_calibrated_mark_no_run_writes_is_refused_by_report(hand_edited_run, tmp_path, capsys,
                                                              written, got):
    """A run on the roofline records ``"calibrated": true`` in its summary's fidelity record,
    and ``tiersim report`` words the calibrated roofline only for that true. The key was not in
    the record's model, so a hand-edited ``"yes"`` or ``1`` passed and the page called the
    calibrated run's step times the bare roofline's. It is now read as the record's other keys
    are: a value tiersim never writes is one line."""
    folder = tmp_path / "r"
    copy_folder(hand_edited_run, folder)
    doc = json.loads((folder / "summary.json").read_text())
    assert doc["profile"]["checked"]["calibrated"] is True
    doc["profile"]["checked"]["calibrated"] = "@@"
    (folder / "summary.json").write_text(json.dumps(doc).replace('"@@"', written))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('profile.checked."
                    f"calibrated': input should be a valid boolean, got {got}); rerun `tiersim "
                    "run` to rewrite it")
    assert not (folder / "report.html").exists()


@pytest.mark.parametrize(("score", "text"), [(999_999_999.4, "999,999,999"), (1e9, "1.00e+09"),
                                             (2.19e299, "2.19e+299")])
def test_a_huge_score_prints_in_three_digits(score, text):
    assert score_text(score) == text


def test_disagg_under_an_slo_of_1e_300_prints_its_scores_short(tmp_path, capsys, monkeypatch):
    """An SLO may be any number above 0 s; at 1e-300 s a split's score (its p99 over the SLO)
    is about 1e299, which ``tiersim disagg`` printed whole: 300 digits and 99 commas in the
    score column and the "best" line. A score of a billion and more is now printed to 3
    significant digits in e-notation, as a small one is to 3 digits."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("    replicas: 1\n", "    replicas: 2\n"),
                                               ("ttft_p99_s: 2.0", "ttft_p99_s: 1.0e-300"),
                                               ("tpot_p99_s: 0.1", "tpot_p99_s: 1.0e-300")))
    capsys.readouterr()
    assert main(["disagg", "s.yaml", "--tier", "w4a16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["aggregated", "1P"]
    assert all(re.fullmatch(r"\d\.\d\de\+29\d", line.split()[-1]) for line in lines[1:3])
    assert re.fullmatch(r"best: \S+( \S+)? \(misses an SLO; score \d\.\d\de\+29\d\)", lines[3])


def test_a_session_trace_without_prefix_hashes_is_not_told_it_has_them(tmp_path, capsys,
                                                                      monkeypatch):
    """A session trace (session_id, step) with no prefix_hashes column, replayed by a fleet
    that caches no prefix, was told 'the requests name their prompts' blocks (prefix_hashes)':
    a column the file does not have (tiersim makes the blocks of the sessions' prompts). The
    note now says whose blocks they are; a trace's own column keeps its words
    (test_round33_lead)."""
    import numpy as np
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    rows = 40
    pd.DataFrame({"request_id": np.arange(rows), "arrival_s": np.linspace(0, 10, rows),
                  "input_tokens": np.full(rows, 100, "int32"),
                  "output_tokens": np.full(rows, 20, "int32"), "session_id": 1,
                  "step": np.arange(rows)}).to_parquet(tmp_path / "t.parquet")
    (tmp_path / "s.yaml").write_text(tiny_with(("path: azure2023_code.parquet", "path: t.parquet"),
                                               ("window: [240, 360]", "window: null"),
                                               CHEAP_FIRST))  # no tier-order note (round 53)
    code, err = run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-baselines", "--no-report")
    assert code == 0, err
    assert err.splitlines() == [
        "note: s.yaml: the requests name their prompts' blocks (the blocks tiersim makes for the "
        "sessions' prompts), but no tier caches prefixes, so no prompt reuses another's: every "
        "prompt is computed whole and the prefix figures stay empty; set "
        "scheduler.enable_prefix_caching: true on a tier to replay the reuse"]
