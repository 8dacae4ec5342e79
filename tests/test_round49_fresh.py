"""Round 49, a new user's pass (an inference engineer sizing a cascade of DeepSeek-V3 on H200
with the Mooncake trace, from README alone): what confused them, fixed with exact-text tests."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from tiersim.errors import Note
from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario


def _plan_notes(policy: str | None, floor: float | None, choose=None) -> list[str]:
    """The notes a Planner gives at its start for a fake two-tier scenario of ``policy``."""
    tiers = [FakeTier("w4", accuracy=0.85), FakeTier("fp8", accuracy=0.93)]
    scenario = fake_scenario(tiers, floor=floor)
    if policy is not None:
        scenario.router = SimpleNamespace(policy=policy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers), gpu_options=(1,),
                choose=choose)
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_plan_says_when_the_floor_router_replaces_the_scenarios_cascade():
    """With an accuracy floor the planner routes every multi-tier design with the floor router
    (docs/planning.md, "Routing first"), whatever the scenario's router. A cascade scenario
    (w4 answering first, escalating to fp8) planned that way printed its runner-up
    "w4@4+fp8@8 (w4 4 + fp8 6 replicas): meets every constraint" with no word that it was not
    the cascade: with --choose router.policy=cascade the cascade itself missed the TTFT SLO
    at any size (escalated requests wait through both passes). Now a note says so."""
    assert _plan_notes("cascade", 0.85) == [
        "multi-tier designs are routed by the floor router at the accuracy floor, not the "
        "scenario's cascade router (router.policy: cascade); to size them with the cascade "
        "router, add --choose router.policy=cascade"]
    assert _plan_notes("lagrangian", 0.85)[0].startswith(
        "multi-tier designs are routed by the floor router at the accuracy floor, not the "
        "scenario's lagrangian router")
    assert _plan_notes("floor", 0.85) == []  # the scenario's own router
    assert _plan_notes("cascade", None) == []  # no floor: the scenario's router is used
    assert _plan_notes(None, 0.85) == []  # a stand-in scenario without a router
    assert _plan_notes("cascade", 0.85, {"router.policy": ["cascade"]}) == []
    assert _plan_notes("cascade", 0.85, {"policy": ["cascade", "floor"]}) == []
