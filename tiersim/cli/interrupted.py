"""What a command stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) says it left in its folder, in
one line (:func:`said_if_interrupted`). A light module: a command imports it before its heavy
modules, so that a stop while they load (seconds: pandas, pyarrow, the simulator) is said too.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tiersim.cli.usage import echo


def stopped_by_signal(stop: BaseException) -> bool:
    """Whether ``stop`` ends a command that a signal interrupted: Ctrl-C's KeyboardInterrupt
    or the SystemExit of SIGTERM or SIGHUP (:func:`tiersim.cli.stops._terminated`), not the
    command's own exit (status 0 or 1)."""
    return isinstance(stop, KeyboardInterrupt) or (
        isinstance(stop, SystemExit) and stop.code not in (None, 0, 1))


@contextlib.contextmanager
def said_if_interrupted(out: Path | None, kind: str):
    """Say on stderr, in one line, what a ``kind`` command (run, plan) interrupted inside the
    block left in ``out``: nothing (its files land together at the end, or not at all:
    :mod:`tiersim.outputs`), or the files it had written or replaced by then (a signal that
    came during the renames waits for the last). Then the interruption goes on (status 130,
    143 or 129). Before, such a command ended without a word."""
    before = _folder_state(out)
    try:
        yield
    except (KeyboardInterrupt, SystemExit) as stop:
        if stopped_by_signal(stop):
            say_interrupted(interrupted_line(out, kind, _changed(before, _folder_state(out))))
        raise


def say_interrupted(line: str) -> None:
    """Write an interrupted command's ``line`` to stderr where it still can: a terminal that
    hung up (SIGHUP) refuses the write, which must not replace the signal's exit status."""
    with contextlib.suppress(OSError, ValueError):  # gone, or closed
        echo(line, err=True)


def interrupted_line(out: Path | None, kind: str, changed: list[str]) -> str:
    """What an interrupted ``kind`` command left in ``out``: the names it ``changed`` there."""
    from tiersim.errors import escaped
    from tiersim.outputs import some_names

    if out is None:
        return f"interrupted: this {kind} wrote no files (no --out was given)"
    if not changed:
        return (f"interrupted: nothing was written to {escaped(out)}; run the same command "
                "again")
    return (f"interrupted after this {kind}'s files were written to {escaped(out)} "
            f"({some_names(changed)})")


def _folder_state(out: Path | None) -> dict[str, tuple[int, int, int]]:
    """The files shown in the folder ``out`` (not its hidden lock and temporary folders), each
    as its inode, modification time and size; none where it is no folder."""
    try:
        entries = list(os.scandir(out)) if out is not None else []
    except OSError:
        return {}
    state = {}
    for entry in entries:
        with contextlib.suppress(OSError):
            if not entry.name.startswith("."):
                info = entry.stat(follow_symlinks=False)
                state[entry.name] = (info.st_ino, info.st_mtime_ns, info.st_size)
    return state


def _changed(before: dict, after: dict) -> list[str]:
    """The names of files added, replaced or removed between two :func:`_folder_state`."""
    return sorted(name for name in before.keys() | after.keys()
                  if before.get(name) != after.get(name))
