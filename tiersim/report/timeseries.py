"""Time-weighted time series of a run, per tier, from the engine's per-replica load series.

The engine writes, per replica, the exact time-weighted means of its state (requests running,
requests waiting, KV blocks in use) over each interval of a fixed grid (``interval_s``
seconds; :mod:`tiersim.engine.load_series`), one row where they change. Each row holds until
that replica's next one: a step function, 0 before its first row (a replica that never ran has
none: 0 throughout). A tier's series is the sum over its replicas (running, waiting) or their
mean over every replica of the tier (KV use as a fraction of each replica's capacity).

Each time bucket ``[e_j, e_{j+1})`` reports the time-weighted mean of the tier's step function
(its integral over the bucket divided by the bucket's width) and its maximum over the bucket
(the value holding at ``e_j`` and every value that starts inside the bucket). With edges on the
engine's grid (:func:`grid_edges`) the mean is exact, and the queue's maximum, from each row's
``waiting_max``, is the longest queue any one replica held in the bucket (:func:`tier_peaks`).
Older files of point samples (no ``interval_s``) are read the same way, as step functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Step:
    """A step function: ``values[i]`` holds on ``[times[i], times[i+1])``; 0 before
    ``times[0]``; the last value holds to the end."""

    times: np.ndarray
    values: np.ndarray


def replica_step(times: np.ndarray, values: np.ndarray) -> Step:
    """One replica's samples as a step function (sorted by time; at equal times the last
    sample wins)."""
    order = np.argsort(times, kind="stable")
    t, v = np.asarray(times, float)[order], np.asarray(values, float)[order]
    last = np.r_[t[1:] != t[:-1], True] if len(t) else np.zeros(0, bool)
    return Step(t[last], v[last])


def add_steps(steps: list[Step], weight: float = 1.0) -> Step:
    """The sum of step functions, times ``weight`` (e.g. 1 / replicas for a mean)."""
    if not steps:
        return Step(np.zeros(0), np.zeros(0))
    times = np.concatenate([s.times for s in steps])
    deltas = np.concatenate([np.diff(np.r_[0.0, s.values]) for s in steps])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    value = np.cumsum(deltas) * weight
    last = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, bool)
    return Step(times[last], value[last])


def value_at(step: Step, t: np.ndarray) -> np.ndarray:
    """The step function's value at each time in ``t``."""
    idx = np.searchsorted(step.times, t, side="right") - 1
    if len(step.values) == 0:
        return np.zeros(len(t))
    return np.where(idx >= 0, step.values[np.clip(idx, 0, None)], 0.0)


def integral_to(step: Step, t: np.ndarray) -> np.ndarray:
    """The integral of the step function from 0 (or its first time, before which it is 0) to
    each time in ``t``."""
    if len(step.times) == 0:
        return np.zeros(len(t))
    widths = np.diff(step.times)
    area = np.r_[0.0, np.cumsum(step.values[:-1] * widths)]
    idx = np.searchsorted(step.times, t, side="right") - 1
    safe = np.clip(idx, 0, None)
    return np.where(idx >= 0, area[safe] + step.values[safe] * (t - step.times[safe]), 0.0)


def bucket(step: Step, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean and maximum of the step function in each bucket between ``edges``."""
    edges = np.asarray(edges, float)
    area = integral_to(step, edges)
    width = np.diff(edges)
    mean = np.divide(np.diff(area), width, out=np.zeros(len(width)), where=width > 0)
    peak = value_at(step, edges[:-1])
    inside = np.searchsorted(edges, step.times, side="right") - 1
    ok = (inside >= 0) & (inside < len(width)) & (step.times > edges[np.clip(inside, 0, None)])
    np.maximum.at(peak, inside[ok], step.values[ok])
    return mean, peak


def tier_steps(frame: pd.DataFrame, time_col: str, values: pd.Series, how: str,
               replicas: dict[str, int] | None = None) -> dict[str, Step]:
    """Per tier: the sum (``how="sum"``) or mean (``"mean"``) over its replicas of each
    replica's step function of ``values``.

    ``replicas``: each tier's count of engine replicas, where known. A replica that never ran
    has no sample and holds 0 throughout, so a mean divides by that count (or by the replicas
    sampled, if more), not by the replicas sampled alone."""
    out = {}
    for tier, steps in replica_steps(frame, time_col, values).items():
        count = max(len(steps), (replicas or {}).get(str(tier), 0))
        out[tier] = add_steps(steps, 1.0 / count if how == "mean" else 1.0)
    return out


def replica_steps(frame: pd.DataFrame, time_col: str, values: pd.Series) -> dict[str, list[Step]]:
    """Per tier: each of its replicas' step functions of ``values`` (NaN read as 0)."""
    frame = frame.assign(_v=np.nan_to_num(values.to_numpy(dtype=float)))
    out = {}
    for tier, group in frame.groupby("tier", sort=False):
        parts = group.groupby("replica", sort=False) if "replica" in group else [(0, group)]
        out[tier] = [replica_step(part[time_col].to_numpy(), part["_v"].to_numpy())
                     for _, part in parts]
    return out


def tier_peaks(frame: pd.DataFrame, time_col: str, values: pd.Series, edges: np.ndarray
               ) -> dict[str, np.ndarray]:
    """Per tier: per bucket, the largest of its replicas' maxima (``values``: each row's maximum
    over its interval, such as ``waiting_max``); exact with edges on the engine's grid."""
    return {tier: np.max([bucket(step, edges)[1] for step in steps], axis=0)
            for tier, steps in replica_steps(frame, time_col, values).items()}


EXACT_COUNT = 2**53
"""The most whole intervals a time axis counts: beyond it a float no longer counts them one by
one (and their edges would overflow a 64-bit integer)."""


def grid_edges(interval: float, end: float, most: int) -> np.ndarray:
    """Bucket edges from 0 past ``end`` on the engine's grid of ``interval`` seconds: whole
    intervals, as many merged into each bucket as keep the buckets at most ``most``. Each edge
    is a whole number times ``interval``, computed as the engine computes its rows' times.
    ``most`` equal buckets from 0 to ``end`` where ``end`` spans more than
    :data:`EXACT_COUNT` intervals, which no run's grid does (a hand-edited duration or
    interval: the whole-interval count was an OverflowError traceback, or wrapped round to
    negative edges)."""
    if not end / interval <= EXACT_COUNT:
        return np.linspace(0.0, end, most + 1)
    n = max(1, ceil(end / interval))
    per = ceil(n / most)
    return (per * np.arange(ceil(n / per) + 1)) * interval


def bucketed(frame: pd.DataFrame, time_col: str, values: pd.Series, edges: np.ndarray,
             how: str, replicas: dict[str, int] | None = None
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tier: (time-weighted mean, max) per bucket of the tier's series (``replicas``: as
    :func:`tier_steps`)."""
    return {tier: bucket(step, edges)
            for tier, step in tier_steps(frame, time_col, values, how, replicas).items()}
