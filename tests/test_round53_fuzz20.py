"""Round 53 fuzzing (helper fuzz20): results and profile files read back, a model config's
quantisation names, JSON-lines traces' non-finite numbers, and plans near the largest seed."""

from __future__ import annotations

import json

import pytest
from test_round52_fuzz18 import QWEN3_MOE, _config_error
from test_round52_fuzz19 import lagrangian_sweep  # noqa: F401 - a fixture

SUPPORTED = ("supported: fp8, mxfp4, compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no "
             "quantization_config at all: BF16)")


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_quant_method_that_is_no_number_json_allows_is_told_it_is_a_name(tmp_path, written):
    """``"quant_method": NaN`` was told "NaN is not a number JSON allows; give a finite number
    or remove the key": the key takes a name, not a number (and ``1e400`` was told
    "Infinity"). Told as any other value that is no name is."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', written)) == (
        f"key 'quantization_config.quant_method': must be a name such as 'fp8' (got {written}); "
        + SUPPORTED)


def test_a_quant_algo_that_is_no_number_json_allows_is_told_it_is_a_name(tmp_path):
    """The same for ModelOpt's ``quant_algo``, in the config or in hf_quant_config.json."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "modelopt",
                                                            "quant_algo": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', "NaN")) == (
        "key 'quantization_config.quant_algo': must be a name such as 'FP8' (got NaN); say "
        "which format (FP8, NVFP4, W4A16_NVFP4)")


@pytest.mark.parametrize(("written", "said"), [
    ("NaN", "NaN is not a number JSON allows"),
    ("1e400", "1e400 is beyond the range of numbers"),  # was "Infinity", which it is not
])
def test_a_number_key_that_is_not_finite_is_quoted_as_written(tmp_path, written, said):
    """A number key's NaN keeps its line; ``1e400`` (read as infinite) is quoted as written."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "fp8",
                                                            "weight_block_size": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', written)) == (
        f"key 'quantization_config.weight_block_size': {said}; give a finite number or remove "
        "the key")


# --- results files read back: values spelt as the JSON file writes them -----------------------

@pytest.fixture(scope="module")
def sized_run(tmp_path_factory):
    """A run folder of the tiny scenario with its uniform fleets sized by simulation (so
    ``savings.uniform.<tier>`` holds the p99s), without its manifest.json."""
    from tiersim.cli.app import main

    out = tmp_path_factory.mktemp("run") / "o"
    assert main(["run", "tiny", "--out", str(out), "--no-report"]) == 0
    (out / "manifest.json").unlink()
    return out

@pytest.mark.parametrize(("written", "problem"), [
    ("true", "must be a number, got true"),  # was "got True"
    ('"fast"', 'must be a number, got "fast"'),  # was "got 'fast'"
    ("NaN", "is NaN, a number tiersim never writes: a missing figure is null"),  # was "nan"
    ("-Infinity", "is -Infinity, a number tiersim never writes: a missing figure is null"),
])
def test_a_uniform_fleets_p99_read_back_is_spelt_as_json(sized_run, tmp_path, capsys, written,
                                                         problem):
    """``savings.uniform.<tier>.tpot_p99_s`` (new last turn) hand-edited: refused in one line
    that quotes the value as summary.json writes it, not as Python does."""
    from conftest import copy_folder
    from test_hostile_inputs import one_error_line, run_cli

    folder = copy_folder(sized_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["savings"]["uniform"]["bf16"]["tpot_p99_s"] = "@@"
    (folder / "summary.json").write_text(json.dumps(doc).replace('"@@"', written))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('savings.uniform.bf16"
                    f".tpot_p99_s' {problem}); rerun `tiersim run` to rewrite it")


def test_a_uniform_fleets_p99_left_out_is_read_as_unknown(sized_run, tmp_path):
    """A summary written before the p99s were (or with them removed) still reads: the fleet's
    p99s are unknown, not a traceback."""
    from conftest import copy_folder

    from tiersim.report.load import load_dir

    folder = copy_folder(sized_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    for fleet in doc["savings"]["uniform"].values():
        del fleet["tpot_p99_s"], fleet["ttft_p99_s"]
    (folder / "summary.json").write_text(json.dumps(doc))
    fleets = load_dir(folder).run.savings.uniform
    assert [(u.ttft_p99_s, u.tpot_p99_s) for u in fleets] == [(None, None)] * len(fleets)


# --- profile files: values spelt as the JSON file writes them ---------------------------------

def _bundled_profile() -> dict:
    """The bundled H200 profile's JSON, to edit."""
    from pathlib import Path

    import tiersim

    path = Path(tiersim.__file__).parent / "profiles" / "h200_aiconfigurator_vllm.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize(("part", "value", "said"), [
    ("source", None, "null"),  # was "None"
    ("source", False, "false"),  # was "False"
    ("per_layer_s", float("nan"), "NaN"),  # was "nan"
    ("per_layer_s", "fast", '"fast"'),  # was "'fast'"
])
def test_a_profile_value_is_quoted_as_json_writes_it(part, value, said):
    """A profile is a JSON file: its refused values were quoted in Python's words."""
    from tiersim.errors import ProfileError
    from tiersim.perf.profile_json import profile_from_json

    doc = _bundled_profile()
    doc["eager_s"][part] = value
    with pytest.raises(ProfileError) as info:
        profile_from_json(doc, "p.json")
    rule = ("must be one of harness, public, roofline or start with 'fitted'" if part == "source"
            else "must be a number of seconds from 0 to 3600")
    assert str(info.value) == f"p.json: eager_s.{part}: {rule} (got {said})"


