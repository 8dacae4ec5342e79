"""One replica's load over time, as exact time-weighted means per interval of a fixed grid.

The replica tells :meth:`LoadSeries.record` its state (requests running, requests waiting, KV
blocks in use) at every instant it changes: when a step starts (after the scheduler admitted,
preempted and allocated), when a request is queued, when held blocks are freed and when the
replica goes idle. The running set changes only at a step's start (a request finishing at the
step's end leaves it at the next step's start, the same instant), so the state recorded holds
exactly until the next record. Nothing is sampled: the series integrates that step function
over each grid interval ``[k * every, (k + 1) * every)``.

A row ``(t, running, waiting, kv_blocks, waiting_max)`` holds from ``t`` (a grid point) until
the replica's next row: the means over the interval starting at ``t``, and the most requests
waiting at any time in it (a state that lasts no time, such as a request queued and admitted
at the same instant, is not counted). A row equal to the previous one is not written (the
value holds), so an idle spell or a long step is one row, and the series is 0 before its first
row. Integrated over any whole grid intervals the rows give the exact integral of the state:
Little's law holds against the requests' own times (docs/metrics.md).

NOTE (speed): :meth:`record` runs at every step start, idle spell and arrival at a busy
replica; the common case (the same interval as the last record) is a few additions, with no
further call and no allocation. Runs whose series nobody reads keep none
(``simulate(series=False)``: a planner's sizing runs, a sweep's points, any run no
``timeseries.parquet`` is written from).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from math import floor

import numpy as np


class SeriesRows(Sequence):
    """A load series' rows ``(t, running, waiting, kv_blocks, waiting_max)``, stored as five
    arrays (40 bytes a row) and read as tuples (the means as floats, the peak as an int).

    NOTE (memory): a burst (every arrival at t = 0) puts the grid at its 1 ms floor, so a step
    of tens of ms writes a row or two: held as tuples of Python numbers, about 150 bytes a row,
    the rows were most of a burst's memory beyond its packed queue (20,000 requests: 14,621
    rows)."""

    __slots__ = ("_columns",)

    def __init__(self):
        self._columns = (array("d"), array("d"), array("d"), array("d"), array("q"))

    def append(self, t: float, running: float, waiting: float, kv: float, peak: int) -> None:
        """Add a row at the end."""
        times, run, wait, blocks, peaks = self._columns
        times.append(t)
        run.append(running)
        wait.append(waiting)
        blocks.append(kv)
        peaks.append(peak)

    def appenders(self) -> tuple:
        """The five columns' ``append`` methods, in row order (for a writer that adds rows
        without a call of :meth:`append` each)."""
        return tuple(column.append for column in self._columns)

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return tuple(column[index] for column in self._columns)

    def __iter__(self) -> Iterator[tuple[float, float, float, float, int]]:
        return zip(*self._columns, strict=True)

    def __eq__(self, other) -> bool:
        if isinstance(other, SeriesRows):
            return self._columns == other._columns
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"SeriesRows({list(self)!r})"

    def columns(self) -> tuple[np.ndarray, ...]:
        """The rows' times, running, waiting and KV means (float64) and peaks (int64), as
        numpy arrays over the stored ones (no copy)."""
        return tuple(np.frombuffer(column, dtype=np.float64 if column.typecode == "d"
                                   else np.int64) for column in self._columns)



class LoadSeries:
    """Exact time-weighted means of one replica's running, waiting and KV blocks per interval of
    ``every`` seconds (see the module docstring); ``rows`` holds the intervals closed so far."""

    __slots__ = ("every", "rows", "_last", "_t", "_run", "_wait", "_kv", "_k", "_start", "_end",
                 "_a_run", "_a_wait", "_a_kv", "_max", "_append")  # NOTE (speed): slots

    def __init__(self, every: float):
        self.every = every
        self.rows = SeriesRows()
        self._append = self.rows.appenders()
        self._last = (0.0, 0.0, 0.0, 0)  # the row in force: 0 before the first
        self._t = 0.0  # when the state below was recorded
        self._run, self._wait, self._kv = 0, 0, 0
        self._k, self._start, self._end = 0, 0.0, every  # the interval in progress
        self._a_run = self._a_wait = self._a_kv = 0.0  # its integrals from _start to _t
        self._max = 0  # the most waiting for a positive time in it, up to _t

    def record(self, now: float, running: int, waiting: int, kv: int) -> None:
        """The replica's state from ``now`` on (``now`` never before the last record)."""
        if now >= self._end:
            self._close(now)
        dt = now - self._t
        wait = self._wait
        self._a_run += self._run * dt
        self._a_wait += wait * dt
        self._a_kv += self._kv * dt
        if wait > self._max and dt > 0.0:
            self._max = wait
        self._t = now
        self._run = running
        self._wait = waiting
        self._kv = kv

    def finish(self) -> SeriesRows:
        """Close the interval in progress (the last state holds to its end, and after it) and
        return the rows."""
        self._close(self._end)
        self._write(self._start, self._run, self._wait, self._kv, self._wait)
        return self.rows

    def _close(self, now: float) -> None:
        """Close the interval in progress and every whole one before ``now`` (the state held
        over them), and start the one holding ``now``.

        NOTE (speed): at the replica cap nearly every record closes an interval (the grid is a
        500th of the arrival span) and most close an idle spell's whole intervals too: both
        rows are written here into the columns' own ``append`` methods
        (:meth:`SeriesRows.appenders`), not through :meth:`_write`; the same rows, skipped on
        the same test.
        """
        every, run, wait, kv = self.every, self._run, self._wait, self._kv
        start, end = self._start, self._end
        dt = end - self._t
        peak = self._max
        if dt > 0.0 and wait > peak:  # max(self._max, wait) where the state lasted
            peak = wait
        width = end - start  # as the rows' times give it (not every, rounded)
        values = ((self._a_run + run * dt) / width, (self._a_wait + wait * dt) / width,
                  (self._a_kv + kv * dt) / width, peak)
        last = self._last
        add_t, add_run, add_wait, add_kv, add_peak = self._append
        if values != last:  # a row equal to the one in force is not written
            add_t(start)
            add_run(values[0])
            add_wait(values[1])
            add_kv(values[2])
            add_peak(peak)
            last = values
        k = floor(now / every)
        if (k + 1) * every <= now:  # rounding: now is past that interval's end
            k += 1
        if k > self._k + 1:  # whole intervals in between: the state held over them
            values = (run, wait, kv, wait)
            if values != last:
                add_t(end)
                add_run(run)
                add_wait(wait)
                add_kv(kv)
                add_peak(wait)
                last = values
        self._last = last
        self._k, self._start, self._end = k, k * every, (k + 1) * every
        self._t = self._start
        self._a_run = self._a_wait = self._a_kv = 0.0
        self._max = 0

    def _write(self, t: float, run: float, wait: float, kv: float, peak: int) -> None:
        """A row from ``t`` on, unless it repeats the row in force."""
        values = (run, wait, kv, peak)
        if values != self._last:
            self.rows.append(t, *values)
            self._last = values
