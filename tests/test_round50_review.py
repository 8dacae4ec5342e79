"""Round 50 review: checks of this round's changes that its own tests left out.

- :mod:`tiersim.sweep.ray_watch` kills by pidfd: a process found as the session's is pinned and
  checked again before the signal, so a pid that went to another process meanwhile is never
  signalled; without pidfds it falls back to ``kill``. A Ray folder whose path has spaces, a
  newline or non-ASCII letters is matched as any other.
- ``run_sweep(..., table=False)`` (what ``tiersim sweep`` now calls) had no test: it returns
  None, writes the table the default call writes, resumes, and a failed sweep's
  ``SweepFailed.frame`` is the status columns.
- A YAML boolean where no number goes (``step_tiers: true``) was told "a number is expected
  here"; a paid tier whose requests all dropped was told to be routed to; the reference
  scheduler's checks now compare ``queue_s``.
"""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest
from test_round24_signals import wait_for
from test_round50_raykill import LINUX, _sleeper

from tiersim.sweep import ray_watch


def _sleeping(*args, **kwargs):
    """:func:`test_round50_raykill._sleeper`, once it runs its own program: before its exec its
    /proc entries are this process's copy (no session variable, no log open), and a look then
    finds it no holder."""
    proc = _sleeper(*args, **kwargs)
    wait_for(lambda: b"time.sleep(120)" in _cmdline(proc.pid), proc, "its program started")
    return proc


def _cmdline(pid: int) -> bytes:
    """``pid``'s command line (empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _stop(procs) -> None:
    """Kill and reap each of ``procs`` still running."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@LINUX
def test_a_pid_no_longer_the_session_s_is_not_signalled(tmp_path):
    """:func:`ray_watch._kill` checks the pinned process again: one that holds nothing of the
    folder (as a newcomer given a dead Ray process's pid would) is left running; one of the
    session's is killed."""
    folder = tmp_path / "tiersim-ray-1-abc"
    folder.mkdir()
    stranger, ours = _sleeping("python"), _sleeping("python", session=folder)
    try:
        real = os.path.realpath(folder)
        ray_watch._kill(stranger.pid, str(folder), real)
        ray_watch._kill(ours.pid, str(folder), real)
        assert ours.wait(timeout=10) == -signal.SIGKILL
        assert stranger.poll() is None
    finally:
        _stop([stranger, ours])


@LINUX
def test_without_pidfds_the_session_s_processes_are_killed_by_pid(tmp_path, monkeypatch):
    """A kernel without ``pidfd_open`` (ENOSYS): the watchdog kills by pid, as before."""
    def no_pidfd(pid):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    folder = tmp_path / "tiersim-ray-1-abc"
    folder.mkdir()
    ours = _sleeping("python", session=folder)
    try:
        ray_watch.end_session(str(folder), budget_s=10)
        assert ours.wait(timeout=10) == -signal.SIGKILL and not folder.exists()
    finally:
        _stop([ours])


@LINUX
def test_a_ray_folder_with_odd_characters_is_matched_as_any(tmp_path):
    """Spaces, a newline and non-ASCII letters in the folder's path (RAY_TMPDIR's): the
    session's processes are found by their environment and their output, a neighbour whose
    name only starts like it is not, and the folder is removed."""
    parent = tmp_path / "ray tmp\nnaïve"
    folder = parent / "tiersim-ray-1-abc"
    (folder / "logs").mkdir(parents=True)
    log = folder / "logs" / "worker.out"
    log.write_text("")
    twin = parent / "tiersim-ray-1-abcd"  # a prefix of its name is not the folder
    twin.mkdir()
    ours = [_sleeping("python", stdout=log), _sleeping("python", session=folder)]
    others = [_sleeping("python", stdout=twin / "x.out"), _sleeping("python", session=twin)]
    try:
        wait_for(lambda: all(ray_watch._link(f"/proc/{p.pid}/fd/1") for p in ours + others),
                 ours[0], "their output open")
        assert sorted(ray_watch.holders(str(folder))) == sorted(p.pid for p in ours)
        ray_watch.end_session(str(folder), budget_s=10)
        assert [p.wait(timeout=10) for p in ours] == [-signal.SIGKILL] * 2
        assert [p.poll() for p in others] == [None, None]
        assert not folder.exists() and twin.exists()
    finally:
        _stop(ours + others)


