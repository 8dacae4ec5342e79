"""Round 24: what a user sees and what stays on disk when a command is interrupted (SIGINT,
SIGTERM, SIGHUP, a closed pipe) or two commands race for one folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

TINY = (REPO / "scenarios" / "tiny.yaml").read_text()


def tiny(tmp_path: Path, window: str = "[240, 300]") -> Path:
    """The tiny scenario over ``window`` of its trace, written under ``tmp_path``."""
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.replace("[240, 360]", window))
    return path


def start(*args: str, cwd: Path | None = None, **popen) -> subprocess.Popen:
    """``python -m tiersim ARGS`` started in a subprocess (stdout and stderr piped)."""
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(REPO))
    popen.setdefault("stdout", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "tiersim", *map(str, args)], env=env,
                            cwd=cwd or REPO, stderr=subprocess.PIPE, text=True, **popen)


def wait_for(condition, proc: subprocess.Popen, what: str, limit_s: float = 120) -> None:
    """Poll ``condition`` until true; fail if ``proc`` ends first or the limit passes."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert proc.poll() is None, f"ended before {what}: {proc.stderr.read()[-500:]}"
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.02)


def finish(proc: subprocess.Popen, limit_s: float = 120) -> tuple[int, str]:
    """The exit status and stderr of ``proc`` (killed when it outlives ``limit_s``)."""
    try:
        _, err = proc.communicate(timeout=limit_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def test_a_run_whose_terminal_hangs_up_cleans_up_as_a_sigterm_does(tmp_path):
    """SIGHUP (the terminal or ssh session closed) killed a run on the spot: its ``.lock``
    and temporary folder stayed in --out until the next command. It now ends as SIGTERM
    does: cleanup runs, status 128 + 1, no traceback."""
    out = tmp_path / "o"
    proc = start("run", tiny(tmp_path), "--out", out, "--no-baselines")
    wait_for(lambda: (out / ".lock").exists(), proc, "the lock")
    proc.send_signal(signal.SIGHUP)
    code, err = finish(proc)
    assert code == 128 + signal.SIGHUP, err
    assert "Traceback" not in err
    assert not out.exists()  # the folder it made, with no lock or temporary folder in it


def test_a_run_started_under_nohup_ignores_the_hangup(tmp_path):
    """A run whose SIGHUP is ignored (``nohup tiersim run ...``) keeps ignoring it."""
    out = tmp_path / "o"
    proc = start("run", tiny(tmp_path), "--out", out, "--no-baselines", "--no-report",
                 preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_for(lambda: (out / ".lock").exists(), proc, "the lock")
    proc.send_signal(signal.SIGHUP)
    code, err = finish(proc)
    assert code == 0, err
    assert (out / "summary.json").exists()


def test_ctrl_c_while_the_command_line_loads_is_status_130_without_a_traceback():
    """Ctrl-C in the first tenth of a second (``import typer`` inside ``tiersim.cli``) printed
    a KeyboardInterrupt traceback of the imports."""
    code = ("import builtins, runpy, sys\n"
            "real = builtins.__import__\n"
            "def interrupted(name, *args, **kwargs):\n"
            "    if name == 'typer':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = interrupted\n"
            "sys.argv = ['tiersim', '--help']\n"
            "runpy.run_module('tiersim', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert (done.returncode, done.stderr) == (130, "")


def test_ctrl_c_before_the_command_starts_is_status_130_without_a_traceback(monkeypatch,
                                                                           capsys):
    """Ctrl-C while the command's module is imported to check its options (before typer's
    own Ctrl-C handling, which covers the command itself) ended in a traceback."""
    import importlib

    cli_app = importlib.import_module("tiersim.cli.app")

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "_refuse_repeated_options", interrupted)
    assert cli_app.main(["run", "--help"]) == 130
    assert capsys.readouterr().err == ""


def test_calibrate_whose_terminal_hangs_up_stops_as_on_sigterm(tmp_path):
    """SIGHUP (an ssh session to the GPU machine closed) killed ``python -m tiersim.calibrate``
    on the spot: no partial profile, no line. It now stops the harness as SIGTERM does."""
    out = tmp_path / "p.json"
    code = ("import os, signal, sys, time\n"
            "from tiersim.calibrate import cli\n"
            "def measure(args, stopped):\n"
            "    os.kill(os.getpid(), signal.SIGHUP)\n"
            "    time.sleep(30)\n"
            "    return 0\n"
            "cli._measure = measure\n"
            f"sys.exit(cli.main(['--device', 'cpu', '--quick', '--out', {str(out)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"Error: interrupted by SIGHUP before anything was measured; {out} not written")


SWEEP = "sweep:\n  seed: [1, 2, 3, 4, 5, 6, 7, 8]\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_pressed_again_while_a_sweep_winds_down_is_ignored(tmp_path, sig):
    """Ctrl-C pressed again while a sweep stopped its workers printed 'Exception ignored in
    ... weakref_cb' or '... threading._shutdown' KeyboardInterrupt tracebacks and exited -2;
    a second SIGTERM killed it outright. The first signal ends the command; later ones wait."""
    path = tiny(tmp_path, "[240, 270]")
    path.write_text(path.read_text() + SWEEP)
    out = tmp_path / "sw"
    proc = start("sweep", path, "--out", out, "--workers", "2", "--no-baselines",
                 stdout=subprocess.DEVNULL)
    wait_for(lambda: any((out / "points").glob("*.json")), proc, "a stored point")
    for _ in range(60):  # across the whole shutdown
        if proc.poll() is not None:
            break
        proc.send_signal(sig)
        time.sleep(0.01)
    code, err = finish(proc)
    assert code == 128 + sig, err
    assert len(err.splitlines()) == 1 and err.startswith("interrupted: "), err


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A finished run of the tiny scenario's first minute."""
    from tiersim.cli.app import main

    folder = tmp_path_factory.mktemp("run")
    assert main(["run", str(tiny(folder)), "--out", str(folder / "o"), "--no-baselines"]) == 0
    return folder / "o"


def test_a_report_of_a_folder_another_command_writes_says_to_report_again(run_folder,
                                                                          capsys):
    """``tiersim report`` of a folder a run is writing was told to 'use another --out', an
    option report does not take."""
    import fcntl

    from tiersim.cli.app import main

    with open(run_folder / ".lock", "w") as held:  # another command's lock, its pid alive
        held.write(str(os.getpid()))
        held.flush()
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        capsys.readouterr()
        assert main(["report", str(run_folder)]) == 1
    assert capsys.readouterr().err == (
        f"Error: {run_folder}: another tiersim command is writing to this folder (pid "
        f"{os.getpid()}); wait for it to finish, then report again (this report did "
        "nothing)\n")