@pytest.mark.parametrize(("status", "note"), [
    (None, None),  # null states no status: it was 'None', a calibration that did not finish
    (True, "'true'"),  # was 'True'
    ([1, None], "'[1, null]'"),  # was '[1, None]'
])
def test_a_profile_provenance_value_is_read_as_the_file_writes_it(status, note):
    """``provenance`` values were read with Python's ``str``: ``"status": null`` gave the note
    "provenance.status says 'None': a calibration that did not finish"."""
    from tiersim.perf import partial_note
    from tiersim.perf.profile_json import profile_from_json

    doc = _bundled_profile()
    doc["provenance"]["status"] = status
    profile = profile_from_json(doc, "p.json")
    said = partial_note(profile, "p.json")
    assert (said if said is None else said.split(": a calibration")[0]) == (
        None if note is None else f"profile p.json: provenance.status says {note}")


# --- JSON-lines traces: NaN and Infinity as the line writes them -----------------------------

def _mooncake(tmp_path, last: str):
    """A Mooncake JSON-lines trace of three requests, the third's line ``last``."""
    rows = [{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [1]},
            {"timestamp": 500, "input_length": 200, "output_length": 20, "hash_ids": [2]}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + last + "\n")
    return path


@pytest.mark.parametrize(("key", "written", "said"), [
    ("timestamp", "Infinity", "timestamp in milliseconds is not finite (got Infinity); write a "
                              "finite number"),  # was "(got inf)"
    ("timestamp", "-Infinity", "timestamp in milliseconds is not finite (got -Infinity); write "
                               "a finite number"),
    ("output_length", "Infinity", "token count is not finite (got Infinity); write a finite "
                                  "number"),
    # was "missing timestamp in milliseconds; fill it in or remove the row": the line holds a
    # value, NaN, not a null
    ("timestamp", "NaN", "timestamp in milliseconds is NaN, which is no number (JSON writes a "
                         "missing one as null); write the number or remove the row"),
    ("input_length", "NaN", "token count is NaN, which is no number (JSON writes a missing one "
                            "as null); write the number or remove the row"),
    ("timestamp", "null", "missing timestamp in milliseconds; fill it in or remove the row"),
])
def test_a_json_lines_non_finite_number_is_quoted_as_written(tmp_path, key, written, said):
    """NaN and Infinity are no JSON, but Python's and Arrow's readers take them: the line
    said Python's ``inf``, and a NaN was called missing, as a null is."""
    from tiersim.errors import TiersimError
    from tiersim.trace import load_trace

    values = {"timestamp": "1000", "input_length": "300", "output_length": "30"}
    values[key] = written
    last = ", ".join(f'"{k}": {v}' for k, v in values.items())
    last = "{" + last + ', "hash_ids": [3]}'
    path = _mooncake(tmp_path, last)
    with pytest.raises(TiersimError) as info:
        load_trace(path)
    assert str(info.value) == f"{path}: row 3, column {key!r}: {said} (file line 3)"


