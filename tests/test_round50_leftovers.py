"""Round 50, the leftovers of round 49's review (helper left50). Each test names what a user saw
before its fix."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
import yaml
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main
from tiersim.cli.usage import read_flag_number
from tiersim.jsonio import parse_json
from tiersim.numbers import WrittenNumber, as_written, plain_float
from tiersim.scenario_yaml import dump_yaml


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# 1. One class keeps a number's written text: jsonio.WrittenFloat, numbers.WrittenNumber and
# cli/trace.TypedNumber did the same job three times.

def test_one_class_keeps_a_numbers_text():
    """A JSON number beyond a float, a flag's number: both are a WrittenNumber, which ``repr``
    and :func:`as_written` quote as written."""
    import tiersim.cli.trace
    import tiersim.jsonio

    assert not hasattr(tiersim.jsonio, "WrittenFloat")
    assert not hasattr(tiersim.cli.trace, "TypedNumber")
    text = '{"a": 1e400, "b": -1e999, "c": 1.5, "d": 1%s}' % ("0" * 50 + ".0e400")
    read = parse_json(text, "x.json", "a test file")
    assert [type(read[k]) for k in "abc"] == [WrittenNumber, WrittenNumber, float]
    assert (repr(read["a"]), repr(read["b"]), repr(read["c"])) == ("1e400", "-1e999", "1.5")
    assert repr(read["d"]) == "1" + "0" * 36 + "..."  # cut to 40 characters, as before
    assert as_written(read["a"]) == "1e400, beyond a float"
    flag = read_flag_number(float, None, None, " 1e9 ")
    assert type(flag) is WrittenNumber and flag == 1e9 and repr(flag) == "1e9"
    for number in (flag, read["a"]):  # copied and pickled with its text
        for again in (copy.deepcopy(number), pickle.loads(pickle.dumps(number))):
            assert type(again) is WrittenNumber and repr(again) == repr(number)
    assert type(plain_float(flag)) is float and repr(plain_float(flag)) == "1000000000.0"
    assert plain_float(None) is None


def test_a_written_number_is_written_to_yaml_as_its_float():
    """``represent_float`` writes ``repr``, the text: ``1e9`` would have been written
    ``!!float '1.0e9'``. Should one reach a written scenario, it is the float."""
    doc = {"a": WrittenNumber(1e9, "1e9"), "b": [WrittenNumber(-5.0, "-5")],
           "c": WrittenNumber(float("inf"), "1e400")}
    for text in (yaml.safe_dump(doc), dump_yaml(doc)):
        assert "!!" not in text and "1e9" not in text
        assert yaml.safe_load(text) == {"a": 1e9, "b": [-5.0], "c": float("inf")}


# 3. A flag's number is quoted as typed: --c0 -5 read '(got -5.0)', --slo-ttft-p99 2e6
# '(got 2e+06)'.

@pytest.mark.parametrize("argv, said", [
    (("analytic", "--p", "0.5", "--eps", "0.01", "--delta", "0.2", "--dc", "1", "--c0", "-5"),
     "tiersim analytic: --c0: must be from 0 to 1e12 (got -5)"),
    (("analytic", "--p", "0.5", "--eps", "0.01", "--delta", "0.2", "--dc", "1e13", "--c0",
      "1"), "tiersim analytic: --dc: must be from 0 to 1e12 (got 1e13)"),
    (("analytic", "--p", "5e-1", "--eps", "0.01", "--delta", "0.2", "--floor", "-1_000"),
     "tiersim analytic: --floor: must be from 0 to 1 (got -1_000)"),
    (("trace", "inspect", "azure2023_code", "--time-scale", "1e9"),
     "--time-scale: must be a number from 0.001 to 1000 (got 1e9)"),
    (("trace", "inspect", "azure2023_code", "--window", "-1", "10"),
     "--window: START must be >= 0 and below END (got -1 10); give the window's start and "
     "end in seconds of the trace"),
    (("calibrate", "--quick", "--device", "cpu", "--budget-s", "-5", "--out", "p.json"),
     "--budget-s: must be a finite number of seconds > 0 (got -5)"),
    (("calibrate", "--quick", "--device", "cpu", "--budget-s", "0e0", "--out", "p.json"),
     "--budget-s: must be a finite number of seconds > 0 (got 0e0)"),
])
def test_a_flag_number_is_quoted_as_typed(tmp_path, capsys, monkeypatch, argv, said):
    """Python's spelling of the number was quoted (``-5.0``, ``1000000000.0``, ``-1000.0``)."""
    monkeypatch.chdir(tmp_path)
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag, value, said", [
    ("--slo-ttft-p99", "2e6", "--slo-ttft-p99: must be at most 1e+06 seconds (got 2e6)"),
    ("--slo-tpot-p99", "-0", "--slo-tpot-p99: must be a finite number > 0 (got -0)"),
    ("--accuracy-floor", "1_5e-1_0", None),
    # round 50: a floor above 1 and at most 100 reads as a percent, and the line says so
    ("--accuracy-floor", "150e-2", "--accuracy-floor: must be a number from 0 to 1 (got 150e-2)"
     "; a share, not a percent: 0.015 for 1.5%"),
])
def test_a_plan_flag_number_is_quoted_as_typed(tmp_path, capsys, flag, value, said):
    """``--slo-tpot-p99 -0`` read '(got 0.0)', ``--accuracy-floor 150e-2`` '(got 1.5)'."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    line = one_error_line(*run_cli(capsys, "plan", path, flag, value, "--out", tmp_path / "p"))
    if said is None:  # misspelt: refused by the number reader, as before
        assert "1_5e-1_0" in line and "Traceback" not in line
    else:
        assert line == f"Error: {said}"
    assert not (tmp_path / "p").exists()


def test_a_plan_flag_number_is_written_as_its_float(tmp_path, capsys):
    """The text is kept only until the command has checked the number: the planned scenario
    holds the floats (``ttft_p99_s: 5.0``, not a tagged ``!!float '5e0'`` or an object),
    and the plan's lines read as before."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    code, out, err = cli(capsys, "plan", path, "--slo-ttft-p99", "5e0", "--accuracy-floor",
                         "5e-1", "--out", tmp_path / "p", "--no-report", "--max-replicas", "2")
    assert code == 0, err
    assert "ttft_p99_s: 0.334 vs limit 5 (modelled)\n" in out and "vs floor 50.00%" in out
    text = (tmp_path / "p" / "scenario.yaml").read_text()
    assert "!!" not in text and "5e0" not in text and "5e-1" not in text
    planned = yaml.safe_load(text)
    assert planned["slo"]["ttft_p99_s"] == 5.0 and planned["accuracy_floor"] == 0.5
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["constraints"]["ttft_p99_s"] == 5.0


