"""Round 11 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import contextlib
import copy
import json
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import axis_line, cheap_first_tiers, copy_folder, tiny_doc, write_yaml
from test_hostile_inputs import ROOT, TINY, one_error_line, run_cli

from tiersim.cli.plan import _parse_choose
from tiersim.errors import TiersimError

FORM = ("write PATH=VALUE1,VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 or "
        "router.thresholds=[0.2,0.5],[0.3,0.6])")


def test_choose_values_are_one_yaml_list_so_a_value_can_be_a_list():
    """Values were split on every comma, so a list value (thresholds) could not be given."""
    assert _parse_choose(["router.thresholds=[0.2,0.5],[0.3,0.6]", "router.lambda_=0.1, 0.2",
                          "router.policy='floor'"]) == {
        "router.thresholds": [[0.2, 0.5], [0.3, 0.6]], "router.lambda_": [0.1, 0.2],
        "router.policy": ["floor"]}


@pytest.mark.parametrize(("option", "line"), [
    ("router.floor=[1", "--choose router.floor: cannot read '[1' as YAML values; quote a text "
                        "value that holds brackets, braces, commas or a colon ('a[1]'); "
                        f"{FORM}"),
    # round 49: a value refused ends with its own fix; the form's hint is for a wrong form
    ("router.lambda=0.1,.nan", "--choose router.lambda: value 2: must be a finite number (got "
                               ".nan)"),  # as written (round 49; it read 'got nan')
    ("router..x=1", "--choose 'router..x=1': 'router..x' has an empty part between dots; name "
                    "a router setting, e.g. router.floor"),
])
def test_a_malformed_choose_value_is_one_line(option, line):
    """A value that is not YAML ended in a ScannerError traceback."""
    with pytest.raises(TiersimError) as err:
        _parse_choose([option])
    assert str(err.value) == line


def test_a_choose_path_given_twice_is_refused():
    """The second --choose of a path silently dropped the values of the first."""
    with pytest.raises(TiersimError) as err:
        _parse_choose(["router.lambda_=0.1", "router.lambda_=0.2"])
    assert str(err.value) == ("--choose router.lambda_: given twice; give all its values in one "
                              "--choose router.lambda_=VALUE1,VALUE2")


def test_a_choose_setting_named_with_and_without_router_is_one_setting():
    """``floor`` and ``router.floor`` set the same key: the second silently won."""
    with pytest.raises(TiersimError) as err:
        _parse_choose(["router.floor=0.8", "floor=0.9"])
    assert str(err.value) == ("--choose floor: given twice; give all its values in one "
                              "--choose floor=VALUE1,VALUE2")


def test_a_choose_path_may_name_a_tier_with_any_characters():
    """Tier names and step types are free text: a dotted-identifier rule refused them."""
    assert _parse_choose(["router.thresholds.fp8-e4m3=0.5,0.6"]) == {
        "router.thresholds.fp8-e4m3": [0.5, 0.6]}


def test_the_planner_tries_list_valued_router_settings(tmp_path, capsys):
    """A list value reached the planner's design cache and every routed design failed with
    'unhashable type: list', so the plan fell back to a uniform fleet without saying why."""
    code, err = run_cli(capsys, "plan", ROOT / "scenarios" / "tiny.yaml", "--out",
                        tmp_path / "p", "--choose", "router.fractions=[0.3,0.7],[0.5,0.5]",
                        "--max-replicas", "2", "--no-report")
    assert code == 0, err
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    routed = [d for d in plan["evaluated"] if d["router"]]
    assert sorted(d["router"]["fractions"] for d in routed) == [[0.3, 0.7], [0.5, 0.5]]
    assert all(d["ok"] for d in routed)


def test_a_choose_path_through_a_number_is_one_line(tmp_path, capsys):
    """router.floor.x set a key inside a float: a TypeError traceback."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY)
    line = one_error_line(*run_cli(capsys, "plan", scenario, "--choose", "router.floor.x=1",
                                   "--accuracy-floor", "0.8", "--out", tmp_path / "p"))
    assert line == ("Error: --choose router.floor.x: router.floor is 0.8, not a mapping; name a "
                    "setting inside a mapping")


