"""Round 9 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import copy_folder
from test_hostile_inputs import ROOT, TINY, one_error_line, run_cli, tiny_with

from tiersim.errors import ScenarioError, TiersimError, TraceError
from tiersim.hardware import hf_config
from tiersim.jsonio import read_json
from tiersim.perf.profile import load_profile
from tiersim.routing.classifier import DifficultyClassifier
from tiersim.trace.source import read_raw
from tiersim.workload import sessions

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
         "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 8192}
PROFILE = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


def _config(tmp_path: Path, ignored: str) -> Path:
    folder = tmp_path / "m"
    folder.mkdir()
    cfg = {**LLAMA, "quantization_config": {"quant_method": "fp8", "ignored_layers": [ignored]}}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder / "config.json"


# ---------------------------------------------------------------------------------------------
# A model config's ignore list: regexes that hang or crash the re module


def test_an_ignore_list_regex_that_backtracks_without_end_is_stopped(tmp_path, monkeypatch):
    """`re:(.|.)*X` ran at 100% CPU until killed."""
    monkeypatch.setattr(hf_config, "REGEX_BUDGET_S", 0.2)
    path = _config(tmp_path, "re:(.|.)*X")
    with pytest.raises(TiersimError) as err:
        hf_config.load_hf_config(path)
    assert str(err.value) == (f"{path}: key 'quantization_config': matching its ignore list "
                              "against the module names of the model's 32 layers took over 0.2 s "
                              "(a 're:' pattern that backtracks without end, a list that long, "
                              "or that many layers); simplify it")


def test_a_quantisation_block_with_nothing_to_skip_reads_a_model_of_any_depth(tmp_path):
    """An FP8 config of a hundred million layers ran the ignore-list budget out (it matched
    every module against an empty list) and was refused for a list it does not have."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": 10**8,
                                "quantization_config": {"quant_method": "fp8"}}))
    model = hf_config.load_hf_config(path)
    assert {g: f for g, f, _ in model.checkpoint} == {"attention": "fp8", "mlp": "fp8"}


@pytest.mark.parametrize(("pattern", "error"), [
    ("re:a{4294967296}", "OverflowError: the repetition number is too large"),
    ("re:" + "(" * 500 + ")" * 500, "RecursionError: maximum recursion depth exceeded"),
])
def test_an_ignore_list_regex_the_re_module_cannot_compile_is_one_line(tmp_path, pattern,
                                                                        error):
    """An OverflowError or a 2,994-line RecursionError traceback. The recursion limit is
    Python's default here: a library loaded by an earlier test (torch's compiler) raises it to
    2,000, and 500 nested groups then compile."""
    path = _config(tmp_path, pattern)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        with pytest.raises(TiersimError) as err:
            hf_config.load_hf_config(path)
    finally:
        sys.setrecursionlimit(limit)
    assert str(err.value).startswith(f"{path}: key 'quantization_config': not in a layout "
                                     f"tiersim reads ({error}")
    assert "\n" not in str(err.value)


def test_the_regex_budget_leaves_the_timer_as_it_found_it():
    import signal

    before = signal.getsignal(signal.SIGVTALRM)
    with hf_config.regex_budget(5.0):  # a CPU-time timer since round 30 (was ITIMER_REAL)
        assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] > 0
    assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0
    assert signal.getsignal(signal.SIGVTALRM) is before


# ---------------------------------------------------------------------------------------------
# Traces: columns added line by line, prompts and features the classifier cannot read


def test_a_jsonl_trace_cannot_add_a_column_a_line_past_the_limit(tmp_path):
    """Only the first line's keys were counted: 20,000 lines of one new key each took 6.6 GB."""
    path = tmp_path / "keys.jsonl"
    path.write_text("".join(f'{{"arrival_s":{i},"input_tokens":10,"output_tokens":5,'
                            f'"k{i}":1}}\n' for i in range(1200)))
    with pytest.raises(TraceError) as err:
        read_raw(path)
    assert str(err.value) == (f"{path}: has 1,203 columns or more, above the 1,000 a trace may "
                              "have; not a trace")


