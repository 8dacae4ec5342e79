"""Round 22 of hostile input on the command line, profiles and the calibrate harness: each a
failure found from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
H200 = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


# ------------------------------------------------------------------ a long --out file name

LONG = "p" * 245 + ".json"
"""A file name of 250 bytes: a name the system takes (255 at most), that the checks of
``--out`` pass, and that a temporary name built by adding to it overran."""


def test_the_harness_writes_a_profile_of_a_long_name(tmp_path):
    """``schema.write`` (the harness's write, after minutes of measuring) wrote through
    ``NAME.<pid>.tmp``: for a long ``--out`` name that was past the system's 255 bytes, so the
    write failed with 'File name too long' and the measured profile was lost."""
    from tiersim.calibrate import schema

    out = tmp_path / LONG
    schema.write(out, {"schema": "tiersim.profile/1"})
    assert json.loads(out.read_text()) == {"schema": "tiersim.profile/1"}
    assert [p.name for p in tmp_path.iterdir()] == [LONG]


def test_an_imported_profile_of_a_long_name_is_written(tmp_path):
    """``save_profile`` (what ``calibrate --from aiconfigurator`` writes with) wrote through
    ``.NAME.XXXXXXXX.tmp``, past the system's 255 bytes for a long name: 'File name too long',
    naming the temporary file."""
    from tiersim.perf.profile import load_profile, save_profile

    out = tmp_path / LONG
    save_profile(load_profile(H200), out)
    assert load_profile(out).name == "h200_aiconfigurator_vllm"
    assert [p.name for p in tmp_path.iterdir()] == [LONG]


# ------------------------------------------------------------------ a command name mistyped

@pytest.mark.parametrize(("argv", "line"), [
    (["rnu", "x.yaml"], "Error: no such command 'rnu' (did you mean 'run'?); see tiersim --help"),
    (["reprot"], "Error: no such command 'reprot' (did you mean 'report'?); see tiersim --help"),
    (["trace", "inspct"], "Error: no such command 'inspct' (did you mean 'inspect'?); see "
                          "tiersim trace --help"),
    (["zzz"], "Error: no such command 'zzz'; see tiersim --help"),
])
def test_a_mistyped_command_is_named_with_the_one_meant(capsys, argv, line):
    """A mistyped option is told the one meant (``--ou: no such option (did you mean
    --out?)``); a mistyped command was not (``tiersim rnu``: the commands load lazily, so the
    framework saw none to suggest), and a group's suggestion read "no such command 'inspct'.
    Did you mean 'inspect'?; see ...", two sentences cut by the see-also."""
    assert error_line(*run_cli(capsys, *argv)) == line


# ------------------------------------------------------------------ calibrate: an option misspelt

@pytest.mark.parametrize(("argv", "line"), [
    (["--quick", "--ot", "p.json"], "Error: unrecognized arguments: --ot (did you mean --out "
                                    "or --tp?); see tiersim calibrate --help"),
    (["--quik", "--out", "p.json"], "Error: unrecognized arguments: --quik (did you mean "
                                    "--quick?); see tiersim calibrate --help"),
    (["--from", "aiconfigurator", "--ot", "p.json"],
     "Error: unrecognized arguments: --ot (did you mean --out?); see tiersim calibrate --from "
     "aiconfigurator --help"),
    (["--from", "aiconfigurator", "--out", "p.json", "--egnine=vllm"],
     "Error: unrecognized arguments: --egnine (did you mean --engine?); see tiersim calibrate "
     "--from aiconfigurator --help"),
])
def test_a_misspelt_calibrate_option_is_named_with_the_one_meant(tmp_path, capsys, monkeypatch,
                                                                 argv, line):
    """``tiersim calibrate --ot p.json`` said "the following arguments are required: --out"
    (argparse checks required options first), naming the option the user gave, misspelt, as
    missing; an unknown option is now named first, with the options spelled close to it, as
    the typer commands' are."""
    monkeypatch.chdir(tmp_path)
    assert error_line(*run_cli(capsys, "calibrate", *argv)) == line
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ a terminal too narrow

@pytest.mark.parametrize("columns", ["0", "1", "20"])
def test_a_narrow_terminal_loses_no_figure(capsys, monkeypatch, columns):
    """With ``COLUMNS=0`` ``tiersim trace inspect`` printed the trace's name and nothing else,
    with ``COLUMNS=1`` a column of box corners, status 0 both: every table was cut to the
    width given. Output is laid out for at least 80 columns (the terminal wraps it)."""
    import os

    from tiersim.cli import main

    monkeypatch.setenv("COLUMNS", columns)
    capsys.readouterr()
    assert main(["trace", "inspect", "azure2023_code.parquet"]) == 0
    out = capsys.readouterr().out
    assert "input tokens p99" in out and "8,819" in out
    assert os.environ["COLUMNS"] == columns  # the user's setting again afterwards


@pytest.mark.parametrize("columns", ["0", "1", "20"])
def test_a_narrow_terminal_keeps_the_help(capsys, monkeypatch, columns):
    """``COLUMNS=0 tiersim run --help`` printed blank lines, ``COLUMNS=20`` options cut to
    ``-…`` and their help to ``Sh…``; status 0."""
    from tiersim.cli import main

    monkeypatch.setenv("COLUMNS", columns)
    capsys.readouterr()
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--no-baselines" in out and "Write requests/summary/timeseries" in out


# ------------------------------------------------------------------ calibrate: stdout refused

def _fake_harness(monkeypatch) -> dict:
    """Stand in for torch and the measuring runner: a run writes (and returns) the shipped H200
    profile's header with no tables, at once."""
    import sys
    import types

    from tiersim.calibrate import schema

    doc = {**json.loads(H200.read_text()), "tables": []}
    doc["provenance"] = {**doc["provenance"], "torch": "2.13.0"}

    def run_calibration(**kw):
        schema.write(kw["out"], doc)
        return doc

    runner = types.SimpleNamespace(run_calibration=run_calibration, PartialProfile=RuntimeError)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(float8_e4m3fn=1))
    monkeypatch.setitem(sys.modules, "tiersim.calibrate.runner", runner)
    return doc


