"""What a run says about its step times' fidelity (tiersim.fidelity): the shipped record is the
fidelity benchmark's own output on the current code, and a run reads it only for a shipped
profile it actually uses."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tiersim import fidelity
from tiersim.paths import find_bundled

REPO = Path(__file__).resolve().parents[1]
H200 = "h200_aiconfigurator_vllm"


def test_the_shipped_record_is_the_benchmarks_output_on_this_code():
    """Replays every vLLM H200 row (as `python benchmarks/fidelity_silicon.py --write-check`)
    and compares: an engine or profile change that moves a figure must rewrite the record."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fidelity_silicon as fs

    rows = fs.load_rows()
    rows = fs.with_aic(rows[rows["backend"] == "vllm"].reset_index(drop=True))
    args = fs.build_parser().parse_args([])  # the benchmark's defaults
    res = fs.run(rows, args.kv_dtype, fs.protocol_from_args(args), jobs=2)
    shipped = json.loads(fidelity.CHECK_FILE.read_text())["profiles"][H200]
    assert fs.check_entry(res, "vllm", fs.FIT_SYSTEM) == shipped


def own(profile: str, model: str, precision: str = "bf16") -> dict | None:
    """The checked model a one-tier fleet of ``model`` on ``profile`` is matched to."""
    return fidelity.check_for(profile, {"t": (model, precision)})["tiers"][0]["checked_model"]


def test_a_shipped_profile_is_checked_and_names_each_tiers_models_rows():
    check = fidelity.check_for(H200, {"small": ("Llama-3.1-8B", "bf16"),
                                      "large": ("Llama-3.1-70B", "fp8")})
    assert check["profile"] == H200 and check["engine"] == "vllm" and check["gpu"] == "H200"
    small, large = check["tiers"]  # in the fleet's order
    assert (small["tier"], large["tier"]) == ("small", "large")
    assert (small["model"], small["precision"]) == ("Llama-3.1-8B", "bf16")
    assert (large["model"], large["precision"]) == ("Llama-3.1-70B", "fp8")
    assert small["checked_model"]["name"] == "Llama-3.1-8B"
    assert large["checked_model"]["name"] == "Llama-3.1-70B"
    assert large["checked_model"]["held_out_rows"] == 0  # the overhead was fitted on its rows
    for same in ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"):  # as the catalogue
        assert own(H200, same)["name"] == "Llama-3.1-70B"
    assert own(H200, "Qwen3-Coder-30B-A3B") is None
    low, high = check["model_tpot_abs_median_pct_range"]
    assert low <= check["tpot_abs_median_pct"] <= high


def test_a_config_of_ones_own_is_not_the_checked_model_whatever_its_folder_is_called(
        tmp_path):
    folder = tmp_path / "Llama-3.1-70B"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert own(H200, str(folder)) is None


def test_a_checked_model_given_as_a_config_is_recognised_by_its_shapes(tmp_path):
    """A config of a checked model under any folder name is that model, in whatever format;
    the line names the checkpoint the rows served."""
    source = REPO / "benchmarks" / "data" / "configs" / "Qwen3-235B-A22B-FP8" / "config.json"
    config = json.loads(source.read_text())
    for name, data in (("anything", config), ("bf16", {k: v for k, v in config.items()
                                                      if k != "quantization_config"})):
        mine = tmp_path / name / "config.json"
        mine.parent.mkdir()
        mine.write_text(json.dumps(data))
        check = fidelity.check_for(H200, {"t": (str(mine), "fp8")})
        assert check["tiers"][0]["checked_model"]["name"] == "Qwen3-235B-FP8"
        assert ": Qwen3-235B-FP8 (rows of Qwen/Qwen3-235B-A22B-FP8): " in (
            fidelity.describe(check))
    other = dict(config, num_hidden_layers=config["num_hidden_layers"] - 1)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps(other))
    assert own(H200, str(tmp_path / "other" / "config.json")) is None


def test_a_profile_of_ones_own_or_the_roofline_is_not_checked(tmp_path):
    for name in (f"{H200}.json", H200):  # same name, another file: its tables may be anything
        mine = tmp_path / name
        shutil.copy(find_bundled("profiles", H200), mine)
        assert fidelity.check_for(str(mine), {"t": ("Llama-3.1-70B", "bf16")}) is None
    assert fidelity.check_for(None, {"t": ("Llama-3.1-70B", "bf16")}) is None
    assert fidelity.check_for("nosuch_profile", {"t": ("Llama-3.1-70B", "bf16")}) is None
    assert fidelity.describe(None) == (
        "fidelity: these step times have not been checked against measured serving ("
        "a profile of your own, the roofline on a GPU with no measured rows, no tier reading "
        "the profile's tables, or a run written before tiersim recorded the roofline's check)")


