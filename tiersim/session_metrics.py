"""Per-task figures of an agentic run, next to the per-request ones (``docs/metrics.md``).

A task is one ``session_id``. Task latency runs from its first step's arrival to its last
step's finish; task success is the product of its steps' correctness on the run's accuracy
basis (compounding error: a dropped step is wrong); cost per task sums its steps' costs, scaled
so that all requests together cost the run's headline (under ``provisioned`` an idle tier's cost
is in no request's ``cost_usd``; the per-task figure carries it as the per-request one,
headline / requests, does). The
per-request view misjudges the task: ``success_misjudged_by`` is per-request accuracy minus
task success, ``latency_ratio_p50`` the median task latency over the median request latency.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.metrics import percentile
from tiersim.results import SessionResult, StepTypeResult
from tiersim.text_columns import text_codes
from tiersim.workload.sessions import filled_step_types


def session_result(df: pd.DataFrame, requests: pd.DataFrame,
                   total_cost_usd: float | None = None) -> SessionResult | None:
    """Per-task figures of a run whose table has sessions (None otherwise); ``requests`` is the
    request table (a DataFrame or a :class:`tiersim.summary.RequestTable`), row for row with
    ``df``; ``total_cost_usd``: the run's headline cost, which the tasks' costs are scaled to
    (module docstring; ``None``: the steps' costs as they are)."""
    if "session_id" not in df.columns or "follows_id" not in df.columns:
        return None
    t = pd.DataFrame({
        "session": df["session_id"].to_numpy(), "arrival": requests["arrival_s"].to_numpy(),
        "finish": requests["finish_s"].to_numpy(), "acc": requests["expected_accuracy"].to_numpy(),
        "cost": requests["cost_usd"].to_numpy(np.float64),
        "done": requests["completed"].to_numpy(bool),
    })
    g = t.groupby("session", sort=False)
    all_done = g["done"].all().to_numpy()
    latency = np.where(all_done, (g["finish"].max() - g["arrival"].min()).to_numpy(), np.nan)
    success = g["acc"].prod().to_numpy(np.float64)
    steps = g.size().to_numpy(np.float64)
    cost = _to_headline(g["cost"].sum().to_numpy(np.float64), total_cost_usd)
    per_request = float(t["acc"].mean())
    e2e_p50 = percentile(requests["e2e_s"].to_numpy(np.float64), 50)
    lat_p50 = percentile(latency, 50)
    return SessionResult(
        tasks=len(steps), completed_tasks=int(all_done.sum()),
        steps_per_task_mean=float(steps.mean()), steps_per_task_max=int(steps.max()),
        task_latency_p50_s=lat_p50, task_latency_p99_s=percentile(latency, 99),
        task_latency_mean_s=float(np.nanmean(latency)) if all_done.any() else None,
        task_success=float(success.mean()),
        cost_per_task_usd=float(cost.mean()) if np.isfinite(cost).all() else None,
        per_request_accuracy=per_request,
        success_misjudged_by=per_request - float(success.mean()),
        request_e2e_p50_s=e2e_p50,
        latency_ratio_p50=lat_p50 / e2e_p50 if lat_p50 is not None and e2e_p50 else None,
        step_types=step_type_results(df, requests),
    )


def task_success(df: pd.DataFrame, correctness: np.ndarray) -> float | None:
    """Mean over tasks (``session_id``) of the product of their steps' ``correctness`` (per
    row of ``df``, a dropped step scored 0), as :func:`session_result`'s ``task_success``; None
    where ``df`` has no sessions. A uniform fleet's task success is this of its tier's column
    (:func:`tiersim.savings.same_basis`), a plan design's of its scored requests."""
    if "session_id" not in df.columns or "follows_id" not in df.columns or not len(df):
        return None
    t = pd.DataFrame({"session": df["session_id"].to_numpy(),
                      "acc": np.asarray(correctness, dtype=np.float64)})
    return float(t.groupby("session", sort=False)["acc"].prod().mean())


def _to_headline(task_costs: np.ndarray, total_cost_usd: float | None) -> np.ndarray:
    """The tasks' costs scaled to sum to the headline (as they are without one); in equal
    shares when no step was charged anything (every one dropped) and the fleet still cost
    money: a provisioned fleet is paid whether or not it served a request."""
    column = float(task_costs.sum())
    if total_cost_usd is None or not np.isfinite(column):
        return task_costs
    if column <= 0:
        share = float(total_cost_usd) / len(task_costs)
        return task_costs if share <= 0 else np.full(len(task_costs), share)
    return task_costs * (float(total_cost_usd) / column)


def step_type_results(df: pd.DataFrame, requests: pd.DataFrame) -> tuple[StepTypeResult, ...]:
    """Per step type: how many steps, their accuracy and the tiers that served them; a step
    with no type counts as the default ``step``, as the trace readers read an empty cell (it
    was left out: the counts summed to fewer than the steps)."""
    if "step_type" not in df.columns:
        return ()
    types = pd.Series(filled_step_types(df["step_type"]))
    codes, kinds = text_codes(types)  # not each row's type as text: a copy a row
    out = []
    for code, kind in sorted(enumerate(kinds), key=lambda pair: pair[1]):
        rows = codes == code
        if not rows.any():  # a category no step has
            continue
        tiers = requests["final_tier"][rows].value_counts(normalize=True)
        out.append(StepTypeResult(
            step_type=kind, requests=int(rows.sum()),
            accuracy=float(requests["expected_accuracy"][rows].mean()),
            final_tier_shares={str(k): float(v) for k, v in sorted(tiers.items())},
        ))
    return tuple(out)
