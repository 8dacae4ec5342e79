"""Round 16 of hostile input and wrong numbers, each found from outside and fixed: the exact line
a user sees, or the number that was wrong."""

from __future__ import annotations

import dataclasses

import numpy as np
from test_disagg import split_tier
from test_spec_decode import spec_tier

from tiersim.engine import TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel

# ------------------------------------------------------------------ the engine


def test_a_split_tier_drops_what_its_decoders_cannot_hold_on_arrival_not_after_prefill():
    # request 0 fits a prefill pass (prompt + 1 token) but not a decoder (prompt + outputs):
    # it was prefilled first, holding request 1 behind a long prefill it then threw away
    work = Workload(np.array([0.0, 0.01]), np.array([3000, 100]), np.array([4000, 10]),
                    np.zeros(2, dtype=np.int64))
    split = simulate([split_tier(num_blocks=400)], work)
    aggregated = simulate([TierSpec("t", 1, 400, LinearStepModel(),
                                    split_tier().limits)], work)
    assert split.dropped.tolist() == aggregated.dropped.tolist() == [True, False]
    assert split.first_token_s[1] < 0.1
    assert split.first_token_s[1] == aggregated.first_token_s[1]


def test_speculative_draws_do_not_depend_on_where_the_tier_is_listed():
    rng = np.random.default_rng(3)
    n = 40
    spec = dataclasses.replace(spec_tier(acceptance=(0.6,)), name="spec")
    other = TierSpec("other", 1, 400, LinearStepModel(), spec.limits)
    base = dict(arrival_s=np.cumsum(rng.exponential(0.05, n)),
                input_tokens=rng.integers(10, 300, n), output_tokens=rng.integers(5, 200, n))
    first = simulate([spec, other], Workload(**base, tier=np.zeros(n, dtype=np.int64)))
    second = simulate([other, spec], Workload(**base, tier=np.ones(n, dtype=np.int64)))
    np.testing.assert_array_equal(first.finish_s, second.finish_s)
    np.testing.assert_array_equal(first.output_tokens, second.output_tokens)


# ------------------------------------------------------------------ routing


def test_a_floor_router_fits_its_cuts_on_the_basis_its_floor_is_judged_on():
    # ``confusion`` (zeros too) scores a run on realised draws; the cuts were fitted on
    # expected correctness, so the plan bought the top tier for a floor the draws already met
    from test_routing_constrained import fitted, two_type

    from tiersim.routing.accuracy import expected_matrix

    df = two_type()
    plain, _ = fitted({"policy": "floor", "floor": 0.9}, df)
    confused, a = fitted({"policy": "floor", "floor": 0.9, "confusion": {"fpr": 0.0}}, df)
    assert a.basis == "realised"
    rows = confused.classifier.train_index
    realised_acc = expected_matrix(df, confused.tiers, "realised")[rows]
    _, correct = confused.calibration_rows(df)
    np.testing.assert_array_equal(correct, realised_acc)
    assert confused.cuts.accuracy >= 0.9
    _, expected = plain.calibration_rows(df)
    assert not np.array_equal(expected, correct)
