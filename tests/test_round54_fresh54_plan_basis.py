"""fresh54 (round 54, new user, inference engineer): a cascade scenario with an accuracy floor is
planned with the floor router, on the cascade's realised draws.

fresh54 planned Qwen3-32B (FP8 with speculative decoding and prefix caching, BF16) on 600 s of
Mooncake's conversation trace at a 0.9 floor. Written with `router.policy: cascade` the plan
was FP8 6 x 1 + BF16 1 x 1 at 24.5 USD/hour (realised draws); the same file with `policy: floor`
planned FP8 6 x 1 + BF16 1 x 2 at 28.0 (expected accuracy). Both print "router: policy floor",
and the note said only that the cascade router was not used. docs/planning.md said the plan
reads realised draws where the scenario's router, "with no floor, is a cascade"; the code
(`tiersim.plan.evaluate.scores_realised`) does so with a floor too. The doc and the note now
say so.
"""

from __future__ import annotations

import re
import warnings

from conftest import REPO

from tiersim.errors import Note
from tiersim.plan import Constraints, Planner
from tiersim.plan.evaluate import scores_realised
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario
from tiersim.scenario_models import RouterConfig

NOTE_BASIS = ("though every design is scored on the realised draws a cascade reads, and the "
              "planned scenario sets router.confusion to zeros to keep them (router.policy: "
              "floor scores expected accuracy)")


def _notes(router: RouterConfig) -> list[str]:
    tiers = [FakeTier("w4", accuracy=0.85), FakeTier("fp8", accuracy=0.93)]
    scenario = fake_scenario(tiers, floor=0.85)
    scenario.router = router
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers), gpu_options=(1,))
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_cascade_with_a_floor_is_planned_on_realised_draws():
    """What the code does, which the doc now says: a floor does not change the basis."""
    class _S:
        router = RouterConfig(policy="cascade")
    assert scores_realised(_S)
    _S.router = RouterConfig(policy="floor")
    assert not scores_realised(_S)


def test_the_note_names_the_basis_only_where_the_cascade_sets_it():
    cascade = _notes(RouterConfig(policy="cascade"))
    assert len(cascade) == 1 and NOTE_BASIS in cascade[0]
    step = _notes(RouterConfig(policy="step_type", step_fallback="cascade"))
    assert len(step) == 1 and NOTE_BASIS in step[0]
    # a router that reads expected accuracy, or one whose confusion the user wrote (kept by the
    # floor router too), changes nothing the note need say
    lagr = _notes(RouterConfig.model_validate({"policy": "lagrangian", "lambda": 0.1}))
    assert len(lagr) == 1 and "realised" not in lagr[0]
    told = _notes(RouterConfig(policy="cascade", confusion={"fpr": 0.0, "fnr": 0.0}))
    assert len(told) == 1 and "realised" not in told[0]


def test_planning_doc_says_a_cascade_sets_the_basis_with_a_floor_too():
    text = re.sub(r"\s+", " ", (REPO / "docs" / "planning.md").read_text(encoding="utf-8"))
    assert "with no floor, is a cascade" not in text
    assert ("or is a cascade, with a floor too (the floor router then routes the multi-tier "
            "designs, on the cascade's realised draws, and the note says so)") in text
    assert ("Qwen3-32B on 600 s of Mooncake's conversation trace planned FP8 6 x 1 + BF16 1 x 1 "
            "at 24.5 USD/hour written as a cascade, and FP8 6 x 1 + BF16 1 x 2 at 28.0 with "
            "`policy: floor`") in text
