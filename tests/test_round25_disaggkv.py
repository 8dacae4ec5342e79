"""Disaggregated prefill keeps a request's KV blocks until its transfer to a decoder ends.

vLLM's NixlConnector (``NixlConnectorScheduler.request_finished`` returns
``delay_free_blocks``; ``Scheduler._free_request`` then skips ``_free_blocks`` until
``_update_from_kv_xfer_finished`` sees the request in ``finished_sending``) frees the prefill
instance's blocks only once the decode instance has read them, so they occupy the prefill
replica's KV cache for the whole transfer.
"""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.engine import Disagg, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel, StepShape

PROMPT, OUT = 400, 4


def _tier(num_blocks: int, bw: float = 1e4, latency: float = 0.0) -> TierSpec:
    """1 prefill + 1 decode replica; one 400-token prompt per step (25 blocks of 16)."""
    lim = SchedulerLimits(max_num_seqs=16, max_num_batched_tokens=PROMPT, block_size=16,
                          watermark=0.0)
    return TierSpec("t", 2, num_blocks, LinearStepModel(), lim,
                    disagg=Disagg(1, 1, bw, latency, 100.0))


def _two_at_once() -> Workload:
    return Workload(np.zeros(2), np.full(2, PROMPT), np.full(2, OUT), np.zeros(2, np.int64))


def test_held_blocks_delay_the_next_admission_until_the_transfer_ends():
    # 40 blocks: the first prompt's 25 held through its 4 s transfer leave 15, too few for
    # the second prompt's 25, which is admitted only once the transfer has ended
    res = simulate([_tier(40)], _two_at_once())
    t1 = LinearStepModel().step_time(StepShape(((PROMPT, 0),), 0, 0))
    transfer = PROMPT * 100.0 / 1e4
    assert res.first_token_s[0] == pytest.approx(t1)
    assert res.first_token_s[1] == pytest.approx(t1 + transfer + t1)
    assert not res.dropped.any()


def test_room_for_both_admits_at_once_and_the_peak_counts_the_held_blocks():
    res = simulate([_tier(400)], _two_at_once())
    t1 = LinearStepModel().step_time(StepShape(((PROMPT, 0),), 0, 0))
    assert res.first_token_s[1] == pytest.approx(2 * t1)  # no wait: blocks to spare
    # the first prompt's 25 blocks are still held while the second's 25 are prefilled
    assert res.kv_peak_blocks["t"][0] == 50


def test_a_one_token_answer_frees_its_blocks_at_once():
    # a request answered on the prefill replica moves no KV: nothing is held after it
    work = Workload(np.zeros(2), np.full(2, PROMPT), np.ones(2, np.int64), np.zeros(2, np.int64))
    res = simulate([_tier(40)], work)
    t1 = LinearStepModel().step_time(StepShape(((PROMPT, 0),), 0, 0))
    assert res.first_token_s[1] == pytest.approx(2 * t1)
    assert res.kv_peak_blocks["t"][0] == 25


def test_the_idle_prefill_replica_samples_its_held_blocks():
    res = simulate([_tier(40)], _two_at_once(), sample_every=1e-9)
    samples = res.samples["t"][0]
    # between the first prefill's end and the transfer's: nothing runs, one waits, 25 held
    # (rows are means over intervals of 1e-9 s since round 26: the state holds over many)
    assert (0, 1, 25) in [(s[1], s[2], s[3]) for s in samples]


def test_a_release_during_the_next_prefill_still_counts_toward_the_peak():
    # the first prompt's 4 ms transfer ends during the second's 13 ms prefill: both prompts'
    # blocks were in use at once, though the step's end sees only the second's
    res = simulate([_tier(400, bw=1e7)], _two_at_once())
    t1 = LinearStepModel().step_time(StepShape(((PROMPT, 0),), 0, 0))
    assert t1 > PROMPT * 100.0 / 1e7
    assert res.kv_peak_blocks["t"][0] == 50
