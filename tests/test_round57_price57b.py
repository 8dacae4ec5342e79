"""Round 57 (price57b): two corrections to the heavy-load price of
:func:`tiersim.inputs.request_seconds`.

- Speculative decoders take ``k + 1`` tokens each of a step's budget, so the room beside them
  for prompts is ``budget - max_num_seqs x (k + 1)``.
- Packed prompts that cost more than alone on the mean are charged alone
  (:meth:`tiersim.inputs.PrefillSteps.cost`), so the price does not rise as the load crosses
  the heavy-load threshold (review57).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_round57_price57 import JumpModel

from tiersim.engine import SchedulerLimits
from tiersim.inputs import (
    LengthMix,
    PrefillSteps,
    request_seconds,
    riding_prefill,
)
from tiersim.perf.base import StepShape


def test_speculative_decoders_leave_less_room_for_prompts():
    """256 sequences of 32 output tokens: 8 leave a step, 8 x 900 = 7,200 prompt tokens. Beside
    plain decoders the room is 8,192 - 256 = 7,936 and they ride; beside speculative decoders
    of k = 4 (5 tokens each, tiersim.engine.spec_decode) it is 8,192 - 1,280 = 6,912, so
    prefill holds the replica back and the prompts do not ride."""
    args = (JumpModel(), np.array([900]), np.array([32.0]), np.array([916.0]), 256, 8192)
    assert riding_prefill(*args) is not None
    assert riding_prefill(*args, 0) is not None
    assert riding_prefill(*args, 4) is None


@dataclass
class ContextModel:
    """A step of ``overhead``, ``per_token`` a prompt token and ``attention`` a prompt token
    per token of context before it: chunks of a long prompt beside its earlier chunks cost
    more than its first."""

    overhead: float = 0.01
    per_token: float = 1e-6
    attention: float = 1e-9

    def step_time(self, shape: StepShape) -> float:
        """The step's seconds."""
        work = sum(
            size * (self.per_token + self.attention * start) for size, start in shape.prefill_chunks
        )
        return self.overhead + work

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Pure-decode steps: ``overhead`` each."""
        return np.full(len(np.atleast_1d(decode_context)), self.overhead)


def test_packed_prompts_dearer_than_alone_are_charged_alone():
    """A 6,000-token prompt alone is one step, 0.016 s. Two side by side take a step of two
    4,096-token chunks and 1,904 / 4,096 of a step of two more beside 4,096 tokens of context
    each: 0.0209 s each, dearer, so each is charged its 0.016 s alone."""
    steps = PrefillSteps(ContextModel(), np.array([6000]), 8192)
    first = 0.01 + 8192 * 1e-6
    second = first + 2 * 4096 * 4096 * 1e-9
    assert steps.held(2)[0] / 2 == pytest.approx((first + second * 1904 / 4096) / 2)
    assert steps.held(2)[0] / 2 > 0.016
    assert steps.cost(2)[0] == pytest.approx(0.016)
    assert steps.cost(1)[0] == steps.held(1)[0]


@settings(max_examples=60, deadline=None)
@given(
    prompts=st.lists(st.integers(1, 12000), min_size=1, max_size=6),
    attention=st.floats(0.0, 3e-9),
    shares=st.lists(st.floats(1.0, 4.0), min_size=1, max_size=6),
)
def test_past_the_threshold_the_price_is_no_dearer_than_at_it(prompts, attention, shares):
    """Any prompts on a step model whose later chunks cost more: the mean price per request
    past the threshold is no dearer than at it (the load where the prompts are priced alone).
    Between two loads past it the price can still rise a little where the packed count
    reaches its cap (1.3e-5 of itself from 2.06 to 3 times the threshold's load, prompts
    1, 1, 1,598 and 3,956 tokens): left, as the cheapest packing of every count below
    would ask the step model of each."""
    prompt = np.array(prompts, dtype=np.int64)
    mix = LengthMix(prompt=prompt, output=np.full(len(prompt), 200), rate=0.0)
    model = ContextModel(attention=attention)
    limits = SchedulerLimits(max_num_seqs=256)
    alone = float(np.mean(PrefillSteps(model, prompt, 8192).held(1)))

    def price(share: float) -> float:
        rate = share / alone
        return float(np.mean(request_seconds(model, limits, 1.0, replace(mix, rate=rate), rate)))

    at = price(1.0)
    assert all(price(s) <= at * (1 + 1e-12) for s in shares)
