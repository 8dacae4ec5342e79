"""Round 21 of hostile input on the commands other than the readers (plan, report, calibrate,
profile import): each a failure found from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
H200 = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


def _small_profile() -> dict:
    """The shipped H200 profile cut to a few tables."""
    doc = json.loads(H200.read_text())
    doc["tables"] = doc["tables"][:3]
    return doc


# ------------------------------------------------------------------ a profile's table op

@pytest.mark.parametrize("op", [[], ["gemm"], {}, {"gemm": 1}])
def test_a_table_op_that_is_a_list_or_object_is_one_line(tmp_path, capsys, op):
    """A table's ``op`` given as a JSON list or object ended a run in ``TypeError: unhashable
    type`` (it was looked up in a dict of the ops)."""
    doc = _small_profile()
    doc["tables"][1]["op"] = op
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(doc))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("profile: null", f"profile: {profile}"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 7: profile: {profile}: tables[1].op: must be one "
                    "of gemm, moe, attn_prefill, attn_decode, allreduce, gdn_decode, "
                    f"gdn_prefill, fp8_scale (got {json.dumps(op)})")  # as JSON (round 53)


# ------------------------------------------------------------------ calibrate --from aiconfigurator

# as the JSON file writes them since round 53 (they were Python's 'abc' and nan)
@pytest.mark.parametrize(("value", "got"), [("abc", '"abc"'), ([1], "[1]"), (-1, "-1"),
                                            (float("nan"), "NaN")])
def test_a_malformed_fitted_overhead_of_the_profile_rebuilt_is_one_line(tmp_path, capsys,
                                                                       value, got):
    """A rebuild keeps the fitted overhead of the profile at ``--out``; a value of text or a
    list there ended the import in a ValueError or TypeError traceback (after minutes of
    work), and a negative one named the new file's value as wrong."""
    out = tmp_path / "p.json"
    out.write_text(json.dumps({"schema": "tiersim.profile/1", "overhead_s": {
        "value": value, "source": "fitted: benchmark X"}}))
    before = out.read_bytes()
    line = error_line(*run_cli(capsys, "calibrate", "--from", "aiconfigurator", "--out", out))
    assert line == (f"Error: {out}: overhead_s.value: must be a number of seconds from 0 to "
                    f"3600 (got {got}); a rebuild keeps the fitted overhead_s of the profile it "
                    "replaces: correct it there, or remove its overhead_s to take the "
                    "roofline's")
    assert out.read_bytes() == before


def test_a_malformed_fitted_eager_cost_is_refused_not_dropped(tmp_path, capsys):
    """A fitted ``eager_s`` that does not parse was dropped silently by a rebuild (the fit
    lost); it is named like a malformed fitted overhead."""
    out = tmp_path / "p.json"
    out.write_text(json.dumps({"schema": "tiersim.profile/1", "eager_s": {
        "graph_max_tokens": -5, "per_layer_s": 2e-4, "source": "fitted: benchmark X"}}))
    line = error_line(*run_cli(capsys, "calibrate", "--from", "aiconfigurator", "--out", out))
    assert line == (f"Error: {out}: eager_s.graph_max_tokens: must be a whole number of tokens "
                    "from 0 to 2147483648 (got -5); a rebuild keeps the fitted eager_s of the "
                    "profile it replaces: correct it there, or remove its eager_s to take the "
                    "roofline's")


# ------------------------------------------------------------------ writing a profile

