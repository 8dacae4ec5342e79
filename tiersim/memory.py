"""What memory this process may still take, and the guard that stops a command before its
address space runs out.

NOTE (CPython 3.11): when an allocation fails with the address space at its limit (``ulimit
-v``, ``prlimit --as``), unwinding the MemoryError to a ``with`` or ``finally`` block allocates
the int of the block's instruction offset, and where that fails too the interpreter tries the
same block again, for as long as nothing frees memory: a ``tiersim run`` of a 10^7-request burst
under ``prlimit --as=4000000000`` spun so (in ``tiersim.outputs._lock_file``'s ``with``) for 12
minutes until killed, deaf to SIGTERM, as no Python code runs in that loop. :func:`arm_guard`
therefore stops the command with a MemoryError while :data:`HEADROOM_BYTES` are still free.
"""

from __future__ import annotations

import gc
import os
import signal

try:
    import resource
except ImportError:  # pragma: no cover - Windows: no address-space limit to read
    resource = None

HEADROOM_BYTES = 128 * 2**20
"""Address space the guard keeps free: it stops a command once less than this is left under the
limit. 128 MiB: more than the largest single reservation the C allocator makes as a process
grows (a new 64 MiB heap, mapped as 128 MiB to align it), so the error's unwinding and the
command's cleanup (removing its lock and temporary files) find room; and a small share of the
limits a run is given (3% of 4 GB). A run whose peak comes this close to the limit is stopped
though it might have ended: its next allocations could have met the same spin."""

GUARD_SIGNAL = getattr(signal, "SIGPROF", None)
"""The signal whose handler raises the guard's MemoryError in the main thread, sent by a
timer of the process's CPU time (``ITIMER_PROF``; ``hf_modules.regex_budget`` uses the
user-CPU one, ``ITIMER_VIRTUAL``) a millisecond after the guard's garbage-collector callback
has seen the ceiling passed: a callback cannot raise itself (Python prints what it raises and
goes on), nor signal at once (the handler would then run inside the callback)."""


def memory_room() -> tuple[float, str] | None:
    """The bytes this process may still take and what bounds them: the least of its
    address-space limit (``ulimit -v``, less what it maps now) and the machine's memory (less
    what it holds now); None where neither can be read (no ``/proc``)."""
    now = _proc_status()
    if now is None:
        return None
    found = []
    soft = address_limit()
    if soft is not None and "VmSize" in now:
        found.append((soft - now["VmSize"], "its address-space limit, ulimit -v"))
    total = _meminfo_total()
    if total is not None and "VmRSS" in now:
        found.append((total - now["VmRSS"], "the machine's memory"))
    return min(found) if found else None


def beyond_room(count: float, each: int, unit: str,
                room: tuple[float, str] | None) -> str | None:
    """Where ``count`` of ``unit`` at ``each`` bytes each exceed ``room`` (:func:`memory_room`'s
    answer), the words saying so: ``need at least about X GB at about B bytes a UNIT, more than
    the Y GB this process may still use (what bounds it)``; None where they fit or the room is
    not known. The refusals made before a run is built share it."""
    need = count * each
    if room is None or need <= room[0]:
        return None
    return (f"need at least about {need / 1e9:,.1f} GB at about {each} bytes a {unit}, more "
            f"than the {room[0] / 1e9:,.1f} GB this process may still use ({room[1]})")


def address_limit() -> int | None:
    """This process's address-space limit in bytes (the soft ``RLIMIT_AS``); None where there
    is none or it cannot be read."""
    if resource is None:  # pragma: no cover
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft in (-1, resource.RLIM_INFINITY) else soft


def _proc_status() -> dict[str, int] | None:
    """This process's ``/proc/self/status`` sizes in bytes (VmSize, VmRSS ...); None
    without it."""
    try:
        with open("/proc/self/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return {k: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in lines)
            if v.strip().endswith("kB")}


