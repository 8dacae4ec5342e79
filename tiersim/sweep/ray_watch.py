"""A watchdog that ends a local Ray when the sweep that started it is killed (``kill -9``).

A sweep that starts a local Ray (``tiersim sweep --executor ray`` without ``--address``) shuts
it down on every exit it sees: a normal end, an error, SIGTERM or Ctrl-C. ``kill -9`` (or the
out-of-memory killer) gives it no chance: Ray's own fate-sharing ends most of its processes,
but its dashboard and runtime-env agents were seen running on for about a minute with no
parent, and nothing removed the session folder until the next Ray sweep did.

So the sweep starts this file as a small child process (:func:`start`, ``python -I -S``: no
site packages, no tiersim import, a few milliseconds) before Ray starts. It polls its parent
pid every :data:`POLL_S` seconds; once the sweep is gone it kills (SIGKILL) every process of
the same user that belongs to the Ray session in the sweep's own Ray folder
(``tiersim-ray-PID-XXXXXXXX``, :func:`tiersim.sweep.executors.local_ray_folder`, where Ray
keeps its logs and sockets), known by a variable the sweep puts in the environment Ray starts
from (:func:`marked`) or by its output going there (:func:`_holds`), until none is left, and
removes the folder. Each is pinned (a pidfd) and checked again before the signal, so a pid
that passed to another process meanwhile is not signalled (:func:`_kill`). A Ray the user
runs (``--address``, ``RAY_ADDRESS``) keeps its files elsewhere, and no watchdog is started
for it, so it is never touched. A sweep that ends in any other way stops its watchdog after
Ray's shutdown (:func:`stop`), so it kills nothing.

Linux only (it reads ``/proc``); elsewhere none is started and Ray's own fate-sharing is all.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

POLL_S = 0.25
"""Seconds between the watchdog's looks at its parent."""

SESSION_ENV = "TIERSIM_RAY_SESSION"
"""The environment variable naming a local Ray's folder in each process of that Ray
(:func:`marked`)."""

FOLDER_PREFIX = "tiersim-ray-"
"""How the name of a local Ray's folder starts (:data:`tiersim.sweep.executors.
RAY_FOLDER_PREFIX`, not imported: this file runs without tiersim). A folder named otherwise is
never watched, its processes never killed, nor is it removed: a folder passed wrongly (the
working folder, ``/``) would have had every process writing there killed and been deleted."""

SWEEP_S = 30.0
"""Most seconds the watchdog goes on killing the folder's processes (each look finds fewer:
a process started while the others died is found at the next)."""


