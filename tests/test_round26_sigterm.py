"""Round 26: a signal (SIGTERM, Ctrl-C) ends a command promptly whatever the size of its run.

A run of a 10^7-row trace removed its ``.lock`` on SIGTERM and then stayed busy for more than
3 minutes: Python's own exit freed every object the stopped simulation still held (its
requests, replicas, events), with a garbage collection over all of them (3 x 10^6 requests in
flight: 5.3 s; 10^6: 1.9 s). The command now ends the process once its cleanup has run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from test_hostile_inputs import _alive, _children
from test_round24_signals import wait_for

TINY = (REPO / "scenarios" / "tiny.yaml").read_text()

PROMPT_S = 15.0
"""Most seconds from the signal to the exit (generous for a loaded 2-core CI machine)."""

SLOW_TEARDOWN = """\
import sys, time

class Held:
    '''Stands for the objects a stopped run leaves: Python's exit frees them, slowly.'''

    def __del__(self, sleep=time.sleep):
        sleep(120)

held = Held()
held.me = held  # a cycle: only the garbage collection of Python's exit frees it
sys.argv = ['tiersim', *sys.argv[1:]]
from tiersim.cli import app
app(prog_name='tiersim')
"""
"""``python -c`` code that runs the command line with an object whose freeing at Python's exit
takes two minutes (as freeing 10^7 requests' objects does)."""


def scenario(tmp_path: Path, rows: int, extra: str = "") -> Path:
    """The tiny scenario over a trace of ``rows`` requests all arriving at one instant."""
    trace = tmp_path / "burst.parquet"
    pd.DataFrame({"request_id": np.arange(rows, dtype=np.int64), "arrival_s": np.zeros(rows),
                  "input_tokens": np.full(rows, 100, dtype=np.int32),
                  "output_tokens": np.full(rows, 2, dtype=np.int32)}).to_parquet(trace)
    path = tmp_path / "s.yaml"
    text = TINY.replace("path: azure2023_code.parquet", f"path: {trace}")
    path.write_text(text.replace("window: [240, 360]", "window: null") + extra)
    return path


def start(*args: str | Path, code: str | None = None) -> subprocess.Popen:
    """``tiersim ARGS`` in a subprocess (``python -c CODE`` running it where code is given)."""
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(REPO))
    head = ["-c", code] if code else ["-m", "tiersim"]
    return subprocess.Popen([sys.executable, *head, *map(str, args)], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen, sig: int) -> tuple[int, str, float]:
    """Send ``sig``; the exit status, stderr and seconds to the exit (killed past 3 x
    :data:`PROMPT_S`, which then fails the caller's bound)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=3 * PROMPT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err, time.monotonic() - sent


def quiet_end(code: int, err: str, took: float, sig: int) -> None:
    """The command ended promptly with the signal's status and at most one line, no
    traceback."""
    assert took < PROMPT_S, f"{took:.1f} s from the signal to the exit"
    assert code == (130 if sig == signal.SIGINT else 128 + sig), err
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_does_not_wait_for_pythons_teardown(tmp_path, sig):
    """The process ended only after Python's exit had freed everything left alive (here one
    object taking 2 minutes; in a 10^7-request run, its requests' objects: minutes)."""
    out = tmp_path / "o"
    proc = start("run", scenario(tmp_path, 1000), "--out", out, "--no-baselines",
                 code=SLOW_TEARDOWN)
    wait_for(lambda: (out / ".lock").exists(), proc, "the lock")
    quiet_end(*stop(proc, sig), sig)
    assert not out.exists()  # the folder it made, with no lock or temporary folder in it


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_in_a_big_burst_ends_the_run_promptly(tmp_path, sig):
    """Mid-simulation of 1,000,000 requests arriving at once (seconds of simulation): the
    status, at most one line, no temporary file, lock or folder left. (300,000 requests ran
    about 3.4 s on a loaded machine and under 3 s in an idle CI run, which then ended before
    the signal: 'the run ended before the signal'.)"""
    out = tmp_path / "o"
    proc = start("run", scenario(tmp_path, 1_000_000), "--out", out, "--no-baselines",
                 "--no-report")
    wait_for(lambda: (out / ".lock").exists(), proc, "the lock")
    time.sleep(3)  # the trace is read; the simulation runs
    assert proc.poll() is None, "the run ended before the signal: make the trace longer"
    quiet_end(*stop(proc, sig), sig)
    assert not out.exists()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_sweep_leaves_no_worker_and_resumes_its_points(tmp_path, sig):
    """A sweep of two workers stopped mid-way: prompt exit, its one line, no worker left
    running; the same command then finishes the grid without rerunning the stored points."""
    path = scenario(tmp_path, 20_000, extra="sweep:\n  seed: [1, 2, 3, 4, 5, 6, 7, 8]\n")
    out, points = tmp_path / "sw", tmp_path / "sw" / "points"
    args = ("sweep", path, "--out", out, "--workers", "2", "--no-baselines", "--no-report")
    proc = start(*args)
    try:
        wait_for(lambda: any(points.glob("*.json")), proc, "a stored point")
        workers = _children(proc.pid)
        stored = {p.name: p.stat().st_mtime_ns for p in points.glob("*.json")}
        code, err, took = stop(proc, sig)
    finally:
        if proc.poll() is None:
            proc.kill()
    quiet_end(code, err, took, sig)
    assert err.startswith("interrupted: ") and len(workers) >= 2, (err, workers)
    time.sleep(1)  # a worker the kernel ends with its parent has had time to go
    assert not [w for w in workers if _alive(w)], "workers left running"
    again = start(*args)
    assert again.wait(timeout=300) == 0, again.stderr.read()
    assert len(list(points.glob("*.json"))) == 8
    assert {n: (points / n).stat().st_mtime_ns for n in stored} == stored
