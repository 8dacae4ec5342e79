"""Round 13 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.errors import ScenarioError
from tiersim.scenario import located

DP = ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
      "    replicas: 1\n    gpus_per_replica: 4\n    data_parallel: 3\n"
      "    cost_per_gpu_hour: 3.50\n  - name: bf16")


@pytest.mark.parametrize(("edits", "extra", "expected"), [
    # data_parallel that does not divide the GPUs pointed at the tier's first line and gave no
    # valid value; now its own line, and the values that divide
    ((DP,), "", "line 18: tiers[0].data_parallel: data_parallel (3) must divide "
                "gpus_per_replica (4); with 4 GPUs it may be 1, 2 or 4"),
    # it said "line 1: (top level)"
    ((), "cost_model: fixed_per_request\n",
     "line 30: cost_model: cost_model fixed_per_request needs cost_per_request_usd on every "
     "tier (missing on w4a16, bf16)"),
    # both a draft model and a draft head's cost: which applied was not said
    ((("    precision: w4a16\n", "    precision: w4a16\n    speculative:\n      k: 2\n"
       "      acceptance: 0.7\n      draft_model: Qwen3-Coder-30B-A3B\n      head_cost: 0.1\n"),),
     "", "line 20: tiers[0].speculative.head_cost: head_cost prices a draft head, and this block "
         "names a draft_model (timed on its own step model); keep one"),
    # a text read as true
    ((("    precision: w4a16\n", "    precision: w4a16\n    expert_parallel: 'yes'\n"),), "",
     "line 16: tiers[0].expert_parallel: must be true or false (got 'yes')"),
    # a YAML hex number of thousands of digits: Python refused to print it, a traceback (hex
    # is refused as such since tiersim.numbers; a whole number of 1,205 digits is the case now)
    ((("seed: 0", "seed: 0x" + "f" * 1000),), "",
     "line 4: seed: 0x" + "f" * 38 + "... (1,002 characters) is hexadecimal, a whole number of "
     "4,000 bits is beyond any setting (at most 3,000 bits, about 900 digits)"),
    ((("seed: 0", "seed: " + "9" * 1205),), "",
     "line 4: seed: a whole number of 4,003 bits is beyond any setting (at most 3,000 bits, "
     "about 900 digits)"),
    ((), "sweep:\n  " + "9" * 1000 + ": [1, 2]\n",  # a YAML key has at most 1,024 characters
     "line 30: sweep: a key: a whole number of 3,322 bits is beyond any setting (at most 3,000 "
     "bits, about 900 digits)"),
])
def test_an_error_names_its_keys_own_line(tmp_path, capsys, edits, extra, expected):
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(*edits, extra=extra))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == f"Error: {path}: {expected}"


def test_located_leaves_an_error_it_cannot_place_as_it_was(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("trace: {path: x}\ntiers: []\n")
    cases = [(str(path), "--dc"), (str(path), "router.floor"), (str(tmp_path / "s.json"),
                                                                 "tiers"),
             (str(tmp_path / "gone.yaml"), "tiers"), (str(path), "line 3: tiers")]
    for source, where in cases:
        err = ScenarioError(source, where, "m")
        assert located(err) is err
    assert str(located(ScenarioError(str(path), "tiers[0].name", "m"))) == (
        f"{path}: line 2: tiers[0].name: m")


def test_a_dropped_step_ends_its_session():
    """A step that can never fit its tier was dropped, and the next step was still sent with a
    prompt holding the output the dropped step never made. Now the task ends there: the steps
    after it are dropped too, never sent; another task is not touched."""
    import numpy as np

    from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
    from tiersim.perf.base import LinearStepModel

    tier = TierSpec("t", 1, 400, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048))
    # task A: steps 0 -> 1 (too long for 400 blocks x 16 tokens) -> 2; task B: step 3 -> 4
    work = Workload(np.array([0.0, 0.0, 0.0, 0.5, 0.0]), np.array([10, 100_000, 10, 10, 10]),
                    np.array([5, 5, 5, 5, 5]), np.zeros(5, int),
                    follows=np.array([-1, 0, 1, -1, 3]), think_s=np.zeros(5))
    res = simulate([tier], work)
    assert res.dropped.tolist() == [False, True, True, False, False]
    assert np.isnan(res.first_token_s[2]) and res.arrival_s[2] == res.arrival_s[1]
    assert res.arrival_s[1] == res.finish_s[0]
    assert res.arrival_s[4] == res.finish_s[3]


BURSTGPT = "Timestamp,Model,Request tokens,Response tokens\n"


def test_inspect_json_of_a_near_zero_span_is_valid_json(tmp_path, capsys):
    """Two requests 1e-320 s apart: the rate overflowed and --json printed Infinity."""
    import json

    path = tmp_path / "b.csv"
    path.write_text(BURSTGPT + "0,ChatGPT,100,10\n1e-320,ChatGPT,100,10\n")
    capsys.readouterr()
    from tiersim.cli import main

    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert stats["rate_rps"] is None and stats["span_s"] == pytest.approx(1e-320)


def test_an_overflowing_timestamp_is_the_error_line_alone(tmp_path, capsys):
    """numpy's overflow warning was printed above the error line."""
    path = tmp_path / "b.csv"
    path.write_text(BURSTGPT + "-1e308,ChatGPT,100,10\n1.7e308,ChatGPT,100,20\n")
    code, err = run_cli(capsys, "trace", "inspect", path)
    line = one_error_line(code, err)  # now refused at row 1: decimals that far out are not exact
    # round 52: the timestamp as the file writes it (-1e308), not as Python does (-1e+308)
    assert line.startswith(f"Error: {path}: row 1, column 'Timestamp': timestamp -1e308 ")
    assert line.endswith("subtract the first timestamp from every row (file line 2)")


