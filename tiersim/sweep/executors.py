"""Executors that run sweep points: in-process, a local process pool, or Ray tasks.

Every executor calls ``on_done(record)`` in the driver as each point finishes, in completion
order. Local workers also store their point file themselves (so a point finished in a worker is
on disk even if the driver is killed a moment later); Ray workers may sit on other machines, so
there the driver stores the record.

Local workers exit when the driver dies, however it dies (``kill -9`` included): on Linux the
kernel sends them SIGKILL (``prctl(PR_SET_PDEATHSIG)``), and everywhere a watcher thread in each
worker polls its parent id once a second and exits when the parent is gone. A local Ray the
sweep started is ended by a watchdog process when the sweep is killed
(:mod:`tiersim.sweep.ray_watch`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import multiprocessing.context
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import replace
from typing import Any

from tiersim.errors import TiersimError, shown
from tiersim.sweep import ray_watch
from tiersim.sweep.points import Task, execute

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None

OnDone = Callable[[dict[str, Any]], None]


def run_serial(tasks: Iterable[Task], on_done: OnDone) -> None:
    """Run points one after another in this process."""
    for task in tasks:
        on_done(execute(task))


def _broken_record(task: Task, error: BaseException | str) -> dict[str, Any]:
    """Record of a point whose worker process died, or whose result could not come back,
    before returning: ``error`` is the record's error as it is when given as text."""
    text = error if isinstance(error, str) else (
        f"{type(error).__name__}: worker process died ({error})")
    return {"point_id": task.point.id, "values": task.point.values, "status": "error",
            "summary": None, "wall_s": None, "error": text}


def _context() -> multiprocessing.context.BaseContext:
    """Fork when this process has one thread (workers inherit its imports: no start-up cost);
    spawn otherwise, since forking a process with running threads can deadlock the child."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _noop() -> None:
    """A task that makes the pool start its workers."""


PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 1.0


def _die_with_parent(parent: int, by_kernel: bool) -> None:
    """Worker initializer: end this worker when process ``parent`` ends, and leave Ctrl-C to
    the parent (a worker interrupted inside the pool's queue can leave its lock held, and the
    parent's shutdown would then wait for ever; the parent ends the workers itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's clean-exit handler is not ours
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup's stays
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if by_kernel and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass  # the watcher below still ends the worker
    if os.getppid() != parent:  # the parent died before the line above ran
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="tiersim-parent-watch",
                     daemon=True).start()


def _watch_parent(parent: int) -> None:
    """Poll the parent id; an orphaned worker is re-parented, so exit at once."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


@contextmanager
def local_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """A started process pool of ``workers`` (None for 1: run in-process).

    Call before any progress-bar thread starts: a fork pool launches all its workers at its
    first task, which is submitted here.
    """
    if workers <= 1:
        yield None
        return
    with _started_pool(workers) as pool:
        yield pool


@contextmanager
def _started_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A started process pool of ``workers`` (one included), ended at once on an error or
    Ctrl-C, shut down in order otherwise."""
    # NOTE: PDEATHSIG fires when the *thread* that forked the worker ends, so it is asked for
    # only when the pool is made on the main thread (which lives as long as the process)
    by_kernel = threading.current_thread() is threading.main_thread()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                               initializer=_die_with_parent, initargs=(os.getpid(), by_kernel))
    try:
        pool.submit(_noop).result()
        yield pool
    except BaseException:  # Ctrl-C or an error: in-flight points are lost, stored ones kept
        _end_now(pool)
        raise
    pool.shutdown(wait=True)


