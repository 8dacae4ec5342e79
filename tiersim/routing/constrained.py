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

The calibration split's accuracy estimate is a sample mean: ``floor`` keeps its standard error
(:func:`accuracy_se`) and the shares it would pick at the floor 1.96 standard errors lower and
higher (same rows, same classifier: :meth:`ConstrainedRouter.fit_cuts`). Where the tiers' own
accuracies lie within that of one another, the split can swing across its whole range between
draws of the same workload; the run notes it (:data:`FRAGILE_SHARE`).
"""

from __future__ import annotations

import dataclasses
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
from tiersim.routing.types import Assignment

MAX_CANDIDATES = 60_000
"""Most cut vectors evaluated on the calibration split (the grid is coarsened to fit)."""

Z95 = 1.96
"""Standard errors either side of the floor the ``floor`` router re-picks its cuts at (a 95%
interval of its calibration accuracy estimate)."""

FRAGILE_SHARE = 0.20
"""How far (a fraction of the requests) the cheapest tier's share may move across the floor's
95% interval before a run notes that its routing holds for its draws only. 20 points of the
requests is about a fifth of the load moved between tiers, a replica in five of a fleet sized
to an SLO at its margin (the default job's 10 + 7); the default's fitted FP8 share ran 1% to 90%
over seeds 0-3, while a floor well away from the tiers' accuracies moves it a few points."""


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
    accuracy_se: float | None = None
    floor_range: tuple[float, float] | None = None
    shares_at_floor_range: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    def as_dict(self) -> dict:
        """JSON-ready form (infinite thresholds as None). ``calibration_accuracy_se``: the
        standard error of ``calibration_accuracy`` (:func:`accuracy_se`); ``floor_range``: the
        floor 1.96 of them lower and higher, and ``shares_at_floor_range`` the shares the
        router picks there (``floor`` only; None for ``budget``, whose constraint is cost)."""
        return {"thresholds": [t if math.isfinite(t) else None for t in self.thresholds],
                "shares": list(self.shares), "calibration_accuracy": self.accuracy,
                "calibration_cost_per_request": self.cost,
                "calibration_relative_cost": self.relative_cost, "feasible": self.feasible,
                "calibration_rows": self.rows, "calibration_accuracy_se": self.accuracy_se,
                "floor_range": None if self.floor_range is None else list(self.floor_range),
                "shares_at_floor_range": None if self.shares_at_floor_range is None
                else [list(s) for s in self.shares_at_floor_range]}


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


def accuracy_se(values: np.ndarray, basis: str) -> float:
    """Standard error of a mean accuracy over ``values``, each row's correctness on the tier it
    gets: for 0/1 draws (``basis`` "realised") the binomial one, sqrt(p (1 - p) / n); for
    expected correctness (values in [0, 1], "expected") the sample standard deviation (n - 1)
    over sqrt(n). 0 for fewer than two rows."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n < 2:
        return 0.0
    if basis == "realised":
        p = float(values.mean())
        return math.sqrt(max(p * (1.0 - p), 0.0) / n)
    return float(values.std(ddof=1) / math.sqrt(n))


def _shares(cut: np.ndarray, n: int) -> tuple[float, ...]:
    """Share of ``n`` sorted rows per tier for cut positions ``cut``."""
    edges = np.concatenate([[0], cut, [n]])
    return tuple(float(s) for s in np.diff(edges) / max(n, 1))


class ConstrainedRouter(Router):
    """Base of ``floor`` and ``budget``: cuts on the difficulty score, fitted on the
    calibration split; a subclass says which cut vector is best (:meth:`pick`)."""

    needs_classifier = True

    def pick(self, acc: np.ndarray, cost: np.ndarray) -> tuple[int, bool]:
        """Index of the best cut vector and whether it meets the constraint (override)."""
        raise NotImplementedError

    def repick(self, acc: np.ndarray, cost: np.ndarray,
               se: float) -> tuple[tuple[float, float], tuple[int, int]] | None:
        """The constraint moved 1.96 standard errors (``se``, of the calibration accuracy
        estimate) down and up, and the cut vector :meth:`pick` would take at each; None where
        the constraint is no accuracy (``budget``). Override."""
        return None

    def assign(self, df: pd.DataFrame, rng: np.random.Generator) -> Assignment:
        """:meth:`Router.assign`, with the fitted cuts' description (:meth:`describe`) kept on
        the assignment for the run summary and its notes."""
        a = super().assign(df, rng)
        cuts = getattr(self, "cuts", None)
        return a if cuts is None else dataclasses.replace(a, fit=self.describe())

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
        return score, expected_matrix(train_df, self.tiers, self.correctness_basis())[rows]

    def fit_cuts(self, train_df: pd.DataFrame) -> CutFit:
        """Evaluate every cut vector on the calibration split and keep the best."""
        score, correct = self.calibration_rows(train_df)
        order = np.argsort(score, kind="stable")
        score, correct = score[order], correct[order]
        weight = np.array([t.cost_weight for t in self.tiers], dtype=np.float64)
        cuts = cut_grid(len(score), len(self.tiers), allowed=score_boundaries(score))
        acc, cost = evaluate_cuts(correct, weight, cuts)
        self._grid = cuts, len(score)  # for the unreachable floor's note (Floor.pick_at)
        try:
            best, feasible = self.pick(acc, cost)
        finally:
            self._grid = None  # the grid can be large: not kept on the fitted router
        chosen = cuts[best]
        n = len(score)
        tier = np.searchsorted(chosen, np.arange(n), side="right")  # row i's tier
        se = accuracy_se(correct[np.arange(n), tier], self.correctness_basis())
        moved = self.repick(acc, cost, se)
        return CutFit(thresholds=tuple(_threshold(score, c) for c in chosen),
                      shares=_shares(chosen, n),
                      accuracy=float(acc[best]), cost=float(cost[best]),
                      relative_cost=_relative(float(cost[best]), weight), feasible=feasible,
                      rows=n, accuracy_se=se,
                      floor_range=None if moved is None else moved[0],
                      shares_at_floor_range=None if moved is None else
                      (_shares(cuts[moved[1][0]], n), _shares(cuts[moved[1][1]], n)))

    def correctness_basis(self) -> str:
        """What the calibration rows' correctness is (:meth:`calibration_rows`): "realised"
        (0/1 draws) or "expected" (each row's expected correctness)."""
        return "realised" if self.scores_realised() else "expected"

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
        return self.pick_at(acc, cost, self.cfg.floor)

    def repick(self, acc, cost, se):
        """The floor 1.96 ``se`` lower and higher, and the vector :meth:`pick` takes at each
        (the most accurate one, unnoted, where none reaches the higher floor)."""
        floors = (self.cfg.floor - Z95 * se, self.cfg.floor + Z95 * se)
        return floors, tuple(self.pick_at(acc, cost, f, quiet=True)[0] for f in floors)

    def pick_at(self, acc, cost, floor: float, quiet: bool = False) -> tuple[int, bool]:
        """:meth:`pick` at ``floor``; ``quiet``: no note where no vector reaches it."""
        ok = acc >= floor - FLOOR_TOLERANCE
        if not ok.any():
            best = int(np.lexsort((cost, -acc))[0])
            if quiet:
                return best, False
            warnings.warn(f"router.floor {floor:g} is above the most accurate routing "
                          f"the router finds ({acc.max():.4g} on its calibration split); every "
                          f"request is routed the most accurate way{self._way_words(best)}, "
                          "and whether the floor is met is judged on the run's accuracy over "
                          "all its requests (it can differ from the split's)", UnreachableFloor,
                          stacklevel=3)
            return best, False
        idx = np.flatnonzero(ok)
        return int(idx[np.lexsort((-acc[idx], cost[idx]))[0]]), True


    def _way_words(self, best: int) -> str:
        """Which way the most accurate routing found sends the calibration split, for the
        unreachable floor's note: " it found there (fp8 99.6%, bf16 0.4% of its 228 requests,
        on their realised draws, where a tier more accurate in expectation can lose)". Before,
        the note said only "the most accurate way", which a reader took for the top tier while
        a small split's 0/1 draws had sent nearly every request to a cheaper one."""
        grid = getattr(self, "_grid", None)
        if grid is None:
            return ""
        cuts, n = grid
        shares = _shares(cuts[best], n)
        split = ", ".join(f"{t.name} {s:.1%}" for t, s in zip(self.tiers, shares))
        draws = (", on their realised 0/1 draws, where a tier more accurate in expectation "
                 "can lose" if self.correctness_basis() == "realised" else "")
        return f" it found there ({split} of its {n:,} requests{draws})"


class Budget(ConstrainedRouter):
    """Highest expected accuracy with expected cost per request <= the budget.

    ``budget_relative`` is a fraction of the top tier's ``cost_weight``;
    ``budget_usd_per_request`` is in ``cost_weight`` units (see :class:`RouterConfig`).
    Its fit keeps the calibration accuracy's standard error but no re-pick: its constraint is
    the cost, each row's a fixed tier weight, so the estimate's error moves its cuts only as
    far as the error itself (cost is linear in the shares), with no flat trade-off to cross.
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
            if self.cfg.budget_relative is not None and weight[-1] > 0:  # told as a share
                raise self.error("budget_relative", (
                    f"{self.cfg.budget_relative:.4g} of the top tier's cost per request "
                    f"({weight[-1]:.4g}) is {self.budget:.4g}, below the cheapest tier's "
                    f"{weight.min():.4g}; give at least {_rounded_up(weight.min() / weight[-1])}"))
            key = "budget_relative" if self.cfg.budget_relative is not None else \
                "budget_usd_per_request"
            raise self.error(key, f"budget {self.budget:.4g} per request is below the cheapest "
                                  f"tier's {weight.min():.4g}; raise it")

    def pick(self, acc, cost):
        """Most accurate vector within the budget (ties: cheapest)."""
        idx = np.flatnonzero(cost <= self.budget * (1 + 1e-12))
        return int(idx[np.lexsort((cost[idx], -acc[idx]))[0]]), True


def _rounded_up(share: float) -> str:
    """``share`` (> 0) written at 4 significant digits, rounded up: a budget_relative told as
    the least to give is never just below it (0.88888 is 0.8889, not 0.8888)."""
    step = 10.0 ** (math.floor(math.log10(share)) - 3)
    return f"{math.ceil(share / step - 1e-9) * step:.4g}"


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
