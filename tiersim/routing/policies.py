"""Routing policies: one base class, one method to override, options checked at build time.

Routing depends on the request, not on fleet state, so a router assigns every request at once,
before the simulation (``Router.assign(df, rng) -> Assignment``). Tiers are indexed cheapest first.
A policy overrides :meth:`Router.choose`; :meth:`Router.validate` checks its options when it is
built; :meth:`Router.assign` adds the injected confusion on top of any policy. The base class
and the pieces the policies share live in :mod:`tiersim.routing.base` (re-exported here); this
module defines the single-pass policies and the cascade, and fills :data:`ROUTERS` with every
policy (``floor`` and ``budget`` from :mod:`tiersim.routing.constrained`, ``step_type`` from
:mod:`tiersim.routing.step_type`).

Injected confusion (``confusion: {fpr, fnr}``) uses each request's *needed* tier (the cheapest
tier whose realised correctness is at least the top tier's): with probability ``fpr`` a request
that needed a tier above the cheapest and is routed at or above it is sent to a uniformly chosen
lower tier; with probability ``fnr`` a request that did not need the top tier and is routed at or
below its needed tier is sent to a uniformly chosen higher one. One uniform per request decides
both (``u < fpr`` or ``u >= 1 - fnr``), so ``fpr + fnr`` must not exceed 1. For a cascade the
same errors act on the escalation: a false positive cancels a needed escalation, a false negative
adds a needless one.

A router whose decisions read realised correctness (a cascade, or any router whose config sets
``confusion``, even to zeros, so every point of an FPR sweep is scored alike) returns an
:class:`Assignment` with ``basis="realised"``; others return ``basis="expected"``. Accuracy is
then scored on that basis (:func:`tiersim.routing.accuracy.expected_matrix`). The routed table
is never marked: nothing travels in ``df.attrs``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.errors import ScenarioError
from tiersim.routing.accuracy import true_expected_matrix
from tiersim.routing.base import ROUTERS, Router, _single, cost_scale
from tiersim.routing.config import RouterConfig
from tiersim.routing.constrained import Budget, Floor
from tiersim.routing.step_type import StepType
from tiersim.routing.types import Assignment, TierInfo

__all__ = ["ROUTERS", "Router", "_single", "cost_scale", "build_router", "config_reads_realised",
           "Uniform", "StaticSplit", "Threshold", "Lagrangian", "Oracle", "Cascade"]


class Uniform(Router):
    """Every request on one tier (default: the top tier)."""

    def validate(self) -> None:
        """The tier must exist."""
        super().validate()
        self.index = self.tier_index(self.cfg.tier, "tier", len(self.tiers) - 1)

    def choose(self, df, rng):
        """All requests on ``tier``."""
        return _single(np.full(len(df), self.index))


class StaticSplit(Router):
    """Each request on a random tier with fixed probabilities, blind to the request."""

    def validate(self) -> None:
        """One share per tier, summing to one (checked by the config)."""
        super().validate()
        self.shares = self.per_tier(self.cfg.fractions, len(self.tiers), "fractions")

    def choose(self, df, rng):
        """Inverse-CDF draw of a tier per request. The shares (summing to 1 within 1e-6) are
        scaled to sum to 1 and the last tier with a share closes the range at 1, so a tier
        given no share gets no request (the rest of a sum of 0.9999995 went to it)."""
        cdf = np.cumsum(self.shares / self.shares.sum())
        cdf[np.flatnonzero(self.shares > 0)[-1]:] = 1.0
        return _single(np.searchsorted(cdf, rng.random(len(df)), side="right"))


class Threshold(Router):
    """Cheapest first: the first tier whose calibrated P(good enough) passes its threshold."""

    needs_classifier = True

    def validate(self) -> None:
        """One threshold per non-top tier."""
        super().validate()
        self.thresholds = self.per_tier(self.cfg.thresholds, len(self.tiers) - 1, "thresholds")

    def choose(self, df, rng):
        """Walk the tiers below the top; the top takes the rest."""
        p = self.classifier.p_good_enough(df)
        passed = np.column_stack([p >= self.thresholds, np.ones(len(df), dtype=bool)])
        return _single(np.argmax(passed, axis=1))


class Lagrangian(Router):
    """The tier maximising calibrated P(correct) - lambda x relative cost (ties: cheapest)."""

    needs_classifier = True

    def utility(self, df) -> np.ndarray:
        """(n, K) calibrated P(correct) per tier."""
        return self.classifier.p_correct(df)

    def choose(self, df, rng):
        """Argmax of accuracy minus lambda times cost."""
        value = self.utility(df) - self.cfg.lambda_ * self.relative_cost()[None, :]
        return _single(np.argmax(value, axis=1))


class Oracle(Lagrangian):
    """Knows the truth: lagrangian on expected correctness when ``lambda`` is set, else the
    cheapest tier whose expected correctness equals the top tier's.

    On a labelled trace expected = realised, so the latter is each request's needed tier
    (RouteLLM's "optimal" router). On a generated workload it knows each request's type, not
    the coin flip, like the two-type model's oracle."""

    needs_classifier = False

    def utility(self, df) -> np.ndarray:
        """(n, K) true expected correctness (never the realised draws)."""
        return true_expected_matrix(df, self.tiers)

    def choose(self, df, rng):
        """Lagrangian on truth, or the cheapest tier as good as the top in expectation."""
        if self.cfg.lambda_ is None:
            truth = self.utility(df)
            return _single(np.argmax(truth >= truth[:, -1:] - 1e-9, axis=1))
        return super().choose(df, rng)


class Cascade(Router):
    """Answer on ``from_tier``; escalate to ``to_tier`` when a noisy confidence signal (realised
    correctness on ``from_tier`` plus Gaussian noise) is below ``threshold``, or at once when
    ``from_tier`` refuses the request at admission (``Assignment.refused_to``)."""

    reads_realised = True

    def validate(self) -> None:
        """Two tiers at least, and from_tier cheaper than to_tier."""
        super().validate()
        if len(self.tiers) < 2:
            raise self.error("policy", "cascade needs two tiers or more (it answers on a "
                             "cheaper tier and escalates to a dearer one: the cheapest and the "
                             "top tier, or those a cascade: block names as from_tier and "
                             "to_tier); the scenario has one, so add a tier or use policy "
                             "uniform")
        c = self.cfg.cascade
        self.lo = self.tier_index(c.from_tier, "cascade.from_tier", 0)
        self.hi = self.tier_index(c.to_tier, "cascade.to_tier", len(self.tiers) - 1)
        if self.lo >= self.hi:
            raise self.error("cascade", self._order_problem())

    def _order_problem(self) -> str:
        """Why from_tier is not before to_tier, naming both (a from_tier of the top tier with
        to_tier left at its default, the top tier, named neither) and the fix."""
        lo, hi = self.tiers[self.lo].name, self.tiers[self.hi].name
        if self.lo == self.hi:
            return (f"from_tier and to_tier both name tier '{lo}' (a to_tier or from_tier not "
                    "given is the top or the cheapest tier); name two tiers, the cheaper "
                    "(listed earlier) as from_tier")
        return (f"from_tier must be cheaper (listed earlier) than to_tier (got from_tier "
                f"'{lo}', listed after to_tier '{hi}'); swap them")

    def choose(self, df, rng):
        """Escalate where the confidence signal is low."""
        c = self.cfg.cascade
        right = df[f"correct_{self.tiers[self.lo].name}"].to_numpy(np.float64)
        signal = right + c.signal_noise * rng.standard_normal(len(df))
        escalate = np.where(signal < c.threshold, self.hi, -1).astype(np.int64)
        return Assignment(tier=np.full(len(df), self.lo, dtype=np.int64), escalate_to=escalate,
                          refused_to=np.full(len(df), self.hi, dtype=np.int64))

    def confuse(self, a, need, rng):
        """Errors act on the escalation decision (see the module docstring)."""
        u = rng.random(len(need))
        esc = a.escalate_to.copy()
        fp = (need > self.lo) & (esc >= 0) & (u < self.cfg.confusion.fpr)
        fn = (need <= self.lo) & (esc < 0) & (u >= 1.0 - self.cfg.confusion.fnr)
        esc[fp], esc[fn] = -1, self.hi
        return Assignment(tier=a.tier.copy(), escalate_to=esc, refused_to=a.refused_to)


ROUTERS.update({  # the registry is declared in base.py (step_type reads it) and filled here
    "uniform": Uniform,
    "static_split": StaticSplit,
    "threshold": Threshold,
    "lagrangian": Lagrangian,
    "oracle": Oracle,
    "cascade": Cascade,
    "floor": Floor,
    "budget": Budget,
    "step_type": StepType,
})


def config_reads_realised(cfg: RouterConfig) -> bool:
    """Whether a router of config ``cfg`` reads realised correctness, from the config alone:
    the rule of :meth:`Router.scores_realised` (``confusion`` set, or a cascade, directly or as
    a ``step_type`` router's fallback)."""
    if "confusion" in cfg.model_fields_set:
        return True
    policy = cfg.step_fallback if cfg.policy == "step_type" else cfg.policy
    return bool(getattr(ROUTERS.get(policy), "reads_realised", False))


def build_router(
    router_cfg: RouterConfig | dict,
    tiers: list[TierInfo],
    train_df: pd.DataFrame | None = None,
    rng: np.random.Generator | None = None,
    source: str = "scenario",
    baselines: list[str] | None = None,
) -> Router:
    """Validate the options, train the classifier if the policy uses one, return the router.

    ``train_df`` is a labelled table (``correct_<tier>`` columns, e.g. after
    :func:`tiersim.routing.accuracy.prepare_workload`); the classifier trains on
    ``classifier.train_fraction`` of it and reports on the rest (``router.classifier.report``).
    ``baselines``: the scenario's baseline-only tiers' names (:class:`Router`).
    """
    cfg = RouterConfig.model_validate(router_cfg) if isinstance(router_cfg, dict) else router_cfg
    if len(tiers) < 1:
        raise ScenarioError(source, "tiers", "needs at least one tier")
    router = ROUTERS[cfg.policy](cfg, tiers, source, baselines)
    router.fit(train_df, rng or np.random.default_rng(0))
    return router
