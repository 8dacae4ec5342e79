"""The most prompt tokens a prefix-cache hit may skip: one rule, read by the engine's cache
(:mod:`tiersim.engine.prefix_cache`) and by the trace statistics (:mod:`tiersim.trace.stats`),
which sits below the engine (a trace loader never imports the engine: DESIGN.md section 2)."""

from __future__ import annotations


def most_hit_tokens(prompt, block_size: int):
    """The most prompt tokens of a ``prompt`` a prefix hit may skip: the whole ``block_size``
    blocks before its last token (ints, or numpy arrays of them)."""
    return (prompt - 1) // block_size * block_size
