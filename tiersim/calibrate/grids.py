"""Measurement grids: which token counts, contexts and sizes each table covers.

``FULL`` is sized so that every table of Qwen3-Coder-30B-A3B at four precisions and two KV dtypes
is measured on one H200 in a few minutes (see docs/harness.md); ``QUICK`` is a handful of points
so that a CPU covers every code path in seconds. Axes are ascending and strictly positive because
the profile is interpolated in log(axis).
"""

from __future__ import annotations

from dataclasses import dataclass


def _pow2_and_halves(lo: int, hi: int) -> tuple[int, ...]:
    """Powers of two from ``lo`` to ``hi`` and the 1.5x points between (1, 2, 3, 4, 6, 8...)."""
    out = set(_pow2(lo, hi)) | {3 * v // 2 for v in _pow2(lo, hi) if v >= 2 and 3 * v // 2 <= hi}
    return tuple(sorted(out))


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    """Powers of two from ``lo`` to ``hi`` inclusive."""
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return tuple(out)


@dataclass(frozen=True)
class Grid:
    """Axes of every table and the repeat policy of the timer."""

    gemm_m: tuple[int, ...]
    moe_tokens: tuple[int, ...]
    prefill_tokens: tuple[int, ...]
    prefill_context: tuple[int, ...]
    decode_batch: tuple[int, ...]
    decode_context: tuple[int, ...]
    allreduce_bytes: tuple[int, ...]
    warmup: int
    min_repeats: int
    max_repeats: int
    target_s: float  # aim for about this much timed work per point (repeats adapt within bounds)
    flush_bytes: int  # bytes written between repeats to evict the L2 cache (0: no flush)


FULL = Grid(
    gemm_m=_pow2_and_halves(1, 16384),
    moe_tokens=_pow2(1, 8192),
    prefill_tokens=(16, 64, 256, 1024, 2048, 4096, 8192),
    prefill_context=(16, 1024, 4096, 16384, 32768),
    decode_batch=_pow2(1, 256),
    decode_context=(128, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    allreduce_bytes=_pow2(1024, 256 << 20)[::2],
    warmup=3,
    min_repeats=5,
    max_repeats=30,
    target_s=0.05,
    flush_bytes=256 << 20,
)

QUICK = Grid(
    gemm_m=(1, 4, 16, 64),
    moe_tokens=(1, 8, 32),
    prefill_tokens=(8, 32),
    prefill_context=(16, 64),
    decode_batch=(1, 4),
    decode_context=(16, 64),
    allreduce_bytes=(1024, 65536),
    warmup=1,
    min_repeats=3,
    max_repeats=5,
    target_s=0.002,
    flush_bytes=0,
)


def grid_for(quick: bool, device: str) -> Grid:
    """QUICK for --quick; FULL otherwise (the L2 flush applies on CUDA only)."""
    if quick:
        return QUICK
    if device == "cuda":
        return FULL
    return Grid(**{**FULL.__dict__, "flush_bytes": 0})
