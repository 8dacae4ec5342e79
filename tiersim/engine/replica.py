"""One replica: a :class:`ReplicaScheduler` stepped by a thin SimPy process.

The process loop is ``plan = sched.schedule(); wait for its end; sched.complete(plan)``. A
decode-only plan may cover k iterations (fast-forward); if a request arrives during it and could
join the batch, the process is interrupted, keeps the iterations that end at or after the arrival
up to the one in flight, and re-plans from there: exactly what per-iteration stepping would do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

from tiersim.engine.request import Req
from tiersim.engine.scheduler import ReplicaScheduler, StepPlan
from tiersim.engine.simenv import SimEnv
from tiersim.perf.base import StepTimeModel


class Replica:
    """A continuous-batching server: scheduler + step-time model + SimPy process."""

    def __init__(
        self,
        env: SimEnv,
        sched: ReplicaScheduler,
        model: StepTimeModel,
        on_finish: Callable[[Req, Replica], None],
        index: int = 0,
        max_k: int = 4096,
        sample_every: float = 1.0,
    ):
        self.env, self.sched, self.model = env, sched, model
        self.on_finish, self.index, self.max_k = on_finish, index, max_k
        self.busy_s = 0.0
        self.sample_every = sample_every
        self.samples: list[tuple[float, int, int, int]] = []  # (t, running, waiting, kv blocks)
        self._next_sample = 0.0
        self._sleep: simpy.Event | None = None
        self._ends: np.ndarray | None = None  # end times of the decode stretch in flight
        self._k = 0
        self._n_dec = 0
        self.proc = env.process(self._run())

    def submit(self, req: Req) -> bool:
        """Hand a request to this replica now; False if it can never fit (dropped)."""
        sched = self.sched
        could_join = not sched.waiting and len(sched.running) < sched.limits.max_num_seqs
        if not sched.add(req):
            return False
        if self._sleep is not None:
            wake, self._sleep = self._sleep, None
            wake.succeed()
        elif self._ends is not None and could_join:
            in_flight = int(np.searchsorted(self._ends[: self._k], self.env.now, side="left"))
            if in_flight + 1 < self._k:
                self._k = in_flight + 1
                self.proc.interrupt()
        return True

    def outstanding(self) -> int:
        """Token computations still to do here, as of now (least-outstanding balancer)."""
        pending = self.sched.outstanding
        if self._ends is not None:
            done = int(np.searchsorted(self._ends[: self._k], self.env.now, side="left"))
            pending -= self._n_dec * done
        return pending

    def _run(self):
        env, sched = self.env, self.sched
        while True:
            if sched.idle():
                self._sleep = env.event()
                yield self._sleep
                continue
            now = env.now
            if now >= self._next_sample:
                self._sample(now)
            plan = sched.schedule(now, self.max_k)
            if plan.empty:
                continue
            if plan.decode_only:
                k, t_end = yield from self._decode_stretch(plan, now)
            else:
                k, t_end = 1, now + self.model.step_time(plan.shape())
                yield env.at(t_end)
            self.busy_s += t_end - now
            for req in sched.complete(plan, k, t_end, t_end - now):
                self.on_finish(req, self)

    def _decode_stretch(self, plan: StepPlan, now: float):
        ctx = plan.dec_ctx + plan.n_dec * np.arange(plan.k, dtype=np.int64)
        dts = self.model.decode_times(plan.n_dec, ctx)
        ends = np.cumsum(np.concatenate(([now], dts)))[1:]
        self._ends, self._k, self._n_dec = ends, plan.k, plan.n_dec
        try:
            yield self.env.at(float(ends[-1]))
        except simpy.Interrupt:
            yield self.env.at(float(ends[self._k - 1]))
        k = self._k
        self._ends = None
        return k, float(ends[k - 1])

    def _sample(self, now: float) -> None:
        s = self.sched
        self.samples.append((now, len(s.running), len(s.waiting), s.used_blocks()))
        self._next_sample = now + self.sample_every
