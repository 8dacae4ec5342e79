"""Accuracy per difficulty class of one run (a summary's ``accuracy_by_class``).

A request's class is its ``difficulty_class`` (drawn by the ``two_type`` and ``three_type``
workloads, or the trace's own where it gives ``correct_<tier>`` labels:
:func:`tiersim.routing.accuracy.prepare_workload`). Each class's accuracy is the
run's per-request accuracy (the final tier's correctness on the run's basis, expected or
realised, a dropped request scored 0: :func:`tiersim.routing.metrics.score`) averaged over the
class's requests; each uniform fleet's is its tier's correctness on the same basis over them
(:func:`tiersim.savings.same_basis`). Weighted by the classes' request counts they give the
overall accuracies. A request without a class, beside others with one, is counted under
:data:`UNCLASSIFIED`, so the classes still add up; where no request has a class there is none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.results_classes import UNCLASSIFIED, ClassAccuracy, class_order
from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.metrics import accuracy_ci
from tiersim.routing.types import TierInfo

CLASS_COLUMN = "difficulty_class"
"""The request column that names each request's difficulty class."""


def request_classes(df: pd.DataFrame) -> np.ndarray | None:
    """Each request's class name (:data:`UNCLASSIFIED` where it has none), or None where no
    request has one (no column, or a continuous difficulty: every class missing)."""
    if CLASS_COLUMN not in df or not len(df):
        return None
    column = df[CLASS_COLUMN]
    if not column.notna().any():
        return None
    return column.astype(object).where(column.notna(), UNCLASSIFIED).astype(str).to_numpy()


def class_means(df: pd.DataFrame, scored: np.ndarray) -> dict[str, dict[str, float]] | None:
    """Each class of ``df``'s requests (by name, in :func:`class_order`) with its
    ``requests`` and the mean of their ``scored`` accuracy (``accuracy``), as a plan's designs
    give them (:class:`tiersim.plan.evaluate.Outcome`); None where no request has a class."""
    classes = request_classes(df)
    if classes is None:
        return None
    out = {}
    for name in class_order(classes.tolist()):
        mine = classes == name
        out[name] = {"requests": int(mine.sum()), "accuracy": float(scored[mine].mean())}
    return out


def routed_per_request(df: pd.DataFrame, result, infos: list[TierInfo], basis: str) -> np.ndarray:
    """Each request's accuracy in the run: its final tier's correctness on ``basis``, a
    dropped request scored 0 (as :func:`tiersim.routing.metrics.score` scores it)."""
    final = np.asarray(result.final_tier, dtype=np.int64)
    per = expected_matrix(df, infos, basis)[np.arange(len(df)), final]
    return np.where(np.asarray(result.dropped, dtype=bool), 0.0, per)


def accuracy_by_class(
    df: pd.DataFrame,
    result,
    infos: list[TierInfo],
    basis: str,
    uniform: dict[str, TierInfo] | None = None,
) -> tuple[ClassAccuracy, ...]:
    """The run's accuracy per difficulty class of ``df``'s requests (``result``: the engine's,
    ``infos``: the routed tiers, cheapest first), and ``uniform``'s (tier name to its info: the
    uniform fleets that answer every request) over each class; ``()`` without classes."""
    classes = request_classes(df)
    if classes is None:
        return ()
    routed = routed_per_request(df, result, infos, basis)
    names = list(uniform or {})
    matrix = expected_matrix(df, [uniform[n] for n in names], basis) if names else None
    out = []
    for name in class_order(classes.tolist()):
        mine = classes == name
        lo, hi = accuracy_ci(routed[mine])
        each = (
            {}
            if matrix is None
            else {n: float(matrix[mine, k].mean()) for k, n in enumerate(names)}
        )
        out.append(
            ClassAccuracy(
                name=name,
                requests=int(mine.sum()),
                accuracy=float(routed[mine].mean()),
                accuracy_ci95=(lo, hi),
                uniform=each,
            )
        )
    return tuple(out)


def run_classes(
    df: pd.DataFrame,
    result,
    infos: list[TierInfo],
    extra: list[TierInfo],
    basis: str,
    saved,
    uniform_runs=None,
) -> tuple[ClassAccuracy, ...]:
    """:func:`accuracy_by_class` of a run (``infos``: its routed tiers, ``extra``: its
    baseline-only tiers), with the uniform fleets of its savings ``saved``
    (:class:`~tiersim.results.SavingsResult`, or None) that :func:`answering_uniform` keeps;
    ``uniform_runs``: the sized fleets (:class:`tiersim.savings.UniformRun`), None for an
    estimate."""
    fleets = [] if saved is None else saved.uniform
    if uniform_runs is not None:  # simulated: a fleet that dropped any scored them 0
        left_out = {u.tier for u in uniform_runs if u.dropped}
    else:  # estimated: a tier that cannot hold some request scored it 0
        left_out = {b.tier for b in fleets if b.infeasible}
    return accuracy_by_class(
        df,
        result,
        infos,
        basis,
        answering_uniform([b.tier for b in fleets], [*infos, *extra], left_out),
    )


def answering_uniform(
    uniform_tiers: list[str], infos: list[TierInfo], left_out: set[str] = frozenset()
) -> dict[str, TierInfo]:
    """Of the uniform fleets named ``uniform_tiers`` (a savings table's), those whose accuracy
    is their tier's correctness over every request, by name to the tier's info: all but those
    ``left_out`` (a simulated fleet that dropped requests, an estimated one that cannot hold
    some: their accuracy scores those requests 0)."""
    by_name = {t.name: t for t in infos}
    return {n: by_name[n] for n in uniform_tiers if n in by_name and n not in left_out}