def _end_now(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` without waiting for its running points: cancel the queued ones, end the
    workers (each finished point is already stored by its worker, whole or not at all)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():  # pragma: no cover - SIGTERM not acted on in time
            process.kill()
            process.join(timeout=5)


def run_local(tasks: Iterable[Task], pool: ProcessPoolExecutor | None, on_done: OnDone,
              workers: int = 1) -> None:
    """Run points on ``pool`` of ``workers`` (in this process if None); at most 2 x workers in
    flight, which bounds memory and the work a kill can lose. A worker killed from outside
    (the out-of-memory killer, say) breaks the pool: the points then in flight are run again,
    each alone in a fresh one-worker pool (:func:`_retry_alone`), and the others go on in a
    fresh pool of ``workers``; a point whose worker dies again alone is stored failed
    (:data:`WORKER_DIED`)."""
    if pool is None:
        run_serial(tasks, on_done)
        return
    queue = iter(tasks)
    lost = _run_until_broken(pool, queue, on_done, 2 * workers)
    while lost:
        _retry_alone(lost, on_done)
        with _started_pool(workers) as fresh:
            lost = _run_until_broken(fresh, queue, on_done, 2 * workers)


def _run_until_broken(pool: ProcessPoolExecutor, queue: Iterator[Task], on_done: OnDone,
                      limit: int) -> list[Task]:
    """Run ``queue``'s tasks on ``pool``, at most ``limit`` in flight, handing each record to
    ``on_done``, until the queue is done (returns []) or the pool breaks: then no more are
    sent, and the tasks lost with it (in flight, or refused by the broken pool) are
    returned."""
    flight: dict[Future, Task] = {}
    lost: list[Task] = []
    _refill(pool, queue, flight, limit, lost)
    while flight:
        finished, _ = wait(flight, return_when=FIRST_COMPLETED)
        for future in finished:
            task = flight.pop(future)
            try:
                record = future.result()
            except BrokenProcessPool:
                lost.append(task)
                continue
            except Exception as error:  # noqa: BLE001 - a result that cannot come back
                record = _broken_record(task, error)
            on_done(record)  # its own failure (a full disk) is not the worker's: it ends the sweep
        if not lost:
            _refill(pool, queue, flight, limit, lost)
    return lost


def _refill(pool: ProcessPoolExecutor, queue: Iterator[Task], flight: dict, limit: int,
            lost: list[Task]) -> None:
    """Submit tasks until ``limit`` are in flight or none are left; a task the pool refuses
    as broken (a worker killed from outside) goes to ``lost``, and no more are sent."""
    for task in queue:
        try:
            flight[pool.submit(execute, task)] = task
        except BrokenProcessPool:
            lost.append(task)
            return
        if len(flight) >= limit:
            return


WORKER_DIED = ("WorkerDied: its worker process died twice running this point (killed from "
               "outside, most often by the out-of-memory killer); try fewer --workers, or more "
               "free memory")
"""The error of a point whose worker died while it ran, in the pool and again alone."""


def _retry_alone(tasks: list[Task], on_done: OnDone) -> None:
    """Run each of ``tasks`` (in flight when a worker died) again, alone in a fresh
    one-worker pool, so the point that kills its worker is told from those that only shared
    the pool with it; one whose worker dies again is stored failed (:data:`WORKER_DIED`)."""
    for task in tasks:
        with _started_pool(1) as pool:
            try:
                record = pool.submit(execute, task).result()
            except BrokenProcessPool:
                record = _broken_record(task, WORKER_DIED)
            except Exception as error:  # noqa: BLE001 - a result that cannot come back
                record = _broken_record(task, error)
        on_done(record)


def _ray():
    """Import ray, or say how to install it; a Ray that is installed but fails to import (a
    dependency of another version, an environment setting it refuses) is named with what
    failed, in one line (the warnings its import raises are not shown: noise to a sweep)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ray
    except ModuleNotFoundError as error:
        if error.name != "ray":
            raise TiersimError(_unimportable(error)) from None
        raise TiersimError("--executor ray needs Ray: pip install 'tiersim[ray]'") from error
    except Exception as error:  # noqa: BLE001 - whatever Ray's import raised, one line
        raise TiersimError(_unimportable(error)) from None
    return ray


def _unimportable(error: BaseException) -> str:
    """The line for a Ray that is installed and does not import, raising ``error``."""
    text = " ".join(str(error).split())[:200]
    return (f"--executor ray: Ray is installed but does not import ({type(error).__name__}: "
            f"{text}); fix what that names, or reinstall Ray: pip install --force-reinstall "
            "'tiersim[ray]'")


def run_ray(tasks: Iterable[Task], on_done: OnDone, address: str | None = None,
            workers: int | None = None) -> None:
    """Run points as Ray tasks (joining ``address``, or the running/local Ray if None; a local
    Ray this starts runs at most ``workers`` points at once)."""
    with ray_session(address, workers) as ray, sigterm_status_kept():
        _ray_loop(ray, tasks, on_done)


@contextmanager
def sigterm_status_kept() -> Iterator[None]:
    """Keep a SIGTERM's exit status through Ray's waits. The command's SIGTERM handler raises
    ``SystemExit(128 + 15)``; raised inside ``ray.wait`` or ``ray.get``, Ray replaces it with
    ``SystemExit(1)``, so a terminated sweep exited 1 as if it had failed, without the line
    saying which points it stored. A SIGTERM received inside the block ends it with
    ``SystemExit(143)`` whatever Ray made of it. Main thread only, and only where a handler is
    installed (the default action kills the process, with its own status)."""
    previous = signal.getsignal(signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    if not main or not callable(previous):
        yield
        return
    received: list[int] = []

    def record(signum: int, frame: Any) -> None:
        received.append(signum)
        previous(signum, frame)

    signal.signal(signal.SIGTERM, record)
    try:
        yield
    except SystemExit as stop:
        if received and stop.code != 128 + received[0]:
            raise SystemExit(128 + received[0]) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def ray_session(address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """Ray, joined at ``address`` (or a local Ray of ``workers`` CPUs started) on entry, so a
    sweep can fail on a bad address before it writes anything; a Ray this starts is shut down
    on exit, one already running in this process is used and left running. A local Ray keeps
    its session (logs, sockets, spilled objects) in a folder of its own
    (:func:`local_ray_folder`), removed on exit; a watchdog process ends that Ray and removes
    its folder if this process is killed where it cannot (``kill -9``:
    :mod:`tiersim.sweep.ray_watch`), or once it ends where Ray's shutdown was cut short (a
    second Ctrl-C during it)."""
    ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    local = ray_address(address)[0] is None
    with local_ray_folder() if local else nullcontext() as folder:
        watch = ray_watch.start(folder) if local else None  # ends it if we are killed
        running = False  # a Ray of ours that is not shut down
        try:
            with ray_watch.marked(folder) if local else nullcontext():
                _ray_init(ray, address, workers, folder)
            running = True
            try:
                yield ray
            finally:  # SIGTERM or Ctrl-C included: leave no Ray processes of ours behind
                ray.shutdown()
                running = False
        finally:
            if not running:  # else (a second Ctrl-C cut the shutdown short) it ends them
                ray_watch.stop(watch)  # once this process has


RAY_FOLDER_PREFIX = "tiersim-ray-"
"""Name prefix of the folder a local Ray keeps its session in: ``tiersim-ray-PID-XXXXXXXX``,
the pid of the sweep that made it (:func:`remove_stale_ray_folders`)."""


@contextmanager
def local_ray_folder() -> Iterator[str]:
    """A new folder for a local Ray's session files, removed (with all Ray wrote there) on
    exit: Ray's default, ``/tmp/ray/session_*``, outlives the Ray that made it (its logs of
    every worker, about 0.2 MB for a two-point sweep, more for a longer one), one folder per
    sweep, never removed. It lies where Ray would put its own (``RAY_TMPDIR``, else the
    system's temporary folder), a short path: Ray's sockets live in it, and a Unix socket's
    path may not pass 107 bytes. A sweep killed where it cannot remove it (``kill -9``, the OOM
    killer) leaves it: the next one removes it (:func:`remove_stale_ray_folders`)."""
    parent = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    remove_stale_ray_folders(parent)
    try:
        folder = tempfile.mkdtemp(prefix=f"{RAY_FOLDER_PREFIX}new-", dir=parent)
    except OSError as error:  # it blamed the sweep's --out folder ("check that OUT is writable")
        raise TiersimError(f"{_parent_named(parent)}: cannot make the local Ray's folder there "
                           f"({error.strerror or error}); {RAY_TMPDIR_FIX}") from None
    handle = None
    try:
        handle = _hold(folder)
        folder = _named_for_this_sweep(folder)
        _check_socket_room(parent, folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if handle is not None:
            os.close(handle)


RAY_TMPDIR_FIX = "set RAY_TMPDIR to a short folder you may write, e.g. /tmp"
"""How to fix the folder a local Ray keeps its session in (:func:`local_ray_folder`)."""

SOCKET_PATH_BYTES = 103 if sys.platform == "darwin" else 107
"""Longest Unix socket path Ray accepts (``validate_socket_filepath``: 108 bytes on Linux,
104 on macOS, less the terminating zero)."""

RAY_SOCKET_TAIL = "/session_2026-12-05_08-34-15_835755_{pid}/sockets/plasma_store"
"""The longest path a local Ray makes a socket at under its folder, as Ray names it
(``session_DATE_TIME_MICROSECONDS_PID``; ``raylet`` is the other, shorter socket)."""


def _parent_named(parent: str) -> str:
    """The folder a local Ray's folder is made in, named by where it comes from."""
    if os.environ.get("RAY_TMPDIR"):
        return f"RAY_TMPDIR={parent} (in the environment)"
    return f"the temporary folder {parent}"


def _check_socket_room(parent: str, folder: str) -> None:
    """Refuse a folder whose Ray socket paths would pass :data:`SOCKET_PATH_BYTES`: Ray refused
    it once started ("AF_UNIX path length cannot exceed 107 bytes"), which the sweep reported
    as its --out folder not being writable."""
    longest = len(os.fsencode(folder + RAY_SOCKET_TAIL.format(pid=os.getpid())))
    if longest > SOCKET_PATH_BYTES:
        raise TiersimError(f"{_parent_named(parent)}: too long a path for the local Ray's "
                           f"sockets under it ({longest} bytes, over the {SOCKET_PATH_BYTES} a "
                           f"Unix socket's path may have); {RAY_TMPDIR_FIX}")


def _named_for_this_sweep(folder: str) -> str:
    """``folder`` (made as ``tiersim-ray-new-XXXXXXXX``, a name the cleanup passes over, and
    held) renamed ``tiersim-ray-PID-XXXXXXXX``. NOTE (race): made under its final name, a
    cleanup in another pid namespace sharing the folder (where this pid is no live process)
    could remove it between its making and its lock."""
    head, name = os.path.split(folder)
    named = os.path.join(head, f"{RAY_FOLDER_PREFIX}{os.getpid()}-"
                               f"{name.removeprefix(f'{RAY_FOLDER_PREFIX}new-')}")
    os.rename(folder, named)
    return named


def remove_stale_ray_folders(parent: str) -> list[str]:
    """Remove each local Ray folder in ``parent`` whose sweep is gone (the folders removed):
    its name's pid is no live process (:func:`tiersim.outputs.pid_alive`) and no process holds
    an advisory lock on it, as its sweep does (one in another pid namespace sharing it). A folder
    whose sweep is alive stays. One named without a pid (by a tiersim before folders named one,
    or a new one a kill left before its rename: its owner is unknown) goes only once provably
    stale (:func:`_unnamed_stale`)."""
    removed = []
    for name in _entries(parent):
        folder = os.path.join(parent, name)
        if (not name.startswith(RAY_FOLDER_PREFIX) or os.path.islink(folder)
                or not os.path.isdir(folder) or not _stale(name, folder)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _stale(name: str, folder: str) -> bool:
    """Whether the local Ray folder ``folder`` (called ``name``) belongs to no live sweep."""
    from tiersim.outputs import is_pid, pid_alive

    pid, dash, _ = name.removeprefix(RAY_FOLDER_PREFIX).partition("-")
    if dash and is_pid(pid):
        return not pid_alive(int(pid)) and not _held(folder)
    return _unnamed_stale(folder)


UNNAMED_QUIET_S = 3600.0
"""How long nothing in a Ray folder named without its sweep's pid must have changed before it
is taken for stale (a live local Ray rewrites its ``debug_state.txt`` every 10 s)."""

_SESSION = re.compile(r"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_(\d+)")
"""A Ray session folder's name: ``session_<date>_<pid>``, the pid of the process that started
that Ray (a local Ray's: its sweep)."""


def _unnamed_stale(folder: str) -> bool:
    """Whether a Ray folder named without its sweep's pid is provably stale: no process holds
    it, each Ray session in it names a process that is gone (none: Ray never started there),
    and nothing in it changed for :data:`UNNAMED_QUIET_S` (in another pid namespace its sweep's
    pid reads as gone, but its Ray would still be writing)."""
    from tiersim.outputs import pid_alive

    if _held(folder):
        return False
    pids = [int(m.group(1)) for m in map(_SESSION.fullmatch, _entries(folder)) if m]
    if any(pid_alive(pid) for pid in pids):
        return False
    return time.time() - _last_change(folder) > UNNAMED_QUIET_S


def _last_change(folder: str) -> float:
    """The latest modification time of ``folder`` and of anything in it (links not followed);
    now, where a part of it cannot be looked at."""
    latest = 0.0
    try:
        latest = os.lstat(folder).st_mtime
        for top, folders, files in os.walk(folder, onerror=_raise):
            for name in (*folders, *files):
                latest = max(latest, os.lstat(os.path.join(top, name)).st_mtime)
    except OSError:
        return time.time()
    return latest


def _raise(error: OSError) -> None:
    """``os.walk``'s ``onerror``: a folder that cannot be listed is not passed over."""
    raise error


def _entries(parent: str) -> list[str]:
    """The names in ``parent`` (none where it cannot be listed: Ray says what is wrong)."""
    try:
        return os.listdir(parent)
    except OSError:
        return []


def _hold(folder: str) -> int | None:
    """A descriptor of ``folder`` holding an advisory ``flock`` on it while the sweep runs,
    waiting out a :func:`_held` check that holds it a moment (None where it cannot be had: a
    file system without locks, where the pid in the folder's name guards it)."""
    if fcntl is None:  # pragma: no cover - Windows
        return None
    handle = os.open(folder, os.O_RDONLY)
    with suppress(OSError):
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _held(folder: str) -> bool:
    """Whether a process holds an advisory lock on ``folder`` (:func:`_hold`)."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no locks on this file system
    finally:
        os.close(handle)
    return False


PROBE_S = 3.0
"""Seconds a ``--address`` host:port has to accept a connection before the sweep is refused
(Ray itself would retry for minutes, holding the folder's lock)."""


RAY_CLIENT_PORT = 10001
"""The port Ray's client server listens on where a ``ray://`` address names none."""

RAY_ADDRESS_ENV = "RAY_ADDRESS"
"""The environment variable ``ray.init`` reads an address from (``ray job submit`` sets it)."""


def _flag(address: str | None) -> str:
    """``--address`` and its value as an error names them, quoted as other flags' text values
    are (``--gpu 'h999'``): ``--address ':'``, which read ``--address :: names no host``."""
    return f"--address {shown(address, 64)}"


def ray_address(address: str | None) -> tuple[str | None, str, str]:
    """The Ray address a sweep joins, as Ray chooses it: ``address`` (``--address``), else the
    ``RAY_ADDRESS`` environment variable (also in place of ``auto``; ``local`` there is Ray's
    word for none), else None (a local Ray); with what an error names it as and how it says to
    fix it."""
    env = os.environ.get(RAY_ADDRESS_ENV, "")
    if env == "local" and address is None:
        return None, "--address None", ""
    if env and address in (None, "auto"):
        return (env, f"{RAY_ADDRESS_ENV}={shown(env, 64)} (in the environment)",
                "set it to host:port of a running Ray cluster, or unset it to start a local Ray")
    return (address, _flag(address),
            "give host:port of a running Ray cluster, or leave it out")


def _host_port(address: str | None, named: str | None = None,
               fix: str = "give host:port of a running Ray cluster, or leave it out"
               ) -> tuple[str, int] | None:
    """``(host, port)`` of an address written ``[ray://]host:port`` (``ray://host``: Ray
    client's default port); None for anything else (``auto``, ``local``, or malformed: Ray
    says what is wrong with it). A port that is no TCP port (0, above 65535), or a port or
    none after no host (``[]:6379``, ``ray://``, ``:``), is refused at once: Ray retried it for
    minutes, as it does an address where nothing answers, or logged its traceback; so is a host
    with nothing after its colon (``localhost:``), whose error from Ray named an address not
    typed (``full address = 192.0.2.2:``)."""
    text = address or ""
    client = text.startswith("ray://")
    host, sep, port = text.removeprefix("ray://").rpartition(":")
    if sep and host.strip("[]") and not port:  # Ray's error named an address never typed
        raise TiersimError(f"{named or _flag(address)}: names no port after the "
                           f"colon; {fix}")
    if client and not (sep and _whole(port)) and not (sep and not host.strip("[]")):
        # ray://host, ray://[::1]; not ray://: or ray://:x, which name no host (ray://: was
        # probed as host ":" and read "nothing answers there")
        host, sep, port = text.removeprefix("ray://"), ":", str(RAY_CLIENT_PORT)
    host = host.strip("[]")  # [::1]:6379
    if sep and not host:  # Ray retried "[]:6379" for minutes, "ray://" 35 s; ":" and ":x"
        # printed Ray's traceback ("Malformed host") above the line
        raise TiersimError(f"{named or _flag(address)}: names no host before the "
                           f"port; {fix}")
    if not sep or not host or not _whole(port):
        return None
    if not 0 < int(port) < 65536:
        raise TiersimError(f"{named or _flag(address)}: port {port} is no TCP port "
                           f"(1 to 65535); {fix}")
    return host, int(port)


def _whole(port: str) -> bool:
    """Whether ``port`` is a whole number as Ray reads a port (Python's ``int``: decimal digits,
    a sign allowed): ``-1`` and ``+6379`` too, which were passed to Ray unchecked, and Ray
    retried ``localhost:-1`` for minutes. Decimal, not ``isdigit``: a superscript ``²`` is a
    digit ``int`` refuses (a ValueError traceback)."""
    return (port[1:] if port[:1] in ("+", "-") else port).isdecimal()


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What an HTTP/2 client sends first (RFC 9113 section 3.4)."""

HTTP2_SETTINGS = 0x4
"""The frame type an HTTP/2 server sends first (RFC 9113 section 3.4)."""


def probe_address(address: str | None) -> None:
    """Refuse at once an ``--address`` where nothing accepts a connection, or where what
    answers does not speak gRPC. Ray's GCS and its client server (``ray://``) are gRPC
    servers, so they answer HTTP/2's preface with a SETTINGS frame; anything else (a web
    server, a database, a silent listener) would keep ``ray.init`` retrying for minutes. With
    ``RAY_USE_TLS`` on, only the connection is checked. The address is Ray's choice
    (:func:`ray_address`): ``RAY_ADDRESS`` is probed where no ``--address`` is given."""
    address, named, fix = ray_address(address)
    target = _host_port(address, named, fix)
    if target is None:
        return
    try:
        conn = socket.create_connection(target, timeout=PROBE_S)
    except OSError as error:
        why = error.strerror or str(error) or type(error).__name__
        raise TiersimError(f"{named}: nothing answers there ({why}); {fix}") from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        conn.close()  # a TLS cluster answers only after a handshake; Ray judges it
        return
    with conn:
        try:
            conn.sendall(HTTP2_PREFACE)
            head = _read_exactly(conn, 9)
        except OSError:  # a timeout, or a reset
            head = None
    if head is None or head[3] != HTTP2_SETTINGS:
        raise TiersimError(f"{named}: something accepts connections there but does not "
                           f"answer as Ray's gRPC server does within {PROBE_S:g} s; "
                           + fix.replace("Ray cluster", "Ray cluster's head"))


def _read_exactly(conn: socket.socket, size: int) -> bytes | None:
    """``size`` bytes from ``conn``, or None when it closes first."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _ray_init(ray, address: str | None, workers: int | None = None,
              folder: str | None = None) -> None:
    """Join ``address`` (or start a local Ray of ``workers`` CPUs, even where a cluster runs
    on this machine already, its session files in ``folder`` where given), keeping tiersim's
    SIGTERM handler: Ray's own exits with status 15 and skips the cleanup above. Ray's handler
    is in place while Ray starts (seconds, for a local Ray): a SIGTERM it met then is handed to
    tiersim's, so the command ends with 143 as at any other moment (not 15). The address is
    Ray's choice (:func:`ray_address`), named so in an error."""
    probe_address(address)
    address, named, fix = ray_address(address)
    local = {"include_dashboard": False} if address is None else {}
    if address is None and workers:
        local["num_cpus"] = workers  # one point per CPU: --workers caps the points at once
    if address is None and folder is not None:
        local["_temp_dir"] = folder
    handler = signal.getsignal(signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    try:  # "local": a Ray of our own, not one `ray start` left running (which refuses num_cpus)
        ray.init(address=address or "local", ignore_reinit_error=True, log_to_driver=False,
                 logging_level=logging.ERROR, **local)  # Ray's INFO and WARNING lines: noise
    except (ValueError, ConnectionError, RuntimeError) as err:  # malformed, refused, or of
        text = " ".join(str(err).split())[:200]  # other Ray or Python versions (RuntimeError)
        fix = fix.replace(" Ray cluster", " cluster")
        if "version mismatch" in text.lower():
            fix = "run this command with the cluster's Ray and Python versions, " + fix
        raise TiersimError(f"{named}: cannot join the Ray cluster ({text}); {fix}") from None
    except SystemExit as stop:  # Ray's handler, installed for the call, exits with the signal
        if main and callable(handler) and stop.code == signal.SIGTERM:
            handler(signal.SIGTERM, None)  # tiersim's: SystemExit(143)
        raise
    finally:
        if handler is not None and main:
            signal.signal(signal.SIGTERM, handler)


RAY_MIN_IN_FLIGHT = 64
"""Fewest points a Ray sweep keeps submitted at once, whatever CPUs the cluster has now (an
autoscaling cluster grows on the tasks waiting for it)."""


def ray_in_flight(ray) -> int:
    """How many points a Ray sweep keeps submitted at once: 2 per CPU the cluster has when the
    sweep starts (each CPU's next point is queued as it runs one), at least
    :data:`RAY_MIN_IN_FLIGHT`."""
    cpus = float(ray.cluster_resources().get("CPU", 0) or 0)
    return max(2 * int(cpus), RAY_MIN_IN_FLIGHT)


def _ray_loop(ray, tasks: Iterable[Task], on_done: OnDone) -> None:
    """Run the points as Ray tasks, at most :func:`ray_in_flight` submitted at once (each task
    is made and submitted as one finishes: a 100,000-point grid submitted whole held every
    point's scenario, ref and result at once), handing each record to ``on_done`` as it
    finishes."""
    remote = ray.remote(execute)
    limit = ray_in_flight(ray)
    queue = iter(tasks)
    flight: dict[Any, Task] = {}
    try:  # a worker reads relative paths from here, as a local worker does
        folder: str | None = os.getcwd()
    except OSError:  # this folder was removed: a worker reads them from its own
        folder = None

    def refill() -> None:
        for task in queue:
            flight[remote.remote(replace(task, out_dir=None, folder=folder))] = task
            if len(flight) >= limit:
                return

    refill()
    while flight:
        done, _ = ray.wait(list(flight), num_returns=1)
        for ref in done:
            task = flight.pop(ref)
            try:
                record = ray.get(ref)
            except Exception as error:  # noqa: BLE001 - a lost worker fails its point only
                record = _broken_record(task, error)
            on_done(record)  # its own failure (a full disk) is not the worker's: it ends the sweep
        refill()
