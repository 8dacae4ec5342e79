"""A replica's prefix cache: an LRU set of prompt block hashes with a fixed capacity.

Model (a simplification of vLLM's automatic prefix caching):

- A request carries one hash per ``hash_block_tokens`` (Mooncake: 512) of its prompt; equal
  hashes mean equal prompt blocks (and equal prefixes before them).
- On admission, the request's leading hashes found in the cache are hits: its prefill starts at
  ``min(hits * hash_block_tokens, prompt - 1)`` tokens (at least one token is always computed,
  as in vLLM). The hit blocks are touched (most recently used).
- When a prefill chunk is scheduled, the hashes of the prompt blocks it completes are inserted
  (as vLLM v1 caches a block when it allocates the slots that fill it); the last, partial block
  is inserted with the chunk that ends the prompt. Nothing changes during decode, so a
  fast-forwarded decode stretch sees a constant cache.
- Capacity is fixed, in hash blocks (least recently used evicted first). In vLLM the cached
  blocks live in the free KV pool and shrink as running requests take memory; here the cache is
  a separate budget and a hit request still holds KV blocks for its cached part (conservative
  memory use, no block sharing).
"""

from __future__ import annotations

from collections import OrderedDict

from tiersim.engine.request import Req


class PrefixCache:
    """LRU set of block hashes holding at most ``capacity`` hashes."""

    def __init__(self, capacity: int, hash_block_tokens: int):
        if hash_block_tokens < 1:
            raise ValueError(f"hash_block_tokens must be >= 1 (got {hash_block_tokens})")
        self.capacity = max(0, capacity)
        self.hash_block_tokens = hash_block_tokens
        self._lru: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._lru)

    def hits(self, hashes: list[int]) -> int:
        """How many leading ``hashes`` are cached."""
        lru, n = self._lru, 0
        for h in hashes:
            if h not in lru:
                break
            n += 1
        return n

    def cached_tokens(self, req: Req) -> int:
        """Prompt tokens of ``req`` an admission now would skip (a pure lookup)."""
        if not req.hashes or not self.capacity:
            return 0
        return min(self.hits(req.hashes) * self.hash_block_tokens, req.prompt - 1)

    def admit(self, req: Req) -> int:
        """Admit ``req``: touch its leading hits and return its cached prompt tokens."""
        if not req.hashes or not self.capacity:
            req.filled = 0
            return 0
        n = self.hits(req.hashes)
        lru = self._lru
        for h in req.hashes[:n]:
            lru.move_to_end(h)
        req.filled = n
        return min(n * self.hash_block_tokens, req.prompt - 1)

    def fill(self, req: Req, upto: int) -> None:
        """Insert the hashes of ``req``'s prompt blocks complete once ``upto`` tokens are
        computed (all of them once ``upto`` reaches the prompt)."""
        hashes = req.hashes
        if not hashes or not self.capacity:
            return
        n = len(hashes) if upto >= req.prompt else min(len(hashes), upto // self.hash_block_tokens)
        if n <= req.filled:
            return
        lru, cap = self._lru, self.capacity
        for h in hashes[req.filled:n]:
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
                if len(lru) > cap:
                    lru.popitem(last=False)
        req.filled = n
