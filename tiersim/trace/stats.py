"""Summary statistics of a canonical request table, as shown by ``tiersim trace inspect``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PERCENTILES = (50, 90, 99)


def trace_stats(df: pd.DataFrame, window_s: float | None = None) -> dict:
    """Rows, span, rate, burstiness and token percentiles of a request table.

    ``span_s`` = last - first arrival; ``rate_rps`` = rows / ``window_s`` when the table is a
    window of that many seconds (``rate_basis`` "window"), else rows / span_s (``rate_basis``
    "span"); ``tiersim trace inspect`` gives a window cut to the trace's first and last
    arrival, so no empty time before or after the trace is counted.
    ``interarrival_cv`` = std / mean of the gaps between consecutive arrivals (population std;
    1 for Poisson, larger is burstier). Token statistics are ``p50, p90, p99`` (linear
    interpolation) and ``mean``. ``prefix_reuse`` (only with ``prefix_hashes``) is the fraction
    of prefix blocks seen earlier in the trace, i.e. the hit rate of an infinite cache. Timing
    keys are None for a table without ``arrival_s`` or with fewer rows than they need.
    """
    stats: dict = {"rows": int(len(df))}
    t = df["arrival_s"].to_numpy() if "arrival_s" in df else None
    stats.update(_timing(t))
    if t is not None and window_s is not None:
        stats.update(window_s=window_s, rate_basis="window",
                     rate_rps=_finite(len(t) / window_s) if window_s > 0 else None)
    for col in ("input_tokens", "output_tokens"):
        stats[col] = _token_stats(df[col].to_numpy())
    if "prefix_hashes" in df:
        stats["prefix_reuse"] = prefix_reuse(df["prefix_hashes"])
    return stats


def _timing(t: np.ndarray | None) -> dict:
    out = {"span_s": None, "rate_rps": None, "rate_basis": None, "window_s": None,
           "interarrival_cv": None}
    if t is None or len(t) < 2:
        return out
    span = float(t[-1] - t[0])
    out["span_s"] = span
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out["rate_rps"] = _finite(len(t) / span) if span > 0 else None
        out["rate_basis"] = "span" if out["rate_rps"] is not None else None
        gaps = np.diff(t)
        if len(gaps) >= 2 and gaps.mean() > 0:
            out["interarrival_cv"] = _finite(float(gaps.std() / gaps.mean()))
    return out


def _finite(x: float) -> float | None:
    """``x``, or None where it overflowed (a span of 1e-320 s gives an infinite rate)."""
    return x if math.isfinite(x) else None


def _token_stats(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {f"p{p}": None for p in PERCENTILES} | {"mean": None}
    pct = np.percentile(values, PERCENTILES)
    return {f"p{p}": float(v) for p, v in zip(PERCENTILES, pct, strict=True)} | {
        "mean": float(values.mean())}


def prefix_reuse(hashes: pd.Series) -> float | None:
    """Fraction of all prefix blocks whose hash appeared in an earlier request (or earlier)."""
    arrays = [np.asarray(h, dtype=np.int64) for h in hashes]
    if not arrays:
        return None
    flat = np.concatenate(arrays)
    if flat.size == 0:
        return None
    return float(pd.Series(flat).duplicated().mean())