def test_inspect_checks_session_columns_as_run_does(tmp_path, capsys):
    """inspect printed statistics of a trace that run refuses (a step given twice)."""
    import pandas as pd

    path = tmp_path / "s.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [10, 10], "output_tokens": [5, 5],
                  "session_id": [1, 1], "step": [0, 0]}).to_parquet(path)
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert one_error_line(code, err) == (
        f"Error: {path}: row 2, column 'step': session 1 has step 0 twice")


def test_a_named_pandas_index_is_read_as_its_column(tmp_path, capsys):
    """df.set_index('arrival_s').to_parquet(): the arrival times were hidden in the index, so
    the trace read as lengths only."""
    import json

    import pandas as pd

    from tiersim.cli import main

    path = tmp_path / "i.parquet"
    pd.DataFrame({"arrival_s": [0.0, 0.5, 1.0], "input_tokens": [10, 20, 30],
                  "output_tokens": [5, 5, 5]}).set_index("arrival_s").to_parquet(path)
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "canonical" and stats["span_s"] == 1.0 and stats["rows"] == 3


def test_report_refuses_a_summary_that_is_a_pipe(tmp_path, capsys):
    """A FIFO named summary.json (no manifest) hung the report."""
    import os

    run = tmp_path / "d"
    run.mkdir()
    os.mkfifo(run / "summary.json")
    code, err = run_cli(capsys, "report", run)
    assert one_error_line(code, err) == (
        f"Error: {run / 'summary.json'}: not a regular file; rerun `tiersim run`")