def test_a_key_quoted_inside_a_value_is_no_column(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s":0,"input_tokens":10,"output_tokens":5,'
                    '"note":"he said \\"k\\": 1, {\\"z\\":2}"}\n')
    df, _ = read_raw(path)
    assert list(df.columns) == ["arrival_s", "input_tokens", "output_tokens", "note"]


def _labelled_trace(tmp_path: Path, **columns) -> Path:
    n = 400
    rng = np.random.default_rng(0)
    words = np.array(["sort a list", "prove the lemma", "rename a file", "refactor the module"])
    df = pd.DataFrame({"arrival_s": np.arange(n) * 0.2, "input_tokens": 100,
                       "output_tokens": 20, "prompt": words[rng.integers(0, 4, n)],
                       "correct_w4a16": (rng.random(n) < 0.6).astype(float),
                       "correct_bf16": 1.0})
    for name, values in columns.items():
        df[name] = values
    path = tmp_path / "lab.parquet"
    df.to_parquet(path)
    return path


def _threshold_run(tmp_path: Path, capsys, trace: Path) -> tuple[int, str]:
    text = tiny_with(("path: azure2023_code.parquet", f"path: {trace}"),
                     ("  window: [240, 360]\n", ""),
                     ("  policy: static_split\n  fractions: [0.5, 0.5]\n",
                      "  policy: threshold\n"))
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report", "--no-baselines")


def test_a_missing_prompt_is_no_text(tmp_path, capsys):
    """One null prompt cell: "ValueError: np.nan is an invalid document"."""
    prompts = pd.Series(["sort a list", "prove the lemma"] * 200, dtype=object)
    prompts[3] = None
    code, err = _threshold_run(tmp_path, capsys, _labelled_trace(tmp_path, prompt=prompts))
    assert code == 0, err


@pytest.mark.parametrize(("values", "shown"), [
    (np.arange(400), "a number"),
    ([b"\xff\xfe" + bytes([i % 200]) for i in range(400)], "binary data of 3 bytes"),
])
def test_a_prompt_that_is_not_text_is_refused_with_its_row(tmp_path, capsys, values, shown):
    """Integers: "After pruning, no terms remain"; bytes: a UnicodeDecodeError traceback."""
    trace = _labelled_trace(tmp_path, prompt=values)
    line = one_error_line(*_threshold_run(tmp_path, capsys, trace))
    assert line == (f"Error: {trace}: row 1, column 'prompt': prompt must be text (got {shown}); "
                    "write the prompt as a string, or leave the cell empty")


def test_prompts_with_no_shared_word_are_one_line(tmp_path, capsys):
    """All empty: "ValueError: empty vocabulary" from inside scikit-learn."""
    trace = _labelled_trace(tmp_path, prompt=[""] * 400)
    line = one_error_line(*_threshold_run(tmp_path, capsys, trace))
    assert line == (f"Error: {tmp_path / 's.yaml'}: line 22: "
                    "router.classifier.features: the trace's prompt column has no word in two or "
                    "more prompts of a training fold (TF-IDF keeps only those); give prompts with "
                    "text, or drop text from the features")


def test_a_feature_too_large_to_scale_is_refused(tmp_path, capsys):
    """+-1e200 passed the trace check (finite) and overflowed in the scaler: a traceback."""
    trace = _labelled_trace(tmp_path, feat_x=np.where(np.arange(400) % 2, 1e200, -1e200))
    line = one_error_line(*_threshold_run(tmp_path, capsys, trace))
    assert line == (f"Error: {trace}: row 1, column 'feat_x': feature value must be between "
                    "-1e+15 and 1e+15 (the classifier's solver stalls on larger ones); "
                    "rescale the column (got -1e+200); fix or remove the row")


def test_one_tier_with_a_classifier_policy_sends_everything_to_it(tmp_path, capsys):
    """"ValueError: need at least one array to concatenate" in p_good_enough."""
    text = tiny_with(("  - name: w4a16\n    precision: w4a16\n    replicas: 1\n"
                      "    cost_per_gpu_hour: 3.50\n", ""),
                     ("  policy: static_split\n  fractions: [0.5, 0.5]\n", "  policy: threshold\n"))
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    clf = DifficultyClassifier(pipeline=None, groups=[], good_enough=[], correct=[])
    assert clf.p_good_enough(pd.DataFrame(index=range(3)), np.zeros(3)).shape == (3, 0)