@LINUX
@pytest.mark.parametrize("vanish", ["environ", "fd"])
def test_a_process_gone_midway_is_passed_over(tmp_path, monkeypatch, vanish):
    """A /proc entry that vanishes while it is read (the process ended between the listing of
    /proc and the look at its environment or its descriptors) is no holder, and no error
    reaches the watchdog. The process is titled as Ray titles its agents, so that its
    descriptors are listed."""
    real_open, real_listdir = open, os.listdir
    agent = _sleeping("ray::DashboardAgent")

    def gone(path, *args, **kwargs):
        if str(path) == f"/proc/{agent.pid}/{vanish}":
            raise FileNotFoundError(errno.ENOENT, "gone", path)
        return (real_open if vanish == "environ" else real_listdir)(path, *args, **kwargs)

    try:
        wait_for(lambda: Path(f"/proc/{agent.pid}/cmdline").read_bytes().startswith(b"ray::"),
                 agent, "its title")
        monkeypatch.setattr("builtins.open" if vanish == "environ" else "os.listdir", gone)
        assert ray_watch._holds(str(agent.pid), str(tmp_path), str(tmp_path)) is False
        assert ray_watch.holders(str(tmp_path)) == []
    finally:
        monkeypatch.undo()
        _stop([agent])


def test_a_sweep_asked_for_no_table_writes_the_same_table_and_resumes(tmp_path):
    """``run_sweep(..., table=False)``, as ``tiersim sweep`` calls it, returns None and writes
    the table the default call writes (each point's ``wall_s`` aside: the two sweeps ran
    apart); a resume of the finished sweep rewrites its bytes unchanged, and the default call
    returns that table whole, as its docstring says (read from the file once it is written)."""
    import pandas as pd
    from test_sweep_run import make_scenario, sweep

    path = make_scenario(tmp_path)
    quiet, whole = tmp_path / "quiet" / "sweep.parquet", tmp_path / "whole" / "sweep.parquet"
    assert sweep(path, quiet.parent, table=False) is None
    frame = sweep(path, whole.parent)
    pd.testing.assert_frame_equal(frame, pd.read_parquet(whole))
    assert len(frame) == 24 and "accuracy" in frame
    pd.testing.assert_frame_equal(pd.read_parquet(quiet).drop(columns="wall_s"),
                                  frame.drop(columns="wall_s"))
    written = quiet.read_bytes()
    assert sweep(path, quiet.parent, table=False) is None  # every point done: a resume
    assert quiet.read_bytes() == written
    pd.testing.assert_frame_equal(sweep(path, quiet.parent), pd.read_parquet(quiet))
    assert quiet.read_bytes() == written


def test_a_failed_sweep_asked_for_no_table_names_its_failures(tmp_path):
    """With ``table=False`` a sweep whose points failed raises the same line, its ``frame``
    the table's ``point_id``, ``status`` and ``error`` columns (as SweepFailed says); not
    strict, it returns None."""
    import yaml
    from test_sweep_run import make_scenario, sweep

    from tiersim.sweep.run import SweepFailed

    path = make_scenario(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["synthetic"]["fail_if"] = {"router.confusion.fpr": 0.1}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SweepFailed) as whole:
        sweep(path, tmp_path / "a")
    with pytest.raises(SweepFailed) as quiet:
        sweep(path, tmp_path / "b", table=False)
    assert str(quiet.value) == str(whole.value).replace(str(tmp_path / "a"), str(tmp_path / "b"))
    status = quiet.value.frame
    assert status.columns.tolist() == ["point_id", "status", "error"]
    assert status.equals(whole.value.frame[["point_id", "status", "error"]])
    assert (status["status"] != "ok").sum() == 4
    assert sweep(path, tmp_path / "b", table=False, strict=False) is None


class _ShutdownCutShort:
    """Enough of ``ray`` for :func:`executors.ray_session`, whose shutdown a second Ctrl-C
    interrupts."""

    def is_initialized(self):
        return False

    def init(self, **kw):
        pass

    def shutdown(self):
        raise KeyboardInterrupt


