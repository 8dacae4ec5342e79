"""A pure continuous-batching scheduler modelled on vLLM v1's.

``schedule(now)`` returns a :class:`StepPlan`; ``complete(plan, k, t_end, dt)`` applies it. No
clock lives here, so a test can step it by hand.

Policy (as vLLM v1): one token budget per step (``max_num_batched_tokens``); running requests
first (each decoder takes one token, then the request being prefilled takes a chunk); when blocks
run out, the newest running request is preempted by recompute (its blocks freed, its computed
tokens reset, put back at the head of the waiting queue; with prefix caching its full blocks stay
cached in the free pool until evicted, :mod:`tiersim.engine.free_pool`, and its re-admission
starts at those left); waiting requests are admitted in order,
with chunked prefill, only if nothing was preempted this step and the free blocks stay above the
watermark.

NOTE (speed): decoding requests are kept as an aggregate so that a step costs O(prefill chunks +
log batch), not O(batch). Every running request except possibly the newest one is decoding (a
request that is still mid-prefill has used up the step's budget, so nothing is admitted after it),
so the state is: the decoders' count, the sum of their contexts (grows by the count each step), a
heap of the iteration at which each finishes, and how many of them need a fresh KV block at each
iteration modulo ``block_size`` (a decoder needs one whenever its computed tokens fill its last
block). A decode-only stretch of ``k`` iterations is then one plan with closed-form block use, and
per-request state is rebuilt only when a request joins, leaves or is preempted.

Sliding windows (``limits.window``): blocks are pages of KV-cache groups
(:func:`tiersim.engine.request.seq_blocks`); a decoder takes one page per group at each block
boundary until its KV reaches ``window_tokens``, then its full groups' only, so ``phase_count``
holds pages per phase and a stretch ends before any decoder's window stops growing. A prefill
chunk holds the pages of its tokens and the window before them; those beyond the window's are
freed when the chunk ends. With prefix caching a preempted request's parked run is reused only
whole, so while the waiting head has one a stretch is one iteration (an allocation that erodes
the run shrinks the head's hit, and with it the blocks its admission needs).

Prefix caching (``enable_prefix_caching``): a :class:`PrefixCache` per replica. An admitted request
starts its prefill at its cached tokens; the cache changes only when a prefill chunk is scheduled
or a request is admitted, never during a decode stretch, so fast-forward stays exact. Offload
levels beneath it (``limits.kv_levels``) add their transfer seconds to the step that moved the
blocks (``StepPlan.transfer_s``; the replica overlaps them with compute or not).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import accumulate

from tiersim.engine.free_pool import FreePool
from tiersim.engine.prefix_cache import PrefixCache, replica_cache
from tiersim.engine.request import (
    DECODE,
    DONE,
    PREFILL,
    WAITING,
    Backlog,
    Req,
    SchedulerLimits,
    longest_sequence,
    seq_blocks,
)
from tiersim.perf.base import StepShape


@dataclass(slots=True)
class StepPlan:
    """What the next ``k`` iterations compute.

    ``k > 1`` only for a fast-forwarded decode-only stretch (``chunks`` empty: the scheduler's
    stretches share one empty tuple). ``n_dec`` and
    ``dec_ctx`` are the decoders' count and summed context at the first iteration. A stretch
    (``stretch=True``) takes its decoders' KV blocks in :meth:`ReplicaScheduler.complete`, once
    its length is final; a single step took them in ``schedule``. ``transfer_s``: KV moved
    between cache levels by this step (see :mod:`tiersim.engine.kv_levels`).
    """

    it: int
    k: int
    n_dec: int
    dec_ctx: int
    chunks: Sequence[tuple[Req, int]] = field(default_factory=list)  # _NO_CHUNKS: a tuple
    stretch: bool = False
    transfer_s: float = 0.0

    @property
    def empty(self) -> bool:
        """Nothing to run (every running request was just preempted): re-plan at once."""
        return not self.chunks and not self.n_dec

    @property
    def decode_only(self) -> bool:
        """True when no prefill chunk runs (the step time comes from ``decode_times``)."""
        return not self.chunks

    def shape(self) -> StepShape:
        """The first iteration's shape, for the step-time model."""
        chunks = tuple([(c, r.computed) for r, c in self.chunks])  # (a list: no generator)
        return StepShape(chunks, self.n_dec, self.dec_ctx)


