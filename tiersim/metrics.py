"""Per-request records -> latency, throughput, SLO and accuracy figures (DESIGN.md §6).

The runner hands over one flat row per request (a pandas DataFrame, the future
``requests.parquet``); this module derives latencies, percentiles, SLO attainment and throughput,
for the whole run (:func:`request_stats`); a tier's own figures (:class:`TierStats`) are
:func:`tiersim.summary._tier_stats`'s, from the run's latency arrays. Costs are
:mod:`tiersim.costs`; the summary is built from both by :mod:`tiersim.summary`. Every formula is
written out in ``docs/metrics.md``; keep the two in step.

Conventions: times are seconds from the trace start; a request is *dropped* when it has no finite
``finish_s``; percentiles ignore missing values (dropped requests, TPOT of one-token outputs) and
are ``None`` when nothing is left; the run's duration runs from 0 to the later of the last arrival
and the last finish.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Slo:
    """Latency objectives: a request meets the SLO when ttft <= ttft_s and tpot <= tpot_s,
    and, where ``e2e_s`` is set, its end-to-end latency <= e2e_s."""

    ttft_s: float
    tpot_s: float
    e2e_s: float | None = None


def add_latencies(requests: pd.DataFrame) -> pd.DataFrame:
    """Add ``ttft_s``, ``tpot_s`` and ``e2e_s`` from arrival, first-token and finish times.

    ``tpot_s = (finish_s - first_token_s) / (output_tokens - 1)``, missing for one-token outputs.
    """
    out = requests.copy()
    cols = latency_columns(out["arrival_s"].to_numpy(np.float64),
                           out["first_token_s"].to_numpy(np.float64),
                           out["finish_s"].to_numpy(np.float64),
                           out["output_tokens"].to_numpy())
    for name in ("ttft_s", "e2e_s", "tpot_s"):
        out[name] = cols[name]
    return out


def latency_columns(arrival_s: np.ndarray, first_token_s: np.ndarray, finish_s: np.ndarray,
                    output_tokens: np.ndarray) -> dict[str, np.ndarray]:
    """``ttft_s``, ``e2e_s`` and ``tpot_s`` (as :func:`add_latencies` defines them) as arrays,
    for building a request table in one go (no copy of the table per added column)."""
    gaps = (np.asarray(output_tokens) - 1).astype(np.float64)
    decode = finish_s - first_token_s
    return {"ttft_s": first_token_s - arrival_s, "e2e_s": finish_s - arrival_s,
            "tpot_s": np.where(gaps > 0, decode / np.where(gaps > 0, gaps, 1.0), np.nan)}


def percentile(values: pd.Series | np.ndarray, q: float) -> float | None:
    """The q-th percentile (numpy's linear interpolation) of the finite values, or None."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]  # a copy of its own: partitioned in place, not copied again
    return float(np.percentile(arr, q, overwrite_input=True)) if arr.size else None


def duration_s(requests: pd.DataFrame) -> float:
    """Seconds from the trace start (0) to the later of the last arrival and the last finish."""
    return span_s(requests["arrival_s"], requests["finish_s"])


def span_s(arrival_s, finish_s) -> float:
    """:func:`duration_s` from the two columns (Series or arrays; NaN finishes skipped)."""
    ends = [pd.Series(arrival_s).max(), pd.Series(finish_s).max()]
    ends = [float(e) for e in ends if pd.notna(e)]
    return max(ends) if ends else 0.0


def slo_met(requests: pd.DataFrame, slo: Slo) -> pd.Series:
    """Per request: finished, TTFT within the target, TPOT within it (or no TPOT), and the
    end-to-end latency within its target where one is set."""
    ttft_ok = requests["ttft_s"] <= slo.ttft_s
    tpot_ok = requests["tpot_s"].isna() | (requests["tpot_s"] <= slo.tpot_s)
    met = requests["finish_s"].notna() & ttft_ok & tpot_ok
    return met if slo.e2e_s is None else met & (requests["e2e_s"] <= slo.e2e_s)


@dataclass(frozen=True)
class RequestStats:
    """Whole-run figures from the request rows (see docs/metrics.md for each formula)."""

    requests: int
    completed: int
    dropped: int
    duration_s: float
    input_tokens: int
    output_tokens: int
    accuracy: float | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    tpot_p50_s: float | None
    tpot_p99_s: float | None
    e2e_p50_s: float | None
    e2e_p99_s: float | None
    queue_p50_s: float | None
    queue_p99_s: float | None
    throughput_tok_s: float | None
    throughput_req_s: float | None
    slo_attainment: float | None


def request_stats(requests: pd.DataFrame, slo: Slo) -> RequestStats:
    """Counts, tokens, accuracy, percentiles, throughput and SLO attainment of a run.

    ``requests`` needs: arrival_s, first_token_s, finish_s, ttft_s, tpot_s, e2e_s, queue_s,
    input_tokens, output_tokens, expected_accuracy (0 for a dropped request). Only its columns
    are read (``requests[name]``), so a :class:`tiersim.summary.RequestTable` works too.
    """
    n = len(requests)
    done = requests["finish_s"].notna()
    duration = duration_s(requests)
    out_tokens = int(requests["output_tokens"][done].sum())
    return RequestStats(
        requests=n, completed=int(done.sum()), dropped=int(n - done.sum()),
        duration_s=duration, input_tokens=int(requests["input_tokens"][done].sum()),
        output_tokens=out_tokens,
        accuracy=float(requests["expected_accuracy"][done].sum() / n) if n else None,
        **latency_percentiles(requests),
        throughput_tok_s=out_tokens / duration if duration > 0 else None,
        throughput_req_s=float(done.sum()) / duration if duration > 0 else None,
        slo_attainment=float(slo_met(requests, slo).mean()) if n else None,
    )


def latency_percentiles(requests: pd.DataFrame) -> dict[str, float | None]:
    """p50/p99 of TTFT, TPOT, end-to-end latency and queueing delay."""
    out = {}
    for col in ("ttft", "tpot", "e2e", "queue"):
        for q in (50, 99):
            out[f"{col}_p{q}_s"] = percentile(requests[f"{col}_s"], q)
    return out


@dataclass(frozen=True)
class TierStats:
    """One tier's request figures: requests answered on it, their share, p99 latencies and
    their accuracy (the run's accuracy over those requests alone, a dropped one scored 0; None
    for a tier that answered none) (:func:`tiersim.summary._tier_stats` makes them)."""

    requests: int
    share: float | None
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    accuracy: float | None = None


def utilization(busy_s: float, replicas: int, duration: float) -> float | None:
    """Busy replica-seconds over replicas x duration (None for an empty run)."""
    return busy_s / (replicas * duration) if duration > 0 and replicas > 0 else None


MAX_SPLITS = 63
"""Most prefill/decode splits simulated for one tier (``tiersim disagg`` and the planner,
at each size it tries; :mod:`tiersim.disagg`)."""


def prefill_counts(replicas: int) -> list[int]:
    """The prefill replica counts tried: every one from 1 to ``replicas - 1``, or
    :data:`MAX_SPLITS` of them spread evenly over that range (both ends included)."""
    if replicas - 1 <= MAX_SPLITS:
        return list(range(1, replicas))
    step = (replicas - 2) / (MAX_SPLITS - 1)
    return sorted({1 + round(i * step) for i in range(MAX_SPLITS)})


def slo_score(ttft_p99_s: float | None, tpot_p99_s: float | None,
              limits: tuple[float | None, ...], dropped: bool,
              e2e_p99_s: float | None = None) -> float:
    """The worst of a tier's p99 TTFT, TPOT and end-to-end latency over their limits
    (``limits``: the TTFT and TPOT SLOs, then the end-to-end one where held, ``slo.e2e_p99_s``;
    a missing one not scored; a missing p99, no request with that interval, not scored
    either); infinity when the tier dropped requests. The score ``tiersim disagg`` and the plan
    print for a prefill/decode split; splits are ranked by :func:`split_rank` (their drops
    first, then this score of their p99s alone), not by it: every split that drops scores
    infinity. Before round 56 the end-to-end limit was not scored, and the plan kept a split
    that missed it beside one that met every SLO (review56)."""
    if dropped:
        return float("inf")
    values = (ttft_p99_s, tpot_p99_s, e2e_p99_s)[:len(limits)]
    ratios = [value / limit for value, limit in zip(values, limits, strict=True)
              if value is not None and limit]
    return max(ratios, default=0.0)


def split_rank(ttft_p99_s: float | None, tpot_p99_s: float | None,
               limits: tuple[float | None, ...], dropped: int,
               e2e_p99_s: float | None = None) -> tuple[int, float]:
    """Where a prefill/decode split ranks, best first: fewest requests dropped, then the lower
    latency score (:func:`slo_score` of its p99s, its drops aside). Splits that drop the same
    requests (longer than the tier's context, at any split) rank by latency; before, each
    scored infinity and the first tried (aggregated serving) was kept, however slow.
    ``tiersim disagg`` and the planner rank splits by it."""
    return dropped, slo_score(ttft_p99_s, tpot_p99_s, limits, False, e2e_p99_s)


SCORE_WORDS = "score = worse of p99 TTFT and TPOT over their SLOs"
"""What a split's score is, as ``plan`` prints it and its report heads the splits' table."""

SCORE_E2E_WORDS = "score = worst of p99 TTFT, TPOT and end-to-end over their SLOs"
""":data:`SCORE_WORDS` where an end-to-end SLO is held (:func:`score_words`)."""


def score_words(e2e_limit: float | None) -> str:
    """What a split's score is (:func:`slo_score`): of TTFT and TPOT, and of the end-to-end
    p99 too where ``e2e_limit`` is held."""
    return SCORE_WORDS if e2e_limit is None else SCORE_E2E_WORDS


SCORE_WHOLE_BELOW = 1e9
"""Scores from 100 up to this print whole (``2,515``); above, in e-notation (``1.37e+299``)."""


def score_text(score: float | None) -> str:
    """A split's score as printed: 3 significant digits (``0.0663``, ``1.07``, ``2,515``,
    ``1.37e+299``, ``inf``), so splits that rank apart do not print alike (at 2 decimals,
    0.0663, 0.0675 and 0.0691 all read 0.07 under a "best" that picked the first). None is an
    infinite score as plan.json stores it (JSON has no infinity)."""
    if score is None or not math.isfinite(score):
        return "inf"
    if score >= SCORE_WHOLE_BELOW:  # an SLO of 1e-300 s: 300 digits filled the table
        return f"{score:#.3g}"
    return f"{score:,.0f}" if score >= 100 else f"{score:#.3g}".removesuffix(".")


DROP_STAR_WORDS = ("*: the split drops requests, so it misses the SLOs whatever its score, "
                   "which is of the p99s of the requests it served")
"""What a starred split score (:func:`starred_score`) is, as ``tiersim disagg``'s legend,
``plan``'s split line and the report's split table say it."""


def starred_score(score: float | None, ttft_p99_s: float | None, tpot_p99_s: float | None,
                  limits: tuple[float | None, ...], dropped: bool,
                  e2e_p99_s: float | None = None) -> str:
    """A split's score as printed: a split that drops requests scores infinity (it misses the
    SLOs), which told splits that all drop the same requests (longer than the tier's context,
    at every split) nothing, every one 'inf' while they ranked by their p99s; it shows the
    score of its p99s, the one it ranks by among splits that drop as many, starred
    (:data:`DROP_STAR_WORDS`; ``-*`` where no request it served has a latency)."""
    if not dropped:
        return score_text(score)
    if ttft_p99_s is None and tpot_p99_s is None:
        return "-*"
    return score_text(split_rank(ttft_p99_s, tpot_p99_s, limits, 1, e2e_p99_s)[1]) + "*"


def split_drops(row: dict) -> bool:
    """Whether a split of plan.json (``disaggregation.splits``) drops requests: plan.json
    records no count of them, but a split's score is infinite (null in JSON) exactly where it
    drops (:func:`slo_score`)."""
    score = row.get("score")
    return not isinstance(score, int | float) or not math.isfinite(score)


def plan_split_score(row: dict, limits: tuple[float | None, ...]) -> str:
    """A split of plan.json as ``plan`` and its report print its score (:func:`starred_score`,
    as ``tiersim disagg`` prints it), against the planned SLOs ``limits``."""
    return starred_score(row.get("score"), row.get("ttft_p99_s"), row.get("tpot_p99_s"), limits,
                         split_drops(row), row.get("e2e_p99_s"))