# 2. Baseline-only tiers read back from summary.json in the scenario's order, not sorted.

def test_baseline_only_tiers_keep_the_scenarios_order_in_the_report(tmp_path, capsys):
    """``baselines: [zfp8, afp8]``: the console listed all zfp8 above all afp8, the report
    afp8 above zfp8 (summary.json's keys are sorted and record no order of baseline-only
    tiers). The report now orders them as the run's scenario.yaml lists them; summary.json
    is unchanged."""
    import re

    from tiersim.report.load import load_dir

    doc = tiny_doc(baselines=[
        {"name": "zfp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.5},
        {"name": "afp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.4}])
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, out, err = cli(capsys, "run", path, "--out", tmp_path / "r")
    assert code == 0, err
    console = re.findall(r"│ all (\w+) ", out)  # the table's rows (its p99 line names them too)
    assert console == ["w4a16", "bf16", "zfp8", "afp8"]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert list(summary["savings"]["uniform"]) == ["afp8", "bf16", "w4a16", "zfp8"]  # sorted
    run = load_dir(tmp_path / "r").run
    assert [u.tier for u in run.savings.uniform] == console
    page = (tmp_path / "r" / "report.html").read_text()
    rows = re.findall(r"<tr><td>(w4a16|bf16|zfp8|afp8)</td><td class=\"num\">", page)
    assert [r for r in rows if r.endswith("fp8")] == ["zfp8", "afp8"]  # the uniform table
    (tmp_path / "r" / "scenario.yaml").unlink()  # read alone, summary.json knows no order
    (tmp_path / "r" / "manifest.json").unlink()
    with pytest.warns(UserWarning, match="no manifest.json"):
        alone = load_dir(tmp_path / "r").run
    assert [u.tier for u in alone.savings.uniform] == ["w4a16", "bf16", "afp8", "zfp8"]


# 4. benchmarks/fidelity_silicon.py's number flags: one Error: line, the value as typed.

@pytest.mark.parametrize("argv, said", [
    (["--overhead-ms", "inf"], "--overhead-ms must be a finite number >= 0 (got inf)"),
    (["--overhead-ms", "1e400"],
     "--overhead-ms must be a finite number >= 0 (got 1e400, beyond a float)"),
    (["--overhead-ms=-5e1"], "--overhead-ms must be a finite number >= 0 (got -5e1)"),
    (["--overhead-ms", ".NaN"], "--overhead-ms must be a finite number >= 0 (got .NaN)"),
    (["--overhead-ms", "1__0"],
     "argument --overhead-ms: 1__0 has a _ that is not between two digits; write 10"),
    (["--length-spread", "-.5"], "--length-spread must be in [0, 1) (got -.5)"),
    (["--length-spread", "1"], "--length-spread must be in [0, 1) (got 1)"),
    (["--overhead-ms", "1", "--overhead-ms", "2"],
     "--overhead-ms is given 2 times; give it once (only the last would count)"),
])
def test_fidelity_silicon_number_flags_are_one_line(capsys, argv, said):
    """``--overhead-ms inf`` printed argparse's 15-line usage block, then 'error: ... (got
    inf)', exit 2; ``1e400`` read '(got inf)', ``-50`` '(got -50.0)', ``--length-spread -.5``
    '(got -0.5)'."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    with pytest.raises(SystemExit) as exc:
        fs.main([*argv, "--jobs", "1", "--model", "Nope"])
    assert exc.value.code == 1
    assert capsys.readouterr().err == (f"Error: {said}; see python "
                                       "benchmarks/fidelity_silicon.py --help\n")


def test_fidelity_silicon_replays_with_the_overhead_as_a_float(monkeypatch):
    """The text is kept only for the refusal: the replay's knobs hold a plain float."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    seen = {}

    def run(df, kv_dtype, proto, jobs, knobs):
        seen.update(knobs=knobs, proto=proto)
        raise SystemExit(0)

    monkeypatch.setattr(fs, "run", run)
    with pytest.raises(SystemExit):
        fs.main(["--overhead-ms", "5e-1", "--length-spread", "1e-1", "--jobs", "1",
                 "--model", "Llama-3.1-8B", "--engine", "vllm"])
    assert type(seen["knobs"].overhead_s) is float and seen["knobs"].overhead_s == 0.5e-3
    assert type(seen["proto"].spread) is float and seen["proto"].spread == 0.1


# 5. A trace path given on the command line is named as given, as `tiersim run` names one.

@pytest.mark.parametrize("command", [["analytic", "--trace"], ["trace", "inspect"]])
def test_a_command_line_trace_is_named_as_given(tmp_path, capsys, monkeypatch, command):
    """``tiersim analytic --trace bad.csv`` named a file it read by its absolute path
    ('/home/me/bad.csv: row 2 ...') and one not found or a folder as given ('d: is a
    folder'); ``tiersim run`` names a scenario's trace as written (joined to the scenario's
    folder as given). Now every line names it as given; a path not found still names the
    folder looked in."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.csv").write_text(
        "arrival_s,input_tokens,output_tokens\n0,10,5\n1,x,5\n")
    (tmp_path / "empty.csv").write_text("")
    bad = ("row 2, column 'input_tokens': token count is not a number (got text of 1 "
           "character); write a number (file line 3)")
    for given, said in [
            ("sub/bad.csv", f"sub/bad.csv: {bad}"),
            # trace inspect names it as typed (round 50, it read "sub/bad.csv"); analytic's
            # --trace is read as a Path by its option's parser, which drops the ./
            ("./sub/bad.csv", f"{'./' if command[0] == 'trace' else ''}sub/bad.csv: {bad}"),
            (str(tmp_path / "sub" / "bad.csv"), f"{tmp_path / 'sub' / 'bad.csv'}: {bad}"),
            ("empty.csv", "empty.csv: file is empty; a trace needs a header and rows"),
            ("sub", "sub: is a folder; give the trace file in it")]:
        assert one_error_line(*run_cli(capsys, *command, given)) == f"Error: {said}"
    line = one_error_line(*run_cli(capsys, *command, "nope.csv"))
    assert line.startswith(f"Error: nope.csv: trace file not found in {tmp_path} and the "
                           "bundled traces/")


def test_run_names_the_same_trace_so(tmp_path, capsys, monkeypatch):
    """The convention the command-line paths follow: a scenario's relative trace path joined
    to its folder as given."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.csv").write_text(
        "arrival_s,input_tokens,output_tokens\n0,10,5\n1,x,5\n")
    doc = tiny_doc(trace={"path": "bad.csv"})
    write_yaml(tmp_path / "sub" / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "run", "sub/s.yaml", "--out", "o"))
    assert line.startswith("Error: sub/bad.csv: row 2, column 'input_tokens'")


def test_a_bundled_trace_on_the_command_line_reads_as_before(capsys):
    """A bundled trace is found in the package and named in full there, as before."""
    code, out, err = cli(capsys, "trace", "inspect", "azure2023_code", "--json")
    assert code == 0, err
    assert json.loads(out)["path"].endswith("azure2023_code.parquet")
    assert json.loads(out)["path"].startswith("/")


# 6. The plan's chosen-router line spells values as a scenario writes them (YAML).

def test_the_chosen_router_line_spells_values_as_yaml():
    """``router: policy static_split, fractions {'w4a16': 0.6, 'bf16': 0.4}, tier None``:
    Python's spelling (``as_given``), which no scenario reads as written. Now YAML's: a name
    bare, ``null``, ``true``, a map ``{w4a16: 0.6, bf16: 0.4}``; numbers to 10 digits, as
    before."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.results_plan import PlanResult

    chosen = {"design": "w4a16@1+bf16@1", "tiers": ["w4a16", "bf16"],
              "replicas": {"w4a16": 1, "bf16": 1}, "gpus_per_replica": {"w4a16": 1, "bf16": 1},
              "cost_usd": 1.0, "cost_per_hour_usd": 7.0, "cost_model": "provisioned",
              "router": {"policy": "static_split", "fractions": {"w4a16": 0.6, "bf16": 0.4},
                         "tier": None, "floor": 0.1 + 0.7, "thresholds": [0.2, 0.5],
                         "flag": True, "step_tiers": {"chat": "fp8-big", "yes": "no"}}}
    lines = format_plan(PlanResult(scenario="s", constraints={}, plan=chosen)).splitlines()
    assert ("  router: policy static_split, flag true, floor 0.8, fractions {w4a16: 0.6, "
            "bf16: 0.4}, step_tiers {chat: fp8-big, 'yes': 'no'}, thresholds [0.2, 0.5], "
            "tier null") in lines


def test_the_reports_plan_table_spells_router_values_as_yaml():
    """The report's plan table read the same Python spellings (``None``)."""
    from tiersim.report.page import plan_section
    from tiersim.results_plan import PlanResult

    chosen = {"design": "w4a16@1+bf16@1", "tiers": ["w4a16", "bf16"],
              "replicas": {"w4a16": 1, "bf16": 1}, "gpus_per_replica": {"w4a16": 1, "bf16": 1},
              "cost_usd": 1.0, "cost_per_hour_usd": 7.0, "cost_model": "provisioned",
              "router": {"policy": "floor", "tier": None, "fractions": {"w4a16": 1.0}}}
    page = plan_section(PlanResult(scenario="s", constraints={}, plan=chosen))
    assert "<td>router tier</td><td>null</td>" in page
    assert "<td>router fractions</td><td>{w4a16: 1}</td>" in page
    assert "<td>router policy</td><td>floor</td>" in page
    assert "None" not in page and "'w4a16'" not in page


def test_baselines_order_from_a_hand_edited_scenario_yaml_is_no_crash():
    """A scenario.yaml whose ``baselines:`` is not a list of named maps leaves the order as
    read (a list as a name is no key to sort by)."""
    from types import SimpleNamespace

    from tiersim.report.load import baselines_in_scenario_order

    run = SimpleNamespace(tiers=[SimpleNamespace(name="a")],
                          savings=SimpleNamespace(uniform=(SimpleNamespace(tier="a"),)))
    assert baselines_in_scenario_order(run, {"baselines": [{"name": ["x"]}]}) is run
    assert baselines_in_scenario_order(None, {}) is None
