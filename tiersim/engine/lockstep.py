"""Data-parallel ranks stepped in lockstep, as vLLM steps the DP ranks of a MoE model.

With data parallelism and MoE layers, vLLM runs every DP rank's forward pass together: the
experts' all-to-all (or all-gather / reduce-scatter) joins all ranks in every layer, so a rank
with nothing to do runs a dummy batch whenever any other rank is busy, and every rank's step
lasts as long as the slowest rank's (batches padded to the largest one across ranks).

:class:`LockstepGroup` drives ``n`` :class:`LockstepRank` replicas (each its own scheduler and KV
cache, as before) with one clock: a group step starts every rank's plan at the same instant and
ends all of them at ``max`` over ranks of each rank's step time; an idle rank pays
:meth:`LockstepGroup.dummy_s` (a one-token decode step), counted in its busy time and charged
to the requests of the busy ranks (:func:`charged_seconds`).

Fast-forward stays exact: when every busy rank plans a decode-only stretch, the group runs
``min`` of their lengths, iteration ``j`` lasting ``max`` over ranks of rank ``r``'s ``j``-th
decode time; any prefill chunk makes the group step one iteration. A request that reaches any
rank and could join its batch cuts the stretch after the iteration in flight, for every rank --
what stepping each iteration as its own event would do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

from tiersim.engine.kv_levels import step_seconds
from tiersim.engine.replica import Replica
from tiersim.engine.request import Req
from tiersim.engine.scheduler import ReplicaScheduler, StepPlan
from tiersim.engine.simenv import SimEnv
from tiersim.perf.base import StepTimeModel


class LockstepRank(Replica):
    """One DP rank of a :class:`LockstepGroup`: its own scheduler and KV cache; the group
    decides when its steps start and end."""

    group: LockstepGroup

    def go_lazy(self) -> None:
        """A rank stays event-driven: its group decides when its steps start and end."""

    def submit(self, req: Req | None, idx: int = 0, prompt: int = 0, output: int = 0,
               arrival: float = 0.0) -> bool:
        """Hand a request to this rank now; False if it can never fit (dropped). ``req``
        None: a fresh one given by its fields (:meth:`Replica.submit`)."""
        sched = self.sched
        could_join = not sched.waiting and len(sched.running) < sched.limits.max_num_seqs
        if not (sched.add(req) if req is not None else
                sched.add_new(idx, prompt, output, arrival)):
            return False
        self._record(self.env.now)
        self.group.wake(could_join)
        return True


class LockstepGroup:
    """``ranks`` stepped together: every step starts and ends at the same instant on all."""

    def __init__(self, env: SimEnv, ranks: list[LockstepRank], model: StepTimeModel,
                 max_k: int):
        self.env, self.ranks, self.model, self.max_k = env, ranks, model, max_k
        for rank in ranks:
            rank.group = self
        self.dummy_s = float(model.decode_times(1, np.array([1.0]))[0])
        self._active = False
        self._pending: simpy.Event | None = None
        self._plans: list[StepPlan | None] = []
        self._start = 0.0
        self._ends: np.ndarray | None = None
        self._k = 0

    def wake(self, could_join: bool) -> None:
        """A request reached a rank: start stepping, or cut a decode stretch in flight."""
        now = self.env.now
        if not self._active:
            self._active = True  # wake at this instant, after other arrivals at the same time
            self._arm(now)
        elif self._ends is not None and could_join:
            in_flight = int(np.searchsorted(self._ends[: self._k], now, side="left"))
            if in_flight + 1 < self._k:
                self._set_k(in_flight + 1)
                self._arm(float(self._ends[in_flight]))

    def _set_k(self, k: int) -> None:
        self._k = k
        for rank in self.ranks:
            if rank._ends is not None:
                rank._k = k

    def _arm(self, t: float) -> None:
        self._pending = self.env.call_at(t, self._on_event)

    def _on_event(self, event: simpy.Event) -> None:
        if event is not self._pending:
            return  # superseded by a cut
        if self._plans:
            self._finish_step()
        self._start_step()

    def _finish_step(self) -> None:
        now, k, plans = self.env.now, self._k, self._plans
        dt = now - self._start
        self._plans, self._ends = [], None
        for rank, plan, charged in zip(self.ranks, plans, charged_seconds(dt, plans)):
            rank.busy_s += dt  # a rank without work ran the dummy batch
            rank._plan, rank._ends = None, None
            if plan is None:
                continue
            for req in rank.sched.complete(plan, k if plan.decode_only else 1, now, charged):
                rank.on_finish(req, rank)

    def _start_step(self) -> None:
        now = self.env.now
        plans = [self._plan_rank(rank, now) for rank in self.ranks]
        if all(p is None for p in plans):
            for rank in self.ranks:
                rank._record(now)  # the idle state
                rank.idle_at = now
            self._active, self._pending = False, None
            return
        self._plans, self._start = plans, now
        busy = [p for p in plans if p is not None]
        if all(p.decode_only for p in busy):
            k = min(p.k for p in busy)
            times = [self._decode_times(p, k) for p in plans]
            self._ends = now + np.cumsum(np.max(times, axis=0))
            self._k = k
            for rank, plan in zip(self.ranks, plans):
                rank._plan = plan
                rank._ends, rank._k = (self._ends, k) if plan is not None else (None, 0)
            self._arm(float(self._ends[-1]))
            return
        self._k = 1
        for rank, plan in zip(self.ranks, plans):
            rank._plan = plan
        self._arm(now + max(self._step_s(rank, p) for rank, p in zip(self.ranks, plans)))

    def _plan_rank(self, rank: LockstepRank, now: float) -> StepPlan | None:
        """The rank's next plan (None: nothing to run; it will run the dummy batch)."""
        sched = rank.sched
        while not sched.idle():
            plan = sched.schedule(now, self.max_k)
            if not plan.empty:
                rank._record(now)  # after admission: the batch this step runs
                return plan
        rank._record(now)  # idle: it runs the dummy batch
        return None

    def _decode_times(self, plan: StepPlan | None, k: int) -> np.ndarray:
        """The first ``k`` iteration times of a decode stretch (the dummy batch when None)."""
        if plan is None:
            return np.full(k, self.dummy_s)
        n, c0 = plan.n_dec, plan.dec_ctx
        ctx = np.arange(c0, c0 + n * k, n, dtype=np.float64)
        return np.asarray(self.model.decode_times(n, ctx), dtype=np.float64)

    def _step_s(self, rank: LockstepRank, plan: StepPlan | None) -> float:
        """One iteration of ``plan`` on ``rank``, as :class:`Replica` times it."""
        if plan is None:
            return self.dummy_s
        if plan.decode_only:
            return float(self._decode_times(plan, 1)[0])
        compute = self.model.step_time(plan.shape())
        return step_seconds(compute, plan.transfer_s, rank.sched.limits.kv_overlap)


