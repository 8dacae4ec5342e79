"""How a sweep shows its progress: a bar on a terminal, plain timed lines in a log.

A sweep run under ``nohup``, in CI or with its stderr sent to a file had no progress at all (the
bar draws only on a terminal), so a long sweep looked hung. Off a terminal it now writes one
line at most every :data:`LINE_EVERY_S` seconds while points finish::

    sweep: 12/400 points (3%), 0:01:05 elapsed, about 0:35:03 left

The estimate is the points still to run at the rate of the points this call has finished.
"""

from __future__ import annotations

import time
from datetime import timedelta

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

LINE_EVERY_S = 30.0
"""Least seconds between two progress lines off a terminal."""


def progress_display(console: Console, mode: bool | None, terminal: bool):
    """The sweep's progress display: ``mode`` True, or None on a ``terminal``, the bar; None
    off a terminal, :class:`ProgressLines`; False, a bar that draws nothing."""
    if mode is None and not terminal:
        return ProgressLines(console)
    return Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("points"), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), console=console, disable=not (mode or terminal))


class ProgressLines:
    """Progress as plain lines on ``console``: the part of :class:`rich.progress.Progress`
    a sweep uses (a context manager, one task, ``advance``), timed by ``clock``."""

    def __init__(self, console: Console, every_s: float | None = None, clock=time.monotonic):
        self.console, self.clock = console, clock
        self.every_s = LINE_EVERY_S if every_s is None else every_s
        self.total = self.done = self.start_done = 0
        self.started = self.last = 0.0

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, description: str, total: int, completed: int = 0) -> int:
        """Start counting: ``total`` points, ``completed`` of them done before this call."""
        self.total, self.done, self.start_done = total, completed, completed
        self.started = self.last = self.clock()
        return 0

    def advance(self, task_id: int, advance: int = 1) -> None:
        """One more point done; a line when :attr:`every_s` has passed since the last."""
        self.done += advance
        now = self.clock()
        if now - self.last >= self.every_s and self.done < self.total:
            self.last = now
            self.console.print(self.line(now - self.started))

    def line(self, elapsed_s: float) -> str:
        """The progress line after ``elapsed_s`` seconds of this call."""
        share = self.done / self.total if self.total else 1.0
        text = (f"sweep: {self.done:,}/{self.total:,} points ({share:.0%}), "
                f"{_clock(elapsed_s)} elapsed")
        ran = self.done - self.start_done
        if ran > 0:
            text += f", about {_clock(elapsed_s / ran * (self.total - self.done))} left"
        return text


def _clock(seconds: float) -> str:
    """Seconds as H:MM:SS, as the bar shows them."""
    return str(timedelta(seconds=int(seconds)))