def _meminfo_total() -> int | None:
    """The machine's memory in bytes (``MemTotal``); None without ``/proc/meminfo``."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _address_space() -> int | None:
    """The bytes this process maps now (``VmSize``, read from ``/proc/self/statm``: the guard
    reads it often); None without ``/proc``."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


class _Guard:
    """The armed guard: the address space it stops at (``ceiling``), the limit it was set
    under, the handler it replaced, whether its MemoryError is on its way (``tripped``: the
    timer set, not yet raised) and whether it was raised with the address space not yet back
    under the ceiling since (``spent``)."""

    ceiling: int | None = None
    limit = 0
    saved = None
    tripped = False
    spent = False


def arm_guard() -> bool:
    """Under an address-space limit, check the address space at every garbage collection of
    the older generations (every few thousand new objects: the growth that fills the last bytes
    one small object at a time) and, once less than :data:`HEADROOM_BYTES` is left, raise a
    MemoryError in the main thread (:func:`_near_limit`). Main thread only; returns whether it
    armed (nothing to do without a limit or ``/proc``, nor where the signal or its timer is
    another's: :func:`_signal_taken`)."""
    limit = address_limit()
    if limit is None or GUARD_SIGNAL is None or _address_space() is None or _signal_taken():
        return False
    _Guard.ceiling, _Guard.limit = limit - HEADROOM_BYTES, limit
    _Guard.tripped = _Guard.spent = False
    _Guard.saved = signal.signal(GUARD_SIGNAL, _near_limit)
    gc.callbacks.append(_check)
    return True


def _signal_taken() -> bool:
    """Whether :data:`GUARD_SIGNAL` has a handler or its CPU-time timer runs already (a
    sampling profiler's, such as vmprof's, in a process that runs tiersim's app): the guard's
    disarming stopped that timer for good (the profiler sampled nothing after the command) and
    its trip replaced the profiler's interval with its own one-shot; a handler installed
    outside Python (``None``) could not be put back at all. The guard then stays off."""
    handler = signal.getsignal(GUARD_SIGNAL)
    running = signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0)
    return running or handler not in (signal.SIG_DFL, signal.SIG_IGN)


def disarm_guard() -> None:
    """Undo :func:`arm_guard` (nothing if it did not arm)."""
    if _Guard.ceiling is None:
        return
    if _check in gc.callbacks:
        gc.callbacks.remove(_check)
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.signal(GUARD_SIGNAL, _Guard.saved)
    _Guard.ceiling, _Guard.saved = None, None


def _check(phase: str, info: dict) -> None:
    """The garbage collector's callback: past the ceiling, have the main thread raise, once
    until the address space is back under the ceiling. A caller that goes on after the
    MemoryError (a sweep in one process records its point as failed and runs the next) frees
    what it held and is guarded again: it was not, so its next point that filled the address
    space met the limit itself (an empty MemoryError, or CPython's spin)."""
    if phase != "start" or info["generation"] == 0 or _Guard.tripped or _Guard.ceiling is None:
        return
    size = _address_space()
    if size is None:
        return
    if _Guard.spent:
        _Guard.spent = size > _Guard.ceiling
    elif size > _Guard.ceiling:
        _Guard.tripped = True
        signal.setitimer(signal.ITIMER_PROF, 0.001)


def _near_limit(signum, frame) -> None:
    """The guard's signal handler: the MemoryError that stops the command; a signal sent
    from outside gets the handler the guard replaced."""
    if not _Guard.tripped:
        saved = _Guard.saved
        if callable(saved):
            saved(signum, frame)
        elif saved != signal.SIG_IGN:  # the default action: end the process as it would have
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        return
    if frame is not None and frame.f_code is _check.__code__:  # not inside the callback
        signal.setitimer(signal.ITIMER_PROF, 0.001)
        return
    _Guard.tripped, _Guard.spent = False, True
    raise MemoryError(f"stopped with {HEADROOM_BYTES // 2**20} MiB left of the "
                      f"{_Guard.limit / 1e9:,.1f} GB address-space limit, ulimit -v")
