"""A windowed replica with prefix caching remembers each preempted request's parked run only
until that request is admitted again: after a run drains nothing is left behind (a
million-request run must not keep one entry per preemption)."""

from __future__ import annotations

from tiersim.engine.request import Req, SchedulerLimits
from tiersim.engine.scheduler import ReplicaScheduler


def _drain(sched: ReplicaScheduler) -> list[Req]:
    """Step ``sched`` one iteration at a time until it is idle; the finished requests."""
    done, now = [], 0.0
    while not sched.idle():
        plan = sched.schedule(now)
        now += 1.0
        done += sched.complete(plan, 1, now, 1.0) if not plan.empty else []
    return done


def test_parked_runs_are_forgotten_once_readmitted():
    lim = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=64, block_size=4,
                          watermark=0.0, enable_prefix_caching=True, window=16,
                          full_groups=1, window_groups=1)
    sched = ReplicaScheduler(lim, num_blocks=60)
    reqs = [Req(i, prompt=40, output=60, arrival=0.0) for i in range(6)]
    for req in reqs:
        assert sched.add(req)
    done = _drain(sched)
    assert len(done) == 6
    assert sum(r.preemptions for r in reqs) > 0  # the test exercises parked runs
    assert sched._runs == {}