# ---------------------------------------------------------------------------------------------
# Agent sessions: prefix hashes without end


def test_generated_sessions_past_the_hash_budget_are_refused_before_hashing(monkeypatch):
    """1,000 tasks of 1,000 steps with a 10M-token context passed 6.8 GB in two minutes."""
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 1000)
    cfg = sessions.SessionsConfig(source="generate", generate={"tasks": 50})
    made = []
    monkeypatch.setattr(sessions, "block_hashes", lambda *a, **k: made.append(1))
    with pytest.raises(ScenarioError) as err:
        sessions.prepare_sessions(pd.DataFrame(), cfg, np.random.default_rng(0), "s.yaml")
    assert made == []
    assert str(err.value).startswith("s.yaml: workload.sessions.generate: by step ")
    assert str(err.value).endswith("the sessions' prompts, each with its context, hold over "
                                   "512,000 tokens in all, more than tiersim hashes for prefix "
                                   "caching in one run; lower tasks, middle_steps_mean, "
                                   "max_steps or max_context_tokens")


def test_a_session_trace_past_the_hash_budget_names_its_row(monkeypatch):
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 10)
    df = pd.DataFrame({"request_id": [0, 1, 2], "arrival_s": 0.0, "input_tokens": 2000,
                       "output_tokens": 100, "session_id": 7, "step": [0, 1, 2],
                       "parent": [-1, 0, 1]})
    with pytest.raises(TraceError) as err:
        sessions.with_context(df, "accumulate", source="t.parquet")
    # 4 hashes for step 0's 2,000 tokens, 9 for step 1's 4,100: 13 > 10 at step 1 (row 2)
    assert str(err.value).startswith("t.parquet: row 2, column 'input_tokens': by step 1 of "
                                     "session 7 the sessions' prompts")
    assert str(err.value).endswith("caching in one run; simulate fewer or shorter sessions")


def test_the_generator_stops_past_its_step_limit(monkeypatch):
    monkeypatch.setattr(sessions, "MAX_GENERATED_STEPS", 100)
    cfg = sessions.SessionGenerator(tasks=100)
    with pytest.raises(ScenarioError) as err:
        sessions.generate(cfg, np.random.default_rng(0), "s.yaml")
    assert str(err.value) == ("s.yaml: workload.sessions.generate: makes over 100 steps in all; "
                              "lower tasks, middle_steps_mean or max_steps")


# ---------------------------------------------------------------------------------------------
# Profiles and model configs: numbers beyond a float, unknown dtypes


def _profile(tmp_path: Path, edit) -> Path:
    doc = json.loads(PROFILE.read_text())
    edit(doc)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


BIG = 10**400


def _first_gemm(doc: dict) -> dict:
    return next(t for t in doc["tables"] if t["op"] == "gemm")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["overhead_s"].__setitem__("value", BIG),
     "overhead_s.value: must be a number of seconds from 0 to 3600 (got 100000000000000000000"
     "0000000000000000...)"),
    (lambda d: d["eager_s"].__setitem__("graph_max_tokens", BIG),
     "eager_s.graph_max_tokens: must be a whole number of tokens from 0 to 2147483648 (got "
     "1000000000000000000000000000000000000...)"),
    (lambda d: _first_gemm(d)["latency_s"].__setitem__(0, BIG),
     "tables[0].latency_s[0]: latencies must be seconds from 1e-09 to 3600"),
    (lambda d: _first_gemm(d)["axes"]["m"].__setitem__(-1, BIG),
     "tables[0].axes.m: a value is too large for a number (at most about 1.8e308)"),
    (lambda d: _first_gemm(d)["key"].__setitem__("k", 10**30),
     "tables[0].key.k: must be a whole number from 1 to 2147483648 (got "
     "1000000000000000000000000000000)"),
    (lambda d: _first_gemm(d).__setitem__("precision", "fp3"),
     "tables[0].precision: unknown weight format \"fp3\"; use one of bf16, fp8, w4a16, nvfp4, "
     "fp8_block, mxfp4"),
])
def test_a_profile_number_beyond_a_float_or_an_unknown_format_is_one_line(tmp_path, edit,
                                                                          message):
    """"OverflowError: int too large to convert to float"; "fp3" loaded and ran."""
    path = _profile(tmp_path, edit)
    with pytest.raises(TiersimError) as err:
        load_profile(path)
    assert str(err.value) == f"{path}: {message}"


