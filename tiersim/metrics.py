"""Per-request records -> the summary of DESIGN.md §6.

The runner hands over one flat row per request (a pandas DataFrame, the future
``requests.parquet``) and one :class:`TierUsage` per tier; this module derives latencies,
percentiles, SLO attainment, throughput and cost. Every formula is written out in
``docs/metrics.md``; keep the two in step.

Conventions: times are seconds from the trace start; a request is *dropped* when it has no finite
``finish_s``; percentiles ignore missing values (dropped requests, TPOT of one-token outputs) and
are ``None`` when nothing is left; the run's duration runs from 0 to the later of the last arrival
and the last finish.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

COST_MODELS = ("attributed", "provisioned", "fixed_per_request")


@dataclass(frozen=True)
class TierUsage:
    """One tier's size, price and what the engine measured on it.

    ``busy_s`` sums, over the tier's replicas, the seconds each replica spent running iterations;
    ``kv_peak_blocks`` is the largest number of KV blocks in use on any one replica, out of
    ``num_blocks`` per replica.
    """

    name: str
    replicas: int
    gpus_per_replica: int
    cost_per_gpu_hour: float
    busy_s: float
    kv_peak_blocks: int
    num_blocks: int
    cost_per_request_usd: float | None = None

    @property
    def usd_per_replica_second(self) -> float:
        """Price of one replica (all its GPUs) for one second."""
        return self.gpus_per_replica * self.cost_per_gpu_hour / 3600.0


@dataclass(frozen=True)
class Slo:
    """Latency objectives: a request meets the SLO when ttft <= ttft_s and tpot <= tpot_s."""

    ttft_s: float
    tpot_s: float


def add_latencies(requests: pd.DataFrame) -> pd.DataFrame:
    """Add ``ttft_s``, ``tpot_s`` and ``e2e_s`` from arrival, first-token and finish times.

    ``tpot_s = (finish_s - first_token_s) / (output_tokens - 1)``, missing for one-token outputs.
    """
    out = requests.copy()
    out["ttft_s"] = out["first_token_s"] - out["arrival_s"]
    out["e2e_s"] = out["finish_s"] - out["arrival_s"]
    gaps = (out["output_tokens"] - 1).astype("float64")
    decode = out["finish_s"] - out["first_token_s"]
    out["tpot_s"] = np.where(gaps > 0, decode / gaps.where(gaps > 0, 1.0), np.nan)
    return out


def percentile(values: pd.Series | np.ndarray, q: float) -> float | None:
    """The q-th percentile (numpy's linear interpolation) of the finite values, or None."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    return float(np.percentile(arr, q)) if arr.size else None


def duration_s(requests: pd.DataFrame) -> float:
    """Seconds from the trace start (0) to the later of the last arrival and the last finish."""
    ends = [requests["arrival_s"].max(), requests["finish_s"].max()]
    ends = [float(e) for e in ends if pd.notna(e)]
    return max(ends) if ends else 0.0


def slo_met(requests: pd.DataFrame, slo: Slo) -> pd.Series:
    """Per request: finished, TTFT within the target, and TPOT within it (or no TPOT)."""
    ttft_ok = requests["ttft_s"] <= slo.ttft_s
    tpot_ok = requests["tpot_s"].isna() | (requests["tpot_s"] <= slo.tpot_s)
    return requests["finish_s"].notna() & ttft_ok & tpot_ok


def attributed_cost(gpu_s: np.ndarray, usd_per_replica_second: np.ndarray) -> np.ndarray:
    """USD per request from its share of replica time (the engine's ``gpu_s``) and the price."""
    return np.asarray(gpu_s, dtype=np.float64) * np.asarray(usd_per_replica_second)


def provisioned_cost(tier: TierUsage, duration: float) -> float:
    """USD for keeping every replica of the tier up for the whole run."""
    return tier.replicas * tier.usd_per_replica_second * duration


def tier_cost(tier: TierUsage, requests: pd.DataFrame, index: int, cost_model: str,
              duration: float) -> float:
    """A tier's cost under the chosen cost model.

    attributed: the replica time the tier spent running iterations (``busy_s``) times its price,
    which equals the sum of its requests' attributed costs; provisioned: replicas x GPUs x price x
    duration; fixed_per_request: the tier's price per request times the passes it ran.
    """
    if cost_model == "provisioned":
        return provisioned_cost(tier, duration)
    if cost_model == "attributed":
        return tier.busy_s * tier.usd_per_replica_second
    return passes_on(requests, index) * (tier.cost_per_request_usd or 0.0)


def passes_on(requests: pd.DataFrame, index: int) -> int:
    """Passes tier ``index`` ran: first passes that were admitted (column ``first_ran``, true
    when absent) plus second passes (``escalate_to``: -1 where none ran)."""
    first = requests["tier"] == index
    if "first_ran" in requests:
        first &= requests["first_ran"].astype(bool)
    return int(first.sum() + (requests["escalate_to"] == index).sum())


def summarize(requests: pd.DataFrame, tiers: list[TierUsage], slo: Slo,
              cost_model: str = "attributed") -> dict:
    """The run summary (DESIGN.md §6) from per-request rows with latencies added.

    ``requests`` needs: arrival_s, first_token_s, finish_s, ttft_s, tpot_s, e2e_s, input_tokens,
    output_tokens, tier (int, first pass), escalate_to (int, -1 = none), final_tier (int),
    expected_accuracy, cost_usd. ``tiers`` are indexed as those ints.
    """
    if cost_model not in COST_MODELS:
        raise ValueError(f"cost_model must be one of {COST_MODELS} (got {cost_model!r})")
    n = len(requests)
    done = requests["finish_s"].notna()
    duration = duration_s(requests)
    out_tokens = int(requests.loc[done, "output_tokens"].sum())
    costs = cost_breakdown(requests, tiers, duration)
    cost = costs[f"{cost_model}_usd"]
    gpu_hours = sum(t.replicas * t.gpus_per_replica for t in tiers) * duration / 3600.0
    return {
        "requests": n,
        "completed": int(done.sum()),
        "dropped": int(n - done.sum()),
        "duration_s": duration,
        "cost_model": cost_model,
        "cost_usd": cost,
        "cost": costs,
        "gpu_hours": gpu_hours,
        "gpu_hours_busy": sum(t.busy_s * t.gpus_per_replica for t in tiers) / 3600.0,
        "output_tokens": out_tokens,
        "input_tokens": int(requests.loc[done, "input_tokens"].sum()),
        "cost_per_1m_output_tokens": cost / out_tokens * 1e6 if out_tokens else None,
        "accuracy": float(requests.loc[done, "expected_accuracy"].sum() / n) if n else None,
        **latency_percentiles(requests),
        "throughput_tok_s": out_tokens / duration if duration > 0 else None,
        "throughput_req_s": float(done.sum()) / duration if duration > 0 else None,
        "slo_attainment": float(slo_met(requests, slo).mean()) if n else None,
        "tiers": tier_summaries(requests, tiers, cost_model, duration),
    }


def cost_breakdown(requests: pd.DataFrame, tiers: list[TierUsage], duration: float) -> dict:
    """Total USD under each cost model; ``fixed_per_request`` is None without its prices."""
    out: dict[str, float | None] = {}
    for model in COST_MODELS:
        if model == "fixed_per_request" and any(t.cost_per_request_usd is None for t in tiers):
            out[f"{model}_usd"] = None
            continue
        out[f"{model}_usd"] = sum(
            tier_cost(t, requests, i, model, duration) for i, t in enumerate(tiers)
        )
    return out


def latency_percentiles(requests: pd.DataFrame) -> dict[str, float | None]:
    """p50/p99 of TTFT, TPOT, end-to-end latency and queueing delay."""
    out = {}
    for col in ("ttft", "tpot", "e2e", "queue"):
        for q in (50, 99):
            out[f"{col}_p{q}_s"] = percentile(requests[f"{col}_s"], q)
    return out


def tier_summaries(requests: pd.DataFrame, tiers: list[TierUsage], cost_model: str,
                   duration: float) -> dict[str, dict]:
    """Per tier: requests answered, share, p99 latencies, utilisation, peak KV use, cost."""
    n = len(requests)
    out = {}
    for i, tier in enumerate(tiers):
        mine = requests[requests["final_tier"] == i]
        out[tier.name] = {
            "requests": len(mine),
            "share": len(mine) / n if n else None,
            "passes": passes_on(requests, i),
            "ttft_p99_s": percentile(mine["ttft_s"], 99),
            "tpot_p99_s": percentile(mine["tpot_s"], 99),
            "utilization": tier.busy_s / (tier.replicas * duration) if duration > 0 else None,
            "kv_peak_frac": tier.kv_peak_blocks / tier.num_blocks if tier.num_blocks else None,
            "cost_usd": tier_cost(tier, requests, i, cost_model, duration),
            "replicas": tier.replicas,
            "gpus": tier.replicas * tier.gpus_per_replica,
        }
    return out
