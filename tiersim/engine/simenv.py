"""A SimPy environment that can schedule an event at an absolute time, and let a replica step
itself through iterations that no other event precedes.

The engine computes iteration end times as one cumulative sum (``start + dt1 + dt2 + ...``) so
that a fast-forwarded stretch and per-iteration stepping land on bit-identical times. SimPy's
``timeout(delay)`` would recompute ``now + (end - now)``, which can differ from ``end`` in the
last bit; :meth:`SimEnv.at` schedules at ``end`` itself.

Tie rule: arrivals are scheduled URGENT and step ends NORMAL, so when a request arrives at the
same instant as an iteration ends, the arrival is processed first and the next ``schedule()``
sees it.

A replica whose next iteration ends strictly before every other pending event needs no event of
its own for it: nothing else can happen in between, so it moves the clock there (:meth:`advance`)
and carries on in the same callback, exactly as if its end event had been the next one popped
(see :mod:`tiersim.engine.replica`). Events that would do nothing (a cut stretch's old end: its
callbacks cleared) are dropped from the head of the queue when the next time is asked for; the
clock they would have moved is kept in :attr:`end_time`.
"""

from __future__ import annotations

from heapq import heappop, heappush
from math import inf

import simpy
from simpy.events import NORMAL, URGENT, Event

from tiersim.engine.decode_table import DecodeTable, DirectTimes
from tiersim.perf.base import StepTimeModel


class SimEnv(simpy.Environment):
    """``simpy.Environment`` plus :meth:`at` (absolute-time events) and the run's decode
    tables (one per step model, shared by the replicas that use it)."""

    def __init__(self, initial_time: float = 0, fast_paths: bool = True):
        super().__init__(initial_time)
        self.fast_paths = fast_paths  # False: one event per plan, stretches evaluated directly
        self._decode_tables: dict[int, DecodeTable | DirectTimes] = {}
        self._dropped_until = float(initial_time)  # latest time of a dropped no-op event

    def decode_table(self, model: StepTimeModel) -> DecodeTable | DirectTimes:
        """The :class:`DecodeTable` of ``model`` for this run (without fast paths, the direct
        evaluation it is tested against)."""
        table = self._decode_tables.get(id(model))
        if table is None or table.model is not model:
            kind = DecodeTable if self.fast_paths else DirectTimes
            table = self._decode_tables[id(model)] = kind(model)
        return table

    def drop_decode_tables(self) -> None:
        """Empty the run's decode tables once its result is taken.

        NOTE (memory): a run's fleet, replicas and environment refer to each other, so they
        are freed only by the cyclic garbage collector, which may wait several runs; a table
        holds up to 32 MiB of blocks (:data:`~tiersim.engine.decode_table.MAX_BLOCKS`), and a
        planner's or the baselines' sizing runs, one after another, kept many alive at once.
        """
        for table in self._decode_tables.values():
            if isinstance(table, DecodeTable):
                table.clear()
        self._decode_tables.clear()

    def at(self, time: float, urgent: bool = False) -> Event:
        """An event that fires at absolute ``time`` (URGENT priority for arrivals)."""
        if time < self._now:
            raise ValueError(f"time {time} is before now ({self._now})")
        event = Event(self)
        event._ok = True
        event._value = None
        # NOTE: pushes onto SimPy's queue directly (as Environment.schedule does) so the event
        # time is exactly `time`, not `now + (time - now)`.
        heappush(self._queue, (time, URGENT if urgent else NORMAL, next(self._eid), event))
        return event

    def call_at(self, time: float, callback, urgent: bool = False) -> Event:
        """:meth:`at` with ``callback(event)`` attached; returns the event."""
        event = self.at(time, urgent)
        event.callbacks.append(callback)
        return event

    def next_time(self) -> float:
        """Time of the next pending event that does something (``inf`` when none).

        Events at the head of the queue that would do nothing when processed (succeeded, no
        callbacks left) are dropped here; processing them would only have moved the clock.
        """
        if not self.fast_paths:
            return -inf  # every plan gets its event
        queue = self._queue
        while queue:
            time, _, _, event = queue[0]
            if event.callbacks or not event._ok:
                return time
            heappop(queue)
            if time > self._dropped_until:
                self._dropped_until = time
        return inf

    def advance(self, time: float) -> bool:
        """Move the clock to ``time`` if no pending event comes at or before it (True), else
        leave it (False: the caller schedules an event at ``time`` instead).

        NOTE (speed): sets SimPy's clock directly (as ``step`` does when it pops an event), so a
        replica's iterations that nothing else can precede cost no event (module docstring).
        """
        if time < self._now:
            raise ValueError(f"time {time} is before now ({self._now})")
        queue = self._queue
        if queue and queue[0][0] <= time and self.next_time() <= time:
            return False
        if not self.fast_paths:
            return False
        self._now = time
        return True

    @property
    def end_time(self) -> float:
        """The clock at the end of a run, counting the no-op events dropped from the queue."""
        return max(self._now, self._dropped_until)