#: A decode stretch's chunks: none (one shared empty tuple; a stretch's are never added to).
_NO_CHUNKS: tuple = ()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class ReplicaQueues:
    """What every replica scheduler holds: its limits, the waiting queue, the running set (in
    admission order; the newest is last), the paged KV blocks and the prefix cache.

    The waiting queue is ``waiting`` (:class:`Req` objects, its head first) and then
    ``backlog`` (requests behind them held as packed rows, :class:`Backlog`); the backlog is empty
    whenever ``waiting`` is, so ``waiting[0]`` is the head and ``not waiting`` "none waits".

    ``hash_block_tokens`` is the prompt tokens per prefix hash (used with prefix caching; the
    cache holds ``prefix_cache_fraction`` of the KV capacity, in hash blocks).
    """

    def __init__(self, limits: SchedulerLimits, num_blocks: int, hash_block_tokens: int = 512):
        if num_blocks < 1:
            raise ValueError(f"num_blocks must be >= 1 (got {num_blocks})")
        self.limits = limits
        self.bs = limits.block_size
        self.state_blocks = limits.state_blocks
        self.num_blocks = num_blocks
        self.free = num_blocks
        self.watermark_blocks = int(limits.watermark * num_blocks)
        self.waiting: deque[Req] = deque()
        self.backlog = Backlog()  # the queue behind ``waiting`` (see the class docstring)
        self.running: dict[Req, None] = {}
        self.it = 0  # index of the next iteration
        self.outstanding = 0  # token computations still to do (balancer signal)
        self.peak_blocks = 0
        self.cache: PrefixCache | None = replica_cache(limits, num_blocks, hash_block_tokens)
        # preempted requests' blocks stay cached in the free pool (prefix caching, no fixed
        # per-sequence state: a recurrent state is not kept at block boundaries)
        self.pool: FreePool | None = None
        if limits.enable_prefix_caching and not limits.state_blocks:
            self.pool = FreePool(num_blocks)
        # sliding windows: each parked run's (blocks, token blocks) when parked, kept only while
        # its request waits (its re-admission forgets it); a re-admission reuses a run only whole
        # (its window's last blocks are evicted first)
        self._runs: dict[Req, tuple[int, int]] = {}
        # a disaggregated tier's prefill replica: a finished request keeps its blocks until
        # release_held (its KV has reached a decode replica); held counts them
        self.hold_finished = False
        self.held = 0
        # NOTE (speed): an admission here is a plain one (nothing cached, no parked blocks, no
        # sliding window: a request's blocks are _ceil_div(tokens, bs) + state_blocks), fixed
        # for the replica's life; _admit_head and _head_admissible write that case out
        self._plain = self.cache is None and self.pool is None and not limits.window

    def blocks_for(self, tokens: int, new: int = 1) -> int:
        """Blocks a request holds with KV for ``tokens`` tokens (> 0), ``new`` of them computed
        by the step that allocates them: its tokens' blocks and its fixed state's
        (``limits.state_blocks``); with sliding windows :func:`seq_blocks`."""
        if self.limits.window:
            return seq_blocks(self.limits, tokens, new)
        return _ceil_div(tokens, self.bs) + self.state_blocks

    def _release_excess(self, req: Req) -> None:
        """A prefill chunk is done: ``req`` keeps the blocks of its KV at rest, and its window
        groups' blocks wholly outside the window are freed (sliding windows only)."""
        rest = self.blocks_for(req.computed)
        if req.blocks > rest:
            self.free += req.blocks - rest
            if self.pool is not None:
                self.pool.give(req.blocks - rest)
            req.blocks = rest

    def too_long(self, prompt: int, output: int) -> bool:
        """Whether prompt + output exceeds the model's context (``limits.max_model_len``; 0:
        no limit), which vLLM rejects."""
        longest = self.limits.max_model_len
        return bool(longest) and prompt + output > longest

    def waiting_count(self) -> int:
        """Requests waiting (``waiting`` and the backlog behind it)."""
        return len(self.waiting) + self.backlog.size

    def _queue(self, req: Req) -> None:
        """Put ``req`` at the tail of the waiting queue, behind the backlog, whose requests
        become Reqs first, so the queue keeps its order (a tier queues fresh requests through
        :meth:`add_new` only where it has no prefix cache and no prefill/decode split, so the
        two rarely meet on one replica)."""
        while self.backlog.size:
            self.waiting.append(self.backlog.pop())
        self.waiting.append(req)

    def add_new(self, idx: int, prompt: int, output: int, arrival: float) -> bool:
        """Queue a fresh request (row ``idx`` of the workload, arriving at ``arrival``), as
        ``add(Req(idx, prompt, output, arrival))`` does, but behind a waiting head held as
        packed rows (:class:`Backlog`), its :class:`Req` made only when it reaches the head.
        False (and nothing queued) if it can never fit in this replica."""
        if not self.fits(prompt, output):
            return False
        if self.waiting:
            self.backlog.push(idx, prompt, output, arrival)
        else:
            self.waiting.append(Req(idx, prompt, output, arrival))
        self.outstanding += prompt + output - 1  # its known tokens, then each output but one
        return True

    def idle(self) -> bool:
        """No request waiting or running."""
        return not self.running and not self.waiting

    def _finish(self, req: Req, t_end: float, finished: list[Req]) -> None:
        """``req`` is done at ``t_end``: its blocks freed (held instead, with
        ``hold_finished``, until :meth:`release_held`), it leaves the running set."""
        if self.hold_finished:
            self.held += req.blocks
        else:
            self._release(req)
        req.state = DONE
        req.finish = t_end
        del self.running[req]
        finished.append(req)

    def release_held(self, req: Req) -> None:
        """Free the blocks finished ``req`` held (``hold_finished``): as vLLM's scheduler frees
        a prefill request's blocks once its KV connector reports the decode side has read them
        (``Scheduler._update_from_kv_xfer_finished``, ``finished_sending``). The blocks in use
        up to now count toward the peak first: a release between steps frees blocks that were
        in use beside the step in flight's, which :meth:`complete` no longer sees."""
        used = self.num_blocks - self.free
        if used > self.peak_blocks:
            self.peak_blocks = used
        self.held -= req.blocks
        self._release(req)

    def used_blocks(self) -> int:
        """KV blocks in use now."""
        return self.num_blocks - self.free

    # ---- the free pool (preempted requests' blocks stay cached: :mod:`free_pool`) ---------
    def _take(self, n: int) -> None:
        """``n`` free blocks are allocated."""
        self.free -= n
        if self.pool is not None and n > 0:
            self.pool.take(n)

    def _release(self, req: Req, park: bool = False) -> None:
        """Free ``req``'s blocks; ``park``: it is preempted, and its full token blocks stay
        cached until evicted."""
        n, req.blocks = req.blocks, 0
        self.free += n
        if self.pool is None:
            return
        full = min(req.computed // self.bs, n) if park else 0
        if park and self.limits.window:
            full = min(self.blocks_for(full * self.bs), n)
            self._runs[req] = (full, req.computed // self.bs)
        self.pool.give(n, req, full)

    def parked_tokens(self, req: Req, taken: int = 0) -> int:
        """Tokens a re-admission of preempted ``req`` finds in its blocks still cached (once
        ``taken`` more blocks are allocated): whole blocks, at most its known tokens less one
        (with sliding windows, only while its whole run is cached)."""
        if self.pool is None:
            return 0
        blocks = self.pool.parked_after(req, taken) if taken else self.pool.parked(req)
        if self.limits.window and blocks:
            run, token_blocks = self._runs[req]
            blocks = token_blocks if blocks == run else 0
        return min(blocks, (req.tokens - 1) // self.bs) * self.bs

    def _reused(self, hit: int) -> int:
        """Blocks of a parked run a re-admission starting at ``hit`` tokens takes back."""
        return self.blocks_for(hit) if self.limits.window else hit // self.bs

    def _cached_tokens(self, req: Req, taken: int = 0) -> int:
        """Where ``req``'s prefill would start if admitted now (once ``taken`` more blocks
        are allocated): its prefix-cache hit or its parked blocks, whichever is longer."""
        if self.cache is None:
            return req.computed
        return max(self.cache.cached_tokens(req), self.parked_tokens(req, taken))

    def _parked_hit(self, req: Req, hit: int) -> bool:
        """Whether an admission of ``req`` starting at ``hit`` cached tokens starts from its
        parked blocks (on the GPU: they win a tie with the prefix cache, whose hits may sit in
        an offload level)."""
        return bool(hit) and self.pool is not None and bool(self.pool.parked(req)) and (
            hit == self.parked_tokens(req))

    def _allocate(self, req: Req, upto: int, watermark: int, reuse: int = 0,
                  new: int = 1) -> bool:
        """Give ``req`` the blocks for its first ``upto`` tokens, ``new`` of them computed in
        this step, unless that breaks the watermark; ``reuse``: how many of them are its parked
        blocks, taken back, not allocated (a re-admission spends its parked run either way)."""
        need = self.blocks_for(upto, new) - req.blocks
        if self.free - need < watermark:
            return False
        if self.pool is not None and self.pool.parked(req):
            self.pool.claim(req, reuse)
        self.free -= need
        if self.pool is not None:
            self.pool.take(need - reuse)
        req.blocks += need
        return True

    def _admit_head(self, now: float, budget: int) -> int:
        """Admit the waiting queue's head at ``now`` with up to ``budget`` tokens of its
        prefill, if its blocks fit above the watermark: its first chunk, or 0 (not admitted)."""
        head = self.waiting[0]
        if self._plain:  # NOTE (speed): the else branch with nothing cached, written out
            hit = head.computed
            chunk = min(head.tokens - hit, budget)
            need = -(-(hit + chunk) // self.bs) + self.state_blocks - head.blocks
            if self.free - need < self.watermark_blocks:
                return 0
            self.free -= need
            head.blocks += need
        else:
            hit = self._cached_tokens(head)
            parked = self._parked_hit(head, hit)
            chunk = min(head.tokens - hit, budget)
            if not self._allocate(head, hit + chunk, self.watermark_blocks,
                                  self._reused(hit) if parked else 0, chunk):
                return 0
            if self.cache is not None:
                self._start_from_cache(head, hit, chunk, now, parked)
        if self._runs:
            self._runs.pop(head, None)
        self.waiting.popleft()
        if not self.waiting and self.backlog.size:  # the next one out is the head now
            self.waiting.append(self.backlog.pop())
        self.running[head] = None
        head.state = PREFILL
        if head.admitted is None:
            head.admitted = now
        return chunk

    def _start_from_cache(self, req: Req, hit: int, chunk: int, now: float,
                          parked: bool) -> None:
        """Admission with prefix caching at ``now``: skip the cached tokens, cache the chunk's
        prompt blocks. From its ``parked`` blocks (on the GPU) nothing is read from an offload
        level: the chunk's fill registers its prompt's blocks on the GPU again."""
        if parked:
            req.filled = 0
        else:
            self.cache.admit(req, now)
        req.computed = hit
        if req.cached < 0:
            req.cached = hit
        self.outstanding -= hit
        self.cache.fill(req, hit + chunk, now)


class ReplicaScheduler(ReplicaQueues):
    """Waiting queue, running set and paged KV blocks of one replica (:class:`ReplicaQueues`),
    with decoders kept as an aggregate (see the module docstring)."""

    def __init__(self, limits: SchedulerLimits, num_blocks: int, hash_block_tokens: int = 512):
        super().__init__(limits, num_blocks, hash_block_tokens)
        self.partial: Req | None = None  # the request mid-prefill, always the newest running
        self.n_dec = 0
        self.dec_ctx = 0  # sum over decoders of their context at the next iteration
        self.phase_count = [0] * self.bs  # blocks the decoders take at each phase
        self.dec_weight = 0  # sum(phase_count): blocks the decoders take per block_size steps
        # sliding windows: a decoder's window groups stop growing once its KV reaches
        # window_tokens; _caps holds (iteration, heap_seq, req) of each such change to come
        cap = -(-limits.window // self.bs) + 1 if limits.window else 0
        self.window_tokens = cap * self.bs
        self._caps: list[tuple[int, int, Req]] = []
        self.decode_acc = 0.0  # GPU-seconds per decode token, accumulated (cost attribution)
        self._heap: list[tuple[int, int, Req]] = []
        self._seq = 0
        # NOTE (speed): the longest sequence fits() admits, fixed for the replica's life (its
        # limits are frozen, its blocks set once)
        self._longest = longest_sequence(limits, num_blocks)

    # ---- queries -------------------------------------------------------------------------
    def fits(self, prompt: int, output: int) -> bool:
        """Whether a request of this size can ever run here (alone, above the watermark, and
        within the model's context)."""
        longest = self.limits.max_model_len  # NOTE (speed): self.too_long(), written out
        if longest and prompt + output > longest:
            return False
        return prompt + output <= self._longest

    # ---- the contract --------------------------------------------------------------------
    def add(self, req: Req) -> bool:
        """Queue a request; False (and nothing queued) if it can never fit in this replica."""
        if not self.fits(req.prompt, req.output):
            return False
        self._queue(req)
        # token computations left: the known tokens not yet in KV, then one per output to come
        # (prompt + output - 1 for a new request; output - 1 for one whose KV was moved here)
        self.outstanding += req.tokens - req.computed + req.output - req.n_out - 1
        return True

    def schedule(self, now: float, max_k: int = 1) -> StepPlan:
        """Plan the next iteration, or a decode-only stretch of up to ``max_k`` iterations."""
        it = self.it
        if self._caps:
            self._apply_caps(it)
        if self.partial is None and self.n_dec and self._heap:
            after_first = self.free - self.phase_count[it % self.bs]
            # NOTE (speed): an empty queue is _head_admissible's first False, without the call
            if not self.waiting or not self._head_admissible(after_first,
                                                             self.free - after_first):
                k = min(self._next_finish() - it + 1, max_k)
                # NOTE (speed): the blocks last at least free // dec_weight whole block_size
                # cycles (_block_horizon is never below that), so where those cover k the
                # horizon cannot lower it and is not worked out
                weight = self.dec_weight
                if weight and self.free // weight * self.bs < k:
                    k = min(self._block_horizon(it), k)
                if self._caps:  # a stretch ends before a decoder's window stops growing
                    k = min(k, self._caps[0][0] - it)
                if self._runs and self.waiting and self.pool.parked(self.waiting[0]):
                    k = min(k, 1)  # windows: its run, eroded, may let the head in at once
                if k >= 1:  # NOTE (speed): no fresh empty list of chunks (a stretch has none)
                    return StepPlan(it, k, self.n_dec, self.dec_ctx, _NO_CHUNKS, True)
        return self._schedule_step(now)

    def complete(self, plan: StepPlan, k: int, t_end: float, dt: float) -> list[Req]:
        """Apply the first ``k`` iterations of ``plan``, ending at ``t_end`` after ``dt`` seconds
        of GPU time; return the requests that finished."""
        chunks, n_dec = plan.chunks, plan.n_dec
        if chunks:
            n_tok = n_dec
            for _, c in chunks:  # NOTE (speed): sum() of a generator, as a loop
                n_tok += c
            if n_dec:
                self.decode_acc += dt / n_tok
            for req, c in chunks:
                req.gpu_s += dt * c / n_tok
            self.outstanding -= n_tok
        else:
            if plan.stretch:  # NOTE (speed): _take() written out
                taken = self._decode_blocks(plan.it, k)
                self.free -= taken
                if self.pool is not None and taken > 0:
                    self.pool.take(taken)
            self.decode_acc += dt / n_dec
            self.outstanding -= n_dec * k
        used = self.num_blocks - self.free
        if used > self.peak_blocks:
            self.peak_blocks = used
        self.dec_ctx += n_dec * k
        self.it += k
        heap = self._heap
        # NOTE (speed): no call when no decoder finishes (_retire_decoders would find none)
        finished = self._retire_decoders(self.it - 1, t_end) if heap and (
            heap[0][0] < self.it) else []
        for req, c in chunks:
            self._advance_prefill(req, c, t_end, finished)
        return finished

    # ---- scheduling a single iteration ---------------------------------------------------
    def _schedule_step(self, now: float) -> StepPlan:
        lim, it = self.limits, self.it
        preempted = False
        need = self.phase_count[it % self.bs]
        if need > self.free:
            preempted = self._preempt_for_decoders(it)
        else:  # NOTE (speed): _take() written out
            self.free -= need
            if self.pool is not None and need > 0:
                self.pool.take(need)
        budget = lim.max_num_batched_tokens - self.n_dec
        chunks: list[tuple[Req, int]] = []
        part = self.partial
        if part is not None and budget > 0:
            chunk = min(part.tokens - part.computed, budget)
            if self._allocate(part, part.computed + chunk, watermark=0, new=chunk):
                if self.cache is not None:
                    self.cache.fill(part, part.computed + chunk, now)
                chunks.append((part, chunk))
                budget -= chunk
            else:  # the newest running request is this one: it preempts itself
                self._preempt(part, it)
                preempted = True
        if not preempted:
            budget = self._admit(now, budget, chunks)
        moved = self.cache.take_transfer() if self.cache is not None else 0.0
        return StepPlan(it, 1, self.n_dec, self.dec_ctx, chunks, transfer_s=moved)

    def _admit(self, now: float, budget: int, chunks: list[tuple[Req, int]]) -> int:
        max_seqs = self.limits.max_num_seqs
        while self.waiting and budget > 0 and len(self.running) < max_seqs:
            head = self.waiting[0]
            chunk = self._admit_head(now, budget)
            if not chunk:
                break
            chunks.append((head, chunk))
            budget -= chunk
            if head.computed + chunk < head.tokens:
                self.partial = head
        return budget

    def cached_tokens(self, req: Req) -> int:
        """Prompt tokens of ``req`` this replica's prefix cache holds now (0 without a cache)."""
        return self.cache.cached_tokens(req) if self.cache is not None else 0

    def _head_admissible(self, free: int, taken: int) -> bool:
        """Whether the waiting queue's head would be admitted with ``free`` blocks, once
        ``taken`` more blocks than now are allocated."""
        if not self.waiting or len(self.running) >= self.limits.max_num_seqs:
            return False
        budget = self.limits.max_num_batched_tokens - self.n_dec
        if budget <= 0:
            return False
        head = self.waiting[0]
        if self._plain:  # NOTE (speed): the lines below with nothing cached, written out
            upto = head.computed + min(head.tokens - head.computed, budget)
            need = -(-upto // self.bs) + self.state_blocks - head.blocks
            return free - need >= self.watermark_blocks
        hit = self._cached_tokens(head, taken)
        chunk = min(head.tokens - hit, budget)
        need = self.blocks_for(hit + chunk, chunk) - head.blocks
        return free - need >= self.watermark_blocks

    # ---- decoders as an aggregate --------------------------------------------------------
    def _decode_blocks(self, it0: int, k: int) -> int:
        """Blocks the decoders allocate over iterations ``it0 .. it0+k-1``."""
        q, r = divmod(k, self.bs)
        s, pc, bs = it0 % self.bs, self.phase_count, self.bs
        if s + r <= bs:  # phases s .. s+r-1, wrapping past the last one
            return q * self.dec_weight + sum(pc[s:s + r])
        return q * self.dec_weight + sum(pc[s:]) + sum(pc[:s + r - bs])

    def _block_horizon(self, it0: int) -> int:
        """Largest k such that the decoders' allocations over k iterations fit in free blocks."""
        if not self.dec_weight:  # every decoder's blocks stopped growing (sliding windows)
            return self._next_finish() - it0 + 1
        q, rem = divmod(self.free, self.dec_weight)
        s, pc, bs = it0 % self.bs, self.phase_count, self.bs
        # iterations whose running total of allocations (phases from s on) stays <= rem; the
        # totals never decrease, so that is a bisection of their prefix sums
        t = bisect_right(list(accumulate(pc[s:] + pc[:s])), rem)
        return q * bs + t if t < bs else (q + 1) * bs  # t == bs impossible: rem < dec_weight

    def _next_finish(self) -> int:
        heap = self._heap
        while heap[0][2].heap_seq != heap[0][1]:
            heappop(heap)
        return heap[0][0]

    def _computed_at(self, req: Req, it: int) -> int:
        """A decoder's computed tokens at the start of iteration ``it``."""
        return req.c_join + (it - req.join_it)

    def _decode_weight(self, computed: int) -> int:
        """Blocks a decoder whose KV holds ``computed`` tokens takes when they fill a block:
        one per group, less the window groups once its KV reaches ``window_tokens``."""
        lim = self.limits
        if not lim.window:
            return 1
        grown = computed >= self.window_tokens
        return lim.full_groups + (0 if grown else lim.window_groups)

    def _apply_caps(self, it: int) -> None:
        """The decoders whose KV reaches ``window_tokens`` by iteration ``it`` take only their
        full groups' blocks from then on."""
        caps, lim = self._caps, self.limits
        while caps and caps[0][0] <= it:
            _, seq, req = heappop(caps)
            if req.heap_seq == seq and req.weight > lim.full_groups:
                self.phase_count[(req.join_it - req.c_join) % self.bs] -= lim.window_groups
                self.dec_weight -= lim.window_groups
                req.weight = lim.full_groups

    def _join_decoders(self, req: Req) -> None:
        req.state = DECODE
        req.c_join, req.join_it = req.computed, self.it
        req.weight = self._decode_weight(req.computed)
        self.phase_count[(req.join_it - req.c_join) % self.bs] += req.weight
        self.dec_weight += req.weight
        self.n_dec += 1
        self.dec_ctx += req.computed + 1
        req.finish_it = self.it + (req.output - req.n_out) - 1
        req.acc_mark = self.decode_acc
        self._seq += 1
        req.heap_seq = self._seq
        heappush(self._heap, (req.finish_it, self._seq, req))
        if req.weight > self.limits.full_groups:  # its window groups stop growing later
            heappush(self._caps, (self.it + self.window_tokens - req.c_join, self._seq, req))

    def _leave_decoders(self, req: Req, computed: int) -> None:
        """Remove a decoder whose computed tokens are ``computed`` at the next iteration."""
        self.phase_count[(req.join_it - req.c_join) % self.bs] -= req.weight
        self.dec_weight -= req.weight
        req.weight = 0
        self.n_dec -= 1
        self.dec_ctx -= computed + 1
        req.gpu_s += self.decode_acc - req.acc_mark
        req.heap_seq = -1
        req.n_out += computed - req.c_join  # one output per decode step since joining
        req.tokens = req.prompt + req.n_out
        req.computed = computed
        if self.limits.window:
            req.blocks = self.blocks_for(computed)
        else:  # self.blocks_for(computed), written out
            req.blocks = -(-computed // self.bs) + self.state_blocks

    def _retire_decoders(self, last: int, t_end: float) -> list[Req]:
        finished = []
        heap = self._heap
        while heap and heap[0][0] <= last:
            _, seq, req = heappop(heap)
            if req.heap_seq != seq:
                continue
            # self._computed_at(req, last + 1), written out (NOTE (speed): once per request)
            self._leave_decoders(req, req.c_join + (last + 1 - req.join_it))
            self._finish(req, t_end, finished)
        return finished

    def _advance_prefill(self, req: Req, chunk: int, t_end: float, finished: list[Req]) -> None:
        req.computed += chunk
        if self.limits.window:
            self._release_excess(req)
        if req.computed < req.tokens:
            return
        if self.partial is req:
            self.partial = None
        req.n_out += 1
        req.tokens += 1
        if req.first_token is None:
            req.first_token = t_end
        if req.n_out >= req.output:
            self._finish(req, t_end, finished)
        else:
            self._join_decoders(req)

    # ---- preemption (rare path: rebuilds per-request state) ------------------------------
    def _preempt_for_decoders(self, it: int) -> bool:
        """vLLM's loop for a step whose decoders need more blocks than are free: allocate in
        running order, preempting the newest request until the current one fits."""
        order = list(self.running)
        preempted, i = False, 0
        while i < len(order):
            req = order[i]
            if req is self.partial:
                break
            at = self._computed_at(req, it)
            need = self._decode_weight(at) if at % self.bs == 0 else 0
            while need > self.free:
                victim = order.pop()
                self._preempt(victim, it)
                preempted = True
                if victim is req:
                    break
            else:
                self._take(need)
                i += 1
                continue
            break
        return preempted

    def _preempt(self, req: Req, it: int) -> None:
        if req.state == DECODE:
            self._leave_decoders(req, self._computed_at(req, it))
        if self.partial is req:
            self.partial = None
        self._release(req, park=True)
        self.outstanding += req.computed
        req.computed = 0
        req.state = WAITING
        req.preemptions += 1
        del self.running[req]
        self.waiting.appendleft(req)