def test_disagg_of_a_tier_that_serves_nothing_is_refused(tmp_path, capsys):
    """A tier the router sends nothing scored 0 and was printed as meeting both SLOs."""
    doc = tiny_doc(router={"policy": "static_split", "fractions": [0.0, 1.0]},
                   tiers=cheap_first_tiers())  # no tier-order note above the error
    doc["tiers"][0]["replicas"] = 2
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "disagg", path))
    assert line.startswith(f"Error: {path}: tier 'w4a16' serves no request of this trace "
                           "(w4a16 0, bf16 ")
    assert line.endswith("), so its splits have no latency to compare; choose a tier that "
                         "serves traffic with --tier")


@pytest.mark.parametrize("reply", [None, b"HTTP/1.1 400 Bad Request\r\n\r\n", b"+OK\r\n"])
def test_a_ray_address_that_answers_but_is_not_ray_is_refused_at_once(monkeypatch, reply):
    """A port that accepted connections but was not Ray (a web server, Redis, a silent
    listener) kept ray.init retrying for minutes; it is refused before Ray is called."""
    from test_sweep_round5 import _RecordingRay, answering_server

    from tiersim.sweep import executors

    fake = _RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    with answering_server(reply) as address:
        started = time.monotonic()
        with pytest.raises(TiersimError) as err:
            executors.run_ray([], lambda record: None, address)
    assert str(err.value) == (f"--address {address!r}: something accepts connections there but "
                              "does not answer as Ray's gRPC server does within 3 s; give "
                              "host:port of a running Ray cluster's head, or leave it out")
    assert fake.calls == [] and time.monotonic() - started < 10


# ---------------------------------------------------------------------------------------------
# tiersim report on a tampered summary: every field is validated against its type on reading

ANALYTIC = {"oracle (w4a16 vs bf16)": [[0.1, 0.9], [0.15, 0.95], [0.2, 0.95]],
            "static split (w4a16 vs bf16)": [[0.1, 0.9], [0.2, 0.95]],
            "params": {"cheap": "w4a16", "top": "bf16", "p": 0.5, "eps": 0.0, "delta": 0.1,
                       "c0_usd": 0.1, "dc_usd": 0.1, "dC_star_usd": 0.02}}
"""An analytic block as a run whose tiers differ in price writes it."""


def _tampered(hand_edited_run: Path, folder: Path, path: tuple, value) -> Path:
    """A copy of the run folder whose summary has ``value`` at key ``path`` (and the analytic
    block above, so that its parts can be tampered with too)."""
    folder = copy_folder(hand_edited_run, folder)
    doc = json.loads((folder / "summary.json").read_text())
    doc["analytic"] = copy.deepcopy(ANALYTIC)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