def test_a_profile_write_cut_short_leaves_the_earlier_profile_whole(tmp_path):
    """``save_profile`` (what ``calibrate --from aiconfigurator`` writes with) wrote in place:
    a full disk (here a file-size limit) left a truncated profile where a good one was."""
    import subprocess
    import sys

    out = tmp_path / "p.json"
    out.write_text(json.dumps(_small_profile()))
    before = out.read_bytes()
    script = (
        "import resource, sys\n"
        "from tiersim.perf.profile import load_profile, save_profile\n"
        f"profile = load_profile({str(H200)!r})\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        f"try:\n    save_profile(profile, {str(out)!r})\n"
        "except OSError as err:\n    print(err.errno, err.filename)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["27", str(out)]  # EFBIG, naming the profile
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


# ------------------------------------------------------------------ calibrate's own options

@pytest.mark.parametrize(("args", "said"), [
    (["--tp", "0"], "--tp 0: must be >= 1"),
    (["--tp", "7"], "--tp 7: Qwen3-Coder-30B-A3B heads=32 is not divisible; use a tp that "
     "divides it"),
    (["--precisions", "int3"], "--precisions 'int3': each must be one of "
     "bf16,fp8,fp8_block,w4a16,nvfp4"),
    (["--kv-dtypes", "fp8,fp8"], "--kv-dtypes 'fp8,fp8': names fp8 twice; name each once"),
    (["--ops", "gemm,attn"], "--ops 'gemm,attn': each must be one of "
     "overhead,gemm,moe,attn_decode,attn_prefill,allreduce"),
    (["--model", "Llama-9B"], "--model 'Llama-9B': unknown model; use one of "
     "Qwen3-Coder-30B-A3B, Llama-3.1-8B, Qwen3-235B-A22B, MiniMax-M2.5, Llama-3.1-70B, or "
     "--config path/to/config.json"),
])
def test_calibrate_options_are_checked_before_torch_is_needed(tmp_path, capsys, monkeypatch,
                                                              args, said):
    """A typo in --tp, --precisions, --kv-dtypes, --ops or --model was named only once torch
    was imported: without torch the line was "torch is not installed", and with it the typo
    came after CUDA started up."""
    import sys

    out = tmp_path / "p.json"
    monkeypatch.setitem(sys.modules, "torch", None)  # as if absent: the check needs none
    line = error_line(*run_cli(capsys, "calibrate", "--device", "cpu", "--out", out, *args))
    assert line == f"Error: {said}"
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ report

def test_a_report_interrupted_mid_write_leaves_no_half_page(tmp_path, capsys, monkeypatch):
    """Ctrl-C while ``tiersim report`` wrote the page left its temporary file (megabytes of
    half a page) in the folder until the next command there."""
    import os

    out = tmp_path / "run"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY)
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "--out", out, "--no-report")
    assert code == 0, err
    before = sorted(p.name for p in out.iterdir())

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    code, err = run_cli(capsys, "report", out)
    assert code == 130 and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == before


@pytest.mark.parametrize("froms", [["--from", "aiconfigurator", "--from=foo"],
                                   ["--from=aiconfigurator", "--from", "aiconfigurator"]])
def test_calibrate_from_given_twice_is_refused(tmp_path, capsys, froms):
    """``--from`` given twice ran the first and dropped the second silently (every other option
    given twice is refused)."""
    out = tmp_path / "p.json"
    line = error_line(*run_cli(capsys, "calibrate", *froms, "--out", out))
    assert line == ("Error: --from is given 2 times; give it once (only the first would count); "
                    "see tiersim calibrate --help")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ --help

def test_a_group_lists_its_commands_help_as_wrapped_text(capsys, monkeypatch):
    """``tiersim trace --help`` listed ``inspect`` with its docstring's own line breaks
    (half-empty lines: "percentiles; with" / "--window the rate is ..."), where the command's
    own page wraps the same words to the terminal."""
    from tiersim.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["trace", "--help"]) == 0
    panel = capsys.readouterr().out.split("Commands")[1]
    assert any("percentiles; with --window the rate" in line for line in panel.splitlines()), \
        panel


@pytest.mark.parametrize(("key", "where"), [("runners_up", "runners_up[0]"),
                                            ("uniform", "uniform[0]"),
                                            ("evaluated", "evaluated[0]"), ("wall_s", "wall_s")])
def test_a_null_in_plan_json_where_a_figure_belongs_is_one_line(tmp_path, capsys, key, where):
    """``tiersim report`` of a plan whose plan.json held null as a runner-up, uniform or
    evaluated fleet, or as wall_s, ended in an AttributeError or TypeError traceback."""
    out = tmp_path / "plan"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY)
    code, err = run_cli(capsys, "plan", scenario, "--out", out, "--no-report")
    assert code == 0, err
    doc = json.loads((out / "plan.json").read_text())
    if key == "wall_s":
        doc[key] = None
    else:
        doc[key] = [None, *doc[key]]
    (out / "plan.json").write_text(json.dumps(doc))
    line = error_line(*run_cli(capsys, "report", out))
    kind = "a number" if key == "wall_s" else "an object"
    assert line == (f"Error: {out / 'plan.json'}: {where}: expected {kind}, got null; rerun "
                    "`tiersim plan` to rewrite it")
    assert not (out / "report.html").exists()
