"""Round 50: a Ray sweep killed with SIGKILL leaves no process of its local Ray running.

SIGTERM and Ctrl-C shut the local Ray down (tests/test_ray_sigterm.py,
tests/test_round26_sigterm.py); ``kill -9`` gives the sweep no chance. Ray's own fate-sharing
then ended most of its processes, but its ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent``
ran on with no parent for about a minute (seen 2026-12-07 on Ray 2.60), and the session folder
stayed until the next Ray sweep. A watchdog process (:mod:`tiersim.sweep.ray_watch`) now ends
them and removes the folder; a Ray the user runs (``--address``) gets no watchdog.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_hostile_inputs import _alive
from test_round24_signals import wait_for

from tiersim.sweep import executors, ray_watch

ROOT = Path(__file__).resolve().parents[1]
LINUX = pytest.mark.skipif(not ray_watch.supported(), reason="the watchdog reads Linux /proc")

GONE_S = 15.0
"""Most seconds from the kill until no process of the sweep's Ray is left (the watchdog looks
every 0.25 s; without it the agents ran on for about 60 s)."""


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children of each of its threads, and theirs)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(children - found)
            found |= children
    return found


def _sleeper(title: str, stdout: Path | None = None, held: Path | None = None,
             session: Path | None = None) -> subprocess.Popen:
    """A process whose command line starts with ``title`` (as Ray titles its workers and
    agents), whose stdout is ``stdout`` (else nothing), which holds ``held`` open at another
    descriptor (named in its command line, as ``tail -f FILE`` names it) and whose environment
    names ``session`` as a local Ray's processes name theirs."""
    code = "import sys, time; h = open(sys.argv[1]) if sys.argv[1] else None; time.sleep(120)"
    env = dict(os.environ)
    if session is not None:
        env[ray_watch.SESSION_ENV] = str(session)
    out = open(stdout, "w") if stdout else subprocess.DEVNULL  # noqa: SIM115 - closed below
    try:
        return subprocess.Popen([title, "-c", code, str(held or "")], executable=sys.executable,
                                stdout=out, stderr=subprocess.DEVNULL, env=env)
    finally:
        if stdout:
            out.close()


@LINUX
def test_the_watchdog_kills_the_session_s_processes_and_no_other(tmp_path):
    """What :func:`ray_watch.holders` takes for the session's: a process whose output goes to
    its folder, whose environment names it, or that is titled as Ray titles its agents (their
    output is a pipe) and holds a file there; not a process reading a log there (``tail -f``,
    its command line naming the log), nor one of another session."""
    folder = tmp_path / "tiersim-ray-1-abc"
    (folder / "logs").mkdir(parents=True)
    log = folder / "logs" / "worker.out"
    log.write_text("")
    ours = [_sleeper("python", stdout=log), _sleeper("python", session=folder),
            _sleeper("ray::DashboardAgent", held=log)]
    others = [_sleeper("tail", held=log), _sleeper("python", session=tmp_path / "other")]
    procs = ours + others
    try:
        wait_for(lambda: all(ray_watch._link(f"/proc/{p.pid}/fd/3") == str(log)
                             for p in (ours[2], others[0])), ours[0], "the log opened")
        wait_for(lambda: all(b"time.sleep(120)" in Path(f"/proc/{p.pid}/cmdline").read_bytes()
                             for p in procs), ours[0], "each running its own program")  # an
        # environment read before its exec is this process's: no session variable in it
        assert sorted(ray_watch.holders(str(folder))) == sorted(p.pid for p in ours)
        ray_watch.end_session(str(folder), budget_s=10)
        assert [p.wait(timeout=10) for p in ours] == [-signal.SIGKILL] * 3
        assert [p.poll() for p in others] == [None, None] and not folder.exists()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class RecordingRay:
    """Enough of ``ray`` for :func:`executors.ray_session`, started nowhere."""

    def is_initialized(self):
        return False

    def init(self, **kw):
        self.kw = kw

    def shutdown(self):
        pass


@LINUX
def test_a_watchdog_watches_a_local_ray_only(monkeypatch):
    """A local Ray gets a watchdog, stopped once Ray is shut down; a cluster joined at an
    address (the user's) gets none, so nothing of it is ever killed."""
    started: list[subprocess.Popen | None] = []
    real = ray_watch.start
    monkeypatch.setattr(ray_watch, "start", lambda folder: started.append(real(folder))
                        or started[-1])
    monkeypatch.setattr(executors, "_ray", RecordingRay)
    monkeypatch.setattr(executors, "probe_address", lambda address: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with executors.ray_session("127.0.0.1:6379"):
        pass
    assert started == []
    with executors.ray_session(None, 1):
        assert len(started) == 1 and started[0].poll() is None
    assert started[0].poll() is not None  # stopped, having killed nothing


@LINUX
def test_a_ray_sweep_killed_with_sigkill_leaves_no_ray_process(tmp_path):
    """``tiersim sweep --executor ray`` killed with SIGKILL mid-sweep: within
    :data:`GONE_S` every process it started (its local Ray's, the watchdog) has ended and its
    Ray folder is gone. (About 20-40 s on a loaded 2-core machine: Ray's start is most of it.)"""
    pytest.importorskip("ray")
    text = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text.replace("[240, 360]", "[240, 270]")
                        + "\nsweep:\n  seed: [" + ", ".join(map(str, range(200))) + "]\n")
    ray_tmp = tempfile.mkdtemp(prefix="t50r", dir="/tmp")  # short: Ray's socket paths
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_TMPDIR=ray_tmp)
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, "-m", "tiersim", "sweep", str(scenario), "--out",
                             str(out), "--executor", "ray", "--workers", "1", "--no-baselines",
                             "--no-report"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    started: set[int] = set()
    try:
        wait_for(lambda: any((out / "points").glob("*.json")), proc, "a stored point", 240)
        started = _descendants(proc.pid)
        folders = list(Path(ray_tmp).glob(f"tiersim-ray-{proc.pid}-*"))
        assert len(folders) == 1 and len(started) >= 4, (folders, started)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + GONE_S
        while any(map(_alive, started)) or folders[0].exists():
            assert time.monotonic() < deadline, (
                f"left {GONE_S} s after the kill: "
                f"{[Path(f'/proc/{p}/cmdline').read_bytes()[:60] for p in started if _alive(p)]}"
                f"{' and the Ray folder' if folders[0].exists() else ''}")
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in started:  # a failed check leaves none of ours running
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(ray_tmp, ignore_errors=True)
