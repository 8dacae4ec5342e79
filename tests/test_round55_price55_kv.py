"""Round 55 (price55): the router's price caps a replica's decode batch by what its KV cache
holds, not by ``max_num_seqs`` alone (:func:`tiersim.inputs.batch_cap`).

Until round 55 the price's batch (:func:`tiersim.inputs.decode_batch`) was capped at the
scheduler's ``max_num_seqs`` (256) whatever the tier's KV cache, so at a load past what the
cache holds the price assumed a batch the memory cannot hold, and read cheap. The cap is now
the smaller of ``max_num_seqs`` and the sequences of the priced requests' mean prompt +
output a replica's KV cache holds, read from the engine's own KV blocks
(:attr:`tiersim.fleet.BuiltTier.num_blocks`) by the one rule the run's KV-thrashing note
uses (:func:`tiersim.engine.sequences_held`). At the bundled scenarios' loads the batch is
1-12 sequences and every tier holds 256 or more of their sequences: nothing moves there.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TINY, tiny_doc

from tiersim.engine import sequences_held
from tiersim.engine.request import SchedulerLimits
from tiersim.inputs import (
    DecodeSteps,
    LengthMix,
    batch_cap,
    cost_weight,
    decode_batch,
    request_seconds,
)
from tiersim.perf.base import LinearStepModel

MIX = LengthMix(prompt=np.array([300, 2000, 6000]), output=np.array([50, 200, 10]))
"""Three requests: mean prompt + output (350 + 2,200 + 6,010) / 3 = 2,853.3 tokens."""


def constant(seconds: float) -> LinearStepModel:
    """A step model whose every step, prefill or decode, at any batch, takes ``seconds``."""
    return LinearStepModel(overhead=seconds, per_prefill_token=0.0, per_decode_seq=0.0,
                           per_context_token=0.0)


def test_sequences_held_is_the_blocks_over_a_full_length_sequence_s():
    """2,853 tokens in 16-token blocks are 179 blocks (178 x 16 = 2,848 < 2,853); 800
    blocks hold 4 of them (716), 715 blocks 3; a fixed state of 2 blocks a sequence makes it
    181 (4 x 181 = 724 <= 800); draft slots count as tokens (2,853 + 11 = 2,864 = 179 x 16,
    still 179 blocks; + 12: 180). Round 56: the blocks counted are those above the watermark
    (1 %: 8 of 800 and 7 of 715 leave the counts as they were; 904 blocks leave 895 = 179 x 5
    above its 9)."""
    limits = SchedulerLimits(block_size=16)
    assert sequences_held(limits, 800, 2853) == 4
    assert sequences_held(limits, 715, 2853) == 3
    assert sequences_held(SchedulerLimits(block_size=16, state_blocks=2), 800, 2853) == 4
    assert sequences_held(SchedulerLimits(block_size=16, state_blocks=2), 723, 2853) == 3
    assert sequences_held(limits, 179 * 5 + 9, 2853, extra=11) == 5
    assert sequences_held(limits, 179 * 5 + 9, 2853, extra=12) == 4
    assert sequences_held(limits, 100, 2853) == 0


def test_the_cap_is_the_smaller_of_max_num_seqs_and_the_kv_cache_s_sequences():
    """800 blocks hold 4 of the mix's mean sequence: the cap is 4 under max_num_seqs 256,
    2 under max_num_seqs 2; no blocks known (0), max_num_seqs; a cache that holds no whole
    sequence still runs one at a time."""
    tokens = float(np.mean(MIX.prompt + MIX.output))
    assert batch_cap(SchedulerLimits(), 800, tokens) == 4
    assert batch_cap(SchedulerLimits(max_num_seqs=2), 800, tokens) == 2
    assert batch_cap(SchedulerLimits(), 0, tokens) == 256
    assert batch_cap(SchedulerLimits(), 100, tokens) == 1


def test_at_heavy_load_the_price_runs_the_batch_the_kv_cache_holds():
    """Every step 10 ms, 60 requests a second to one replica: uncapped, Little's law gives a
    batch of 130.6; a replica of 800 blocks holds 4 of these
    sequences, so each output token costs a quarter of a step, as under max_num_seqs 4 with
    no KV figure, and the request costs more than at the batch max_num_seqs alone allows."""
    model = constant(0.01)
    out = MIX.output.astype(float)
    steps = DecodeSteps(model, MIX.prompt + out / 2)
    assert decode_batch(60.0, np.full(3, 0.01), out, steps, 256) == pytest.approx(130.6)
    capped = request_seconds(model, SchedulerLimits(), 1.0, MIX, 60.0, num_blocks=800)
    assert capped == pytest.approx(0.01 + out * 0.01 / 4, rel=1e-12)
    as_seqs = request_seconds(model, SchedulerLimits(max_num_seqs=4), 1.0, MIX, 60.0)
    assert np.array_equal(capped, as_seqs)
    uncapped = request_seconds(model, SchedulerLimits(), 1.0, MIX, 60.0)
    assert capped.mean() > uncapped.mean()


@pytest.mark.parametrize("rate", [0.5, 1.0, 2.0, 3.0])
def test_at_light_load_nothing_moves(rate):
    """Loads whose batch (Little's law, Poisson: 1.24, 1.51, 2.15 and 2.90 sequences) is
    under the 4 sequences the cache holds: the price is the same to the bit with the KV
    figure or without (at 5 a second the batch, 4.66, would be capped)."""
    model = constant(0.01)
    mix = LengthMix(prompt=MIX.prompt, output=MIX.output, rate=rate)
    with_kv = request_seconds(model, SchedulerLimits(), 1.0, mix, rate, num_blocks=800)
    assert np.array_equal(with_kv, request_seconds(model, SchedulerLimits(), 1.0, mix, rate))


def _tiny_tier(utilization: float, rate: float):
    """tiny's BF16 tier built with ``gpu_memory_utilization`` ``utilization``, and tiny's
    first 256 requests at ``rate`` a second to a replica (Poisson)."""
    from tiersim.fleet import build_fleet
    from tiersim.inputs import load_scenario_trace
    from tiersim.scenario import scenario_from_dict

    doc = tiny_doc()
    doc["tiers"][1]["gpu_memory_utilization"] = utilization
    scenario = scenario_from_dict(doc, str(TINY))
    tier = build_fleet(scenario).tiers[1]
    table = load_scenario_trace(scenario, str(TINY)).table.iloc[:256]
    mix = LengthMix(prompt=table["input_tokens"].to_numpy(np.int64),
                    output=table["output_tokens"].to_numpy(np.int64), rate=rate)
    return tier, mix


def _uncapped(tier, mix: LengthMix) -> float:
    """The tier's price over ``mix`` at ``max_num_seqs`` alone (the price before round 55)."""
    seconds = request_seconds(tier.step_model, tier.limits,
                              tier.config.output_length_multiplier, mix, mix.rate)
    return tier.usd_per_replica_second * float(seconds.mean())


def test_a_real_tier_whose_kv_cache_holds_fewer_than_max_num_seqs():
    """tiny's BF16 tier at ``gpu_memory_utilization`` 0.47 (Qwen3-Coder-30B-A3B BF16 on one
    H200): 4,940 KV blocks of 16 tokens, 35 sequences of the first 256 requests' mean 2,204
    tokens (138 blocks each), where max_num_seqs is 256. At 40 requests a second the
    uncapped batch is above 35 and the price is taken at 35, as at max_num_seqs 35 until
    round 57 (dearer than uncapped: 5.79e-5 USD against 4.61e-5, 26 % more, its prompts
    packed as the replica packs them, round 56; prefilled alone, 8.30e-5 against 7.12e-5);
    at 1.3 a second (tiny's own load a replica, 317 requests over 120 s and 2 replicas) the
    batch is far below 35 and the price does not move. Every figure modelled (the roofline
    step model, tiny's ``profile: null``). The cap is the run's KV-thrashing note's figure
    (same helper, same blocks)."""
    import dataclasses

    tier, heavy = _tiny_tier(0.47, 40.0)
    tokens = float(np.mean(heavy.prompt + heavy.output))
    held = sequences_held(tier.limits, tier.num_blocks, int(tokens))
    assert tier.num_blocks == 4940 and held == tier.num_blocks // -(-int(tokens) // 16)
    assert int(tokens) == 2204 and held == 35 < tier.limits.max_num_seqs
    assert batch_cap(tier.limits, tier.num_blocks, tokens) == held
    price = cost_weight(tier, "provisioned", heavy)
    at_35 = dataclasses.replace(tier, limits=dataclasses.replace(tier.limits, max_num_seqs=35))
    # Until round 57 the same as at max_num_seqs 35 (rel 1e-12). A running set full at 35 by
    # count lets a prompt in as each sequence leaves, its prefill riding on the decodes
    # (tiersim.inputs.riding_seconds: 6.108e-5, 1.056 x); one the KV cache holds to 35 lets
    # prompts in as blocks free and keeps the packed prefill.
    assert _uncapped(at_35, heavy) == pytest.approx(price * 1.0557, rel=1e-3)
    # 8.297e-5 / 7.117e-5 with the prompts prefilled alone (round 55); packed since round 56
    assert price / _uncapped(tier, heavy) == pytest.approx(5.786e-5 / 4.605e-5, rel=1e-3)
    tier, light = _tiny_tier(0.47, 1.3)
    assert cost_weight(tier, "provisioned", light) == _uncapped(tier, light)
