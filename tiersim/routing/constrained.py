"""Constrained routing: the cheapest routing meeting an accuracy floor, and its dual.

Both policies route by the classifier's difficulty score with K-1 cut points: requests whose
score (the calibrated classifier's probability that the cheapest tier is wrong) lies below the
first cut go to the cheapest tier, between cut k and k+1 to tier k, above the last to the top
tier. A tier whose two cuts coincide gets no traffic, so a tier that does not earn its place
(dearer and no more accurate than another) is left out.

The cuts are fitted on the classifier's *calibration split* (its training rows, scored out of
fold, the rows its isotonic calibrations were fitted on), never on the rows being evaluated:

- ``floor`` minimises expected cost per request subject to expected accuracy >= the floor;
- ``budget`` maximises expected accuracy subject to expected cost per request <= the budget.

Expected accuracy of a cut vector is the mean over calibration rows of each row's true expected
correctness (``p_correct_<tier>`` where generated, else the labels) on the tier it would get;
expected cost is the mean of the tiers' ``cost_weight``. With sorted scores and prefix sums each
cut vector costs O(K), so the search enumerates every cut vector on a grid of score quantiles
(every boundary between distinct scores for two tiers; :data:`MAX_CANDIDATES` vectors at most
otherwise). A cut never falls inside a run of equal scores: no threshold splits tied requests.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tiersim.errors import UnreachableFloor
from tiersim.results import FLOOR_TOLERANCE
from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.base import Router, _single, cost_scale

MAX_CANDIDATES = 60_000
"""Most cut vectors evaluated on the calibration split (the grid is coarsened to fit)."""


@dataclass(frozen=True)
class CutFit:
    """The fitted cuts and what they promise on the calibration split.

    ``thresholds``: K-1 score cut points (ascending; -inf / inf send everything one way);
    ``shares``: share of calibration rows per tier; ``accuracy`` and ``cost``: expected accuracy
    and cost per request (``cost_weight`` units) there; ``relative_cost``: ``cost`` over the top
    tier's; ``feasible``: whether the constraint could be met at all; ``rows``: calibration rows.
    """

    thresholds: tuple[float, ...]
    shares: tuple[float, ...]
    accuracy: float
    cost: float
    relative_cost: float
    feasible: bool
    rows: int

    def as_dict(self) -> dict:
        """JSON-ready form (infinite thresholds as None)."""
        return {"thresholds": [t if math.isfinite(t) else None for t in self.thresholds],
                "shares": list(self.shares), "calibration_accuracy": self.accuracy,
                "calibration_cost_per_request": self.cost,
                "calibration_relative_cost": self.relative_cost, "feasible": self.feasible,
                "calibration_rows": self.rows}


def cut_grid(n: int, k: int, max_candidates: int = MAX_CANDIDATES,
             allowed: np.ndarray | None = None) -> np.ndarray:
    """Every non-decreasing vector of ``k - 1`` cut positions in ``[0, n]`` on a grid of
    positions fine enough that there are at most ``max_candidates`` vectors; shape (m, k-1).
    ``allowed``: the positions a cut may take (ascending, 0 and ``n`` among them; default
    every one), e.g. only those between distinct scores (:func:`score_boundaries`)."""
    if k == 1:
        return np.zeros((1, 0), dtype=np.int64)
    allowed = np.arange(n + 1) if allowed is None else np.asarray(allowed, dtype=np.int64)
    steps = len(allowed) - 1
    while math.comb(steps + k - 1, k - 1) > max_candidates and steps > 1:
        steps = max(1, int(steps * 0.8))
    positions = allowed[np.unique(np.rint(np.linspace(0, len(allowed) - 1, steps + 1))
                                  .astype(np.int64))]
    combos = itertools.combinations_with_replacement(range(len(positions)), k - 1)
    return positions[np.array(list(combos), dtype=np.int64)]


def score_boundaries(sorted_score: np.ndarray) -> np.ndarray:
    """The cut positions a score threshold can make on ascending scores: 0, ``n`` and each
    position between two distinct scores. A cut inside a run of equal scores promised a split
    the router cannot make (tied requests all fall on one side of any threshold): a budget
    router promised 1.8 per request and spent 2.01 on its own calibration rows."""
    n = len(sorted_score)
    inner = np.flatnonzero(sorted_score[1:] > sorted_score[:-1]) + 1
    return np.unique(np.concatenate([[0], inner, [n]]).astype(np.int64))


def evaluate_cuts(correct: np.ndarray, weight: np.ndarray, cuts: np.ndarray):
    """(accuracy, cost) per cut vector for rows sorted by score.

    ``correct``: (n, K) expected correctness in score order; ``weight``: (K,) cost per request;
    ``cuts``: (m, K-1) positions. Tier k serves rows ``[cut_k, cut_{k+1})`` (cut_0 = 0,
    cut_K = n).
    """
    n, k = correct.shape
    prefix = np.vstack([np.zeros((1, k)), np.cumsum(correct, axis=0)])
    edges = np.hstack([np.zeros((len(cuts), 1), np.int64), cuts, np.full((len(cuts), 1), n)])
    acc = np.zeros(len(cuts))
    cost = np.zeros(len(cuts))
    for t in range(k):
        lo, hi = edges[:, t], edges[:, t + 1]
        acc += prefix[hi, t] - prefix[lo, t]
        cost += (hi - lo) * weight[t]
    return acc / n, cost / n


class ConstrainedRouter(Router):
    """Base of ``floor`` and ``budget``: cuts on the difficulty score, fitted on the
    calibration split; a subclass says which cut vector is best (:meth:`pick`)."""

    needs_classifier = True

    def pick(self, acc: np.ndarray, cost: np.ndarray) -> tuple[int, bool]:
        """Index of the best cut vector and whether it meets the constraint (override)."""
        raise NotImplementedError

    def fit(self, train_df: pd.DataFrame | None, rng: np.random.Generator) -> None:
        """Train the classifier, then fit the cuts on its calibration split."""
        super().fit(train_df, rng)
        if self.classifier is None:
            return
        self.cuts = self.fit_cuts(train_df)

    def calibration_rows(self, train_df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Scores (out of fold) and correctness of the calibration split, on the basis the
        run scores accuracy on (:meth:`Router.scores_realised`): cuts fitted on expected
        correctness and judged on realised draws bought the top tier for a floor the draws
        already met."""
        clf = self.classifier
        rows = clf.train_index
        score = clf.score(train_df)[rows]
        basis = "realised" if self.scores_realised() else "expected"
        return score, expected_matrix(train_df, self.tiers, basis)[rows]

    def fit_cuts(self, train_df: pd.DataFrame) -> CutFit:
        """Evaluate every cut vector on the calibration split and keep the best."""
        score, correct = self.calibration_rows(train_df)
        order = np.argsort(score, kind="stable")
        score, correct = score[order], correct[order]
        weight = np.array([t.cost_weight for t in self.tiers], dtype=np.float64)
        cuts = cut_grid(len(score), len(self.tiers), allowed=score_boundaries(score))
        acc, cost = evaluate_cuts(correct, weight, cuts)
        best, feasible = self.pick(acc, cost)
        chosen = cuts[best]
        edges = np.concatenate([[0], chosen, [len(score)]])
        return CutFit(thresholds=tuple(_threshold(score, c) for c in chosen),
                      shares=tuple(float(s) for s in np.diff(edges) / max(len(score), 1)),
                      accuracy=float(acc[best]), cost=float(cost[best]),
                      relative_cost=_relative(float(cost[best]), weight), feasible=feasible,
                      rows=len(score))

    def choose(self, df, rng):
        """Tier = number of cut thresholds at or below the request's score."""
        score = self.classifier.score(df)
        return _single(np.searchsorted(np.asarray(self.cuts.thresholds), score, side="right"))

    def describe(self) -> dict:
        """The fitted cuts and their calibration-split promise (for the run summary)."""
        return self.cuts.as_dict()


