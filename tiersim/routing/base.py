"""The routers' base: the :class:`Router` class every policy subclasses, and the pieces the
policies share (:func:`cost_scale`, :func:`_single`).

It sits below the modules that define policies (:mod:`tiersim.routing.policies`,
:mod:`tiersim.routing.constrained`, :mod:`tiersim.routing.step_type`), so each imports it and
none imports another. :data:`ROUTERS`, the registry of policies by name, is declared here and
filled in one place, :mod:`tiersim.routing.policies`, which imports every concrete router;
importing any ``tiersim.routing`` module imports that package, and so fills it.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tiersim.errors import IdleConfusion, ScenarioError, baseline_only
from tiersim.routing.accuracy import (
    needed_tier,
    realised_matrix,
)
from tiersim.routing.capability import by_capability
from tiersim.routing.config import RouterConfig
from tiersim.routing.types import Assignment, TierInfo

if TYPE_CHECKING:  # scikit-learn is imported only by the routers that train a classifier
    from tiersim.routing.classifier import DifficultyClassifier


def cost_scale(weights: np.ndarray) -> float:
    """What cost weights are taken relative to: the top (last) tier's weight, the dearest
    tier's when the top tier is free, 0 when every tier is (0/0 made every lagrangian value
    NaN, and NaN's argmax sent every request to the cheapest tier)."""
    return float(weights[-1] if weights[-1] > 0 else weights.max(initial=0.0))


