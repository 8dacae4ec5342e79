"""Round 56, hostile-input round (fuzz23): a budget router's budget_relative below the cheapest
tier.

``budget_relative: 0.01`` read "router.budget_relative: budget 1.783e-06 per request is below
the cheapest tier's 0.0001585; raise it": the key is a share of the top tier's cost per
request, the line spoke of an absolute budget and said neither what the share came to nor
which share is enough. It now says both, the least share rounded up so giving it is enough.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiersim.errors import ScenarioError
from tiersim.routing import TierInfo, build_router
from tiersim.routing.constrained import _rounded_up

TIERS = [
    TierInfo("cheap", accuracy={"easy": 0.95, "hard": 0.3}, cost_weight=1.0),
    TierInfo("top", accuracy={"easy": 0.99, "hard": 0.9}, cost_weight=3.0),
]


def test_a_share_below_the_cheapest_tier_is_told_the_least_share():
    """The exact line: the share, what it comes to, and the least share to give."""
    with pytest.raises(ScenarioError) as err:
        build_router({"policy": "budget", "budget_relative": 0.01}, TIERS)
    assert str(err.value) == (
        "scenario: router.budget_relative: 0.01 of the top tier's cost per request (3) is 0.03, "
        "below the cheapest tier's 1; give at least 0.3334"
    )


def test_the_least_share_told_is_enough():
    """Given as told, it builds (0.3333 would not)."""
    build_router({"policy": "budget", "budget_relative": 0.3334}, TIERS)
    with pytest.raises(ScenarioError):
        build_router({"policy": "budget", "budget_relative": 0.3333}, TIERS)


@given(st.floats(min_value=1e-300, max_value=1.0))
def test_a_share_rounded_up_is_never_below_it(share):
    """At 4 significant digits, at least the share and within a step of it."""
    told = float(_rounded_up(share))
    assert told >= share * (1 - 1e-12)
    assert told <= share + 10.0 ** (math.floor(math.log10(share)) - 3) * 1.0001