# --- plans near the largest seed ---------------------------------------------------------------

def test_a_plain_plan_near_the_largest_seed_checks_the_seeds_there_are(tmp_path):
    """``tiersim plan`` at seed 2**63 - 3, no flag given, was refused "--check-seeds 3: ...
    give at most --check-seeds 2": a flag its user never typed. The default check is held to
    the two seeds there are, with a note; a typed --check-seeds 3 is refused as before."""
    from conftest import run_cli, tiny_doc, write_yaml

    path = write_yaml(tmp_path / "s.yaml", tiny_doc(seed=2**63 - 3))
    done = run_cli("plan", str(path), "--no-report", "--out", str(tmp_path / "p"))
    assert done.returncode == 0, done.stderr
    assert (f"note: {path} has seed 9223372036854775805, and seed 9223372036854775805 + 3 is "
            "past the largest seed, 9223372036854775807: the plan is checked at the 2 seeds "
            "after it only, not the 3 seeds --check-seeds defaults to; lower its seed for 3"
            ) in done.stderr.splitlines()
    seeds = json.loads((tmp_path / "p" / "plan.json").read_text())["seed_check"]["seeds"]
    assert seeds == [2**63 - 3, 2**63 - 2, 2**63 - 1]  # the planned seed, then those checked
    done = run_cli("plan", str(path), "--no-report", "--check-seeds", "3")
    assert (done.returncode, done.stderr) == (1, (
        f"Error: --check-seeds 3: {path} has seed 9223372036854775805, and seed "
        "9223372036854775805 + 3 is past the largest seed, 9223372036854775807; give at most "
        "--check-seeds 2\n"))


def test_a_plain_plan_at_the_largest_seed_checks_no_other(tmp_path):
    """At seed 2**63 - 1 there is no seed after it: the plan is made, unchecked, and says so.
    ``--robust`` there still refuses (it would size for one seed)."""
    from conftest import run_cli, tiny_doc, write_yaml

    path = write_yaml(tmp_path / "s.yaml", tiny_doc(seed=2**63 - 1))
    done = run_cli("plan", str(path), "--no-report", "--out", str(tmp_path / "p"))
    assert done.returncode == 0, done.stderr
    assert (f"note: {path} has seed 9223372036854775807, and seed 9223372036854775807 + 3 is "
            "past the largest seed, 9223372036854775807: the plan is checked at no other seed "
            "(none follows it), not the 3 seeds --check-seeds defaults to; lower its seed for 3"
            ) in done.stderr.splitlines()
    assert json.loads((tmp_path / "p" / "plan.json").read_text()).get("seed_check") is None
    done = run_cli("plan", str(path), "--no-report", "--robust")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.endswith("lower its seed (--robust sizes for seeds after it too), or "
                                "leave out --robust\n")


# --- plan.json's robust, hand-edited -----------------------------------------------------------

def _seeds_emptied(robust):
    robust["seeds"] = []


def _seed_repeated(robust):
    robust["seeds"] = [0, 0]


def _row_dropped(robust):
    robust["per_seed"] = robust["per_seed"][:1]


def _accuracy_doubled(robust):
    robust["per_seed"][0]["accuracy"] = 2


def _worst_elsewhere(robust):
    robust["worst_seed"]["accuracy"] = 9


