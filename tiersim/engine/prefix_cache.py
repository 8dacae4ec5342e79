"""A replica's prefix cache: an LRU set of prompt block hashes with a fixed capacity, and
optional offload levels beneath it (host DRAM, SSD).

Model (a simplification of vLLM's automatic prefix caching):

- A request carries one hash per ``hash_block_tokens`` (Mooncake: 512) of its prompt; equal
  hashes mean equal prompt blocks (and equal prefixes before them).
- On admission, the request's leading hashes found in the cache (any level) are hits: its
  prefill starts at ``min(hits * hash_block_tokens, prompt - 1)`` tokens (at least one token is
  always computed, as in vLLM). The GPU-resident hit blocks are touched (most recently used)
  first, then the hits found in offload levels move back up to the GPU, in prompt order.
- When a prefill chunk is scheduled, the hashes of the prompt blocks it completes are inserted
  (as vLLM v1 caches a block when it allocates the slots that fill it); the last, partial block
  is inserted with the chunk that ends the prompt. Nothing changes during decode, so a
  fast-forwarded decode stretch sees a constant cache.
- Capacity is fixed, in hash blocks (least recently used evicted first). In vLLM the cached
  blocks live in the free KV pool and shrink as running requests take memory; here the cache is
  a separate budget and a hit request still holds KV blocks for its cached part (conservative
  memory use, no block sharing).
- Offload levels (:mod:`tiersim.engine.kv_levels`): exclusive LRU levels beneath the GPU; an
  evicted block moves down one level (the last level drops it). A read from a level and a write
  out of the GPU add their transfer time (block bytes over the level's read or write bandwidth)
  to :attr:`PrefixCache.transfer_s`, which the scheduler hands to the step that caused them;
  moves between offload levels (host to SSD) run off the GPU's critical path.
"""

from __future__ import annotations

from collections import OrderedDict

from tiersim.engine.kv_levels import KVLevel
from tiersim.engine.request import Req


class PrefixCache:
    """LRU set of block hashes: ``capacity`` on the GPU, then each of ``levels`` below it."""

    def __init__(self, capacity: int, hash_block_tokens: int,
                 levels: tuple[KVLevel, ...] = (), kv_bytes_per_token: float = 0.0):
        if hash_block_tokens < 1:
            raise ValueError(f"hash_block_tokens must be >= 1 (got {hash_block_tokens})")
        self.capacity = max(0, capacity)
        self.hash_block_tokens = hash_block_tokens
        self.block_bytes = kv_bytes_per_token * hash_block_tokens
        self.caps = [self.capacity] + [lv.capacity_blocks(self.block_bytes) for lv in levels]
        self.read_s = [0.0] + [self.block_bytes / lv.read_bytes_per_s for lv in levels]
        self.write_s = [0.0] + [self.block_bytes / lv.write_bytes_per_s for lv in levels]
        self._levels: list[OrderedDict[int, None]] = [OrderedDict() for _ in self.caps]
        self._lru = self._levels[0]
        self._where: dict[int, int] = {}  # hash -> level holding it
        self._total = sum(self.caps)
        self.transfer_s = 0.0  # transfer seconds not yet handed to a step

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
        return min(self.hits(req.hashes) * self.hash_block_tokens, req.prompt - 1)

    def take_transfer(self) -> float:
        """The transfer seconds accumulated since the last call (and reset them)."""
        s, self.transfer_s = self.transfer_s, 0.0
        return s

    def admit(self, req: Req) -> int:
        """Admit ``req``: touch its leading hits, bring those found below up to the GPU, and
        return its cached prompt tokens. The first admission records the tokens per level in
        ``req.level_hits``."""
        if not req.hashes or not self._total:
            req.filled = 0
            if req.level_hits is None:
                req.level_hits = [0] * len(self.caps)
            return 0
        n = self.hits(req.hashes)
        hbt, where = self.hash_block_tokens, self._where
        cap = min(n * hbt, req.prompt - 1)
        per_level = [0] * len(self.caps)
        below = []
        for j, h in enumerate(req.hashes[:n]):
            lvl = where[h]
            per_level[lvl] += max(0, min(hbt, cap - j * hbt))
            if lvl == 0:
                self._lru.move_to_end(h)
            else:
                below.append(h)
        for h in below:
            lvl = where.get(h)  # an earlier promotion may have pushed it further down or out
            if lvl is None:
                continue
            self._remove(h)
            self.transfer_s += self.read_s[lvl]
            self._put(0, h)
        req.filled = n
        if req.level_hits is None:
            req.level_hits = per_level
        return cap

    def fill(self, req: Req, upto: int) -> None:
        """Insert the hashes of ``req``'s prompt blocks complete once ``upto`` tokens are
        computed (all of them once ``upto`` reaches the prompt)."""
        hashes = req.hashes
        if not hashes or not self._total:
            return
        n = len(hashes) if upto >= req.prompt else min(len(hashes), upto // self.hash_block_tokens)
        if n <= req.filled:
            return
        where, lru = self._where, self._lru
        for h in hashes[req.filled:n]:
            lvl = where.get(h)
            if lvl == 0:
                lru.move_to_end(h)
                continue
            if lvl is not None:  # recomputed: the GPU copy replaces the one below
                self._remove(h)
            self._put(0, h)
        req.filled = n

    def _remove(self, h: int) -> None:
        del self._levels[self._where.pop(h)][h]

    def _put(self, level: int, h: int) -> None:
        """Insert ``h`` as most recent at ``level``; its LRU victim moves down (or is dropped)."""
        lru = self._levels[level]
        lru[h] = None
        self._where[h] = level
        if len(lru) <= self.caps[level]:
            return
        victim, _ = lru.popitem(last=False)
        del self._where[victim]
        if level + 1 < len(self.caps):
            if level == 0:  # out of GPU memory: the GPU's copy; lower moves are the host's
                self.transfer_s += self.write_s[1]
            self._put(level + 1, victim)


def replica_cache(limits, num_blocks: int, hash_block_tokens: int) -> PrefixCache | None:
    """A replica's prefix cache when its limits turn caching on: ``prefix_cache_fraction`` of
    its KV capacity, counted in hash blocks, with the limits' offload levels beneath; else
    None. Both schedulers (plain and speculative) build theirs here."""
    if not limits.enable_prefix_caching:
        return None
    tokens = int(limits.prefix_cache_fraction * num_blocks * limits.block_size)
    return PrefixCache(tokens // hash_block_tokens, hash_block_tokens, limits.kv_levels,
                       limits.kv_bytes_per_token)