# values spelt as the JSON file writes them since round 53 (were Python's 'x' and True)
@pytest.mark.parametrize(("path", "value", "problem"), [
    (("analytic",), "x", "'analytic' must be a JSON object, got \"x\""),
    (("analytic", "params"), [1], "'analytic.params': input should be an object, got [1]"),
    (("analytic", "oracle (w4a16 vs bf16)", 1), "x", "'analytic.oracle (w4a16 vs bf16)[1]': "
                                                     "input should be a valid array, got \"x\""),
    (("router", "first_tier_shares", "bf16"), "0.5", "'router.first_tier_shares.bf16': input "
                                                     "should be a valid number, got \"0.5\""),
    (("tiers", "bf16", "prefix_hit_by_level"), {"gpu": True}, "'tiers.bf16.prefix_hit_by_level"
                                                             ".gpu': input should be a valid "
                                                             "number, got true"),
    (("router", "accuracy_ci95"), [0.9], "'router.accuracy_ci95[1]': missing"),
    (("profile", "sources", "bf16"), "x", "'profile.sources.bf16': input should be an object, "
                                          "got \"x\""),
    (("analytic", "params", "dC_star_usd"), "abc", "'analytic.params.dC_star_usd': input should "
                                                  "be a valid number, got \"abc\""),
    (("profile", "checked"), {"engine": "vllm"}, "'profile.checked.gpu': missing"),
])
def test_report_names_a_tampered_part_of_a_summary(hand_edited_run, tmp_path, capsys, path, value,
                                                   problem):
    """Each was an AttributeError, TypeError or ValueError traceback from the page."""
    folder = _tampered(hand_edited_run, tmp_path / "r", path, value)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def test_report_renders_or_names_every_tampered_field(hand_edited_run, tmp_path):
    """Every value of the summary replaced by text, a list or an object: the page renders, or
    one line says what is wrong; never another exception."""
    from tiersim.report.load import load_dir
    from tiersim.report.page import render

    doc = json.loads((hand_edited_run / "summary.json").read_text())
    doc["analytic"] = copy.deepcopy(ANALYTIC)
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    for path in _paths(doc):
        for value in ("x", [1], None):
            changed = copy.deepcopy(doc)
            target = changed
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            (folder / "summary.json").write_text(json.dumps(changed))
            with contextlib.suppress(TiersimError):  # one line: what the CLI prints
                render(load_dir(folder))


def _paths(obj, prefix=()):
    """Every key path in a JSON document."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(
        obj, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


def test_report_names_a_sweep_axis_column_of_lists(tmp_path, capsys):
    """The store writes a list value as JSON text; an axis column of arrays was an
    'unhashable type' traceback from the page."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "sw"
    folder.mkdir()
    table = pa.table({"point_id": ["a", "b"], "status": ["ok", "ok"],
                      "seed": [[1, 2], [3]], "cost_usd": [1.0, 2.0]})
    pq.write_table(table.replace_schema_metadata({"tiersim.sweep.axes": '["seed"]'}),
                   folder / "sweep.parquet")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'sweep.parquet'}: axis column 'seed' holds a list (row "
                    "0), where the sweep writes a number or text; rerun the sweep")


# ---------------------------------------------------------------------------------------------
# round 11's second helper: traces, terminal escapes, checkpoints, profiles, reports


def test_more_prefix_ids_than_prompt_blocks_are_refused(tmp_path):
    """3,000 ids on a 1,000-token prompt pushed the prompt's own blocks out of the cache: 0%
    hits while the unbounded bound said 94.9%."""
    from tiersim.trace.loader import load_trace

    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1000, "output_length": 5,
                                "hash_ids": list(range(3))}) + "\n")
    with pytest.raises(TiersimError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 1, column 'hash_ids': 3 prefix block ids for a "
                              "1,000-token prompt, which spans 2 block(s) of 512 tokens; "
                              "tiersim takes one id per 512-token block, Mooncake's size (no "
                              "setting changes it; ids of smaller blocks, such as Bailian's "
                              "16-token ones, do not fit): remove the column hash_ids to replay "
                              "without prefix caching, or give one id per 512 prompt tokens "
                              "(file line 1)")


@pytest.mark.parametrize(("column", "label"), [("arrival_s", "arrival time in seconds"),
                                               ("tool_s", "tool time in seconds")])
def test_a_time_of_true_or_false_is_refused(tmp_path, column, label):
    """False and True were read as 0 and 1 seconds."""
    from tiersim.trace.loader import load_trace

    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": 10, "output_tokens": 5,
                       "session_id": [1, 1], "step": [0, 1], "tool_s": [0.0, 2.0]})
    df[column] = [False, True]
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    with pytest.raises(TiersimError) as err:
        load_trace(path)
    # round 52: a Parquet boolean as JSON spells it (it read Python's False)
    assert str(err.value) == (f"{path}: row 1, column '{column}': {label} is a true/false value "
                              "(got false); write a number")


