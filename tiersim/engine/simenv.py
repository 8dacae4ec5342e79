"""A SimPy environment that can schedule an event at an absolute time.

The engine computes iteration end times as one cumulative sum (``start + dt1 + dt2 + ...``) so
that a fast-forwarded stretch and per-iteration stepping land on bit-identical times. SimPy's
``timeout(delay)`` would recompute ``now + (end - now)``, which can differ from ``end`` in the
last bit; :meth:`SimEnv.at` schedules at ``end`` itself.

Tie rule: arrivals are scheduled URGENT and step ends NORMAL, so when a request arrives at the
same instant as an iteration ends, the arrival is processed first and the next ``schedule()``
sees it.
"""

from __future__ import annotations

from heapq import heappush

import simpy
from simpy.events import NORMAL, URGENT, Event

from tiersim.engine.decode_table import DecodeTable
from tiersim.perf.base import StepTimeModel


class SimEnv(simpy.Environment):
    """``simpy.Environment`` plus :meth:`at` (absolute-time events) and the run's decode
    tables (one per step model, shared by the replicas that use it)."""

    def __init__(self, initial_time: float = 0):
        super().__init__(initial_time)
        self._decode_tables: dict[int, DecodeTable] = {}

    def decode_table(self, model: StepTimeModel) -> DecodeTable:
        """The :class:`DecodeTable` of ``model`` for this run."""
        table = self._decode_tables.get(id(model))
        if table is None or table.model is not model:
            table = self._decode_tables[id(model)] = DecodeTable(model)
        return table

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
