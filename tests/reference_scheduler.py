"""A deliberately naive single-replica simulator: vLLM v1's loop over explicit request objects.

It keeps per-request block counts and steps one iteration at a time with no aggregates and no
fast-forward, so it is slow and obviously faithful. Tests check the engine against it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from tiersim.engine.request import SchedulerLimits
from tiersim.perf.base import StepShape


@dataclass
class _R:
    idx: int
    arrival: float
    prompt: int
    output: int
    n_out: int = 0
    computed: int = 0
    blocks: int = 0
    decoding: bool = False  # prefill done: one token per step from now on
    first_token: float = np.nan
    finish: float = np.nan

    @property
    def tokens(self) -> int:
        return self.prompt + self.n_out


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def reference_run(arrival, prompt, output, limits: SchedulerLimits, num_blocks: int, model):
    """Per-request (first_token, finish, dropped) arrays for one replica."""
    bs, wm = limits.block_size, int(limits.watermark * num_blocks)
    rows = enumerate(zip(arrival, prompt, output))
    reqs = [_R(i, float(a), int(p), int(o)) for i, (a, p, o) in rows]
    dropped = np.zeros(len(reqs), dtype=bool)
    waiting: deque[_R] = deque()
    running: list[_R] = []
    free, t, nxt = num_blocks, 0.0, 0
    while nxt < len(reqs) or waiting or running:
        while nxt < len(reqs) and reqs[nxt].arrival <= t:
            r = reqs[nxt]
            if _cdiv(r.prompt + r.output, bs) > num_blocks - wm:
                dropped[r.idx] = True
            else:
                waiting.append(r)
            nxt += 1
        if not waiting and not running:
            if nxt == len(reqs):
                break
            t = reqs[nxt].arrival
            continue
        budget, sched, preempted = limits.max_num_batched_tokens, [], False
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            n = min(r.tokens - r.computed, budget)
            need = _cdiv(r.computed + n, bs) - r.blocks
            ok = True
            while need > free:
                v = running.pop()
                free += v.blocks
                v.blocks, v.computed, v.decoding = 0, 0, False
                waiting.appendleft(v)
                preempted = True
                if v is r:
                    ok = False
                    break
            if not ok:
                break
            free -= need
            r.blocks += need
            sched.append((r, n))
            budget -= n
            i += 1
        if not preempted:
            while waiting and budget > 0 and len(running) < limits.max_num_seqs:
                h = waiting[0]
                n = min(h.tokens - h.computed, budget)
                need = _cdiv(h.computed + n, bs) - h.blocks
                if free - need < wm:
                    break
                waiting.popleft()
                free -= need
                h.blocks += need
                running.append(h)
                sched.append((h, n))
                budget -= n
        if not sched:  # everything was preempted: re-plan at once, no time passes
            continue
        dec = [(r, n) for r, n in sched if r.decoding]
        pre = [(r, n) for r, n in sched if not r.decoding]
        ctx = sum(r.computed + 1 for r, _ in dec)
        if pre:
            dt = model.step_time(StepShape(tuple((n, r.computed) for r, n in pre), len(dec), ctx))
        else:
            dt = float(model.decode_times(len(dec), np.array([ctx]))[0])
        t = t + dt
        for r, n in sched:
            r.computed += n
            if r.computed == r.tokens:
                r.n_out += 1
                if np.isnan(r.first_token):
                    r.first_token = t
                r.decoding = True
                if r.n_out == r.output:
                    r.finish = t
                    free += r.blocks
                    r.blocks = 0
                    running.remove(r)
        assert free >= 0
    return (np.array([r.first_token for r in reqs]), np.array([r.finish for r in reqs]), dropped)
