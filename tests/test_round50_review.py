"""Round 50 review: checks of this round's changes that its own tests left out.

- :mod:`tiersim.sweep.ray_watch` kills by pidfd: a process found as the session's is pinned and
  checked again before the signal, so a pid that went to another process meanwhile is never
  signalled; without pidfds it falls back to ``kill``. A Ray folder whose path has spaces, a
  newline or non-ASCII letters is matched as any other.
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
    stranger, ours = _sleeper("python"), _sleeper("python", session=folder)
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
    ours = _sleeper("python", session=folder)
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
    ours = [_sleeper("python", stdout=log), _sleeper("python", session=folder)]
    others = [_sleeper("python", stdout=twin / "x.out"), _sleeper("python", session=twin)]
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
    agent = _sleeper("ray::DashboardAgent")

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
