"""The step-type router: agent steps go to a tier by what they do.

Planning, recovery and final synthesis decide whether a task succeeds, so by default they go to
the strong (top) tier; tool-call formatting and boilerplate go to the cheapest tier
(:data:`tiersim.routing.config.DEFAULT_STEP_TIERS`). Every other step type is routed by the
``step_fallback`` policy, built from the same ``router:`` block, so ``step_fallback: threshold``
combines step types with the difficulty classifier.
"""

from __future__ import annotations

import numpy as np
from pydantic import ValidationError

from tiersim.routing.base import ROUTERS, Router
from tiersim.routing.config import DEFAULT_STEP_TIERS, RouterConfig
from tiersim.routing.types import Assignment
from tiersim.text_columns import text_codes


class StepType(Router):
    """Route by the ``step_type`` column; the fallback policy takes the other step types."""

    def validate(self) -> None:
        """Resolve the step map's tiers and build the fallback router."""
        super().validate()
        routes = self.cfg.step_tiers if self.cfg.step_tiers is not None else DEFAULT_STEP_TIERS
        top = len(self.tiers) - 1
        names = [t.name for t in self.tiers]
        named = {"top": top, "cheapest": 0}  # keywords, unless a tier has that name
        self.routes = {kind: named[ref] if ref in named and ref not in names else
                       self._step_tier(ref, kind) for kind, ref in routes.items()}
        # only the keys the scenario set: a default re-read as set (response_cache.key) would
        # trip the checks of keys set together
        # confusion too: the fallback's own confuse reads it (never applied twice: the
        # fallback only chooses; :meth:`confuse` applies it)
        data = self.cfg.model_dump(by_alias=True, exclude_unset=True)
        data["policy"] = self.cfg.step_fallback
        try:
            inner_cfg = RouterConfig.model_validate(data)
        except ValidationError as err:
            message = err.errors()[0]["msg"].removeprefix("Value error, ")
            raise self.error("step_fallback", message) from None
        self.inner = ROUTERS[inner_cfg.policy](inner_cfg, self.tiers, self.source,
                                               self.baselines)
        self.needs_classifier = self.inner.needs_classifier
        self.needs_labels = self.inner.needs_labels
        self.reads_realised = self.inner.reads_realised

    def _step_tier(self, ref, kind: str) -> int:
        """The tier ``step_tiers.<kind>`` names; an unknown one's line also offers the
        keywords top and cheapest (``TOP`` was told only the tiers' names)."""
        names = [t.name for t in self.tiers]
        if (isinstance(ref, int) and 0 <= ref < len(names)) or ref in names:
            return self.tier_index(ref, f"step_tiers.{kind}", 0)
        self.refuse_baseline(ref, f"step_tiers.{kind}")
        raise self.error(f"step_tiers.{kind}", f"unknown tier {ref!r}; tiers are "
                         f"{', '.join(names)}; top and cheapest name the last and the first")

    def fit(self, train_df, rng) -> None:
        """Train the fallback's classifier (if it has one)."""
        self.inner.fit(train_df, rng)
        self.classifier = self.inner.classifier

    def choose(self, df, rng) -> Assignment:
        """The map's tier for mapped step types (no escalation, refused: dropped), the
        fallback's elsewhere."""
        if "step_type" not in df.columns:
            raise self.error("policy", "step_type needs a step_type column: a session trace or "
                             "workload.sessions.source: generate")
        if self.inner.needs_classifier and self.inner.classifier is None:
            self.fit(df, rng)
        base = self.inner.choose(df, rng)
        tier, esc = base.tier.copy(), base.escalate_to.copy()
        refused = None if base.refused_to is None else base.refused_to.copy()
        routed = self._routed(df["step_type"])
        self.mapped = routed >= 0
        tier[self.mapped], esc[self.mapped] = routed[self.mapped], -1
        if refused is not None:
            refused[self.mapped] = -1
        return Assignment(tier=tier.astype(np.int64), escalate_to=esc.astype(np.int64),
                          refused_to=refused)

    def _routed(self, step_type) -> np.ndarray:
        """Each row's tier from the step map, -1 where the map has no tier for its type (a
        missing type too): the map read once per distinct type, each row by its code (the
        types as text, one per row, were a copy of each row's type)."""
        codes, kinds = text_codes(step_type)
        tiers = np.array([self.routes.get(kind, -1) for kind in kinds] + [-1], dtype=np.int64)
        return tiers[codes]  # a missing type's code -1: the last, -1

    def confuse(self, a: Assignment, need: np.ndarray, rng: np.random.Generator) -> Assignment:
        """Injected errors: on the fallback's steps as the fallback injects them (a cascade's
        act on its escalation: moving its first tier sent a request first to the top tier and
        then escalated it there again), on the mapped steps as on any single-pass routing."""
        if type(self.inner).confuse is Router.confuse:  # the fallback injects as the map does
            return super().confuse(a, need, rng)
        own, inner = super().confuse(a, need, rng), self.inner.confuse(a, need, rng)
        m = self.mapped
        refused = a.refused_to
        return Assignment(tier=np.where(m, own.tier, inner.tier),
                          escalate_to=np.where(m, own.escalate_to, inner.escalate_to),
                          refused_to=None if refused is None else refused.copy())
