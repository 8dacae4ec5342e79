"""Rows of the agentic sections (per-task next to per-request, the response cache), shared by
``tiersim run``'s printout and the HTML report. Each row is ``[label, value(s)..., unit]``;
values are plain numbers (None when missing), formatted by the caller. Each section's
``*_source`` says where its figures come from, as the headline's source column does, under the
console's table and the report's alike."""

from __future__ import annotations

from typing import Any

from tiersim.results import RunResult, percent_text

Row = list[Any]


def session_rows(run: RunResult) -> list[Row]:
    """``[figure, per-request view, per-task view, unit]``: what a per-request dashboard shows
    against what the tasks got, and how far it misjudges them."""
    s = run.sessions
    if s is None:
        return []
    return [
        ["count", run.requests, s.tasks, f"requests / tasks ({s.completed_tasks:,} completed)"],
        ["steps per task (mean / max)", None, s.steps_per_task_mean,
         f"max {s.steps_per_task_max:,}"],
        ["success", s.per_request_accuracy, s.task_success,
         "fraction: accuracy per request / product of step correctness per task"],
        ["per-request view overstates success by", None, s.success_misjudged_by,
         "fraction (accuracy - task success)"],
        ["latency p50", s.request_e2e_p50_s, s.task_latency_p50_s,
         "s (end-to-end / first arrival to last finish)"],
        ["latency p99", run.e2e_p99_s, s.task_latency_p99_s, "s"],
        ["task latency / request latency (p50)", None, s.latency_ratio_p50, "x"],
        ["cost", _per_request_cost(run), s.cost_per_task_usd,
         f"USD ({run.cost_model}) per request / per task"],
    ]


def step_type_rows(run: RunResult) -> list[Row]:
    """``[step type, steps, accuracy, final tiers]`` of an agentic run."""
    if run.sessions is None:
        return []
    return [[k.step_type, k.requests, k.accuracy,
             # 0.3 % of a step type's requests read "0%", 99.7 % "100%" (percent_text)
             ", ".join(f"{t} {percent_text(share, 0)}" for t, share in k.final_tier_shares.items())]
            for k in run.sessions.step_types]


def cache_rows(run: RunResult) -> list[Row]:
    """``[figure, with the cache, without it, unit]`` of a run with a response cache."""
    c = run.response_cache
    if c is None:
        return []
    return [
        ["requests answered by the cache", c.hits, 0,
         f"of {c.requests:,} requests: hit rate {percent_text(c.hit_rate, 1)} ({c.mode}, "
         f"size {c.size}, keys: {c.key_source})"],
        ["busy GPU-hours", c.gpu_hours_busy, c.gpu_hours_busy_without,
         f"h (saved {c.gpu_hours_saved:.3g})"],
        [f"cost ({run.cost_model})", c.cost_usd, c.cost_without_usd,
         f"USD (saved {_g(c.cost_saved_usd)}; attributed saved {_g(c.attributed_saved_usd)})"],
        ["end-to-end mean", c.e2e_mean_s, c.e2e_mean_without_s,
         f"s (every answered request; a hit takes {c.lookup_s:g} s, or an LRU hit the rest of "
         "the shared answer still being generated)"],
        ["end-to-end p50", c.e2e_p50_s, c.e2e_p50_without_s, "s"],
        ["end-to-end p99", c.e2e_p99_s, c.e2e_p99_without_s, "s"],
        ["TTFT p50", c.ttft_p50_s, c.ttft_p50_without_s, "s"],
    ]


def session_source(run: RunResult) -> str:
    """Where the per-task and step-type figures come from: latencies simulated on the step
    times, cost in the run's ledger, success and accuracy on the tiers' accuracy source."""
    src = run.sources
    return (f"latencies simulated on the step times ({src.latency}); cost: {src.cost}; "
            f"success and accuracy: {src.accuracy}")


def step_type_source(run: RunResult) -> str:
    """Where the step types' accuracy comes from (their steps and shares are this run's)."""
    return f"accuracy: {run.sources.accuracy}"


def cache_source(run: RunResult) -> str:
    """Where the response cache's figures come from: both runs simulated on the step times,
    cost in the run's ledger."""
    src = run.sources
    return (f"both runs simulated on the step times ({src.latency}); cost: {src.cost}")


def prefix_source(run: RunResult) -> str:
    """Where the prefix-cache figures come from: the tokens found cached as the replicas'
    caches filled and evicted in the simulation, the bound counted on the tier's requests."""
    return (f"found cached: simulated on the replicas' caches ({run.sources.latency}); "
            "unbounded cache: counted on the same requests' prefix blocks")


NO_SHARED_BLOCK = "no request on the tier shares a prefix block with an earlier one"
"""Why a tier's unbounded-cache bound is 0 (:func:`bound_words`)."""


def bound_words(bound: float | None) -> str:
    """Why a tier's ``prefix_hit_bound`` is what it is, where that is 0: "" otherwise. A
    cascade's escalation tier showed "unbounded cache 0 %", which read as a bug though it is
    true: the requests it took, escalated ones, began with no block an earlier one had."""
    return f" ({NO_SHARED_BLOCK})" if bound == 0 else ""


def _per_request_cost(run: RunResult) -> float | None:
    return run.cost_usd / run.requests if run.cost_usd is not None and run.requests else None


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