def test_a_classifier_c_too_small_to_train_is_refused(tmp_path, capsys):
    """C: 1e-300 never finished training (liblinear), and SIGTERM could not stop it."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("policy: static_split\n  fractions: [0.5, 0.5]",
                               "policy: lagrangian\n  lambda: 0.1\n  classifier: {C: 1.0e-300}")))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == (  # round 50: the value as written (was 1e-300)
        f"Error: {path}: line 26: router.classifier.C: must be >= 1e-06 (got 1.0e-300)")


def test_the_uniform_fleets_table_says_which_floor_they_are_held_to():
    """'meets floor' was printed against a floor the output never stated (with no
    accuracy_floor set, the run's own accuracy; 0 when every request was dropped)."""
    import dataclasses
    from pathlib import Path

    from tiersim.results import RunResult

    run = RunResult.read(Path(__file__).parent / "golden" / "tiny_summary.json")
    # this run's accuracy as it is printed, 94.40 % (94.4 % before, round 29)
    assert run.floor_words() == ("floor 94.40 %: this run's accuracy, the scenario sets no "
                                 "accuracy_floor")
    floored = dataclasses.replace(run, accuracy_floor=0.9,
                                  savings=dataclasses.replace(run.savings, accuracy_floor=0.9))
    assert floored.floor_words() == "floor 90 %: the scenario's accuracy_floor"
    nothing = dataclasses.replace(run, savings=dataclasses.replace(run.savings,
                                                                   accuracy_floor=float("nan")))
    assert nothing.floor_words() == "no accuracy floor: no request was served"


def test_analytic_says_where_its_accuracies_and_rows_come_from(tmp_path, capsys):
    """It printed 'measured accuracy' for the priors run labels 'prior', named the scenario as
    the source of rows --trace gave, and told a one-tier scenario its tier costs no more than
    itself."""
    import pandas as pd

    from tiersim.cli import main

    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    trace = tmp_path / "t.parquet"
    pd.read_parquet(Path(__file__).parents[1] / "traces" / "azure2023_code.parquet").head(
        200).to_parquet(trace)
    capsys.readouterr()
    assert main(["analytic", "--scenario", str(scenario), "--trace", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"estimated from {trace} (200 requests, w4a16 vs bf16; tiers and prices "
                        f"from {scenario}); costs in USD of all requests on uniform fleets sized "
                        "by simulation (provisioned cost: each fleet's USD/hour on all w4a16's "
                        "duration), as tiersim run prices them, step times from w4a16: fitted "
                        "on another GPU's serving rows (1 op) + fitted on measured serving rows "
                        "(1 op) + roofline (4 ops) + roofline, calibrated on H200's measured "
                        "tables (1 op); bf16: fitted on measured serving rows (2 ops) + roofline "
                        "(4 ops)")  # round 49: the basis named; round 56: the step times
    assert lines[1] == "accuracy: w4a16 0.9336 (prior), bf16 0.9500 (prior)"
    one = tmp_path / "one.yaml"
    one.write_text(tiny_with(("  - name: w4a16\n    precision: w4a16\n    replicas: 1\n"
                              "    cost_per_gpu_hour: 3.50\n", ""),
                             ("policy: static_split\n  fractions: [0.5, 0.5]",
                              "policy: uniform")))
    code, err = run_cli(capsys, "analytic", "--scenario", one)
    assert one_error_line(code, err) == (
        f"Error: {one}: line 13: tiers: the closed form compares two tiers and there is one "
        "(bf16); give a scenario with two or more tiers")


def test_the_harness_will_not_replace_a_shipped_profile(capsys):
    """--out tiersim/profiles/h200_aiconfigurator_vllm.json replaced the default H200 profile
    with a CPU one: every default run then failed."""
    from tiersim.calibrate.cli import main

    shipped = Path(__file__).parents[1] / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"
    before = shipped.read_bytes()
    assert main(["--device", "cpu", "--quick", "--out", str(shipped)]) == 1
    assert capsys.readouterr().err == (
        f"Error: --out {shipped}: among the profiles shipped with tiersim, which every scenario "
        "that names no profile reads; write it elsewhere and name it in a scenario's profile:\n")
    assert shipped.read_bytes() == before


@pytest.mark.parametrize(("choose", "expected"), [
    ("router.lamda=0.1,0.2", "router.lamda=0.1: router.lamda: unknown key (did you mean "
                             "'lambda'?)"),
    ("router.fractions=1", "router.fractions=1: router.fractions: must be a list (got 1)"),
])
def test_a_choose_error_reads_as_a_scenario_error(tmp_path, capsys, choose, expected):
    """pydantic's own words ('Extra inputs are not permitted', 'fractions.list[float]: Input
    should be a valid list') and no nearest key."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with())
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--choose", choose)
    assert one_error_line(code, err) == f"Error: --choose {expected}"


def test_analytic_calls_a_pipe_trace_a_pipe(tmp_path, capsys):
    """A FIFO given as --trace was 'file not found'."""
    import os

    fifo = tmp_path / "t.parquet"
    os.mkfifo(fifo)
    code, err = run_cli(capsys, "analytic", "--trace", fifo, "--cheap", "a", "--top", "b")
    assert one_error_line(code, err) == (
        f"Error: {fifo}: not a regular file (a device or pipe); give a trace file")


CONFIGS = Path(__file__).parents[1] / "benchmarks" / "data" / "configs"


@pytest.mark.parametrize(("model", "edit", "expected"), [
    # a window of 0 tokens ran as "no window"; a context of 0 as "not given"
    ("gpt-oss-120b", {"sliding_window": 0}, "key 'sliding_window': must be a positive integer "
                                            "(got 0)"),
    ("DeepSeek-V3", {"max_position_embeddings": 0},
     "key 'max_position_embeddings': must be a positive integer (got 0)"),
    # "'none' is not supported; supported: ... (or none: BF16)"
    ("DeepSeek-V3", {"quantization_config": {"quant_method": None}},
     "key 'quantization_config.quant_method': missing; supported: fp8, mxfp4, "
     "compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no quantization_config at all: "
     "BF16)"),
    # "None-bit None weights (group None)" for a group with no weights
    ("DeepSeek-V3", {"quantization_config": {"quant_method": "compressed-tensors",
                                             "config_groups": {"g": {"weights": None}}}},
     "key 'quantization_config.config_groups.g.weights': missing; each group says how its "
     "weights are stored (num_bits, type, group_size)"),
])
def test_a_config_json_value_that_means_nothing_is_refused(tmp_path, capsys, model, edit,
                                                            expected):
    import json

    cfg = json.loads((CONFIGS / model / "config.json").read_text())
    cfg.update(edit)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("model: Qwen3-Coder-30B-A3B", "model: m/config.json")))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == (
        f"Error: {path}: line 5: model: {tmp_path / 'm' / 'config.json'}: {expected}")


def test_an_offload_level_named_gpu_is_refused(tmp_path, capsys):
    """Its hit rate replaced the GPU cache's own under the key 'gpu' (11.8 points went
    missing from the per-level figures)."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
                               "    replicas: 1\n    cost_per_gpu_hour: 3.50\n    scheduler:\n"
                               "      enable_prefix_caching: true\n      kv_offload:\n"
                               "        - {name: gpu, capacity_gb: 10, read_gb_s: 50, "
                               "write_gb_s: 50}\n  - name: bf16")))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == (
        f"Error: {path}: line 21: tiers[0].scheduler.kv_offload[0].name: 'gpu' is the GPU "
        "cache's own level (its hits are reported under that name); name the offload level "
        "otherwise, e.g. host")


