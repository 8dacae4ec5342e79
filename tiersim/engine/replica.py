"""One replica: a :class:`ReplicaScheduler` stepped by SimPy events.

The loop is ``plan = sched.schedule(); wait for its end; sched.complete(plan)``. A decode-only
plan may cover k iterations (fast-forward); if a request arrives during it and could join the
batch, the stretch is cut after the iteration in flight (the replica re-arms its end event at
that iteration's end) and re-planned from there: exactly what per-iteration stepping would do.

NOTE (speed): the loop is written as event callbacks, not a SimPy process: a process pays for a
generator resume per event and an ``Interrupt`` (an extra event and an exception) per cut. A cut
here just arms a new end event and clears the superseded one's callbacks (SimPy drops it, see
:meth:`SimEnv.next_time`). And a plan that ends strictly before every other pending event gets no
event at all: the replica moves the clock to its end (:meth:`SimEnv.advance`) and goes on in the
same callback. Nothing else can happen in between, and anything at the same instant is already
queued (it then gets an event, ordered after them as before), so the order of everything is what
one event per plan gives.

Lazy replicas (``lazy=True``, for fleets where a finished request sets nothing else in motion: no
escalation, no follower, no hand-off) post no events at all. A replica's steps touch only its own
state and the request's result row, so it may run them late: whenever something outside looks at
it or hands it a request at time ``now`` (:meth:`submit`, :meth:`outstanding`, the end of the
run), it first runs every step that ends before ``now`` (:meth:`catch_up`), in order, each at its
own time. A step ending exactly at ``now`` waits, as its event would have waited behind an arrival
at that instant (arrivals are URGENT); an idle replica woken at ``now`` starts only once the clock
has passed ``now``, after every arrival of that instant, as its NORMAL wake-up event would.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from math import inf

import numpy as np
import simpy

from tiersim.engine.kv_levels import step_seconds
from tiersim.engine.load_series import LoadSeries
from tiersim.engine.request import Req
from tiersim.engine.scheduler import ReplicaScheduler, StepPlan
from tiersim.engine.simenv import SimEnv
from tiersim.perf.base import StepTimeModel


class Replica:
    """A continuous-batching server: scheduler + step-time model, driven by SimPy events (or,
    when lazy, by whoever looks at it next; see the module docstring)."""

    def __init__(
        self,
        env: SimEnv,
        sched: ReplicaScheduler,
        model: StepTimeModel,
        on_finish: Callable[[Req, Replica], None],
        index: int = 0,
        max_k: int = 4096,
        sample_every: float | None = 1.0,
        lazy: bool = False,
    ):
        self.env, self.sched, self.model = env, sched, model
        self.on_finish, self.index, self.max_k = on_finish, index, max_k
        self.busy_s = 0.0
        # running, waiting, KV blocks over time (None: not kept, sample_every None)
        self.series = LoadSeries(sample_every) if sample_every is not None else None
        self._active = False  # a step is planned or in flight
        self._pending: simpy.Event | None = None  # the end event that counts
        self._plan: StepPlan | None = None
        self._start = 0.0
        self._ends: list[float] | None = None  # end times of the decode stretch in flight
        self._k = 0
        self._table = env.decode_table(model)
        self.lazy = lazy  # no events: steps run when the replica is next looked at (module)
        self._end = inf  # lazy: when the step in flight ends or the idle replica starts
        self.last_step = 0.0  # lazy: the time of the last step processed
        self.idle_at = 0.0  # when the replica last went idle (its last step's end)
        self._due = inf  # not lazy: when the armed end event fires
        self.board: OutstandingBoard | None = None  # the board keeping its outstanding()
        self.slot = 0  # its place on the board

    def submit(self, req: Req | None, idx: int = 0, prompt: int = 0, output: int = 0,
               arrival: float = 0.0) -> bool:
        """Hand a request to this replica now; False if it can never fit (dropped). ``req``
        None: a fresh request, workload row ``idx`` of ``prompt`` and ``output`` tokens
        arriving at ``arrival``, whose :class:`Req` is made only when it reaches the head of
        the waiting queue (:meth:`ReplicaScheduler.add_new`)."""
        now = self.env.now
        if self.board is not None:  # its outstanding() may change now
            self.board.until[self.slot] = -inf
        if self._end < now:  # lazy and behind
            self.catch_up(now)
        sched = self.sched
        could_join = not sched.waiting and len(sched.running) < sched.limits.max_num_seqs
        if not (sched.add(req) if req is not None else
                sched.add_new(idx, prompt, output, arrival)):
            return False
        if not self._active:
            # Wake at this instant, after any other arrival at the same time (NORMAL < URGENT).
            self._active = True
            self._wake_at(now)  # its step starts now: no time with the request waiting
            return True
        self._record(now)
        if self._ends is not None and could_join:
            in_flight = bisect_left(self._ends, now, 0, self._k)
            if in_flight + 1 < self._k:
                self._k = in_flight + 1
                if not self.lazy:
                    self._pending.callbacks.clear()  # the old end does nothing now
                self._wake_at(self._ends[in_flight])
        return True

    def release(self, req: Req) -> None:
        """Free the blocks finished ``req`` held on this replica (a disaggregated prefill
        replica's, kept until its KV reached a decode replica); an idle replica with requests
        waiting wakes now to admit them."""
        self.sched.release_held(req)
        if self.board is not None:  # it may wake now
            self.board.until[self.slot] = -inf
        self._record(self.env.now)
        if not self._active and self.sched.waiting:
            self._active = True
            self._wake_at(self.env.now)

    def outstanding(self) -> int:
        """Token computations still to do here, as of now (least-outstanding balancer)."""
        now = self.env.now
        if self._end < now:  # lazy and behind
            self.catch_up(now)
        pending = self.sched.outstanding
        if self._ends is not None:
            done = bisect_left(self._ends, now, 0, self._k)
            pending -= self._plan.n_dec * done
        return pending

    @staticmethod
    def least_outstanding(replicas: list[Replica], now: float) -> Replica:
        """``min(replicas, key=Replica.outstanding)`` at the clock's time ``now``: the replica
        with the fewest outstanding token computations (ties: the first).

        NOTE (speed): below :data:`~tiersim.engine.cluster.BOARD_MIN` replicas (or with
        lockstep ranks) the least-outstanding balancer asks every replica of a tier at every
        arrival (from it up, an :class:`OutstandingBoard`); this is :meth:`outstanding` written
        out in one loop (no call or clock read per replica), the same numbers compared the same
        way.
        """
        best, least = None, None
        for rep in replicas:
            if rep._end < now:  # lazy and behind
                rep.catch_up(now)
            pending = rep.sched.outstanding
            ends = rep._ends
            if ends is not None:
                pending -= rep._plan.n_dec * bisect_left(ends, now, 0, rep._k)
            if least is None or pending < least:
                best, least = rep, pending
        return best

    def steady_until(self, now: float) -> float:
        """The time up to which :meth:`outstanding` stays what it is at ``now`` unless a
        request is submitted or released here: the end of the decode iteration in flight, or
        of the step in flight (``inf`` when idle). Call it after :meth:`outstanding` at
        ``now`` (a lazy replica has caught up then)."""
        ends = self._ends
        if ends is not None:  # outstanding() falls as each iteration of the stretch ends
            return ends[bisect_left(ends, now, 0, self._k)]
        if self.lazy:
            return self._end
        return self._due if self._active else inf

    def go_lazy(self) -> None:
        """Step without events from now on (see the module docstring): only for fleets where
        a finished request sets nothing else in motion."""
        self.lazy = True

    def catch_up(self, now: float) -> None:
        """Lazy replica: run every step that ends before ``now``, each at its own time."""
        while self._end < now:
            t = self._end
            if self._plan is not None:
                self._finish_plan(t)
            end = self._start_plan(t)
            self.last_step = t
            self._end = inf if end is None else end

    def _wake_at(self, t: float) -> None:
        """The step in flight now ends at ``t`` (or the idle replica starts then)."""
        if self.lazy:
            self._end = t
        else:
            self._arm(t)

    def _arm(self, t: float) -> None:
        self._due = t
        self._pending = self.env.call_at(t, self._on_event)

    def _on_event(self, event: simpy.Event) -> None:
        if event is not self._pending:
            return  # superseded by a cut
        env = self.env
        now = env.now
        while True:
            if self._plan is not None:
                self._finish_plan(now)
            end = self._start_plan(now)
            if end is None:
                return
            if not env.advance(end):  # something else comes first, or at the same instant
                self._arm(end)
                return
            now = end

    def _finish_plan(self, now: float) -> None:
        plan = self._plan
        k = self._k if not plan.chunks else 1  # plan.decode_only (NOTE (speed): no property)
        self._plan, self._ends = None, None
        self.busy_s += now - self._start
        for req in self.sched.complete(plan, k, now, now - self._start):
            self.on_finish(req, self)

    def _start_plan(self, now: float) -> float | None:
        """Plan the next step from ``now`` and return its end time (None: nothing to do, or
        nothing can run until a finished request's held blocks are freed, :meth:`release`).

        NOTE (speed): runs once per plan, so ``sched.idle()``, ``plan.empty``,
        ``plan.decode_only`` and the decode stretch are written out here (the same tests
        on the same fields), and a step that moves no KV skips :func:`step_seconds` (which
        returns its compute time unchanged then).
        """
        sched = self.sched
        while sched.running or sched.waiting:  # not sched.idle()
            plan = sched.schedule(now, self.max_k)
            chunks = plan.chunks
            if not chunks and not plan.n_dec:  # plan.empty: re-plan at once
                if not sched.running and sched.held:  # the head waits for held blocks
                    break
                continue
            # after admission: the batch this step runs (NOTE (speed): _record written out)
            if self.series is not None:
                self.series.record(now, len(sched.running),
                                   len(sched.waiting) + sched.backlog.size,
                                   sched.num_blocks - sched.free)
            self._plan, self._start = plan, now
            if not chunks:  # plan.decode_only: a decode stretch, its end times from the table
                ends = self._ends = self._table.ends(plan.n_dec, plan.dec_ctx, plan.k, now)
                self._k = plan.k
                return ends[-1]
            compute = self.model.step_time(plan.shape())
            if not plan.transfer_s:
                return now + compute
            return now + step_seconds(compute, plan.transfer_s, sched.limits.kv_overlap)
        self._record(now)  # the idle state
        self._active, self._pending = False, None
        self.idle_at = now
        return None

    def _record(self, now: float) -> None:
        """The replica's state from ``now`` on, into its load series if it keeps one (NOTE
        (speed): the requests waiting and the blocks in use are ``sched.waiting_count()`` and
        ``sched.used_blocks()``, written out)."""
        if self.series is not None:
            s = self.sched
            self.series.record(now, len(s.running), len(s.waiting) + s.backlog.size,
                               s.num_blocks - s.free)


class OutstandingBoard:
    """Every replica's :meth:`Replica.outstanding` kept in an array, each read again only
    once it may have changed.

    NOTE (speed): :meth:`Replica.least_outstanding` reads every replica of the tier at every
    arrival, which took most of a run at the replica cap (1,024); here a pick reads again the
    few replicas whose work may have changed since, then takes numpy's ``argmin``.

    A replica's outstanding work changes only when a request is submitted or released there
    (the replica marks its entry stale then) or when the decode iteration or step in flight
    ends (:meth:`Replica.steady_until`); an entry is read again at the first pick at or after
    that time. The pick is then ``min(replicas, key=Replica.outstanding)`` exactly: the same
    numbers, ties to the first (``argmin``).
    """

    def __init__(self, replicas: list[Replica]):
        self.replicas = replicas
        self.value = np.zeros(len(replicas), dtype=np.int64)  # outstanding() when last read
        self.until = np.full(len(replicas), -inf)  # read again at a pick at or after this
        for slot, rep in enumerate(replicas):
            rep.board, rep.slot = self, slot

    def least(self, now: float) -> Replica:
        """The replica with the fewest outstanding token computations at ``now`` (ties: the
        first), after reading again every entry that may have changed."""
        reps, value, until = self.replicas, self.value, self.until
        # An entry kept until ``now`` is read again: an arrival meets a step's end at ``now``,
        # and an event-driven replica's end event may have run first (an escalation sent from
        # another replica's step ending then). Reading one replica changes no other's entry
        # (a lazy replica's catch-up sets nothing else in motion; an event-driven replica's
        # outstanding() runs nothing), so one pass over the stale ones suffices.
        # NOTE (speed): at the cap a pick reads again up to a hundred replicas whose decode
        # iteration ended (the prefix-aware benchmark: 59 a pick); each read is
        # ``rep.outstanding()`` and ``rep.steady_until(now)`` written out, one bisection
        # serving both (the same numbers; tests/test_round31_speed.py holds them equal).
        for slot in (until <= now).nonzero()[0].tolist():
            rep = reps[slot]
            if rep._end < now:  # lazy and behind
                rep.catch_up(now)
            ends = rep._ends
            if ends is None:
                value[slot] = rep.sched.outstanding
                until[slot] = rep.steady_until(now)
            else:
                done = bisect_left(ends, now, 0, rep._k)
                value[slot] = rep.sched.outstanding - rep._plan.n_dec * done
                until[slot] = ends[done]
        return reps[int(value.argmin())]