def test_a_profile_attention_table_with_an_unknown_kv_dtype_is_refused(tmp_path):
    def edit(doc):
        next(t for t in doc["tables"] if t["op"] == "attn_decode")["kv_dtype"] = "int2"
    path = _profile(tmp_path, edit)
    with pytest.raises(TiersimError, match=r"kv_dtype: unknown KV-cache dtype \"int2\"; use one "
                       r"of bf16, fp16, fp8, fp8_e4m3, or for an MLA \(or DSA\) module "
                       r"'<kv> mla-<weight format>' \('<kv> dsa-...'\)"):
        load_profile(path)
    shipped = load_profile(PROFILE)  # every shipped dtype, MLA modules included, still loads
    assert any(" mla-" in (t.dtype or "") for t in shipped.tables)


def test_json_saved_with_a_byte_order_mark_reads_as_without(tmp_path):
    """A config.json saved by a Windows editor starts with a UTF-8 BOM; it was refused as "not
    valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig))"."""
    from tiersim.calibrate import shapes

    plain, marked = tmp_path / "plain" / "config.json", tmp_path / "marked" / "config.json"
    for path, head in ((plain, b""), (marked, b"\xef\xbb\xbf")):
        path.parent.mkdir()
        path.write_bytes(head + json.dumps(LLAMA).encode())
    assert read_json(marked, "a model config") == LLAMA
    # but a model's config.json is refused with one, as transformers refuses it (round 22)
    with pytest.raises(TiersimError, match="byte-order mark, which transformers' config"):
        hf_config.load_hf_config(marked)
    assert hf_config.load_hf_config(plain).hidden == 4096
    assert shapes.from_config(plain).hidden == 4096


def test_a_json_number_of_5000_digits_is_one_line(tmp_path):
    """A ValueError traceback in calibrate; `run` suggested sys.set_int_max_str_digits()."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA).replace('"hidden_size": 4096',
                                              '"hidden_size": ' + "9" * 5000))
    with pytest.raises(TiersimError) as err:
        read_json(path, "a model config")
    # round 49: the key and the digits' count, not Python's words ("a number too long to
    # read (Exceeds the limit (4300 digits) ...); not a model config", of a model config)
    assert str(err.value) == (f"{path}: key 'hidden_size': a whole number of 5,000 digits is "
                              "beyond any value; fix the number")


# ---------------------------------------------------------------------------------------------
# The operating system refusing a file or the terminal


def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path, capsys):
    """"OSError: [Errno 36] File name too long" from every command."""
    name = tmp_path / ("y" * 300)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", name))
    shown = str(name)[:117] + "..."
    assert line == (f"Error: {shown}: File name too long; use a shorter name (at most 255 bytes "
                    "for each folder or file name)")


def test_os_error_line_names_standard_output_only_where_it_failed():
    import errno

    from tiersim.cli.app import os_error_line

    full = OSError(errno.ENOSPC, "No space left on device")
    assert os_error_line(full, stdout=True) == ("standard output: No space left on device; free "
                                                "some space on that disk or write elsewhere")
    assert os_error_line(OSError(errno.EIO, "Input/output error", "/x")) == \
        "/x: Input/output error"
    assert os_error_line(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")) \
        == "Connection reset by peer"
    assert os_error_line(TimeoutError()) == "TimeoutError"


def test_an_os_error_leaves_a_working_stdout_alone(tmp_path, capsys):
    """Every OSError pointed file descriptor 1 at /dev/null, for the rest of the process."""
    import os

    from tiersim.cli.app import main

    read, write = os.pipe()
    saved = os.dup(1)
    os.dup2(write, 1)
    try:
        assert main(["trace", "inspect", str(tmp_path / ("y" * 300))]) == 1
        os.write(1, b"still here")
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(write)
    assert os.read(read, 100) == b"still here"
    os.close(read)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_standard_output_is_one_line():
    """"OSError: [Errno 28] No space left on device" traceback."""
    trace = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "tiersim", "trace", "inspect", str(trace)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: standard output: No space left on device; free some "
                                   "space on that disk or write elsewhere")


# ---------------------------------------------------------------------------------------------
# tiersim report on a tampered run folder; plan and sweep options


def test_report_names_a_summary_field_of_the_wrong_kind(hand_edited_run, tmp_path, capsys):
    """"TypeError: '>' not supported between instances of 'str' and 'float'"."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["duration_s"] = "abc"
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('run.duration_s' must "
                    "be a number, got \"abc\"); rerun `tiersim run` to rewrite it")
    doc["duration_s"] = BIG
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert f"'run.duration_s' must be a number, got 1{'0' * 36}..." in line


