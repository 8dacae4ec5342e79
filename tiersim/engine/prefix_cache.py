"""A replica's prefix cache: an LRU set of prompt block hashes with a fixed capacity, and
optional offload levels beneath it (host DRAM, SSD).

Model (a simplification of vLLM's automatic prefix caching):

- A request carries one hash per ``hash_block_tokens`` (Mooncake: 512) of its prompt; equal
  hashes mean equal prompt blocks (and equal prefixes before them).
- On admission, the request's leading hashes found in the cache (any level) are hits: its
  prefill starts at ``min(hits * hash_block_tokens, cap)`` tokens, ``cap`` the whole KV blocks
  (``block_size`` tokens) before its last prompt token, ``(prompt - 1) // block_size x
  block_size``: as in vLLM, which keeps at most ``num_tokens - 1`` hit tokens in whole blocks,
  so a prompt found whole recomputes its last block, not just its last token. The
  GPU-resident hit blocks are touched (most recently used) first, then the hits found in
  offload levels move back up to the GPU, in prompt order.
- When a prefill chunk is scheduled, the hashes of the prompt blocks it completes are inserted
  (as vLLM v1 caches a block when it allocates the slots that fill it); the last, partial block
  is inserted with the chunk that ends the prompt. Nothing changes during decode, so a
  fast-forwarded decode stretch sees a constant cache.
- Capacity is fixed, in hash blocks (least recently used evicted first). In vLLM the cached
  blocks live in the free KV pool and shrink as running requests take memory; here the cache is
  a separate budget and a hit request still holds KV blocks for its cached part (conservative
  memory use, no block sharing). A preempted request's own blocks are the exception: they stay
  in the free pool, as vLLM's do (:mod:`tiersim.engine.free_pool`).
- Offload levels (:mod:`tiersim.engine.kv_levels`): exclusive LRU levels beneath the GPU; an
  evicted block moves down one level (the last level drops it). A read from a level and a write
  out of the GPU add their transfer time (block bytes over the level's read or write bandwidth)
  to :attr:`PrefixCache.transfer_s`, which the scheduler hands to the step that caused them;
  moves between offload levels (host to SSD) run off the GPU's critical path, but each lower
  level's writer writes one block after another at its write bandwidth and a block moved down
  while it is a second or more behind is dropped (:mod:`tiersim.engine.kv_levels`).
- Load or recompute (:mod:`tiersim.engine.kv_levels`): when a request's leading hits include
  blocks held in an offload level, it either loads them all or keeps only the GPU-resident hits
  before the first of them and recomputes the rest, whichever is modelled faster: the read
  seconds of the hits held below against what recomputing adds to the request's prefill,
  ``prefill_s(c, prompt) - prefill_s(c + k, prompt)`` for ``k`` hit tokens from that block on
  after the ``c`` kept ones, where ``prefill_s(start, prompt)`` is the replica's time to
  prefill the prompt from ``start`` to its end alone, in chunks of the step budget as the
  scheduler splits it (:func:`use_prefill_model` gives the cache the replica's step-time
  model; without one, every hit is loaded). Ties load; a hit block holding no token the
  request skips (its last prompt token is always computed) costs nothing to recompute, so it
  is not loaded. Recomputed tokens
  are cache misses: the request's prefill starts at its kept hits, they are not counted as hits
  (``Req.recomputed`` counts them), no read is paid, and their blocks, computed again, replace
  the copies below as any recomputed block does. Approximation: the recompute is costed as this
  request's own prefill chunks, alone, while the engine batches them with other requests' work
  (the delay to decoders sharing those steps is not counted, nor is a load's, which with
  ``overlap`` stretches the steps decoders share); the load as the reads of the hits as found
  (a block an earlier promotion pushes further down is costed at the level where it was
  found).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from tiersim.engine.kv_levels import WRITE_QUEUE_S, KVLevel
from tiersim.engine.request import Req
from tiersim.perf.base import StepShape
from tiersim.prefix_hits import most_hit_tokens


def hit_tokens(found: int, prompt: int, block_size: int) -> int:
    """Prompt tokens a request of ``prompt`` tokens skips when its first ``found`` are cached:
    at most the whole ``block_size`` blocks before its last token (vLLM's
    ``get_computed_blocks``: ``num_tokens - 1`` tokens at most, in whole blocks)."""
    return min(found, most_hit_tokens(prompt, block_size))


class PrefixCache:
    """LRU set of block hashes: ``capacity`` on the GPU, then each of ``levels`` below it."""

    def __init__(self, capacity: int, hash_block_tokens: int,
                 levels: tuple[KVLevel, ...] = (), kv_bytes_per_token: float = 0.0,
                 block_size: int = 1):
        if hash_block_tokens < 1:
            raise ValueError(f"hash_block_tokens must be >= 1 (got {hash_block_tokens})")
        self.capacity = max(0, capacity)
        self.hash_block_tokens = hash_block_tokens
        self.block_size = max(1, block_size)  # KV block tokens: a hit is whole blocks
        self.block_bytes = kv_bytes_per_token * hash_block_tokens
        self.caps = [self.capacity] + [lv.capacity_blocks(self.block_bytes) for lv in levels]
        self.read_s = [0.0] + [self.block_bytes / lv.read_bytes_per_s for lv in levels]
        self.write_s = [0.0] + [self.block_bytes / lv.write_bytes_per_s for lv in levels]
        self._levels: list[OrderedDict[int, None]] = [OrderedDict() for _ in self.caps]
        self._lru = self._levels[0]
        self._where: dict[int, int] = {}  # hash -> level holding it
        self._total = sum(self.caps)
        self._write_done = [0.0] * len(self.caps)  # when each level's writer is free again
        self._now = 0.0  # the time of the admission or fill moving blocks
        self.transfer_s = 0.0  # transfer seconds not yet handed to a step
        # load or recompute (module docstring): seconds to prefill a prompt of ``prompt``
        # tokens from ``start`` cached ones, alone, chunked; None: always load
        self.prefill_s: Callable[[int, int], float] | None = None
        # a cache-aware balancer's index (:meth:`index_into`): hash -> slots of caches holding it
        self.holders: dict[int, set[int]] | None = None
        self.slot = 0

    def index_into(self, holders: dict[int, set[int]], slot: int) -> None:
        """From now on keep ``holders[h]`` holding ``slot`` while this cache holds ``h`` (at any
        level): only the caches holding a prompt's first hash can have any of it cached. Call it
        while the cache is empty."""
        self.holders, self.slot = holders, slot

    def __len__(self) -> int:
        return len(self._lru)

    def level_sizes(self) -> list[int]:
        """Blocks held per level, GPU first."""
        return [len(lv) for lv in self._levels]

    def hits(self, hashes: list[int]) -> int:
        """How many leading ``hashes`` are cached (in any level)."""
        where, n = self._where, 0
        for h in hashes:
            if h not in where:
                break
            n += 1
        return n

    def cached_tokens(self, req: Req) -> int:
        """Prompt tokens of ``req`` an admission now would skip (a pure lookup)."""
        if not req.hashes or not self._total:
            return 0
        return self._tokens(req, self._lookup(req)[1])

    def _tokens(self, req: Req, blocks: int) -> int:
        """Prompt tokens ``req``'s first ``blocks`` hit blocks let it skip
        (:func:`hit_tokens`)."""
        return hit_tokens(blocks * self.hash_block_tokens, req.prompt, self.block_size)

    def _lookup(self, req: Req) -> tuple[int, int]:
        """``req``'s leading hits ``n`` (any level) and how many of them an admission now
        keeps: all of them (the ones in offload levels loaded), or the GPU-resident ones
        before the first offloaded hit when recomputing from there is modelled faster than
        reading every offloaded hit (module docstring).

        NOTE (speed): one pass finds the hits, the first offloaded one and the reads; a
        cache-aware balancer runs this for every replica at every dispatch (from its board
        size up, for the replicas holding the prompt's first hash: :meth:`index_into`).
        """
        where, read_s = self._where, self.read_s
        n, load = 0, 0.0
        first: int | None = None  # the first hit held in an offload level
        for h in req.hashes:
            lvl = where.get(h)
            if lvl is None:
                break
            if lvl:
                if first is None:
                    first = n
                load += read_s[lvl]
            n += 1
        if first is None or self.prefill_s is None:
            return n, n
        gpu, hit = self._tokens(req, first), self._tokens(req, n)
        redo = (self.prefill_s(gpu, req.prompt) - self.prefill_s(hit, req.prompt)
                if hit > gpu else 0.0)
        return n, (first if redo < load else n)

    def take_transfer(self) -> float:
        """The transfer seconds accumulated since the last call (and reset them)."""
        s, self.transfer_s = self.transfer_s, 0.0
        return s

    def admit(self, req: Req, now: float = 0.0) -> int:
        """Admit ``req`` at ``now``: touch the leading hits it keeps, bring those found below
        up to the GPU, and return its cached prompt tokens. The first admission records the
        tokens per level in ``req.level_hits`` and what it recomputed (see :meth:`_record`)."""
        self._now = now
        if not req.hashes or not self._total:
            req.filled = 0
            if req.level_hits is None:
                req.level_hits = [0] * len(self.caps)
            return 0
        n, kept = self._lookup(req)
        if req.level_hits is None:
            self._record(req, n, kept)
        self._promote(req.hashes[:kept])
        req.filled = kept
        return self._tokens(req, kept)

    def _record(self, req: Req, n: int, kept: int) -> None:
        """A first admission's statistics: the kept hit tokens per level (``level_hits``), the
        hit tokens recomputed instead (``recomputed``) and whether hits found in an offload
        level were loaded (``offload_loaded``: True, False, or None when none of them holds a
        token the request would skip: such a block is neither loaded nor recomputed)."""
        hbt, where, cap = self.hash_block_tokens, self._where, self._tokens(req, kept)
        skipped = self._tokens(req, n)
        per_level = [0] * len(self.caps)
        offloaded = False
        for j, h in enumerate(req.hashes[:n]):
            lvl = where[h]
            offloaded = offloaded or (lvl > 0 and j * hbt < skipped)
            per_level[lvl] += max(0, min(hbt, cap - j * hbt))
        req.level_hits = per_level
        req.recomputed = skipped - cap
        req.offload_loaded = (kept == n) if offloaded else None

    def _promote(self, hashes: list[int]) -> None:
        """Touch the GPU-resident ``hashes``, then move the ones held below up to the GPU,
        in prompt order, each paying its level's read."""
        below = []
        for h in hashes:
            if self._where[h] == 0:
                self._lru.move_to_end(h)
            else:
                below.append(h)
        for h in below:
            lvl = self._where.get(h)  # an earlier promotion may have pushed it further down or out
            if lvl is None:
                continue
            self._remove(h)
            self.transfer_s += self.read_s[lvl]
            self._put(0, h)

    def fill(self, req: Req, upto: int, now: float = 0.0) -> None:
        """Insert, at ``now``, the hashes of ``req``'s prompt blocks complete once ``upto``
        tokens are computed (all of them once ``upto`` reaches the prompt)."""
        self._now = now
        hashes = req.hashes
        if not hashes or not self._total:
            return
        n = len(hashes) if upto >= req.prompt else min(len(hashes), upto // self.hash_block_tokens)
        if n <= req.filled:
            return
        self._cache(hashes[req.filled:n])
        req.filled = n

    def insert(self, hashes: list[int], now: float = 0.0) -> None:
        """Cache, at ``now``, blocks that are no prompt's: a finished request's full output
        blocks (as its follower's prompt holds them)."""
        self._now = now
        if self._total:
            self._cache(hashes)

    def _cache(self, hashes: list[int]) -> None:
        """Put ``hashes`` on the GPU level as most recent, in order."""
        where, lru = self._where, self._lru
        for h in hashes:
            lvl = where.get(h)
            if lvl == 0:
                lru.move_to_end(h)
                continue
            if lvl is not None:  # recomputed: the GPU copy replaces the one below
                self._remove(h)
            self._put(0, h)

    def _remove(self, h: int) -> None:
        del self._levels[self._where.pop(h)][h]
        self._unindex(h)

    def _unindex(self, h: int) -> None:
        """``h`` has left this cache: off its holders' index."""
        if self.holders is not None:
            slots = self.holders[h]
            slots.discard(self.slot)
            if not slots:
                del self.holders[h]

    def _put(self, level: int, h: int) -> None:
        """Insert ``h`` as most recent at ``level``; its LRU victim moves down (or is dropped:
        below the last level, or when the next level's writer is busy)."""
        lru = self._levels[level]
        lru[h] = None
        self._where[h] = level
        if self.holders is not None:
            self.holders.setdefault(h, set()).add(self.slot)
        if len(lru) <= self.caps[level]:
            return
        victim, _ = lru.popitem(last=False)
        del self._where[victim]
        self._unindex(victim)
        if level + 1 == len(self.caps):
            return
        if level == 0:  # out of GPU memory: the GPU's copy, on the step's time
            self.transfer_s += self.write_s[1]
            self._put(1, victim)
        elif self._writer_takes(level + 1):  # the host's copy, in the background
            self._put(level + 1, victim)

    def _writer_takes(self, level: int) -> bool:
        """Whether ``level``'s writer queues one more block now: it is less than
        :data:`WRITE_QUEUE_S` behind (the block then adds its write time to the queue); a block
        it does not take is dropped."""
        done, now = self._write_done[level], self._now
        if done - now >= WRITE_QUEUE_S:
            return False
        self._write_done[level] = max(done, now) + self.write_s[level]
        return True


def replica_cache(limits, num_blocks: int, hash_block_tokens: int) -> PrefixCache | None:
    """A replica's prefix cache when its limits turn caching on: ``prefix_cache_fraction`` of
    its KV capacity (``num_blocks`` over its KV-cache groups: a sliding-window model's blocks
    are one group's pages), counted in hash blocks, with the limits' offload levels beneath;
    else None. Both schedulers (plain and speculative) build theirs here."""
    if not limits.enable_prefix_caching:
        return None
    blocks = num_blocks // (limits.full_groups + limits.window_groups)
    tokens = int(limits.prefix_cache_fraction * blocks * limits.block_size)
    return PrefixCache(tokens // hash_block_tokens, hash_block_tokens, limits.kv_levels,
                       limits.kv_bytes_per_token, limits.block_size)


PREFILL_MEMO_LIMIT = 1 << 16
"""Most prefill times one memo of :func:`use_prefill_model` holds (cleared when full)."""


def use_prefill_model(cache: PrefixCache | None, model, limits,
                      memo: dict[tuple[int, int], float] | None = None) -> None:
    """Turn on the load-or-recompute rule for ``cache`` (module docstring) with ``model``'s
    time to prefill a prompt from ``start`` cached tokens to its end, alone, in chunks of the
    step budget (``limits.max_num_batched_tokens``) as the scheduler splits it; nothing without
    a cache, without offload levels or with ``limits.kv_recompute`` off (always load).
    ``memo``: the times already asked of ``model`` (one dict may serve every replica of a
    tier).

    NOTE (speed): a cache-aware balancer asks every replica's cache at every dispatch (from
    :data:`~tiersim.engine.cluster.BOARD_MIN` replicas up, those holding the prompt's first
    hash: :meth:`PrefixCache.index_into`), and
    each lookup that finds hits below would ask the step model again (several us a call: a
    third more wall time on 32 cache-aware replicas); the (start, prompt) pairs asked are few
    (whole hash blocks, and the prompts' lengths), and a prefill time is a pure function of
    them.
    """
    if cache is None or not limits.kv_levels or not limits.kv_recompute:
        return
    seen: dict[tuple[int, int], float] = {} if memo is None else memo

    budget = max(1, int(limits.max_num_batched_tokens))

    def prefill_s(start: int, prompt: int) -> float:
        key = (start, prompt)
        t = seen.get(key)
        if t is None:
            if len(seen) >= PREFILL_MEMO_LIMIT:
                seen.clear()
            t = seen[key] = sum(
                model.step_time(StepShape(((min(budget, prompt - done), done),)))
                for done in range(start, prompt, budget))
        return t

    cache.prefill_s = prefill_s