@LINUX
def test_a_shutdown_cut_short_leaves_the_watchdog_to_end_the_ray(monkeypatch):
    """A second Ctrl-C during Ray's shutdown: the watchdog is left running (it ends what is
    left of that Ray once the sweep's process ends), where it was stopped, so nothing ended
    the processes the shutdown had not. A shutdown that returns stops it (tested in
    test_round50_raykill)."""
    from tiersim.sweep import executors

    started = []
    real = ray_watch.start
    monkeypatch.setattr(ray_watch, "start", lambda folder: started.append(real(folder))
                        or started[-1])
    monkeypatch.setattr(executors, "_ray", _ShutdownCutShort)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        with pytest.raises(KeyboardInterrupt), executors.ray_session(None, 1):
            pass
        assert len(started) == 1 and started[0].poll() is None
    finally:
        for watch in started:
            ray_watch.stop(watch)


def test_no_watchdog_where_python_names_no_executable(monkeypatch):
    """An embedded Python whose ``sys.executable`` is empty or None starts no watchdog (None,
    Ray's own fate-sharing then all), where Popen raised TypeError of None past the sweep."""
    import sys

    for nothing in ("", None):
        monkeypatch.setattr(sys, "executable", nothing)
        assert ray_watch.start("/nonexistent-tiersim-ray-folder") is None


@LINUX
def test_the_watchdog_goes_by_its_own_parent_not_a_pid_alive(tmp_path):
    """The watchdog waits on its own parent (``getppid``), not on the sweep's pid being alive:
    a sweep killed whose pid the kernel hands to a new process is still seen gone. Here it is
    told a live pid that is not its parent (as a reused pid would be): it ends the session at
    once and exits."""
    import subprocess
    import sys

    folder = tmp_path / "tiersim-ray-1-abc"
    folder.mkdir()
    ours = _sleeping("python", session=folder)
    try:
        watch = subprocess.Popen([sys.executable, "-I", "-S", ray_watch.__file__,
                                  str(os.getppid()), str(folder)])
        assert watch.wait(timeout=30) == 0
        assert ours.wait(timeout=10) == -signal.SIGKILL and not folder.exists()
    finally:
        _stop([ours])