def supported() -> bool:
    """Whether the watchdog can see other processes' files here (Linux's ``/proc``)."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")


def start(folder: str) -> subprocess.Popen | None:
    """Start the watchdog of this process's local Ray, whose session lies in ``folder``; None
    where it cannot run (:func:`supported`) or cannot be started (Ray's own fate-sharing is
    then all there is, as before). Its own session: the terminal's Ctrl-C or hang-up reaches
    the sweep, which stops it, not the watchdog itself."""
    if not supported() or not sys.executable or not _named_ours(folder):
        return None  # (an embedded Python may know no executable)
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), folder],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)
    except OSError:
        return None


@contextmanager
def marked(folder: str) -> Iterator[None]:
    """Name ``folder`` in this process's environment (:data:`SESSION_ENV`) while Ray starts in
    it: each process Ray starts inherits it, and the watchdog knows them by it."""
    before = os.environ.get(SESSION_ENV)
    os.environ[SESSION_ENV] = os.path.abspath(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SESSION_ENV, None)
        else:
            os.environ[SESSION_ENV] = before


def stop(watch: subprocess.Popen | None) -> None:
    """End the watchdog of a sweep whose Ray is shut down: it then kills nothing."""
    if watch is None:
        return
    if watch.poll() is None:
        watch.kill()
    with suppress(subprocess.TimeoutExpired):  # pragma: no cover - SIGKILL not acted on
        watch.wait(timeout=5)


def _named_ours(folder: str) -> bool:
    """Whether ``folder`` is named as a local Ray's folder is (:data:`FOLDER_PREFIX`)."""
    return os.path.basename(os.path.abspath(folder)).startswith(FOLDER_PREFIX)


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies in it."""
    return path == folder or path.startswith(folder + os.sep)


def _holds(pid: str, folder: str, real: str) -> bool:
    """Whether process ``pid`` is one of the Ray session's in ``folder``: its environment
    holds :data:`SESSION_ENV` naming the folder (set while the sweep starts Ray: each process
    Ray starts inherits it, its workers and agents through the raylet), its output goes there
    (Ray sends most of its processes' stdout and stderr to log files in it), or it is titled as
    Ray titles its workers and agents (``ray::DashboardAgent``) and holds a file there. A
    reader of those logs (``tail -f``) is left alone; so is another user's process, and one
    gone meanwhile. ``real``: the folder with its links resolved, as a descriptor names it."""
    base = f"/proc/{pid}"
    try:
        if os.stat(base).st_uid != os.getuid():
            return False
        with open(f"{base}/environ", "rb") as handle:
            if os.fsencode(f"{SESSION_ENV}={folder}") in handle.read().split(b"\0"):
                return True
        with open(f"{base}/cmdline", "rb") as handle:
            titled = handle.read().startswith(b"ray::")
        fds = ("1", "2", *os.listdir(f"{base}/fd")) if titled else ("1", "2")
        return any(_inside(_link(f"{base}/fd/{fd}"), real) for fd in fds)
    except OSError:
        return False


def _link(path: str) -> str:
    """Where the link ``path`` points ("" once it is gone)."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


def holders(folder: str) -> list[int]:
    """The pids (not this one) of the Ray session's processes in ``folder`` (:func:`_holds`)."""
    me, folder = str(os.getpid()), os.path.abspath(folder)
    real = os.path.realpath(folder)
    return [int(pid) for pid in os.listdir("/proc")
            if pid.isdigit() and pid != me and _holds(pid, folder, real)]


def end_session(folder: str, budget_s: float = SWEEP_S) -> None:
    """Kill every process of the Ray session in ``folder`` until a look finds none (or
    ``budget_s`` passes), then remove the folder; nothing where the folder is not named as a
    local Ray's (:data:`FOLDER_PREFIX`)."""
    folder = os.path.abspath(folder)
    real = os.path.realpath(folder)
    if not _named_ours(folder):
        return
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        found = holders(folder)
        if not found:
            break
        for pid in found:
            _kill(pid, folder, real)
        time.sleep(0.1)
    shutil.rmtree(folder, ignore_errors=True)


def _kill(pid: int, folder: str, real: str) -> None:
    """SIGKILL ``pid`` if it still is one of the session's (:func:`_holds`). The process is
    pinned first (a pidfd): had it ended since it was found and its pid gone to a new process,
    the check would look at the newcomer, but the signal goes to the pinned one, ended, so
    nobody gets it. Without pidfds (Linux before 5.3) it is killed by pid, as ``kill`` does."""
    try:
        handle = os.pidfd_open(pid)
    except OSError as error:
        if error.errno in (errno.ESRCH, errno.EINVAL):  # gone meanwhile
            return
        handle = None  # no pidfd here (ENOSYS, a seccomp filter's EPERM)
    try:
        if not _holds(str(pid), folder, real):
            return
        with suppress(OSError):  # gone meanwhile
            if handle is None:
                os.kill(pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
    finally:
        if handle is not None:
            os.close(handle)


def watch(parent: int, folder: str) -> None:
    """Wait for ``parent`` (the sweep) to end, then end its Ray (:func:`end_session`). A sweep
    that ends normally stops this first (:func:`stop`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while os.getppid() == parent:
        time.sleep(POLL_S)
    end_session(os.path.abspath(folder))


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2])