def charged_seconds(dt: float, plans: list[StepPlan | None]) -> list[float]:
    """Engine-replica seconds each rank's requests pay for a group step of ``dt`` seconds:
    a busy rank's own ``dt`` plus a share of the idle ranks' dummy batches (``dt`` each), in
    proportion to the tokens the rank computes in the step, since those batches ran only for
    the busy ranks' requests; 0 for an idle rank. The shares sum to every rank's busy time,
    so the requests' attributed costs sum to the tier's (docs/metrics.md)."""
    tokens = [0 if p is None else p.n_dec + sum(c for _, c in p.chunks) for p in plans]
    idle = dt * sum(p is None for p in plans)
    total = sum(tokens)
    return [dt + idle * t / total if p is not None else 0.0
            for p, t in zip(plans, tokens)]


def lockstep_replicas(
    env: SimEnv,
    scheds: list[ReplicaScheduler],
    model: StepTimeModel,
    on_finish: Callable[[Req, Replica], None],
    group_size: int,
    max_k: int,
    sample_every: float | None,
) -> list[Replica]:
    """``len(scheds)`` replicas in consecutive lockstep groups of ``group_size`` (indices in
    order; ``len(scheds)`` a multiple of ``group_size``)."""
    ranks = [LockstepRank(env, s, model, on_finish, i, max_k, sample_every)
             for i, s in enumerate(scheds)]
    for g in range(0, len(ranks), group_size):
        LockstepGroup(env, ranks[g:g + group_size], model, max_k)
    return ranks