def test_control_characters_in_an_error_line_are_escaped(tmp_path, capsys):
    """An unknown key's OSC sequence (retitles the terminal), right-to-left override and NUL
    reached stderr as they were."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY + '"X\\e]0;pwn\\a\\u202e\\0": 1\n')
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines"))
    assert "X\\x1b]0;pwn\\x07\\u202e\\x00: unknown key" in line
    assert not any(ord(c) < 32 or c == "\u202e" for c in line)


@pytest.mark.parametrize("block", [["a", "b"], [0, 0], [-128, 128], [], True])
def test_an_fp8_block_size_that_is_no_size_is_refused(tmp_path, block):
    """Any non-empty weight_block_size counted as block FP8; its values were never read."""
    from tiersim.hardware.hf_config import checkpoint_formats

    config = tmp_path / "config.json"
    config.write_text("{}")
    with pytest.raises(TiersimError, match=r"key 'quantization_config.weight_block_size': must "
                                           r"be a list of whole numbers from 1 to 1048576"):
        checkpoint_formats(config, {"quant_method": "fp8", "weight_block_size": block})


def test_a_profile_file_beside_the_scenario_is_found_from_any_folder(tmp_path, monkeypatch,
                                                                     capsys):
    """Models and traces were found beside the scenario, a profile only from the working
    folder: `tiersim run scen/s.yaml` failed where `cd scen; tiersim run s.yaml` worked."""
    scen = tmp_path / "scen"
    scen.mkdir()
    shipped = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"
    (scen / "mine.json").write_bytes(shipped.read_bytes())
    trace = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
    (scen / "s.yaml").write_text(TINY.replace("path: azure2023_code.parquet", f"path: {trace}")
                                 .replace("profile: null", "profile: mine.json"))
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "run", "scen/s.yaml", "--out", tmp_path / "o",
                        "--no-baselines", "--no-report")
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["profile"]["name"] == str(Path("scen") / "mine.json")


def test_report_says_which_files_of_the_run_are_missing(tmp_path, capsys):
    """With summary.json removed the page had no headline, cost or latency, and no word why."""
    out = tmp_path / "o"
    code, err = run_cli(capsys, "run", ROOT / "scenarios" / "tiny.yaml", "--out", out,
                        "--no-baselines", "--no-report")
    assert code == 0, err
    (out / "summary.json").unlink()
    capsys.readouterr()
    from tiersim.cli import main

    assert main(["report", str(out)]) == 0
    note = ("note: summary.json is named in manifest.json but missing here, so the report "
            "leaves out what it holds; rerun the command that wrote the folder to have the "
            "whole report")
    assert capsys.readouterr().err.strip() == note
    assert note in (out / "report.html").read_text()


@pytest.mark.parametrize(("axis", "values"), [
    ("gpu", ["H200", "h200"]), ("model", ["Llama-3.1-8B", "llama-3.1-8b"]),
    ("tiers.0.precision", ["w4a16", "W4A16"]),
    ("limits.gpus_per_replica", [[1, 2], [2, 1, 2]])])  # a set of sizes, sized alike
def test_a_sweep_refuses_one_setting_under_two_spellings(tmp_path, capsys, axis, values):
    """Names read case-insensitively ran as separate points with identical numbers."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(sweep={axis: values}))
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "o",
                                   "--no-baselines"))
    assert line == (f"Error: {path}: line {axis_line(path, axis)}: sweep: '{axis}': values "
                    f"{values[0]!r} and {values[1]!r} are the same setting once read; list it "
                    "once")
    assert not (tmp_path / "o").exists()


def test_a_sweep_refuses_one_trace_file_under_two_paths(tmp_path, capsys):
    """``t.parquet`` and ``./t.parquet`` are one file."""
    trace = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
    (tmp_path / "t.parquet").write_bytes(trace.read_bytes())
    doc = tiny_doc(sweep={"trace.path": ["t.parquet", "./t.parquet"]})
    doc["trace"]["path"] = "t.parquet"
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "o",
                                   "--no-baselines"))
    assert line == (f"Error: {path}: line {axis_line(path, 'trace.path')}: sweep: 'trace.path': "
                    "values 't.parquet' and './t.parquet' are the same setting once read; list "
                    "it once")


