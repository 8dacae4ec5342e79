"""Round 24 (vllmsem): the replica model against vLLM V1's scheduler and KV cache manager.

Each test is a small hand-built case whose answer is read off vLLM 0.16's source
(``vllm/v1/core/kv_cache_manager.py``, ``vllm/v1/core/sched/scheduler.py``)."""

from __future__ import annotations

from tiersim.engine.request import Req, SchedulerLimits
from tiersim.engine.scheduler import ReplicaScheduler


def _run_until_idle(sched: ReplicaScheduler, t: float = 0.0) -> float:
    """Step ``sched`` one plan at a time, 1 s a step, until nothing is left; the end time."""
    while not sched.idle():
        plan = sched.schedule(t)
        sched.complete(plan, plan.k, t + 1.0, 1.0)
        t += 1.0
    return t


def test_a_whole_prompt_hit_recomputes_its_last_block_not_its_last_token():
    """vLLM's ``get_computed_blocks`` caps a hit at ``num_tokens - 1`` tokens and
    ``find_longest_cache_hit`` keeps whole blocks of ``block_size`` below that cap: a
    1,000-token prompt found whole starts at 992 cached tokens (62 blocks of 16) and prefills
    8, a 1,024-token one at 1,008 (it started at 999 and 1,023, a token each)."""
    lim = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048, block_size=16,
                          watermark=0.0, enable_prefix_caching=True)
    sched = ReplicaScheduler(lim, 1000, hash_block_tokens=512)
    sched.add(Req(0, 1000, 2, 0.0, hashes=[1, 2]))
    t = _run_until_idle(sched)
    again = Req(1, 1000, 2, t, hashes=[1, 2])
    assert sched.cached_tokens(again) == 992
    assert sched.cached_tokens(Req(2, 1024, 2, t, hashes=[1, 2])) == 1008
    sched.add(again)
    plan = sched.schedule(t)
    assert [(r.idx, c) for r, c in plan.chunks] == [(1, 8)]
    assert again.cached == 992