def _threshold(sorted_score: np.ndarray, cut: int) -> float:
    """A score threshold putting sorted rows ``[0, cut)`` below it: midway between neighbours."""
    if cut <= 0:
        return -math.inf
    if cut >= len(sorted_score):
        return math.inf
    return float(0.5 * (sorted_score[cut - 1] + sorted_score[cut]))


class Floor(ConstrainedRouter):
    """Cheapest expected cost per request with expected accuracy >= the floor.

    The floor is ``router.floor``, else the scenario's ``accuracy_floor`` (the runner fills
    ``router.floor`` from it). When no cut vector reaches the floor the most accurate one is
    used, and the fit says ``feasible: false``; the run still judges the floor on its own
    accuracy over all its requests, which can reach a floor the calibration split did not.
    """

    def validate(self) -> None:
        """The policy needs a floor."""
        super().validate()
        if self.cfg.floor is None:
            raise self.error("floor", "policy floor needs an accuracy floor: set the scenario's "
                                      "accuracy_floor (e.g. 0.75) or router.floor")

    def pick(self, acc, cost):
        """Least cost among vectors meeting the floor (ties: most accurate), within the run's
        floor tolerance (:func:`tiersim.results.reaches_floor`: prefix sums over many rows round
        a routing's accuracy below the floor it meets)."""
        ok = acc >= self.cfg.floor - FLOOR_TOLERANCE
        if not ok.any():
            warnings.warn(f"router.floor {self.cfg.floor:g} is above the most accurate routing "
                          f"the router finds ({acc.max():.4g} on its calibration split); every "
                          "request is routed the most accurate way, and whether the floor is "
                          "met is judged on the run's accuracy over all its requests (it can "
                          "differ from the split's)", UnreachableFloor, stacklevel=2)
            return int(np.lexsort((cost, -acc))[0]), False
        idx = np.flatnonzero(ok)
        return int(idx[np.lexsort((-acc[idx], cost[idx]))[0]]), True