def test_report_reads_nulls_a_summary_writes_for_nan_and_an_empty_timeseries(hand_edited_run,
                                                                             tmp_path, capsys):
    """A run whose every request the response cache answered writes NaN rates as null and no
    timeseries row: the kind checks refused both."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["router"]["silent_failure_rate"] = None
    (folder / "summary.json").write_text(json.dumps(doc))
    ts = pd.read_parquet(folder / "timeseries.parquet").iloc[:0].astype(object)
    ts.to_parquet(folder / "timeseries.parquet")
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err


def test_report_names_a_requests_column_of_text(hand_edited_run, tmp_path, capsys):
    """"ValueError: could not convert string to float: 'x'"."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    req = pd.read_parquet(folder / "requests.parquet")
    req["ttft_s"] = "x"
    req.to_parquet(folder / "requests.parquet")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line.startswith(f"Error: {folder / 'requests.parquet'}: column 'ttft_s' holds ")
    assert line.endswith(" values, not numbers; rerun the command that wrote it")


def test_report_refuses_an_infinite_latency(hand_edited_run, tmp_path, capsys):
    """A hand-edited ttft_s of inf printed numpy's RuntimeWarning and drew the page anyway."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    req = pd.read_parquet(folder / "requests.parquet")
    req.loc[2, "ttft_s"] = np.inf
    req.to_parquet(folder / "requests.parquet")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'requests.parquet'}: column 'ttft_s', row 3: an infinite "
                    "value, which tiersim never writes; rerun the command that wrote it")


def test_plan_refuses_max_replicas_above_the_scenarios_limit(tmp_path, capsys):
    """It blamed tiers[0].replicas ("1485 replicas is above limits.max_replicas (1024)")."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY)
    line = one_error_line(*run_cli(capsys, "plan", path, "--out", tmp_path / "p",
                                   "--max-replicas", "100000"))
    assert line == (f"Error: --max-replicas 100000 is above {path}'s limits.max_replicas (1024); "
                    "lower it, or raise limits: {max_replicas: N} in the scenario")


def test_plan_without_max_replicas_stays_within_a_lower_scenario_limit(tmp_path, monkeypatch):
    from tiersim.cli import plan

    seen = {}

    def fake_plan(scenario, path, limits, out, choose, max_replicas, *rest):
        seen["max_replicas"] = max_replicas
        raise TiersimError("stop")

    monkeypatch.setattr(plan, "_plan", fake_plan)
    doc = yaml.safe_load(TINY)
    doc["limits"] = {"max_replicas": 100}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TiersimError, match="stop"):
        plan.plan_capacity(path, out_dir=tmp_path / "p", report=False)
    assert seen["max_replicas"] == 100


def test_sweep_refuses_a_ray_address_without_ray(tmp_path, capsys):
    """`--executor local --address x:1` ignored the address."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY + "sweep:\n  tiers.bf16.replicas: [1, 2]\n")
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "w",
                                   "--address", "x:1"))
    assert line == ("Error: --address 'x:1': a Ray cluster's address; give --executor ray with "
                    "it, or drop it to run on local processes")
    assert not (tmp_path / "w").exists()  # nothing was written
