"""The command line: exact one-line errors with exit 1 and no traceback; a run prints its table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, cheap_first_tiers, run_cli, tiny_doc, write_yaml

from tiersim.cli import main, mount
from tiersim.cli.calibrate import drop_flag, flag_value

TRACE_HEADER = "request_id,arrival_s,input_tokens,output_tokens\n"


def line_of(path, needle: str) -> int:
    """1-based number of the first line of ``path`` containing ``needle``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def one_line_error(result) -> str:
    """Assert the run failed the way users should see failures; return the message."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0][len("Error: "):]


def test_unknown_key_exits_1_with_one_line(tmp_path):
    doc = tiny_doc()
    doc["tiers"][0]["replica"] = doc["tiers"][0].pop("replicas")
    line = line_of(write_yaml(tmp_path / "x.yaml", doc), "replica:")
    result = run_cli("run", "x.yaml", cwd=tmp_path)
    assert one_line_error(result) == (
        f"x.yaml: line {line}: tiers[0].replica: unknown key (did you mean 'replicas'?)"
    )


def test_tier_that_does_not_fit_exits_1(tmp_path):
    doc = tiny_doc()
    doc["tiers"][1]["gpu_memory_utilization"] = 0.4
    line = line_of(write_yaml(tmp_path / "x.yaml", doc), "name: bf16")
    result = run_cli("run", "x.yaml", cwd=tmp_path)
    assert one_line_error(result) == (
        f"x.yaml: line {line}: tiers[1]: tier 'bf16': Qwen3-Coder-30B-A3B at BF16 does not fit on "
        "1x H200: weights 61.1 GB + reserve 2.0 GB > usable 60.3 GB (short by 2.8 GB); set "
        "gpu_memory_utilization to at least 0.419 (it is 0.4), or use gpus_per_replica 2, a "
        "smaller precision or a GPU with more memory"
    )


@pytest.mark.parametrize("command", ["run", "plan", "sweep", "sweep without axes"])
def test_max_model_len_above_the_context_exits_1(tmp_path, capsys, command):
    """vLLM refuses a --max-model-len above the model's context; it used to be capped quietly."""
    doc = tiny_doc()
    doc["tiers"][1]["scheduler"] = {"max_model_len": 99999999}
    if command == "sweep":  # the base's own fault, named at its key, not blamed on an axis
        doc["sweep"] = {"seed": [1, 2]}
    path = write_yaml(tmp_path / "x.yaml", doc)
    line = line_of(path, "max_model_len:")
    assert main([command.split()[0], str(path), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        f"Error: {path}: line {line}: tiers[1].scheduler.max_model_len: 99999999 is above "
        "Qwen3-Coder-30B-A3B's context (262144 tokens); set it to at most 262144\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("router,key,expected", [
    ({"policy": "uniform", "fractions": [1]}, "fractions",
     "policy uniform does not read it (only static_split does); remove it, or set policy: "
     "static_split"),
    ({"policy": "static_split", "fractions": [0.5, 0.5], "classifier": {"C": 2.0}},
     "classifier", "policy static_split does not read it (only threshold, lagrangian, floor "
     "and budget do); remove it, or set one of those policies"),
    ({"policy": "step_type", "step_fallback": "uniform", "thresholds": 0.5}, "thresholds",
     "none of the policies used (step_type, uniform) reads it (only threshold does); remove "
     "it, or set policy: threshold"),
])
@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_a_router_key_its_policy_does_not_read_is_refused(tmp_path, capsys, router, key,
                                                          expected, command):
    """`router: {policy: uniform, fractions: [1]}` ran, the fractions ignored."""
    doc = tiny_doc(router=router)
    if command == "sweep":
        doc["sweep"] = {"seed": [1, 2]}
    path = write_yaml(tmp_path / "x.yaml", doc)
    line = line_of(path, f"{key}:")
    assert main([command, str(path), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == f"Error: {path}: line {line}: router.{key}: {expected}\n"
    assert not (tmp_path / "o").exists()


def test_a_key_read_by_another_policy_of_the_sweep_or_plan_stays(tmp_path, capsys):
    """A sweep over router.policy keeps each policy's options in the base; --choose
    router.policy makes the chosen policies' options read too; an axis or --choose setting
    that no policy reads is refused."""
    from tiersim.errors import TiersimError
    from tiersim.sweep.run import prepare

    doc = tiny_doc(router={"policy": "uniform", "fractions": [0.5, 0.5]})
    doc["sweep"] = {"router.policy": ["uniform", "static_split"]}
    assert len(prepare(doc, "x.yaml").points) == 2
    doc = tiny_doc(router={"policy": "uniform"})
    doc["sweep"] = {"router.fractions": [[0.5, 0.5], [0.2, 0.8]]}
    with pytest.raises(TiersimError) as caught:
        prepare(doc, "x.yaml")
    assert str(caught.value) == (
        "x.yaml: sweep: 'router.fractions': policy uniform does not read it (only "
        "static_split does); remove it, or set policy: static_split")
    path = write_yaml(tmp_path / "x.yaml", tiny_doc(router={"policy": "uniform", "lambda": 0.1}))
    assert main(["plan", str(path), "--choose", "router.lambda=0.1", "--out",
                 str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.endswith(
        "router.lambda: policy uniform does not read it (only lagrangian and oracle do); remove "
        "it, or set one of those policies\n")
    path = write_yaml(tmp_path / "x.yaml", tiny_doc())  # static_split
    assert main(["plan", str(path), "--choose", "router.tier=bf16", "--out",
                 str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        "Error: --choose router.tier: policy static_split does not read it (only uniform "
        "does); drop it, or add --choose router.policy=uniform\n")
    # --choose router.policy replaces the scenario's policy: a key --choose sets must be read
    # by the chosen policies (the scenario's own policy's keys are ignored, with a note)
    path = write_yaml(tmp_path / "x.yaml", tiny_doc(router={"policy": "uniform", "tier": "bf16"}))
    assert main(["plan", str(path), "--choose", "router.policy=threshold", "--choose",
                 "router.tier=fp8,bf16", "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.endswith(
        "Error: --choose router.tier: policy threshold does not read it (only uniform does); "
        "drop it, or add --choose router.policy=uniform\n")
    # a whole router map is one point's router: its keys are its own policy's
    doc = tiny_doc(router={"policy": "uniform", "tier": "bf16"})
    doc["sweep"] = {"router": [{"policy": "uniform", "tier": "bf16"},
                               {"policy": "static_split", "fractions": [0.5, 0.5],
                                "tier": "fp8"}]}
    with pytest.raises(TiersimError) as caught:
        prepare(doc, "x.yaml")
    assert str(caught.value) == (
        "x.yaml: sweep: 'router': router.tier: policy static_split does not read it (only "
        "uniform does); remove it, or set policy: uniform")


@pytest.mark.parametrize("rows,expected", [
    ("0,0.0,10,5\n1,0.5,-3,5\n",
     "row 2, column 'input_tokens': token count must be > 0 (got -3); fix or remove the row "
     "(file line 3)"),
    ("0,1.0,10,5\n1,0.5,3,5\n",
     "row 2, column 'arrival_s': timestamp 0.5 is earlier than the row before (1.0); sort the "
     "file by arrival_s (file line 3)"),
])
def test_malformed_trace_exits_1_naming_row_and_column(tmp_path, rows, expected, capsys):
    (tmp_path / "bad.csv").write_text(TRACE_HEADER + rows)
    write_yaml(tmp_path / "x.yaml", tiny_doc(trace={"path": "bad.csv", "format": "canonical"}))
    assert main(["run", str(tmp_path / "x.yaml")]) == 1
    err = capsys.readouterr().err
    assert err == f"Error: {tmp_path / 'bad.csv'}: {expected}\n"


def test_missing_trace_column_exits_1(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("request_id,arrival_s,input_tokens\n0,0.0,10\n")
    write_yaml(tmp_path / "x.yaml", tiny_doc(trace={"path": "bad.csv"}))
    assert main(["run", str(tmp_path / "x.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {tmp_path / 'bad.csv'}: column 'output_tokens': missing column")
    assert err.count("\n") == 1


def test_missing_scenario_file(capsys, tmp_path):
    assert main(["run", str(tmp_path / "none.yaml")]) == 1
    assert capsys.readouterr().err == f"Error: {tmp_path / 'none.yaml'}: file not found\n"


def test_run_writes_outputs_and_prints_sources(tmp_path):
    result = run_cli("run", str(REPO / "scenarios" / "tiny.yaml"), "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["requests"] == summary["completed"] + summary["dropped"]
    assert "TTFT p50 / p99" in result.stdout
    # a run with no profile: roofline kernels, vLLM's fitted host time (W4A16's Marlin experts
    # pay the C++ MoE rate, fitted on B200's rows); its W4A16 MoE is divided by H200's median
    # efficiency, and says so ("calibrated on H200's measured tables"); bf16's tables are bare
    assert ("step times from w4a16: fitted on another GPU's serving rows (1 op) + fitted on "
            "measured serving rows (1 op) + roofline (4 ops) + roofline, calibrated on H200's "
            "measured tables (1 op); bf16: fitted on measured serving rows (2 ops) + roofline "
            "(4 ops)") in " ".join(result.stdout.split())
    assert (tmp_path / "o" / "requests.parquet").is_file()
    assert (tmp_path / "o" / "report.html").is_file()


def test_mounted_trace_command_works(capsys):
    code = main(["trace", "inspect", str(REPO / "traces" / "azure2023_code.parquet")])
    assert code == 0
    assert "azure2023_code.parquet" in capsys.readouterr().out


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "trace", "analytic", "calibrate", "sweep", "report", "plan"):
        assert command in out
    assert "unavailable" not in out


@pytest.mark.parametrize("argv,expected", [
    (["plan", "scenarios/tiny.yaml", "--max-replicas", "0"],
     "--max-replicas: input should be greater than or equal to 1; see tiersim plan --help"),
    (["sweep", "scenarios/tiny.yaml", "--out", "x", "--workers", "0"],
     "--workers: input should be greater than or equal to 1; see tiersim sweep --help"),
    (["analytic", "--p", "abc"], "--p: input should be a valid number, unable to parse string "
     "as a number; see tiersim analytic --help"),
    (["run", "scenarios/tiny.yaml", "--bogus"],
     "--bogus: no such option (did you mean --out?); see tiersim run --help"),
    (["sweep", "scenarios/tiny.yaml"], "--out: required, and not given; see tiersim sweep --help"),
    (["sweep", "--out", "x"], "SCENARIO: required, and not given; see tiersim sweep --help"),
    (["run", "scenarios/tiny.yaml", "--out"],
     "--out: requires an argument; see tiersim run --help"),
    (["run", "a", "b"], "got unexpected extra argument(s) (b); see tiersim run --help"),
    (["bogus"], "no such command 'bogus'; see tiersim --help"),
    (["trace", "inspect", "--window"],
     "--window: requires 2 arguments; see tiersim trace inspect --help"),
    (["trace", "--bogus"], "--bogus: no such option; see tiersim trace --help"),
])
def test_usage_errors_are_one_line_and_exit_1(capsys, argv, expected):
    """The framework's own refusals (bad value, unknown option, missing --out) read as every
    other refusal: one line, exit 1, no usage box (they used to exit 2 with one)."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err == f"Error: {expected}\n" and captured.out == ""


def test_usage_error_through_the_console_entry_point():
    result = run_cli("sweep", "scenarios/tiny.yaml", "--out", "x", "--workers", "0")
    assert one_line_error(result) == ("--workers: input should be greater than or equal to 1; "
                                      "see tiersim sweep --help")


def test_help_and_a_bare_group_still_show_help(capsys):
    assert main(["run", "--help"]) == 0
    assert "Usage: tiersim run" in capsys.readouterr().out
    assert main(["trace"]) == 1  # a group without its command shows its help, a usage mistake
    assert "Usage: tiersim trace" in capsys.readouterr().out


def test_a_command_that_fails_to_import_leaves_the_rest_working(capsys):
    mount("broken-for-test", "tiersim.no_such_module", "app", "A broken command.")
    assert main(["broken-for-test", "--anything"]) == 1
    err = capsys.readouterr().err
    assert err == ("Error: tiersim broken-for-test is unavailable (tiersim.no_such_module failed "
                   "to import: ModuleNotFoundError: No module named 'tiersim.no_such_module')\n")
    assert main(["trace", "--help"]) == 0


def test_flag_helpers():
    argv = ["--from", "aiconfigurator", "--out", "p.json"]
    assert flag_value(argv, "--from") == "aiconfigurator"
    assert flag_value(["--from=x"], "--from") == "x"
    assert drop_flag(argv, "--from") == ["--out", "p.json"]
    assert flag_value(["--out", "p"], "--from") is None


def test_run_without_a_scenario_runs_the_bundled_default(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path), "--no-report"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = pd.read_parquet(tmp_path / "requests.parquet")
    assert summary["scenario"] == "default"
    assert len(rows) == summary["requests"] == 8819
    assert summary["completed"] + summary["dropped"] == summary["requests"]
    assert not (tmp_path / "report.html").exists()
    assert "public measured" in capsys.readouterr().out


def test_out_blocked_by_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    tiny = str(REPO / "scenarios" / "tiny.yaml")
    assert main(["run", tiny, "--out", str(tmp_path / "taken")]) == 1
    assert capsys.readouterr().err == (
        f"Error: {tmp_path / 'taken'}: --out must be a folder, and a file is in the way\n"
    )


def test_run_of_a_sweep_scenario_says_it_runs_the_base_point(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(sweep={"seed": [1, 2]},
                                                    tiers=cheap_first_tiers()))  # no order note
    assert main(["run", str(path)]) == 0
    assert capsys.readouterr().err == (
        f"note: {path} has a sweep: map; this runs its base point only (use `tiersim sweep` "
        "for the grid)\n"
    )


@pytest.mark.parametrize(("command", "does"), [
    (["plan", "--no-report"], "plans"),  # it planned the base point without a word
    (["disagg"], "simulates"),
])
def test_plan_and_disagg_of_a_sweep_scenario_say_they_read_the_base_point(
        tmp_path, capsys, command, does):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(sweep={"seed": [1, 2]}))
    out = ["--out", str(tmp_path / "o")] if command[0] == "plan" else []
    main([command[0], str(path), *command[1:], *out])
    assert (f"note: {path} has a sweep: map; this {does} its base point only (use `tiersim "
            "sweep` for the grid)\n") in capsys.readouterr().err


def test_calibrate_refuses_an_unknown_device_before_importing_torch(tmp_path):
    """It imported torch first (3 s) and said `error: ...` in lower case."""
    result = run_cli("calibrate", "--out", str(tmp_path / "x.json"), "--device", "tpu")
    assert one_line_error(result) == "--device 'tpu': must be cuda or cpu"
    probe = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom tiersim.calibrate.cli import main\n"
         f"code = main(['--out', {str(tmp_path / 'x.json')!r}, '--device', 'tpu'])\n"
         "assert code == 1 and 'torch' not in sys.modules"],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert probe.returncode == 0, probe.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("args", [["--device", "cpu", "--quick"], ["--from", "aiconfigurator"]])
def test_calibrate_refuses_an_unwritable_out_before_measuring(args):
    """The folder passed os.access as root (/proc, a read-only disk): the harness measured,
    then printed two lines when the file could not be written."""
    result = run_cli("calibrate", *args, "--out", "/proc/tiersim-profile.json")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("Error: --out /proc/tiersim-profile.json: cannot write in folder "
                             "/proc (No such file or directory); choose another path\n")


def test_calibrate_passes_arguments_through(capsys):
    assert main(["calibrate", "--help"]) == 0
    assert "usage: tiersim calibrate" in capsys.readouterr().out
    assert main(["calibrate", "--from", "vidur", "--out", "p.json"]) == 1
    assert capsys.readouterr().err == (
        "Error: --from 'vidur': the only importer is 'aiconfigurator'\n"
    )