def test_a_split_that_fails_suggests_gpu_counts_with_the_data_parallel_ranks(tmp_path, capsys):
    """With data_parallel 2 it suggested gpus_per_replica 1, which data_parallel 2 refuses."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(DP[:1] + ("    replicas: 1\n    gpus_per_replica: 6\n"
                                        "    data_parallel: 2\n    cost_per_gpu_hour: 3.50\n"
                                        "  - name: bf16",)))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err).endswith(
        "Qwen3-Coder-30B-A3B cannot be split over 3 GPUs (gpus_per_replica 6 over "
        "data_parallel 2): 32 attention heads are not divisible by 3; use gpus_per_replica in "
        "{2, 4, 8, 16, 32, 64}")


def test_analytic_estimates_from_the_requests_run_serves(capsys):
    """With generated sessions it estimated from the 8,819-row trace they replace; the run
    serves 904 generated steps (its golden summary), and so does the estimate now."""
    from tiersim.cli import main
    from tiersim.results import RunResult

    root = Path(__file__).parents[1]
    served = RunResult.read(root / "tests" / "golden" / "agentic_summary.json").requests
    capsys.readouterr()
    assert main(["analytic", "--scenario", str(root / "scenarios" / "agentic.yaml")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"estimated from {root / 'scenarios' / 'agentic.yaml'} ({served} "
                            "requests, fp8 vs bf16)")


def test_disagg_says_a_split_misses_the_slos_because_it_drops_requests(tmp_path, capsys):
    """Every split's p99s were within the SLOs and the verdict said 'misses an SLO; score
    inf', with no word of the 722 dropped requests that made it so."""
    from tiersim.cli import main

    text = (Path(__file__).parents[1] / "scenarios" / "disagg.yaml").read_text()
    text = text.replace("{max_num_seqs: 256, max_num_batched_tokens: 8192}",
                        "{max_num_seqs: 256, max_num_batched_tokens: 8192, max_model_len: 100}")
    path = tmp_path / "d.yaml"
    path.write_text(text)
    capsys.readouterr()
    assert main(["disagg", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["split", "TTFT", "p50", "TTFT", "p99", "TPOT", "p50", "TPOT",
                                "p99", "dropped", "score", "(latencies", "in", "seconds)"]
    best = next(line for line in lines if line.startswith("best: "))
    # round 49: the score of a split that drops is its p99s' (starred), not "inf"; 0.212 is
    # the aggregated tier's TPOT p99 of 0.0212 s over the 0.1 s SLO, tied to the calibration
    assert best == ("best: aggregated (drops 722 of the tier's requests, so it misses the "
                    "SLOs; score 0.212*)")


@pytest.mark.parametrize(("path", "value", "problem"), [
    (("sessions",), {"step_types": [1, 2]},  # was "'list' object has no attribute 'items'"
     "'sessions.step_types' must map step types to objects, got [1, 2]"),
    (("completed",), -5, "'run.completed' must be a count >= 0, got -5"),  # was rendered
    (("response_cache",), {},  # was 'responsecache.mode'
     "missing key 'response_cache.mode'"),
])
def test_report_names_a_hand_edited_summary_field(hand_edited_run, tmp_path, capsys, path,
                                                  value, problem):
    from test_round11 import _tampered

    folder = _tampered(hand_edited_run, tmp_path / "r", path, value)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def test_a_report_that_is_a_folder_is_not_a_full_disk(hand_edited_run, tmp_path, capsys):
    """'report.html' a folder: the advice was to free some space."""
    from conftest import copy_folder

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    (folder / "report.html").mkdir()
    code, err = run_cli(capsys, "report", folder)
    note, line = err.strip().splitlines()  # the folder has no manifest: a note says so first
    assert note.startswith(f"note: {folder}: no manifest.json")
    assert one_error_line(code, line) == (f"Error: {folder / 'report.html'}: cannot write the "
                                          "report (Is a directory); remove that folder or "
                                          "choose another")
