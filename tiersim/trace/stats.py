"""Summary statistics of a canonical request table, as shown by ``tiersim trace inspect``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tiersim.prefix_hits import most_hit_tokens
from tiersim.trace import canonical
from tiersim.trace.canonical import HASH_BLOCK_TOKENS

PERCENTILES = (50, 90, 99)
MIN_RATE_SPAN_S = 1e-6
"""The shortest time a rate is read over (a span, or ``tiersim trace inspect --window`` as
cut to the trace's arrivals): a microsecond, the finest step the simulated clock keeps over a
trace's span. Over less, the rows are one instant to the clock and no rate is measured
(arrivals 1e-300 s apart read as 1.3e+300 requests/s)."""


def span_rate(arrivals: int, span: float) -> float:
    """Arrivals a second of ``arrivals`` arrival times spanning ``span`` seconds (first to
    last; ``span`` > 0, ``arrivals`` >= 2): the ``arrivals - 1`` gaps between them over their
    span. The first arrival starts the span, so it is not one of the gaps it measures: at
    Poisson arrivals the span is the sum of ``arrivals - 1`` exponential gaps, and this is the
    maximum-likelihood rate (``arrivals / span`` reads it ``n / (n - 1)`` high: 50 % at 3
    arrivals). The one definition ``tiersim trace inspect``'s span rate and the router's price
    (:func:`tiersim.inputs.arrival_rate`, :meth:`tiersim.inputs.Arrivals.of`) share."""
    return (arrivals - 1) / span


def trace_stats(df: pd.DataFrame, window_s: float | None = None,
                starts: np.ndarray | None = None) -> dict:
    """Rows, span, rate, burstiness and token percentiles of a request table.

    ``span_s`` = last - first arrival; ``rate_rps`` = rows / ``window_s`` when the table is a
    window of that many seconds (``rate_basis`` "window": a window set before the arrivals
    counts each of them), else (rows - 1) / span_s (``rate_basis`` "span": :func:`span_rate`,
    the rate a run's price reads; rows / span_s until round 56); ``tiersim trace inspect``
    gives a window cut to the trace's first and last arrival, so no empty time before or
    after the trace is counted; over less than
    :data:`MIN_RATE_SPAN_S`, or from fewer than two arrivals, no rate is read (None: one
    request in a window cut to the trace's last arrival read 17,857 req/s, one over the 56 us
    from the window's start to itself).
    ``interarrival_cv`` = std / mean of the gaps between consecutive arrivals (population std; 1
    for Poisson, larger is burstier). Token statistics are ``p50, p90, p99`` (linear
    interpolation) and ``mean``. ``task_types`` (only with a ``task_type`` column): per type,
    its requests and mean tokens (:func:`task_type_stats`). ``prefix_reuse`` (only with
    ``prefix_hashes``) is the share of prompt tokens an unbounded prefix cache shared by every
    request would skip (:func:`prefix_reuse`): what a one-tier run of the whole trace reports as
    its ``prefix_hit_bound``. ``starts``: for a session trace, the arrivals of its sessions'
    first steps, which the timing keys then count (a later step arrives when its predecessor
    finishes plus its tool time, which only a run knows). Timing keys are None for a table
    without ``arrival_s`` or with fewer rows than they need.
    """
    stats: dict = {"rows": int(len(df))}
    t = df["arrival_s"].to_numpy() if "arrival_s" in df else None
    if t is not None and starts is not None:
        t = starts
    stats.update(_timing(t))
    if t is not None and window_s is not None:
        stats.update(window_s=window_s, rate_basis="window",
                     rate_rps=_finite(len(t) / window_s)
                     if window_s >= MIN_RATE_SPAN_S and len(t) >= 2 else None)
    for col in ("input_tokens", "output_tokens"):
        stats[col] = _token_stats(df[col].to_numpy())
    if "prefix_hashes" in df:
        stats["prefix_reuse"] = prefix_reuse(df["prefix_hashes"], df["input_tokens"].to_numpy())
    if "task_type" in df:
        stats["task_types"] = task_type_stats(df)
    return stats


def task_type_stats(df: pd.DataFrame) -> list[dict]:
    """Per ``task_type`` of a table holding the column: its requests and mean input and output
    tokens, most requests first (then by name), types with no row left out (a category a
    window cut away). Before, ``tiersim trace inspect`` said nothing of the column, which the
    router's classifier reads as a feature and a response cache may key on."""
    groups = df.groupby(df["task_type"].astype(str), observed=True, sort=True)
    table = groups.agg(requests=("input_tokens", "size"),
                       input_tokens_mean=("input_tokens", "mean"),
                       output_tokens_mean=("output_tokens", "mean"))
    table = table[table["requests"] > 0].sort_values("requests", ascending=False, kind="stable")
    return [{"task_type": str(name), "requests": int(row.requests),
             "input_tokens_mean": float(row.input_tokens_mean),
             "output_tokens_mean": float(row.output_tokens_mean)}
            for name, row in table.iterrows()]


def _timing(t: np.ndarray | None) -> dict:
    out = {"span_s": None, "rate_rps": None, "rate_basis": None, "window_s": None,
           "interarrival_cv": None}
    if t is None or len(t) < 2:
        return out
    span = float(t[-1] - t[0])
    out["span_s"] = span
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out["rate_rps"] = _finite(span_rate(len(t), span)) if span >= MIN_RATE_SPAN_S else None
        out["rate_basis"] = "span" if out["rate_rps"] is not None else None
        gaps = np.diff(t)
        mean = gaps.mean() if len(gaps) >= 2 else None
        if mean is not None and mean > 0:
            out["interarrival_cv"] = _finite(float(_std_in_place(gaps, mean) / mean))
    return out


def _std_in_place(values: np.ndarray, mean: np.floating) -> np.floating:
    """``values.std()`` (population), its ``mean`` given, computed as numpy computes it but
    in ``values`` itself, which it overwrites: numpy's copy of a 20M-row trace's 160 MB of
    gaps was ``tiersim trace inspect``'s peak."""
    np.subtract(values, mean, out=values)
    np.square(values, out=values)
    var = np.add.reduce(values)
    return np.sqrt(var.dtype.type(var / len(values)))


def _finite(x: float) -> float | None:
    """``x``, or None where it overflowed (a span of 1e-320 s gives an infinite rate)."""
    return x if math.isfinite(x) else None


def _token_stats(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {f"p{p}": None for p in PERCENTILES} | {"mean": None}
    pct = np.percentile(values, PERCENTILES)
    return {f"p{p}": float(v) for p, v in zip(PERCENTILES, pct, strict=True)} | {
        "mean": float(values.mean())}


def prefix_reuse(hashes: pd.Series, prompts: np.ndarray,
                 block_tokens: int = HASH_BLOCK_TOKENS, kv_block: int = 16) -> float | None:
    """Share of prompt tokens an unbounded prefix cache shared by every request would skip,
    requests taken in order (None without prompt tokens).

    As the engine's prefix cache counts a hit: a request skips its leading blocks whose hashes
    an earlier request held (a prefix match: the first unseen block ends it), in whole blocks of
    ``block_tokens``, at most the whole KV blocks of ``kv_block`` tokens (vLLM's default 16)
    before its last prompt token (:func:`tiersim.engine.prefix_cache.hit_tokens`). Blocks
    shared out of order (``[3, 2]`` after ``[1, 2]``) are no hit, as in the engine.
    """
    total = int(np.sum(prompts))
    if total <= 0:
        return None
    found = leading_seen(hashes.to_numpy()) * block_tokens
    prompts = np.maximum(np.asarray(prompts).astype(np.int64), 1)
    return int(np.minimum(found, most_hit_tokens(prompts, kv_block)).sum()) / total


def leading_seen(hashes: np.ndarray) -> np.ndarray:
    """Each row's leading ids (``hashes``: arrays or lists of ids, rows in order) that some
    earlier row holds: where its first id unseen before it is, or its length.

    NOTE (memory): an id is seen before its row unless the row is the first to hold it; each
    id's first row is found by sorting the ids a bucket at a time
    (:func:`tiersim.trace.canonical.id_buckets`, as the hash-place check sorts them). A Python
    set of every distinct id took about 30 bytes an id (a 1M-line Mooncake trace of 30.5M
    ids: 1,796 MB at ``tiersim trace inspect``'s peak, 905 MB after the read)."""
    lengths = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    ends = np.cumsum(lengths)
    leading = lengths.copy()
    for ids, places, at in canonical.id_buckets(hashes, lengths, ends):
        _first_unseen(ids, places, at, ends, leading)
    return leading


def _first_unseen(ids: np.ndarray, places: np.ndarray, at: np.ndarray | None,
                  ends: np.ndarray, leading: np.ndarray) -> None:
    """Lower ``leading`` (each row's first unseen place) to the place of each row's first id
    among ``ids`` (at joined positions ``at``, increasing; None: every joined id, with their
    ``places``; rows end before ``ends``) that no earlier row holds."""
    if not len(ids):
        return
    rows = np.searchsorted(ends, np.arange(len(ids)) if at is None else at, side="right")
    order = np.argsort(ids, kind="stable")  # by id, then row, then place
    ids = ids[order]
    new = np.r_[True, ids[1:] != ids[:-1]]  # an id's first sighting, in sorted order
    del ids
    sorted_rows = rows[order]
    first_rows = sorted_rows[new][np.cumsum(new) - 1]  # each sorted id's first row
    unseen = np.empty(len(order), dtype=bool)
    unseen[order] = sorted_rows == first_rows
    del order, sorted_rows, first_rows
    at_unseen = np.flatnonzero(unseen)
    rows = rows[at_unseen]  # increasing: a row's first here is its lowest place
    head = np.r_[True, rows[1:] != rows[:-1]]
    rows, low = rows[head], places[at_unseen[head]]
    leading[rows] = np.minimum(leading[rows], low)
