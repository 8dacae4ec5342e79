"""KV offload levels beneath a replica's GPU prefix cache (host DRAM, local SSD).

A :class:`KVLevel` is one store below the GPU: a capacity in bytes and read/write bandwidths in
bytes per second. The hierarchy is exclusive (a block lives in exactly one level), as in an
LRU cache with victim levels:

- A block the GPU cache evicts moves down to the first offload level (a write at that level's
  write bandwidth, on the step that evicted it); a block that level evicts moves to the next one
  in the background (the host copies it; no GPU time); the last level drops it.
- A level below the first has one writer, which writes the blocks moved down to it one after
  another, each for the block's bytes over the level's write bandwidth (the first from the start
  of the step that moved it down). A block moved down while the writer is already
  :data:`WRITE_QUEUE_S` (1 s) or more behind is dropped, as an offloader skips a store when its
  write buffer is full; a block taken is in the level (and can hit) at once, read from that
  buffer until written. So over ``T`` seconds at most ``T / write time + 1 s / write time + 1``
  blocks reach the level: a 0.01 GB/s SSD under 50 MB blocks takes about one block each 5 s,
  however fast the host evicts.
- A prefix hit found in an offload level moves the block back up to the GPU (a read at that
  level's read bandwidth), which may push other blocks down in turn.
- A block's size is ``kv_bytes_per_token x hash_block_tokens`` (whole blocks move).

The transfer seconds of a step are the reads and GPU writes it caused, summed over levels (one
link at a time: conservative). With ``overlap`` the load runs layer by layer beneath the step's
compute, so the step takes ``max(compute, transfer)``; without it, ``compute + transfer``.
Transfers happen only at admission and when a prefill chunk fills blocks, never during a decode
stretch, so fast-forward stays exact.

Load or recompute (applied per admission by :class:`tiersim.engine.prefix_cache.PrefixCache`):
a request whose leading prefix hits include blocks held in an offload level either loads them
(the always-load path) or recomputes them as prefill, whichever is modelled faster: a load
slower than recomputing buys nothing, and an engine tuned for its link would not wait on it
(``kv_offload_recompute: false`` models a connector that always loads).
Loading costs the read seconds of its hits held below; recomputing costs what computing the hit
tokens from its first offloaded block on adds to the request's own prefill, chunked at the step
budget as the scheduler runs it, alone (those tokens are then computed as a cache miss). Ties
load. The load is compared whole, as if not hidden beneath compute (with ``overlap`` it may
partly be: the rule then leans towards recomputing). ``SchedulerLimits.kv_recompute=False``
always loads.
"""

from __future__ import annotations

from dataclasses import dataclass

WRITE_QUEUE_S = 1.0
"""Seconds of queued writes past which a level below the first drops a block moved down to it
(the module docstring)."""


@dataclass(frozen=True, slots=True)
class KVLevel:
    """One offload store: ``name`` (e.g. ``host``, ``ssd``), capacity and bandwidths in bytes."""

    name: str
    capacity_bytes: float
    read_bytes_per_s: float
    write_bytes_per_s: float

    def __post_init__(self) -> None:
        if self.capacity_bytes < 0:
            raise ValueError(f"KV level {self.name!r}: capacity must be >= 0")
        if self.read_bytes_per_s <= 0 or self.write_bytes_per_s <= 0:
            raise ValueError(f"KV level {self.name!r}: read and write bandwidth must be > 0")

    def capacity_blocks(self, block_bytes: float) -> int:
        """Whole hash blocks of ``block_bytes`` this level holds."""
        return int(self.capacity_bytes // block_bytes) if block_bytes > 0 else 0


def step_seconds(compute_s: float, transfer_s: float, overlap: bool) -> float:
    """A step's duration given its compute and its KV transfers (see the module docstring)."""
    if not transfer_s:
        return compute_s
    return max(compute_s, transfer_s) if overlap else compute_s + transfer_s
