"""Invoking tiersim as an installed user does: folder names the file system allows but UTF-8
does not (a Latin-1 name, or any non-ASCII name under a C locale with Python's UTF-8 mode off),
``--out`` links that name no folder, and the lines a run prints about its files."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY

from tiersim.cli import main

LATIN1 = os.fsdecode(b"caf\xe9")
"""A folder name that is not UTF-8: Python holds it with a surrogate (``caf\\udce9``)."""


def small_trace(folder: Path) -> Path:
    """A canonical 40-request trace in ``folder`` (written through a Python file handle, which
    takes any name the file system does)."""
    count = 40
    df = pd.DataFrame({"arrival_s": [0.5 * i for i in range(count)],
                       "input_tokens": [500] * count, "output_tokens": [40] * count})
    path = folder / "tr.parquet"
    with open(path, "wb") as handle:
        df.to_parquet(handle, index=False)
    return path


def scenario_in(folder: Path) -> Path:
    """The tiny scenario in ``folder``, replaying :func:`small_trace` written beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    small_trace(folder)
    text = TINY.read_text().replace("path: azure2023_code.parquet", "path: tr.parquet", 1)
    path = folder / "s.yaml"
    path.write_text(text.replace("window: [240, 360]", "window: [0, 30]", 1))
    return path


def test_run_report_and_inspect_in_a_folder_named_outside_utf8(tmp_path, capsys):
    folder = tmp_path / LATIN1
    scenario = scenario_in(folder)
    out = folder / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-baselines"]) == 0
    with open(out / "requests.parquet", "rb") as handle:
        assert len(pd.read_parquet(handle)) == 40
    assert main(["report", str(out)]) == 0
    assert main(["trace", "inspect", str(folder / "tr.parquet"), "--json"]) == 0
    assert '"rows": 40,' in capsys.readouterr().out.splitlines()[-1]


def test_sweep_in_a_folder_named_outside_utf8(tmp_path, capsys):
    scenario = scenario_in(tmp_path / LATIN1)
    scenario.write_text(scenario.read_text() + "sweep: {seed: [0, 1]}\n")
    out = tmp_path / LATIN1 / "sweep"
    argv = ["sweep", str(scenario), "--out", str(out), "--workers", "1", "--no-baselines"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0  # the resume reads the stored table back
    assert "(0 run, 2 already done, 0 failed)" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tr.parquet", "tr.csv", "tr.jsonl", "canonical.parquet"])
def test_a_trace_folder_named_outside_utf8_reads_as_any_other(tmp_path, name):
    from tiersim.trace.canonical import write_canonical
    from tiersim.trace.loader import load_trace

    folder = tmp_path / LATIN1
    folder.mkdir()
    with open(small_trace(folder), "rb") as handle:
        df = pd.read_parquet(handle)
    if name == "tr.csv":
        df.to_csv(folder / name, index=False)
    elif name == "tr.jsonl":
        df.to_json(folder / name, orient="records", lines=True)
    elif name == "canonical.parquet":
        write_canonical(df, folder / name)
    assert len(load_trace(str(folder / name))) == 40


@pytest.mark.parametrize("name, shown", [("esc\x1b[31mred", "esc\\x1b[31mred"),
                                         (LATIN1, "caf\\udce9")])
def test_the_wrote_lines_show_a_folder_name_escaped(tmp_path, capsys, monkeypatch, name, shown):
    monkeypatch.chdir(tmp_path)
    scenario = scenario_in(tmp_path / "in")
    assert main(["run", str(scenario), "--out", name, "--no-baselines"]) == 0
    assert capsys.readouterr().out.splitlines()[-2].startswith(f"wrote {shown}/requests.parquet")
    assert main(["report", name]) == 0
    assert capsys.readouterr().out == f"wrote {shown}/report.html\n"
    sweep = ["sweep", str(scenario), "--out", f"{name}-sweep", "--workers", "1", "--no-baselines"]
    assert main(sweep) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-2].endswith(f"-> {shown}-sweep/sweep.parquet")
    assert err[-1] == f"report: {shown}-sweep/report.html"


def test_a_name_byte_that_is_not_utf8_is_written_as_its_escape():
    from tiersim.errors import escaped

    assert escaped(f"{LATIN1}/o\x1b") == "caf\\udce9/o\\x1b"