class Budget(ConstrainedRouter):
    """Highest expected accuracy with expected cost per request <= the budget.

    ``budget_relative`` is a fraction of the top tier's ``cost_weight``;
    ``budget_usd_per_request`` is in ``cost_weight`` units (see :class:`RouterConfig`).
    """

    def validate(self) -> None:
        """The budget must reach at least the cheapest tier's cost."""
        super().validate()
        weight = np.array([t.cost_weight for t in self.tiers], dtype=np.float64)
        self.budget = (self.cfg.budget_relative * weight[-1]
                       if self.cfg.budget_relative is not None
                       else self.cfg.budget_usd_per_request)
        if np.isnan(weight).any():  # checked again once the fleet prices the tiers
            return
        if self.budget < weight.min() * (1 - 1e-12):
            key = "budget_relative" if self.cfg.budget_relative is not None else \
                "budget_usd_per_request"
            raise self.error(key, f"budget {self.budget:.4g} per request is below the cheapest "
                                  f"tier's {weight.min():.4g}; raise it")

    def pick(self, acc, cost):
        """Most accurate vector within the budget (ties: cheapest)."""
        idx = np.flatnonzero(cost <= self.budget * (1 + 1e-12))
        return int(idx[np.lexsort((cost[idx], -acc[idx]))[0]]), True


def with_scenario_floor(router_cfg, accuracy_floor: float | None):
    """The router config with ``floor`` taken from the scenario's ``accuracy_floor`` when the
    router does not set its own."""
    if getattr(router_cfg, "floor", None) is not None or accuracy_floor is None:
        return router_cfg
    return router_cfg.model_copy(update={"floor": float(accuracy_floor)})


def _relative(cost: float, weights: np.ndarray) -> float:
    """A cost per request over the top tier's weight (:func:`cost_scale`; 0 for a free fleet)."""
    scale = cost_scale(weights)
    return cost / scale if scale > 0 else 0.0
