"""The engine's per-request think time (an agent step's tool time after its predecessor)."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel


def _tier() -> TierSpec:
    return TierSpec("t", 1, 2000, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=16, max_num_batched_tokens=512))


def test_each_request_waits_its_own_think_time():
    """A chain 0 -> 1 -> 2 with think 0, 0.7 and 2.5 s: each follower arrives its own think time
    after its predecessor finishes."""
    think = np.array([0.0, 0.7, 2.5])
    work = Workload(np.zeros(3), np.full(3, 100), np.full(3, 10), np.zeros(3, int),
                    follows=np.array([-1, 0, 1]), think_s=think)
    res = simulate([_tier()], work)
    assert res.arrival_s[1] == pytest.approx(res.finish_s[0] + 0.7)
    assert res.arrival_s[2] == pytest.approx(res.finish_s[1] + 2.5)
    assert res.first_token_s[2] > res.finish_s[1] + 2.5