class Router:
    """Base router: holds the config and tiers; subclasses override :meth:`choose`."""

    needs_classifier = False
    needs_labels = False
    reads_realised = False
    """True for a policy whose decisions read realised correctness (the cascade)."""

    def __init__(self, cfg: RouterConfig, tiers: list[TierInfo], source: str = "scenario",
                 baselines: list[str] | None = None):
        """Keep the options and tiers, then :meth:`validate` them; ``baselines``: the names
        of the scenario's baseline-only tiers, which a setting naming one is told it is."""
        self.cfg, self.tiers, self.source = cfg, list(tiers), source
        self.baselines = list(baselines or [])
        self.classifier: DifficultyClassifier | None = None
        self.validate()

    # ---- helpers for subclasses -------------------------------------------------------------
    def error(self, where: str, message: str) -> ScenarioError:
        """A one-line scenario error at ``router.<where>``."""
        return ScenarioError(self.source, f"router.{where}", message)

    def tier_index(self, ref, where: str, default: int) -> int:
        """Resolve a tier given by name or index (None -> ``default``)."""
        names = [t.name for t in self.tiers]
        if ref is None:
            return default
        if isinstance(ref, int) and 0 <= ref < len(names):
            return ref
        if isinstance(ref, str) and ref in names:
            return names.index(ref)
        self.refuse_baseline(ref, where)
        raise self.error(where, f"unknown tier {ref!r}; tiers are {', '.join(names)}")

    def refuse_baseline(self, ref, where: str) -> None:
        """Refuse ``ref`` at ``router.<where>`` as a baseline-only tier if it names one
        (:func:`tiersim.errors.baseline_only`); else return."""
        problem = baseline_only(ref, [t.name for t in self.tiers], self.baselines,
                                "which no request is routed to, so the router cannot send "
                                "requests to it (list it under tiers: to route to it)")
        if problem is not None:
            raise self.error(where, problem)

    def per_tier(self, value, count: int, where: str) -> np.ndarray:
        """A float, a list of ``count`` floats, or a map tier name -> float, as an array."""
        if isinstance(value, int | float):
            return np.full(count, float(value))
        names = [t.name for t in self.tiers[:count]]
        if isinstance(value, dict):
            out = np.full(count, np.nan)
            for name, v in value.items():
                i = self.tier_index(name, where, 0)
                if i >= count:
                    raise self.error(where, f"names tier {name!r}, which takes no value here; "
                                     f"give one for each of {', '.join(names)}")
                out[i] = v
            if np.isnan(out).any():
                raise self.error(where, f"needs a value for each of {', '.join(names)}")
            return out
        if len(value) != count:
            raise self.error(where, f"needs {count} value(s), one for each of "
                             f"{', '.join(names)} (got {len(value)})")
        return np.asarray(value, dtype=np.float64)

    def relative_cost(self) -> np.ndarray:
        """Each tier's ``cost_weight`` over the top tier's (:func:`cost_scale`; all 0 for a
        free fleet)."""
        w = np.array([t.cost_weight for t in self.tiers], dtype=np.float64)
        scale = cost_scale(w)
        return w / scale if scale > 0 else np.zeros_like(w)

    # ---- the interface ------------------------------------------------------------------------
    def validate(self) -> None:
        """Check the policy's options against the tiers; raise ScenarioError. Default: nothing."""
        c = self.cfg.confusion
        if c.fpr + c.fnr > 1.0:
            raise self.error("confusion", f"fpr + fnr must be <= 1 (got {c.fpr + c.fnr:.3g})")

    def fit(self, train_df: pd.DataFrame | None, rng: np.random.Generator) -> None:
        """Train what the policy needs (the classifier) on labelled ``train_df``; without one,
        :meth:`assign` trains on the table it routes; with an empty one (a response cache
        answered every request), none is trained: there is nothing to route."""
        if not self.needs_classifier or train_df is None or not len(train_df):
            return
        from tiersim.routing.classifier import train_classifier

        self.classifier = train_classifier(train_df, self.tiers, self.cfg.classifier, rng,
                                           self.source)

    def choose(self, df: pd.DataFrame, rng: np.random.Generator) -> Assignment:
        """The policy's decision per request (override this)."""
        raise NotImplementedError

    def assign(self, df: pd.DataFrame, rng: np.random.Generator) -> Assignment:
        """The policy's decision with injected confusion applied, then routed by capability
        (:func:`tiersim.routing.capability.by_capability`: no request on a tier too short for
        it where another tier holds it).

        A classifier policy built without a training table trains here on ``df`` itself
        (``classifier.train_fraction`` of it; the rest is its held-out report). The result
        carries the basis its accuracy is to be scored on (see the module docstring). An
        empty ``df`` (a response cache answered every request) is routed by every policy
        alike: to no tier, with no classifier trained on it.
        """
        if not len(df):
            basis = "realised" if self.scores_realised() else "expected"
            return dataclasses.replace(_single(np.zeros(0, dtype=np.int64)), basis=basis)
        if self.needs_classifier and self.classifier is None:
            self.fit(df, rng)
        chosen = self.choose(df, rng)
        c = self.cfg.confusion
        if c.fpr != 0.0 or c.fnr != 0.0:
            need = needed_tier(realised_matrix(df, self.tiers))
            self.note_idle_confusion(chosen.tier, need)
            chosen = self.confuse(chosen, need, rng)
        basis = "realised" if self.scores_realised() else "expected"
        return dataclasses.replace(by_capability(chosen, df, self.tiers), basis=basis)

    def scores_realised(self) -> bool:
        """Whether this router's decisions read realised correctness: a cascade, or a config
        that sets ``confusion`` (explicit zeros included)."""
        return self.reads_realised or "confusion" in self.cfg.model_fields_set

    def note_idle_confusion(self, tier: np.ndarray, need: np.ndarray) -> None:
        """A note where an injected ``confusion`` rate has no request to act on: ``fpr`` moves
        only requests that needed a tier above the cheapest and that the policy routed at or
        above it, ``fnr`` only those it routed at or below the tier they needed. A policy
        whose own routing leaves none (a blind router that sends every request needing the
        top tier to the cheap one) runs alike at every rate; before, a sweep over
        ``router.confusion.fpr`` gave identical points and said nothing. A policy with its
        own :meth:`confuse` (a cascade cancels or adds escalations) is not judged here."""
        if type(self).confuse is not Router.confuse:
            return
        k = len(self.tiers)
        cases = (("fpr", self.cfg.confusion.fpr, need > 0, tier >= need,
                  "a tier above the cheapest", "below the tier it needed", "FPR"),
                 ("fnr", self.cfg.confusion.fnr, need < k - 1, tier <= need,
                  "only a tier below the top", "above the tier it needed", "FNR"))
        for key, rate, needs, eligible, what, where, name in cases:
            count = int(needs.sum())
            if rate == 0.0 or not count or (needs & eligible).any():
                continue
            warnings.warn(f"router.confusion.{key} {rate:g} changes nothing here: the "
                          f"{self.cfg.policy} router already sent each of the {count:,} "
                          f"requests that needed {what} (realised correctness) {where} (its "
                          f"own {name} is 100 %), and confusion.{key} moves only those it "
                          f"did not (router {key} in docs/metrics.md, in tiersim's source "
                          "repository)",
                          IdleConfusion,
                          stacklevel=3)

    def confuse(self, a: Assignment, need: np.ndarray, rng: np.random.Generator) -> Assignment:
        """Inject false positives (sent below need) and false negatives (sent above need)."""
        k = len(self.tiers)
        u = rng.random(len(need))
        tier = a.tier.copy()
        fp = (need > 0) & (tier >= need) & (u < self.cfg.confusion.fpr)
        fn = (need < k - 1) & (tier <= need) & (u >= 1.0 - self.cfg.confusion.fnr)
        tier[fp] = np.floor(rng.random(fp.sum()) * need[fp]).astype(np.int64)
        lo = need[fn] + 1
        tier[fn] = lo + np.floor(rng.random(fn.sum()) * (k - lo)).astype(np.int64)
        return Assignment(tier=tier, escalate_to=a.escalate_to.copy(), refused_to=a.refused_to)


def _single(tier: np.ndarray) -> Assignment:
    """An assignment without escalations."""
    tier = tier.astype(np.int64)
    return Assignment(tier=tier, escalate_to=np.full(len(tier), -1, dtype=np.int64))


ROUTERS: dict[str, type[Router]] = {}
"""Policy name -> router class; filled by :mod:`tiersim.routing.policies` (every policy's class,
``step_type``'s fallbacks included, which :class:`tiersim.routing.step_type.StepType` reads)."""