# ---------------------------------------------------------------------------------------------
# round 12's helper


def test_a_plan_whose_cheapest_fleet_is_free_reports_no_saving_share(tmp_path, capsys):
    """A $0 baseline divided the saving by zero: a ZeroDivisionError traceback."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    path.write_text(path.read_text().replace("cost_per_gpu_hour: 3.5", "cost_per_gpu_hour: 0"))
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report",
                        "--max-replicas", "2")
    assert code == 0, err
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["plan"]["savings"]["vs_uniform_frac"] is None


def test_an_slo_flag_beyond_the_scenario_bound_names_the_flag(tmp_path, capsys):
    """2e6 s passed the flag check and was then blamed on the scenario file's slo block."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    line = one_error_line(*run_cli(capsys, "plan", path, "--slo-ttft-p99", "2e6", "--out",
                                   tmp_path / "p"))
    # the value as typed (it read 2e+06, Python's spelling of the number)
    assert line == "Error: --slo-ttft-p99: must be at most 1e+06 seconds (got 2e6)"


def test_a_plan_keeps_the_response_cache_and_sizes_for_its_misses(tmp_path, capsys):
    """The planned scenario dropped router.response_cache without a word: its run served the
    574 requests the cache answers in the scenario's own run. The planner now sizes for the
    misses, as the run's baselines do (round 15), so no note is needed."""
    path = tmp_path / "rc.yaml"
    path.write_text(
        "name: rc\nmodel: Qwen3-Coder-30B-A3B\ngpu: H200\nprofile: null\n"
        "trace: {path: azure2023_conv.parquet, window: [0, 300]}\n"
        "tiers:\n  - {name: bf16, precision: bf16, replicas: 2, cost_per_gpu_hour: 3.5}\n"
        "router:\n  policy: uniform\n  response_cache: {mode: top_n, size: 50, popularity: "
        "{distinct: 100000, exponent: 1.0}}\ncost_model: attributed\n")
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report")
    assert code == 0, err
    assert err.strip() == ""
    summary = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert summary["response_cache"]["hits"] == 574


def test_generated_tool_times_stay_within_a_traces_limit():
    """A median of 1e5 s with sigma 5 drew tool times of 1e9 s and more (a trace is refused
    beyond 1e6 s): a 3.7e9 s run priced at 3.6 million USD, with no note."""
    import numpy as np

    from tiersim.trace.canonical import MAX_TOOL_S
    from tiersim.workload.sessions import SessionGenerator, generate

    cfg = SessionGenerator(tasks=5, tool_s_median=1e5, tool_s_sigma=5)
    df = generate(cfg, np.random.default_rng(0), "s.yaml")
    assert df["tool_s"].max() == MAX_TOOL_S


def test_disagg_scores_the_split_tier_by_its_own_drops(tmp_path, monkeypatch):
    """Another tier's drops (its max_model_len) scored every split of a tier that meets both
    SLOs as infinite: "misses an SLO". Routing by capability (round 35) sends w4a16's long
    requests to bf16; it is switched off here, so w4a16 drops them, as it drops a request
    larger than its KV cache."""
    monkeypatch.setattr("tiersim.routing.base.by_capability", lambda a, df, tiers: a)
    doc = tiny_doc(router={"policy": "static_split", "fractions": [0.5, 0.5]})
    doc["tiers"][0]["scheduler"] = {"max_model_len": 500}
    doc["tiers"][1]["replicas"] = 2
    path = write_yaml(tmp_path / "s.yaml", doc)
    from tiersim.disagg import compare_splits
    from tiersim.scenario import load_scenario

    rows = compare_splits(load_scenario(path), "bf16")
    assert all(r.score < float("inf") for r in rows), [r.score for r in rows]
    w4a16 = compare_splits(load_scenario(path), "w4a16")
    assert w4a16[0].score == float("inf")  # the tier that drops is still judged by them