@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_an_out_link_to_nothing_is_named_as_such_by_every_command(tmp_path, capsys,
                                                                  monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    scenario = scenario_in(tmp_path / "in")
    os.symlink("gone", "link2")
    os.symlink("loop2", "loop1")
    os.symlink("loop1", "loop2")
    extra = ["--no-baselines"] if command != "plan" else []
    assert main([command, str(scenario), "--out", "link2", *extra]) == 1
    assert capsys.readouterr().err == (
        "Error: link2: --out is a symbolic link to gone, which does not exist; create that "
        "folder, remove the link, or use another --out folder\n")
    assert main([command, str(scenario), "--out", "loop1", *extra]) == 1
    assert capsys.readouterr().err == (
        "Error: loop1: --out is a loop of symbolic links (loop1 -> loop2 -> loop1), which names "
        "no folder; remove a link of it, or use another --out folder\n")
    assert sorted(os.listdir(tmp_path)) == ["in", "link2", "loop1", "loop2"]


def test_a_tilde_the_shell_left_in_a_path_is_the_home_folder(tmp_path, capsys, monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    scenario_in(home)
    assert main(["run", "~/s.yaml", "--out=~/res", "--no-baselines"]) == 0
    assert main(["report", "~/res"]) == 0
    assert main(["sweep", "~/s.yaml", "--out=~/sw", "--workers", "1", "--no-baselines"]) == 0
    assert (home / "res" / "report.html").is_file() and (home / "sw" / "sweep.parquet").is_file()
    assert os.listdir(elsewhere) == []
    capsys.readouterr()
    assert main(["run", "~/s.yaml", "--out=~nosuchuser9/res"]) == 1
    assert capsys.readouterr().err == (
        "Error: --out: ~nosuchuser9/res starts with ~ and a user that does not exist (or no home "
        "folder is known); write the path in full; see tiersim run --help\n")


def test_a_working_folder_removed_under_the_shell_is_named(tmp_path):
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, sys; from tiersim.cli import main; os.chdir(sys.argv[1]); "
            "os.rmdir(sys.argv[1]); sys.exit(main(['trace', 'inspect', 'nothere.parquet']))")
    proc = subprocess.run([sys.executable, "-c", code, str(gone)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == ("Error: the current folder no longer exists (it was removed after "
                           "the command's shell entered it); cd to a folder that exists and run "
                           "the command again\n")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_name_the_terminal_cannot_encode_is_printed_as_its_escape(tmp_path, encoding):
    import subprocess
    import sys

    scenario = scenario_in(tmp_path)
    scenario.write_text(scenario.read_text().replace("name: tiny", "name: 名前", 1))
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONUTF8": "0"}
    proc = subprocess.run([sys.executable, "-m", "tiersim", "run", str(scenario),
                           "--no-baselines"], capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(encoding)[-400:]
    assert proc.stdout.decode(encoding).startswith("tiersim run: \\u540d\\u524d")


def test_calibrate_reads_a_tilde_in_its_paths_as_the_home_folder(tmp_path, capsys, monkeypatch):
    from tiersim.calibrate.cli import parser

    monkeypatch.setenv("HOME", str(tmp_path))
    args = parser().parse_args(["--out=~/p.json", "--config", "~/config.json"])
    assert (args.out, args.config) == (f"{tmp_path}/p.json", f"{tmp_path}/config.json")
    assert main(["calibrate", "--from", "aiconfigurator", "--out=~/none/p.json"]) == 1
    assert capsys.readouterr().err == (f"Error: --out {tmp_path}/none/p.json: folder "
                                       f"{tmp_path}/none does not exist; create it first\n")


def test_calibrate_refuses_a_tilde_user_that_does_not_exist_as_run_does(capsys):
    """``os.path.expanduser`` left ``~nosuchuser9/p.json`` as typed, so calibrate later said
    a folder ``~nosuchuser9`` did not exist; it is now refused at once in run's words."""
    assert main(["calibrate", "--from", "aiconfigurator", "--out=~nosuchuser9/p.json"]) == 1
    assert capsys.readouterr().err == (
        "Error: argument --out: ~nosuchuser9/p.json starts with ~ and a user that does not "
        "exist (or no home folder is known); write the path in full; see tiersim calibrate "
        "--from aiconfigurator --help\n")


def test_a_closed_standard_output_is_one_line_not_a_silent_success(tmp_path):
    import subprocess
    import sys

    command = [sys.executable, "-m", "tiersim", "trace", "inspect", "azure2023_code.parquet"]
    proc = subprocess.run(command, capture_output=False, stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(1), timeout=120, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == ("Error: standard output is closed (the command was started with "
                           ">&-), so what it prints would be lost; send it to a file or to "
                           "/dev/null instead\n")


def test_a_path_written_as_dot_slash_tilde_stays_a_local_folder(tmp_path, capsys, monkeypatch):
    """``./~backup`` is no home path in any shell; the option parser had already dropped the
    ``./`` when ``~`` was expanded, so ``--out ./~root`` wrote into root's home and a local
    folder ``./~x`` of no user x was refused."""
    home, elsewhere = tmp_path / "home", tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    scenario = scenario_in(elsewhere)
    assert main(["run", str(scenario), "--out", "./~nosuchuser9", "--no-baselines"]) == 0
    assert main(["report", "./~nosuchuser9"]) == 0
    assert (elsewhere / "~nosuchuser9" / "report.html").is_file()
    assert not home.exists()
