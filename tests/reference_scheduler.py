"""A deliberately naive single-replica simulator: vLLM v1's loop over explicit request objects.

It keeps per-request block counts and steps one iteration at a time with no aggregates and no
fast-forward, so it is slow and obviously faithful. Tests check the engine against it.

Prefix caching is modelled as documented in ``tiersim.engine.prefix_cache``, here as a plain list
(least recently used first): an admitted request starts at its leading cached hashes' tokens
(at most the whole KV blocks before its last prompt token, as vLLM) and each scheduled
prefill chunk caches the prompt blocks it completes.
Offload levels (``limits.kv_levels``) are more such lists beneath it: an evicted hash moves to
the next list (paying block bytes / write bandwidth when it leaves the GPU list), a hit found
below moves back to the GPU list (paying block bytes / read bandwidth); the step lasts compute
+ transfer, or the larger of the two with ``limits.kv_overlap``. Load or recompute (with
``limits.kv_recompute``): when the leading hits include blocks found below, the request keeps
only the hits before the first of them if the model's step time for one prefill chunk of the
hit tokens from there (none: free) is below the reads of every hit found below.

With prefix caching (and no per-sequence state), the free blocks are a first-in-first-out list
of [owner, count] runs, as vLLM v1's free queue: a preempted request's full token blocks are
appended as its own run after its other blocks, allocations take from the front, and a
re-admission starts at its run's blocks (whole blocks, at most its known tokens less one) when
that is at least its prefix-cache hit, reusing them and reading nothing from an offload level.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tiersim.engine.kv_levels import WRITE_QUEUE_S
from tiersim.engine.request import SchedulerLimits
from tiersim.engine.spec_decode import SpecStepModel, draw_tokens, request_rng, tier_key
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
    hashes: list = field(default_factory=list)
    filled: int = 0  # leading hashes already cached by this admission
    cached: int = -1  # prompt tokens cached at the first admission
    preempted: int = 0  # times preempted by recompute
    admitted: float = np.nan  # when first admitted (a preempted request keeps it)

    @property
    def tokens(self) -> int:
        return self.prompt + self.n_out


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _pages(lim: SchedulerLimits, upto: int, new: int) -> int:
    """Blocks a sequence holds for a step that brings its KV to ``upto`` tokens, ``new`` of
    them this step: a block per ``block_size`` tokens in each full-attention group, in each
    sliding-window group at most the blocks of ``new + window - 1`` tokens and one more, and
    its fixed state's."""
    blocks = _cdiv(upto, lim.block_size)
    if not lim.window:
        return blocks + lim.state_blocks
    window = min(blocks, _cdiv(new + lim.window - 1, lim.block_size) + 1)
    return lim.full_groups * blocks + lim.window_groups * window + lim.state_blocks


class _Pool:
    """The free blocks in eviction order: [owner or None, count] runs, oldest first."""

    def __init__(self, n: int, on: bool):
        self.on = on
        self.runs = [[None, n]]

    def take(self, n: int) -> None:
        while self.on and n > 0:
            m = min(n, self.runs[0][1])
            self.runs[0][1] -= m
            n -= m
            if self.runs[0][1] == 0:
                self.runs.pop(0)

    def give(self, n: int, r=None, full: int = 0) -> None:
        if self.on:
            self.runs.append([None, n - full])
            self.runs.append([r, full])

    def parked(self, r) -> int:
        return sum(c for o, c in self.runs if o is r) if self.on else 0

    def claim(self, r, used: int) -> None:
        for run in self.runs:
            if run[0] is r:
                run[0] = None
                run[1] -= used