class _FullStdout:
    """Standard output on a full disk (``> /dev/full``): every write and flush fails."""

    def write(self, text):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")

    flush = write

    def fileno(self):
        raise OSError("no descriptor")


def test_the_harness_on_a_full_standard_output_is_one_line(tmp_path, capsys, monkeypatch):
    """``python -m tiersim.calibrate ... > /dev/full`` (the harness runs without tiersim's
    command-line app) wrote its profile, then ended in an ``OSError`` traceback printing the
    summary; it is one line and status 1, and the profile stays written."""
    import sys

    from tiersim.calibrate.cli import main

    doc = _fake_harness(monkeypatch)
    out = tmp_path / "p.json"
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _FullStdout())
    code = main(["--quick", "--device", "cpu", "--out", str(out)])
    assert error_line(code, capsys.readouterr().err) == (
        "Error: standard output: No space left on device; free some space on that disk or "
        f"write elsewhere (the profile is written: {out})")
    assert json.loads(out.read_text())["name"] == doc["name"]


def test_the_harness_names_a_profile_a_c_locale_cannot_print(tmp_path, monkeypatch):
    """``LC_ALL=C python -m tiersim.calibrate --out prüfung.json`` (or ``--model 名前`` with
    ``--config``) wrote the profile, then ended in a UnicodeEncodeError traceback printing its
    name; it is printed as its escape, as every tiersim command prints one."""
    import io
    import sys

    from tiersim.calibrate.cli import main

    _fake_harness(monkeypatch)
    out = tmp_path / "prüfung.json"
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["--quick", "--device", "cpu", "--out", str(out)]) == 0
    stdout.flush()
    assert stdout.buffer.getvalue().decode().splitlines()[-1] == (
        f"wrote {tmp_path}/pr\\xfcfung.json")
    assert out.is_file()


# ------------------------------------------------------------------ report: a read-only folder

def test_report_of_a_read_only_run_folder_gives_the_report_fix(tmp_path, capsys, monkeypatch):
    """``tiersim report DIR`` on a run folder it may not write (a colleague's run, a read-only
    disk) said "DIR: cannot write to this folder (Permission denied); choose another --out
    folder": the report takes no ``--out``. Its lock is refused with the report's own fix."""
    import errno
    import os
    import shutil

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "golden", run, ignore=lambda d, names: [
        n for n in names if n not in ("tiny_summary.json",)])
    (run / "tiny_summary.json").rename(run / "summary.json")
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).startswith(str(run)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    line = error_line(*run_cli(capsys, "report", run))
    assert line == (f"Error: {run}: cannot write to this folder (Permission denied); check the "
                    "folder's permissions, or copy the run elsewhere and report there")
    assert sorted(p.name for p in run.iterdir()) == ["summary.json"]


# ------------------------------------------------------------------ a profile table too large

def test_a_profile_table_of_too_many_points_is_one_line(tmp_path, capsys):
    """Each axis was held to 10,000 points but not a table: a 4,000 x 4,000 attention table
    (31 MiB, well under the 64 MiB a JSON input may be) ran the tiny scenario for 92 s at
    1.4 GB (every point of a table read is fitted and checked against the roofline, in
    Python), against 1.5 s with the shipped profile, whose largest table holds 204 points."""
    doc = json.loads(H200.read_text())
    i, table = next((i, t) for i, t in enumerate(doc["tables"]) if t["op"] == "attn_decode")
    table["axes"] = {"batch": list(range(1, 401)), "context": list(range(1, 301))}
    table["latency_s"] = [[1e-5] * 300 for _ in range(400)]
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(doc))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("profile: null", f"profile: {profile}"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 7: profile: {profile}: tables[{i}].axes: 120,000 "
                    "points (400 x 300); a table holds at most 100,000 (thin it: the step model "
                    "interpolates between points)")
