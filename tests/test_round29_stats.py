"""Round 29 (stats): ``tiersim trace inspect``'s prefix figure is found by sorting the ids a
bucket at a time, not in a Python set of every distinct id."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from tiersim.engine.prefix_cache import hit_tokens, most_hit_tokens
from tiersim.trace import canonical
from tiersim.trace.stats import prefix_reuse


def _set_reuse(hashes, prompts, block_tokens: int = 512, kv_block: int = 16) -> float | None:
    """The figure as round 28 found it: every distinct id in a Python set, requests in order."""
    total = int(np.sum(prompts))
    if total <= 0:
        return None
    seen: set[int] = set()
    skipped = 0
    for h, prompt in zip(hashes, prompts, strict=True):
        blocks = [int(x) for x in h]
        n = 0
        for x in blocks:
            if x not in seen:
                break
            n += 1
        skipped += hit_tokens(n * block_tokens, max(int(prompt), 1), kv_block)
        seen.update(blocks)
    return skipped / total


def _random_table(seed: int, rows: int = 300) -> tuple[pd.Series, np.ndarray]:
    """Rows of 0 to 9 ids drawn from a few values (repeated, moved, negative, shared out of
    order, empty lists), some as lists, the rest int64 arrays; prompts of 0 to 5,000 tokens."""
    rng = np.random.default_rng(seed)
    cells = []
    for i in range(rows):
        ids = rng.integers(-20, 60, rng.integers(0, 10))
        if rng.random() < 0.5:  # a shared prefix, then fresh ids
            ids = np.r_[np.arange(rng.integers(0, 6)), 1000 + 10 * i + np.arange(3)]
        cells.append(ids.tolist() if i % 3 == 0 else ids.astype(np.int64))
    hashes = pd.Series(np.empty(rows, dtype=object))
    hashes[:] = cells
    return hashes, rng.integers(0, 5000, rows)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("bucket", "rows"), [(1 << 22, 1 << 16), (40, 7), (7, 1), (100, 3)])
def test_the_figure_is_the_sets(seed, bucket, rows, monkeypatch):
    """Random tables, the ids sorted ``bucket`` at a time out of ``rows`` rows joined at a
    time: the same figure as the set of every id, exactly."""
    monkeypatch.setattr(canonical, "PLACES_SORTED_IDS", bucket)
    monkeypatch.setattr(canonical, "PLACES_JOINED_ROWS", rows)
    hashes, prompts = _random_table(seed)
    for kv_block in (1, 16):
        assert prefix_reuse(hashes, prompts, kv_block=kv_block) == _set_reuse(
            hashes, prompts, kv_block=kv_block)


def test_no_ids_no_rows_and_no_prompt_tokens():
    assert prefix_reuse(pd.Series([[], []], dtype=object), np.array([10, 600])) == 0.0
    assert prefix_reuse(pd.Series([], dtype=object), np.array([], dtype=np.int64)) is None
    assert prefix_reuse(pd.Series([[1], [1]]), np.zeros(2, dtype=np.int64)) is None


def test_most_hit_tokens_is_hit_tokens_bound_for_arrays():
    prompts = np.arange(-3, 2000)
    for block in (1, 16, 512):
        want = [hit_tokens(10**9, int(p), block) for p in prompts]
        assert most_hit_tokens(prompts, block).tolist() == want


def test_the_figure_holds_a_buckets_ids_not_every_id(monkeypatch):
    """1,000,000 ids (100,000 prompts of 10 blocks, 90% distinct), 100,000 sorted at a time
    out of 1,000 rows joined at a time: a Python set of every distinct id took 71 bytes an id
    traced at its peak; now a bucket's ids take about 50 bytes each (5 an id here), the rows'
    lengths, ends and leading ids 24 bytes a row (2.4 an id): 10 measured."""
    hashes = np.empty(100_000, dtype=object)
    hashes[:] = [np.r_[np.arange(1, dtype=np.int64) + (i % 1000), 10**6 + 9 * i + np.arange(9)]
                 for i in range(100_000)]
    prompts = np.full(100_000, 10 * 512)
    monkeypatch.setattr(canonical, "PLACES_SORTED_IDS", 100_000)
    monkeypatch.setattr(canonical, "PLACES_JOINED_ROWS", 1000)
    tracemalloc.start()
    try:
        figure = prefix_reuse(pd.Series(hashes), prompts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert figure == 99_000 * 512 / (100_000 * 10 * 512)
    assert peak / 1_000_000 < 16, f"{peak / 1_000_000:.1f} bytes an id"