RECORD = {"profile": "p", "engine": "vllm", "gpu": "H200", "rows": 291,
          "tpot_abs_median_pct": 9.9, "ttft_abs_median_pct": 13.7,
          "aiconfigurator_tpot_abs_median_pct": 12.8,
          "aiconfigurator_ttft_abs_median_pct": 23.7,
          "models_checked": ["a", "b"], "model_tpot_abs_median_pct_range": [3.6, 103.9],
          "command": "python benchmarks/fidelity_silicon.py --write-check"}
MODEL_A = {"name": "a", "rows": 60, "held_out_rows": 20, "model_path": "org/a",
           "tpot_abs_median_pct": 4.3, "ttft_abs_median_pct": 4.4}


def test_the_line_a_run_prints_names_each_tiers_model_and_format():
    check = {**RECORD, "tiers": [
        {"tier": "small", "model": "a-small", "precision": "bf16", "checked_model": None},
        {"tier": "large", "model": "a", "precision": "fp8", "checked_model": MODEL_A}]}
    assert fidelity.describe(check) == (
        "fidelity: replaying NVIDIA's measured vllm serving runs on H200 (291 rows, 2 models), "
        "this profile's median error was 9.9% TPOT and 13.7% TTFT; 3.6-103.9% TPOT by model; "
        "aiconfigurator 12.8% / 23.7%; tier small (a-small, bf16): not among the checked "
        "models; tier large (a, fp8): a (rows of org/a): 4.3% TPOT, 4.4% TTFT on its 60 rows, "
        "40 of which the fit was made on (python benchmarks/fidelity_silicon.py --write-check "
        "in tiersim's source repository)")


def test_a_summary_written_before_the_per_tier_record_still_reads():
    """Its one model was the scenario's: the line says so rather than naming a tier."""
    assert "; the scenario's model: a (rows of org/a): 4.3% TPOT, 4.4% TTFT on its 60 rows, " in (
        fidelity.describe({**RECORD, "this_model": MODEL_A}))


@pytest.mark.parametrize("scenario,step_times", [("tiny", "roofline"),
                                                  ("cascade_models", None)])
def test_a_run_carries_the_check_of_the_profile_it_reads(scenario, step_times):
    """tiny runs on the roofline (profile: null) of an H200: it carries the roofline's record;
    cascade_models reads the shipped H200 profile: that profile's."""
    golden = json.loads((REPO / "tests" / "golden" / f"{scenario}_summary.json").read_text())
    checked = golden["profile"]["checked"]
    assert checked.get("step_times") == step_times and checked["gpu"] == "H200"
    assert (checked.get("profile") is None) == (step_times == "roofline")
    if step_times is None:  # each tier's own model: small is not the scenario's Llama-3.1-70B
        tiers = golden["profile"]["checked"]["tiers"]
        assert [(t["tier"], t["checked_model"]["name"]) for t in tiers] == [
            ("small", "Llama-3.1-8B"), ("large", "Llama-3.1-70B")]


