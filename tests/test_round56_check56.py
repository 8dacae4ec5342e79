"""Round 56 (check56): the prompts' packing (:func:`tiersim.inputs.prefill_packing`) is the
least fixed point it says it is, also where packing barely saves anything.

Where a step costs little beyond its tokens (prefill bound by its tokens' compute), a round of
``n + 1`` prompts lasts about ``(n + 1) / n`` of a round of ``n``, so the map from a count to
the prompts that arrive in its round (``rate x held(n)``) rises with a slope near 1. Iterated
from 1 and stopped at a move under a millionth, it stopped short of the fixed point (1.0935
where it is 1.1122, at 1.001 x a replica's time prefilling alone), and where the slope is 1
(no fixed point below the step's budget) it rose by one step's overhead a round and stopped
after :data:`tiersim.inputs.BATCH_ROUNDS` rounds at 3.0 where the budget holds 8.19 prompts:
a count that is neither a fixed point nor the cap, against the docstring and
``test_round56_price56``'s own property. Every figure on a linear step model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tiersim.inputs import PrefillSteps, packing_cap, prefill_packing
from tiersim.perf.base import LinearStepModel


def linear(overhead: float, per_token: float) -> LinearStepModel:
    """A step of ``overhead`` seconds plus ``per_token`` a prefill token."""
    return LinearStepModel(
        overhead=overhead, per_prefill_token=per_token, per_decode_seq=0.0, per_context_token=0.0
    )


def _packing(overhead: float, per_token: float, prompts: list[int], budget: int, share: float):
    """(steps, rate, cap, count) for ``prompts`` at ``share`` x a replica's time alone."""
    steps = PrefillSteps(linear(overhead, per_token), np.array(prompts, dtype=np.int64), budget)
    rate = share / float(np.mean(steps.held(1)))
    most = packing_cap(budget, steps.prompt, 256)
    return steps, rate, most, prefill_packing(rate, steps, most)


def test_a_slope_near_one_reaches_the_fixed_point():
    """1,000-token prompts at 1e-4 s a step and 1e-5 s a token, 1.001 x a replica's time
    alone: a round of ``n`` (``n`` 1 to 2: one step) lasts ``1e-4 + 0.01 n`` s, so ``n =
    rate x (1e-4 + 0.01 n)`` at ``n = 1e-4 rate / (1 - 0.01 rate)`` = 1.1122."""
    _, rate, _, count = _packing(1e-4, 1e-5, [1000], 8192, 1.001)
    assert count == pytest.approx(1e-4 * rate / (1 - 0.01 * rate), rel=1e-9)


def test_no_fixed_point_under_the_budget_is_the_cap():
    """At 1.01 x every round of up to 8 prompts (one step) takes more prompts than it holds
    (``rate x held(n) - n`` = 0.01 at every whole count): the step's budget is full, 8.192."""
    steps, rate, most, count = _packing(1e-4, 1e-5, [1000], 8192, 1.01)
    assert most == pytest.approx(8.192)
    assert rate * float(np.mean(steps.held(3))) - 3 == pytest.approx(0.01, rel=1e-6)
    assert count == most


@given(
    prompts=st.lists(st.integers(1, 30000), min_size=1, max_size=8),
    budget=st.integers(256, 16384),
    share=st.floats(1.0, 50.0),
    overhead=st.floats(1e-6, 0.05),
    per_token=st.floats(1e-7, 1e-4),
)
@example(prompts=[1000], budget=8192, share=1.01, overhead=1e-4, per_token=1e-5)
@example(prompts=[1000], budget=8192, share=1.001, overhead=1e-4, per_token=1e-5)
def test_the_count_is_a_fixed_point_or_the_cap(prompts, budget, share, overhead, per_token):
    """Past the threshold the count is the cap, or the prompts that arrive in its round are
    the count (to a billionth), and no smaller whole count is one the arrivals fall short of
    (the least such count)."""
    steps, rate, most, count = _packing(overhead, per_token, prompts, budget, share)
    assert 1.0 <= count <= most
    if count < most:
        arrived = rate * float(np.mean(steps.held(count)))
        assert arrived == pytest.approx(count, rel=1e-9)
    for whole in range(1, int(np.floor(count)) + 1):
        assert rate * float(np.mean(steps.held(whole))) >= whole * (1 - 1e-12)
