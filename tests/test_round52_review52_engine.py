"""Round 52 review: the engine's written-out plain admission is the general one, to the bit.

0275f4d2 wrote out a replica's admission where nothing is cached, no block is parked and no
window slides (``ReplicaQueues._plain``: ``_admit_head`` and ``_head_admissible``), and kept
the longest sequence ``fits()`` admits (``ReplicaScheduler._longest``). The naive reference loop
checks the results to 1e-9; here the general path (``_plain`` False, ``fits`` as it was
written before) must give every request's times, drops and preemptions and every replica's
KV peak and busy time bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from test_round25_enginecombo import combo_tier, combos, fast, workloads

from tiersim.engine import simulate
from tiersim.engine.request import longest_sequence
from tiersim.engine.scheduler import ReplicaQueues, ReplicaScheduler


def _general(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replica takes the general admission path and fits() as written before."""
    monkeypatch.setattr(ReplicaQueues, "_plain", property(lambda self: False,
                                                          lambda self, value: None),
                        raising=False)

    def fits(self, prompt: int, output: int) -> bool:
        if self.too_long(prompt, output):
            return False
        return prompt + output <= longest_sequence(self.limits, self.num_blocks)

    monkeypatch.setattr(ReplicaScheduler, "fits", fits)


def _outputs(res) -> tuple:
    """A run's every per-request and per-replica figure."""
    return (res.first_token_s.tobytes(), res.finish_s.tobytes(), res.dropped.tobytes(),
            res.preemptions.tobytes(), np.asarray(res.queue_s).tobytes(), res.end_s,
            {k: list(v) for k, v in res.kv_peak_blocks.items()},
            {k: list(v) for k, v in res.busy_s.items()})


@fast
@given(workloads, combos)
def test_the_plain_admission_is_the_general_one(work, setup):
    setup = dict(setup, enable_prefix_caching=False, window=0)
    spec = combo_tier(setup, work.hash_block_tokens)
    plain = _outputs(simulate([spec], work))
    with pytest.MonkeyPatch.context() as monkeypatch:
        _general(monkeypatch)
        assert _outputs(simulate([spec], work)) == plain