class _LRU:
    """The prefix cache as lists of hashes (GPU first, then offload levels), LRU first each."""

    def __init__(self, capacity: int, block_tokens: int, levels=(), bytes_per_token=0.0,
                 kv_block: int = 1):
        self.kv_block = kv_block  # a hit is at most the whole KV blocks before the last token
        block = bytes_per_token * block_tokens
        self.lists: list[list[int]] = [[] for _ in range(1 + len(levels))]
        self.caps = [capacity] + [int(lv.capacity_bytes // block) for lv in levels]
        self.read = [0.0] + [block / lv.read_bytes_per_s for lv in levels]
        self.write = [0.0] + [block / lv.write_bytes_per_s for lv in levels]
        self.capacity, self.block_tokens = sum(self.caps), block_tokens
        self.moved = 0.0  # transfer seconds of the step being planned
        self.now = 0.0  # the time of the step being planned
        self.free_at = [0.0] * len(self.lists)  # when each level's writer is done
        self.prefill = None  # load or recompute: (new, done) -> seconds; None: always load

    def cap(self, r: _R, hashes: int) -> int:
        """Tokens ``hashes`` leading hits let ``r`` skip."""
        return min(hashes * self.block_tokens, (r.prompt - 1) // self.kv_block * self.kv_block)

    def level(self, h: int):
        for i, lst in enumerate(self.lists):
            if h in lst:
                return i
        return None

    def lookup(self, r: _R) -> int:
        n = 0
        while n < len(r.hashes) and self.level(r.hashes[n]) is not None:
            n += 1
        return n

    def put(self, i: int, h: int) -> None:
        self.lists[i].append(h)
        if len(self.lists[i]) > self.caps[i]:
            victim = self.lists[i].pop(0)
            if i + 1 < len(self.lists):
                if i == 0:
                    self.moved += self.write[1]
                elif self.free_at[i + 1] - self.now >= WRITE_QUEUE_S:
                    return  # the lower level's writer is too far behind: the block is dropped
                else:
                    self.free_at[i + 1] = max(self.free_at[i + 1], self.now) + self.write[i + 1]
                self.put(i + 1, victim)

    def use(self, h: int) -> None:
        i = self.level(h)
        if i is not None:
            self.lists[i].remove(h)
        self.put(0, h)

    def kept(self, r: _R, n: int) -> int:
        """Load or recompute: the leading hits kept (all, or those before the first below)."""
        levels = [self.level(h) for h in r.hashes[:n]]
        if self.prefill is None or not any(levels):
            return n
        first = next(j for j, i in enumerate(levels) if i)
        load = sum(self.read[i] for i in levels if i)
        gpu, hit = self.cap(r, first), self.cap(r, n)
        redo = self.prefill(gpu, r.prompt) - self.prefill(hit, r.prompt) if hit > gpu else 0.0
        return first if redo < load else n

    def hit_tokens(self, r: _R) -> int:
        if not self.capacity or not r.hashes:
            return 0
        return self.cap(r, self.kept(r, self.lookup(r)))

    def admit(self, r: _R) -> tuple[list[int], int, bool | None]:
        """Touch the GPU hits kept, bring the lower ones up; the kept hit tokens per level,
        the hit tokens recomputed and whether hits found below were loaded (None: none)."""
        found = self.lookup(r) if self.capacity else 0
        n = self.kept(r, found)
        cap = self.cap(r, n)
        per = [0] * len(self.lists)
        below = []
        redo = self.cap(r, found) - cap
        loaded = None
        skipped = self.cap(r, found)
        if any(self.level(h) and j * self.block_tokens < skipped
               for j, h in enumerate(r.hashes[:found])):
            loaded = n == found
        for j, h in enumerate(r.hashes[:n]):
            i = self.level(h)
            per[i] += max(0, min(self.block_tokens, cap - j * self.block_tokens))
            if i == 0:
                self.lists[0].remove(h)
                self.lists[0].append(h)
            else:
                below.append(h)
        for h in below:
            i = self.level(h)
            if i is None:
                continue
            self.lists[i].remove(h)
            self.moved += self.read[i]
            self.put(0, h)
        r.filled = n
        return per, redo, loaded

    def fill(self, r: _R, upto: int) -> None:
        if not self.capacity:
            return
        n = len(r.hashes) if upto >= r.prompt else min(len(r.hashes), upto // self.block_tokens)
        for h in r.hashes[r.filled:n]:
            self.use(h)
        r.filled = max(r.filled, n)

    def sizes(self) -> list[int]:
        return [len(lst) for lst in self.lists]


def reference_run(arrival, prompt, output, limits: SchedulerLimits, num_blocks: int, model,
                  hashes=None, hash_block_tokens: int = 512, spec=None, accept=None,
                  tier: int = 0):
    """Per-request (first_token, finish, dropped, cached prompt tokens) arrays for one replica.

    ``hashes`` (one list per request) is used when ``limits.enable_prefix_caching``. After the
    run, ``reference_run.last`` holds the hit tokens per level of each request and the largest
    level sizes seen (for the offload tests), ``reference_run.choices`` each request's
    (hit tokens recomputed, whether hits found below were loaded) at its first admission, and
    ``reference_run.preemptions`` how many times each request was preempted and
    ``reference_run.queue`` its queueing delay (first admission less arrival; 0 for a dropped
    request, as the engine's ``queue_s``).
    ``spec`` (a ``SpecDecoding``): each decoder verifies k + 1 tokens per step and emits the
    tokens drawn from its own generator (``accept``: per-request acceptance rates; ``tier``:
    the tier's key in the draws, :func:`tiersim.engine.spec_decode.tier_key`).
    """
    extra = 0
    if spec is not None:
        model, extra = SpecStepModel(model, spec), spec.k
        rngs: dict[int, object] = {}
    bs, wm = limits.block_size, int(limits.watermark * num_blocks)
    state = limits.state_blocks  # blocks of each admitted request's fixed state
    rows = enumerate(zip(arrival, prompt, output))
    reqs = [_R(i, float(a), int(p), int(o)) for i, (a, p, o) in rows]
    capacity = 0
    groups = limits.full_groups + limits.window_groups  # sliding windows: blocks are pages
    if limits.enable_prefix_caching and hashes is not None:
        capacity = int(limits.prefix_cache_fraction * (num_blocks // groups) * bs)
        capacity //= hash_block_tokens
        for r, h in zip(reqs, hashes):
            r.hashes = [int(x) for x in h]
    cache = _LRU(capacity, hash_block_tokens, limits.kv_levels, limits.kv_bytes_per_token, bs)
    if limits.kv_levels and limits.kv_recompute:
        cache.prefill = lambda start, end: _chunked_prefill(model, start, end,
                                                            limits.max_num_batched_tokens)
    per_level = [None] * len(reqs)
    choices = [(0, None)] * len(reqs)
    peak = [0] * len(cache.lists)
    dropped = np.zeros(len(reqs), dtype=bool)
    waiting: deque[_R] = deque()
    running: list[_R] = []
    free, t, nxt = num_blocks, 0.0, 0
    pool = _Pool(num_blocks, limits.enable_prefix_caching and not state)
    runs = {}  # sliding windows: each parked run's (blocks, token blocks) when parked

    def parked_tokens(r) -> int:
        blocks = pool.parked(r)
        if limits.window and blocks:  # only a whole run is reused
            blocks = runs[r.idx][1] if blocks == runs[r.idx][0] else 0
        return min(blocks, (r.tokens - 1) // bs) * bs

    def park(v) -> None:
        full = min(v.computed // bs, v.blocks)
        if limits.window:
            full = min(_pages(limits, full * bs, 1), v.blocks)
            runs[v.idx] = (full, v.computed // bs)
        pool.give(v.blocks, v, full)
    while nxt < len(reqs) or waiting or running:
        while nxt < len(reqs) and reqs[nxt].arrival <= t:
            r = reqs[nxt]
            longest = r.prompt + r.output + extra
            if _pages(limits, longest, limits.max_num_batched_tokens) > num_blocks - wm:
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
        cache.now = t
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            n = min(r.tokens - r.computed, budget)
            if spec is not None and r.decoding:
                n = spec.k + 1
            need = _pages(limits, r.computed + n, n) - r.blocks
            ok = True
            while need > free:
                v = running.pop()
                free += v.blocks
                park(v)
                v.blocks, v.computed, v.decoding = 0, 0, False
                v.preempted += 1
                waiting.appendleft(v)
                preempted = True
                if v is r:
                    ok = False
                    break
            if not ok:
                break
            free -= need
            pool.take(need)
            r.blocks += need
            if not r.decoding:
                cache.fill(r, r.computed + n)
            sched.append((r, n))
            budget -= n
            i += 1
        if not preempted:
            while waiting and budget > 0 and len(running) < limits.max_num_seqs:
                h = waiting[0]
                hit = max(cache.hit_tokens(h), parked_tokens(h))
                parked = bool(hit and pool.parked(h) and hit == parked_tokens(h))
                n = min(h.tokens - hit, budget)
                need = _pages(limits, hit + n, n) - h.blocks
                if free - need < wm:
                    break
                used = (_pages(limits, hit, 1) if limits.window else hit // bs) if parked else 0
                pool.claim(h, used)
                pool.take(need - used)
                if parked:  # its blocks are on the GPU: nothing read, its prompt's re-cached
                    h.filled = 0
                else:
                    per, redo, loaded = cache.admit(h)
                    if per_level[h.idx] is None:
                        per_level[h.idx] = per
                        choices[h.idx] = (redo, loaded)
                h.computed = hit
                h.cached = hit if h.cached < 0 else h.cached
                h.admitted = t if np.isnan(h.admitted) else h.admitted
                cache.fill(h, hit + n)
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
        peak = [max(a, b) for a, b in zip(peak, cache.sizes())]
        if pre:
            dt = model.step_time(StepShape(tuple((n, r.computed) for r, n in pre), len(dec), ctx))
            if cache.moved:
                dt = max(dt, cache.moved) if limits.kv_overlap else dt + cache.moved
            cache.moved = 0.0
        else:
            dt = float(model.decode_times(len(dec), np.array([ctx]))[0])
        t = t + dt
        for r, n in sched:
            if spec is not None and r.decoding:
                if r.idx not in rngs:
                    rngs[r.idx] = request_rng(spec.seed, tier, r.idx)
                rate = None if accept is None else float(accept[r.idx])
                m = min(draw_tokens(rngs[r.idx], spec.rates(rate)), r.output - r.n_out)
                r.n_out += m
                r.computed += m
                if r.n_out == r.output:
                    r.finish = t
                    free += r.blocks
                    pool.give(r.blocks)
                    r.blocks = 0
                    running.remove(r)
                continue
            r.computed += n
            rest = _pages(limits, r.computed, 1)  # sliding windows: the blocks left behind
            if r.blocks > rest:
                free += r.blocks - rest
                pool.give(r.blocks - rest)
                r.blocks = rest
            if r.computed == r.tokens:
                r.n_out += 1
                if np.isnan(r.first_token):
                    r.first_token = t
                r.decoding = True
                if r.n_out == r.output:
                    r.finish = t
                    free += r.blocks
                    pool.give(r.blocks)
                    r.blocks = 0
                    running.remove(r)
        assert free >= 0
    reference_run.last = (per_level, peak)
    reference_run.choices = choices
    reference_run.preemptions = np.array([r.preempted for r in reqs])
    reference_run.queue = np.array([0.0 if np.isnan(r.admitted) else r.admitted - r.arrival
                                    for r in reqs])
    return (np.array([r.first_token for r in reqs]), np.array([r.finish for r in reqs]), dropped,
            np.array([max(r.cached, 0) for r in reqs]))


def assert_same_per_request(a, b) -> None:
    """Two SimResults agree request by request (drops, preemptions and cache hits exactly;
    first-token and finish times and queueing delays to 1e-9 relative): the fast-forward
    equivalence check."""
    np.testing.assert_array_equal(a.dropped, b.dropped)
    np.testing.assert_array_equal(a.cache_hit_tokens, b.cache_hit_tokens)
    np.testing.assert_allclose(a.finish_s, b.finish_s, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(a.first_token_s, b.first_token_s, rtol=1e-9, equal_nan=True)
    np.testing.assert_array_equal(a.preemptions, b.preemptions)
    np.testing.assert_allclose(a.queue_s, b.queue_s, rtol=1e-9, atol=1e-12)


def assert_matches_reference(res, work, tier, **kw) -> None:
    """A one-tier SimResult agrees with :func:`reference_run` of ``tier`` on the same workload
    (drops and cache hits exactly, first-token and finish times and each request's queueing
    delay, its first admission less its arrival, to 1e-9 relative); ``kw`` go to it."""
    ft, fin, dropped, cached = reference_run(
        work.arrival_s, work.input_tokens, work.output_tokens, tier.limits, tier.num_blocks,
        tier.step_model, hashes=work.prefix_hashes, hash_block_tokens=work.hash_block_tokens,
        tier=tier_key(tier.name), **kw)
    np.testing.assert_array_equal(res.dropped, dropped)
    np.testing.assert_array_equal(res.cache_hit_tokens, cached)
    np.testing.assert_allclose(res.first_token_s, ft, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(res.finish_s, fin, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(res.queue_s, reference_run.queue, rtol=1e-9, atol=1e-12)


def assert_fast_forward_exact_and_conserving(spec, work, simulate):
    """Fast-forward equals per-iteration stepping, every request finishes or is dropped, KV
    never exceeds capacity and finished requests emit all their tokens; returns the run."""
    a = simulate([spec], work, fast_forward=True)
    assert_same_per_request(a, simulate([spec], work, fast_forward=False))
    assert np.all(~np.isnan(a.finish_s) ^ a.dropped)
    assert all(p <= spec.num_blocks for p in a.kv_peak_blocks[spec.name])
    done = ~a.dropped
    np.testing.assert_array_equal(a.output_tokens[done], np.asarray(work.output_tokens)[done])
    return a


def _chunked_prefill(model, start: int, end: int, budget: int) -> float:
    """Seconds to prefill tokens ``start`` to ``end`` of one prompt alone, one chunk of at most
    ``budget`` tokens per step."""
    total, done = 0.0, start
    while done < end:
        new = min(budget, end - done)
        total += model.step_time(StepShape(((new, done),)))
        done += new
    return total
