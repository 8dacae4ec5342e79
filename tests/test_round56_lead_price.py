"""Round 56 (lead, after review56b): the packed price never rises with the load.

A packed round of ``n`` prompts (:class:`tiersim.inputs.PrefillSteps`) cuts each prompt into
chunks of ``max_num_batched_tokens // n``. Past ``budget / prompt`` prompts a round spills
into a last step holding a few tokens of each; charged whole, that step cost a step's
overhead per round, so a heavier load (a larger ``n``) could price a request dearer: on tiny's
BF16 tier (roofline, ``gpu_memory_utilization`` 0.47, modelled) 3,000-token prompts read 121
then 130 ms a request as the rate rose, 1,914-token ones 77 then 80 ms. The rounds run back
to back, so the next round's chunks fill the rest of that step; it is now charged its share
of a full step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tiersim.inputs import request_seconds


@pytest.mark.parametrize("prompt", [261, 1000, 1914, 3000, 5000, 8192, 12000])
def test_a_request_is_priced_no_dearer_at_a_heavier_load(prompt):
    """Prompts of one length, 100 output tokens, 120 rates from 0.5 to 60 a second."""
    from test_round55_price55_kv import _tiny_tier

    tier, mix = _tiny_tier(0.47, 1.0)
    same = replace(
        mix, prompt=np.full(len(mix.prompt), prompt), output=np.full(len(mix.prompt), 100)
    )
    prices = [
        float(
            np.mean(
                request_seconds(
                    tier.step_model,
                    tier.limits,
                    1.0,
                    replace(same, rate=rate),
                    rate,
                    tier.num_blocks,
                )
            )
        )
        for rate in np.linspace(0.5, 60.0, 120)
    ]
    rises = [(a, b) for a, b in zip(prices, prices[1:]) if b > a * (1 + 1e-9)]
    assert rises == []
    assert prices[-1] < prices[0]
