"""Round 56, fresh56: a planned design whose floor router reaches no routing that meets its
floor on the calibration split sends every request the most accurate way, so a cheaper tier
idles because the floor is too close to the top tier's accuracy; its runner-up line now says
so and what to change. It read "fp8 gets no traffic from the router: the design without it
is cheaper" alone (a Mistral-7B FP8 + BF16 plan at accuracy_floor 0.949 on the priors)."""

from __future__ import annotations

from types import SimpleNamespace

from tiersim.plan.planner import _unreached

FLOOR = SimpleNamespace(router=(("policy", "floor"), ("floor", 0.949)))
UNMET = SimpleNamespace(fit={"feasible": False, "calibration_accuracy": 0.9478883336})


def test_an_unreached_floor_is_named_with_the_fix():
    assert _unreached(FLOOR, UNMET) == (
        "; no routing the router finds reaches its floor on its calibration split (the most "
        "accurate reads 94.79 %), so it sends every request the most accurate way: a lower "
        "accuracy_floor (or --accuracy-floor) lets it route some to the cheaper tiers"
    )


def test_nothing_is_added_where_the_fit_met_its_floor_or_is_no_floor_fit():
    met = SimpleNamespace(fit={"feasible": True, "calibration_accuracy": 0.95})
    assert _unreached(FLOOR, met) == ""
    assert _unreached(FLOOR, SimpleNamespace(fit=None)) == ""
    assert _unreached(FLOOR, SimpleNamespace()) == ""
    budget = SimpleNamespace(router=(("policy", "budget"),))
    assert _unreached(budget, UNMET) == ""