def test_a_tier_whose_requests_all_dropped_gets_no_idle_note():
    """``_note_idle_tiers`` says a paid tier "ran no request" and to route to it; a tier that
    was routed requests and dropped every one ran no pass either, but routing to it is no
    fix (its drops are told apart). Only the tier no request reached gets the note."""
    import warnings
    from types import SimpleNamespace

    from tiersim.runner import _note_idle_tiers

    def tier(name, passes, requests):
        return SimpleNamespace(name=name, passes=passes, requests=requests, cost_usd=1.0,
                               replicas=1, gpus_per_replica=1)

    run = SimpleNamespace(cost_model="provisioned", cost_usd=3.0,
                          tiers=[tier("busy", 5, 5), tier("dropped", 0, 4), tier("idle", 0, 0)])
    scenario = SimpleNamespace(router=SimpleNamespace(policy="static_split"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_idle_tiers(run, scenario, "s.yaml")
    assert [str(w.message).split(" ran no")[0] for w in caught] == ["s.yaml: tier idle"]


STEPS = "step_tiers: {planning: bf16, recovery: bf16, final: bf16, tool_call: fp8}"


@pytest.mark.parametrize(("name", "old", "new", "said"), [
    ("agentic", STEPS, "step_tiers: true",
     "line 45: router.step_tiers: must be a mapping of keys (got true)"),
    ("agentic", STEPS, "step_tiers: {planning: [true]}",
     "line 45: router.step_tiers.planning: input should be a valid integer (got [true])"),
    ("tiny", "window: [240, 360]", "window: true",
     "line 11: trace.window: must be a list (got true)"),
])
def test_a_yaml_boolean_where_no_number_goes_is_told_what_goes(tmp_path, capsys, monkeypatch,
                                                               name, old, new, said):
    """A YAML boolean where a map or a list goes (``step_tiers: true``, ``window: true``), or
    in a list where a tier's name goes (``planning: [true]``), was told "a number is expected
    here, not a YAML boolean (true/false)": no number goes there. The field's own check says
    what does."""
    from test_hostile_inputs import one_error_line, run_cli
    from test_round50_fuzz16 import SCENARIOS

    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / f"{name}.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    got = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert got == f"Error: s.yaml: {said}"


@pytest.mark.parametrize(("sweep", "said"), [
    ("{router.policy: .nan}", "sweep: 'router.policy': values must be a non-empty list (got .nan)"),
    ("{seed: 1e999}", "sweep: 'seed': values must be a non-empty list (got 1e999)"),
    ("{zip: [{seed: -.inf}]}", "sweep: 'seed': values must be a non-empty list (got -.inf)"),
    ("{seed: [1, 1e999]}", "sweep.seed[1]: must be a finite number (got 1e999, beyond a float)"),
    ("{.nan: [1]}", "sweep: key .nan is not a dotted path (YAML reads it as a number); name a "
     "field, such as tiers.bf16.replicas"),
    ("{1e999: [1]}", "sweep: key 1e999 is not a dotted path (YAML reads it as a number); name "
     "a field, such as tiers.bf16.replicas"),
])
def test_a_nan_in_a_sweep_s_structure_is_told_what_goes_there(tmp_path, capsys, monkeypatch,
                                                              sweep, said):
    """``sweep: {seed: .nan}`` (an axis' values not a list) read "sweep.seed: must be a finite
    number", and ``router.policy`` so too, though a list goes there; an axis' value in a list
    is still held to be finite. A key YAML reads as NaN or infinity was named ``NaN`` or
    ``Infinity`` (JSON's words), not as the file writes it."""
    from test_hostile_inputs import one_error_line, run_cli
    from test_round50_fuzz16 import SCENARIOS

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text()
                                     + f"sweep: {sweep}\n")
    got = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--no-report"))
    assert got == f"Error: s.yaml: line 30: {said}"
    assert not (tmp_path / "o").exists()


def test_disagg_of_a_tier_that_ran_nothing_is_one_line(tmp_path, capsys, monkeypatch):
    """``tiersim disagg --tier w4a16`` where the router sends w4a16 nothing: the run's note
    that a paid tier ran no request (round 50) came above the refusal, which says the same,
    so the error was two lines (tests/test_round11.py failed on main). The tier being split
    is not noted; the refusal is the one line."""
    from test_hostile_inputs import one_error_line, run_cli
    from test_round50_fuzz16 import SCENARIOS

    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text().replace(
        "fractions: [0.5, 0.5]", "fractions: [0.0, 1.0]").replace(
        "precision: w4a16\n    replicas: 1\n    cost_per_gpu_hour: 3.50",
        "precision: w4a16\n    replicas: 2\n    cost_per_gpu_hour: 2.50")  # cheaper per request
    # than bf16 (at one price, round 53's price puts W4A16 the dearer: a tier-order note)
    (tmp_path / "s.yaml").write_text(text)
    code, err = run_cli(capsys, "disagg", "s.yaml", "--tier", "w4a16")
    line = one_error_line(code, err)
    assert line.startswith("Error: s.yaml: tier 'w4a16' serves no request of this trace")
    assert "ran no request" not in err


@LINUX
def test_the_watchdog_touches_no_folder_not_named_as_a_local_ray_s(tmp_path):
    """A folder not named ``tiersim-ray-*`` (one passed wrongly: the working folder, ``/``)
    gets no watchdog, and :func:`ray_watch.end_session` there kills nothing and removes
    nothing: every process whose output went to it would have been killed, and it deleted.
    The prefix is the one local Ray folders are named with."""
    from tiersim.sweep import executors

    assert ray_watch.FOLDER_PREFIX == executors.RAY_FOLDER_PREFIX
    folder = tmp_path / "work"
    folder.mkdir()
    writer = _sleeping("python", stdout=folder / "out.log", session=folder)
    try:
        assert ray_watch.start(str(folder)) is None and ray_watch.start("") is None
        ray_watch.end_session(str(folder), budget_s=2)
        assert writer.poll() is None and (folder / "out.log").exists()
    finally:
        _stop([writer])
