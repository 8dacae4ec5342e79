"""Round 52 (left52, item 4): the planner's catch around routing a design.

``Planner._size`` caught every ``Exception`` from ``evaluator.routing``, so a bug in routing
(a TypeError, a KeyError) became one design's verdict "router: ..." among the others and the
plan went on without it. It now catches what a router raises for a design it cannot route, a
:class:`~tiersim.errors.TiersimError` (``ScenarioError``: a cascade of one tier, a budget under
the cheapest tier) or a ``ValueError`` (the router's settings refused, pydantic's
``ValidationError`` among them); anything else stops the plan.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from tiersim.errors import ScenarioError
from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario

TIERS = [FakeTier("fp8", accuracy=0.80, capacity_rps=1.2),
         FakeTier("bf16", accuracy=0.90, capacity_rps=1.0, cost_per_gpu_hour=1.5)]


class _Strict(BaseModel):
    share: float


def _validation_error() -> ValidationError:
    try:
        _Strict(share="lots")
    except ValidationError as err:
        return err
    raise AssertionError("pydantic accepted it")


class _Failing(FakeEvaluator):
    """Routes as the fake evaluator, but a design of both tiers raises ``error``."""

    def __init__(self, tiers, error: BaseException):
        super().__init__(tiers)
        self.error = error

    def routing(self, design):
        """Raise for the two-tier design."""
        if len(design.tiers) > 1:
            raise self.error
        return super().routing(design)


def _plan(error: BaseException):
    scenario = fake_scenario(TIERS, ttft=1.0, tpot=0.05, floor=0.85)
    return Planner(scenario, Constraints.of(scenario), _Failing(TIERS, error)).plan()


@pytest.mark.parametrize("error, words", [
    (ScenarioError("scenario.yaml", "router.policy", "cascade needs two tiers or more"),
     "cascade needs two tiers or more"),
    (ValueError("fractions must be >= 0 and sum to 1"), "fractions must be >= 0"),
    (_validation_error(), "validation error"),
])
def test_a_design_its_router_refuses_is_one_verdict(error, words):
    result = _plan(error)
    assert result.plan is not None and result.plan["tiers"] == ["bf16"]
    both = [r for r in result.runners_up if r["design"].startswith("fp8") and "+" in r["design"]]
    assert both and both[0]["missed"].startswith("router: ") and words in both[0]["missed"]


@pytest.mark.parametrize("error", [TypeError("unsupported operand"), KeyError("bf16"),
                                   ZeroDivisionError("division by zero")])
def test_a_bug_in_routing_stops_the_plan(error):
    with pytest.raises(type(error)):
        _plan(error)
