"""vLLM v1's free KV block queue under prefix caching, as far as preemption needs it.

With prefix caching on, vLLM v1 frees a preempted request's blocks into the free queue with their
hashes kept. Until an allocation evicts them, the request, re-admitted, finds its full blocks
cached and recomputes only the rest (``KVCacheManager.get_computed_blocks``; at most its known
tokens less one, in whole blocks). The queue is first in, first out: an allocation takes the
blocks freed longest ago, and a request's blocks are freed last block first, so its tail is
evicted before its head.

:class:`FreePool` keeps that queue as runs of blocks: anonymous runs (never used, freed by a
finished request, or a preempted request's partial and state blocks) and one run per parked
(preempted, not yet re-admitted) request holding its full token blocks. Only the parked runs
are looked up; every other reuse of cached blocks (shared prompt prefixes) is the prefix
cache's (:mod:`tiersim.engine.prefix_cache`), which keeps its own budget.
"""

from __future__ import annotations

from collections import deque

from tiersim.engine.request import Req


class FreePool:
    """The free blocks of one replica in the order vLLM evicts them, with the parked runs."""

    def __init__(self, free: int):
        self._runs: deque[list] = deque([[None, free]] if free else [])  # [owner, blocks]
        self._parked: dict[Req, list] = {}

    def total(self) -> int:
        """Free blocks held (equals the scheduler's free count)."""
        return sum(run[1] for run in self._runs)

    def parked(self, req: Req) -> int:
        """Full token blocks of ``req`` still cached since it was preempted (0 if none)."""
        run = self._parked.get(req)
        return run[1] if run is not None else 0

    def parked_after(self, req: Req, taken: int) -> int:
        """:meth:`parked` once ``taken`` more blocks have left the pool."""
        run = self._parked.get(req)
        if run is None:
            return 0
        for other in self._runs:
            if other is run:
                return max(0, run[1] - taken)
            taken -= other[1]
            if taken <= 0:
                return run[1]
        return run[1]

    def take(self, n: int) -> None:
        """``n`` blocks leave the pool, the ones freed longest ago first (a parked run loses
        its tail blocks; an emptied one is dropped)."""
        runs = self._runs
        while n > 0:
            run = runs[0]
            m = min(n, run[1])
            run[1] -= m
            n -= m
            if not run[1]:
                runs.popleft()
                if run[0] is not None:
                    del self._parked[run[0]]

    def give(self, n: int, req: Req | None = None, full: int = 0) -> None:
        """``n`` blocks return to the pool; with ``req``, its first ``full`` (its full token
        blocks) are parked, queued after the others (vLLM frees a request's blocks last
        first)."""
        rest = n - full
        if rest > 0:
            last = self._runs[-1] if self._runs else None
            if last is not None and last[0] is None:
                last[1] += rest
            else:
                self._runs.append([None, rest])
        if full > 0:
            run = [req, full]
            self._runs.append(run)
            self._parked[req] = run

    def claim(self, req: Req, used: int) -> None:
        """``req`` is re-admitted reusing the first ``used`` of its parked blocks: they leave
        the pool; the rest of its run stays, no longer its own."""
        run = self._parked.pop(req, None)
        if run is not None:
            run[1] -= used
            run[0] = None