@pytest.mark.parametrize(("edit", "problem"), [
    # the report read "sized for seeds , each design ..."
    (_seeds_emptied, "'plan.robust.seeds' must be the planned seed (0) and the seeds after it, "
                     "increasing, up to 9223372036854775807, got []"),
    (_seed_repeated, "'plan.robust.seeds' must be the planned seed (0) and the seeds after it, "
                     "increasing, up to 9223372036854775807, got [0, 0]"),
    (_row_dropped, "'plan.robust.per_seed' must hold a row for each of its seeds [0, 1] in "
                   "order, got the seeds [0]"),
    (_accuracy_doubled, "'plan.robust.per_seed[0].accuracy' must be a fraction between 0 and 1, "
                        "got 2"),
    (_worst_elsewhere, "'plan.robust.worst_seed.accuracy' must be one of its seeds [0, 1], got "
                       "9"),
])
def test_a_hand_edited_robust_that_no_plan_writes_is_refused(tmp_path, edit, problem):
    """Each passed the strict reader (types only) and reached the page: seeds no plan sizes
    for, rows of other seeds, an accuracy of 200 %, a worst figure at a seed not sized for."""
    from test_round52_fuzz19 import _hand_edited_robust

    code, errors, path = _hand_edited_robust(tmp_path, edit)
    assert (code, errors) == (1, [f"Error: {path}: malformed plan ({problem}); rerun `tiersim "
                                  "plan` to rewrite it"])


# --- sweep tables: a saving's share checked as the report's other numbers are -----------------

@pytest.mark.parametrize(("column", "value", "said"), [
    # was shown in the Points table as "inf % per hour vs bf16"
    ("savings.vs_uniform_frac", float("inf"), "holds inf (row 0): a number the sweep never "
                                              "writes"),
    ("savings.uniform.bf16.ttft_p99_s", -1.0, "holds -1 (row 0): must be >= 0"),
])
def test_a_hand_edited_sweep_saving_cell_is_one_line(lagrangian_sweep, tmp_path, column, value,  # noqa: F811
                                                     said):
    """The Points table's "saved vs uniform" (new last turn) words ``savings.vs_uniform_frac``,
    which was not among the columns checked, nor were the uniform fleets' p99s."""
    import shutil

    import pandas as pd
    from conftest import run_cli

    out = shutil.copytree(lagrangian_sweep, tmp_path / "sw")
    table = out / "sweep.parquet"
    frame = pd.read_parquet(table)
    frame.loc[0, column] = value
    frame.to_parquet(table)
    done = run_cli("report", str(out))
    assert (done.returncode, done.stderr) == (
        1, f"Error: {table}: column {column!r} {said}; rerun the sweep\n")


def test_a_uniform_fleets_p99_over_the_slo_it_meets_is_refused(sized_run, tmp_path, capsys):
    """``slo_met: true`` beside a p99 over the run's SLO: no sized fleet writes it, and the page
    showed "meets SLOs: yes" beside the p99 over it. One at the SLO, as written, still reads.
    (Checked on ten bundled scenarios' runs on 2026-12-07: 32 p99s, none over.)"""
    from conftest import copy_folder
    from test_hostile_inputs import one_error_line, run_cli

    folder = copy_folder(sized_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    assert doc["savings"]["uniform"]["bf16"]["slo_met"] is True
    assert doc["slo_tpot_p99_s"] == 0.1
    doc["savings"]["uniform"]["bf16"]["tpot_p99_s"] = 0.1
    (folder / "summary.json").write_text(json.dumps(doc))
    assert run_cli(capsys, "report", folder)[0] == 0
    doc["savings"]["uniform"]["bf16"]["tpot_p99_s"] = 0.1001
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('savings.uniform.bf16"
                    ".tpot_p99_s' is 0.1001, over the run's SLO (slo_tpot_p99_s 0.1), where its "
                    "slo_met says the fleet meets it); rerun `tiersim run` to rewrite it")