def test_the_shipped_roofline_record_is_the_benchmarks_output_on_this_code():
    """Replays every vLLM B300 row on the roofline alone (as `python
    benchmarks/fidelity_silicon.py --system b300_sxm --roofline --write-check`): a change to
    the roofline model that moves a figure must rewrite what a roofline run prints."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fidelity_silicon as fs

    rows = fs.load_rows("b300_sxm")
    rows = fs.with_aic(rows[rows["backend"] == "vllm"].reset_index(drop=True), "b300_sxm")
    args = fs.build_parser().parse_args(["--system", "b300_sxm", "--roofline"])
    res = fs.run(rows, args.kv_dtype, fs.protocol_from_args(args), jobs=2,
                 knobs=fs.Knobs(roofline=True))
    shipped = json.loads(fidelity.CHECK_FILE.read_text())["profiles"]["roofline_b300"]
    assert fs.check_entry(res, "vllm", "b300_sxm", roofline=True) == shipped
    assert shipped["held_out_rows"] == shipped["rows"]  # no fit sets the roofline


@pytest.mark.parametrize("gpu", ["H200", "H100", "B200", "B300"])
def test_every_gpu_with_measured_rows_has_its_roofline_checked(gpu):
    check = fidelity.roofline_check_for(gpu, {"t": ("Llama-3.1-70B", "fp8")})
    assert check["step_times"] == "roofline" and check["gpu"] == gpu
    assert check["profile"] is None and check["rows"] > 0
    assert check["command"].endswith("--roofline --write-check")
    assert fidelity.roofline_check_for(f"{gpu.lower()}_sxm", {}) == {**check, "tiers": []}


def test_a_gpu_with_no_measured_rows_has_no_roofline_record():
    assert fidelity.roofline_check_for("MyGPU", {"t": ("Llama-3.1-70B", "bf16")}) is None


def test_the_line_a_roofline_run_prints_says_it_is_the_roofline_and_which_way_it_errs():
    check = {**RECORD, "profile": None, "step_times": "roofline", "calibrated": True, "rows": 132,
             "tpot_signed_median_pct": -17.2, "ttft_signed_median_pct": -62.4,
             "command": "python benchmarks/fidelity_silicon.py --system b300_sxm --roofline "
                        "--write-check",
             "tiers": [{"tier": "bf16", "model": "a", "precision": "bf16",
                        "checked_model": {**MODEL_A, "held_out_rows": 60}}]}
    assert fidelity.describe(check) == (
        "fidelity: these step times come from tiersim's roofline model, not measured tables "
        "(its FP8 GEMM and FP8 / 4-bit MoE kernel efficiencies and vLLM's host time are set on "
        "NVIDIA's measured H200 data); replaying NVIDIA's measured vllm serving runs on H200 "
        "(132 rows, 2 models) on it, its median error was 9.9% TPOT and 13.7% TTFT (signed "
        "-17% / -62%: negative is faster than measured); aiconfigurator 12.8% / 23.7%; tier "
        "bf16 (a, bf16): a (rows of org/a): 4.3% TPOT, 4.4% TTFT on its 60 rows (python "
        "benchmarks/fidelity_silicon.py --system b300_sxm --roofline --write-check in "
        "tiersim's source repository)")


def test_a_run_folder_from_before_the_calibration_keeps_the_bare_roofline_s_words():
    """A summary.json written before the roofline's calibration holds a record without
    ``calibrated``: `tiersim report` of it must not claim the calibration its step times
    never had (review47 found the page saying so beside "overhead: roofline")."""
    check = {**RECORD, "profile": None, "step_times": "roofline", "rows": 132,
             "tpot_signed_median_pct": -25.9, "ttft_signed_median_pct": -54.0,
             "command": "python benchmarks/fidelity_silicon.py --roofline --write-check",
             "tiers": []}
    line = fidelity.describe(check)
    assert line.startswith(
        "fidelity: these step times come from tiersim's roofline model, not measured tables; "
        "replaying NVIDIA's measured vllm serving runs on H200 (132 rows, 2 models) on the "
        "roofline alone, its median error was 9.9% TPOT and 13.7% TTFT (signed -26% / -54%: ")
    assert "H200 data" not in line


@pytest.mark.parametrize("step_times", [None, "roofline"])
def test_a_record_missing_one_of_aiconfigurators_figures_drops_the_pair(step_times):
    """A summary's record with aiconfigurator's TTFT nulled was a TypeError from the page."""
    check = {**RECORD, "aiconfigurator_ttft_abs_median_pct": None, "step_times": step_times,
             "tiers": []}
    assert "aiconfigurator" not in fidelity.describe(check)


@pytest.mark.parametrize("step_times", [None, "roofline"])
def test_a_tiers_hostile_model_path_is_escaped_in_the_line(step_times):
    """A tier's model is the user's path: a profile run printed its escape bytes raw (a roofline
    run, which printed no tiers before its record, found it: test_round25_outputsafety)."""
    check = {**RECORD, "step_times": step_times, "tiers": [
        {"tier": "t", "model": "m\x1b[31mRED\u202eevil", "precision": "bf16",
         "checked_model": None}]}
    line = fidelity.describe(check)
    assert "\x1b" not in line and "\u202e" not in line
    assert "tier t (m\\x1b[31mRED\\u202eevil, bf16): not among the checked models" in line
