"""Prefill attention under a sliding window: each new token attends to at most ``window`` keys."""

import dataclasses

import pytest

from tiersim.hardware.arch import ModelArch
from tiersim.perf.assembly import sliding_work_fraction
from tiersim.perf.base import StepShape
from tiersim.perf.roofline import RooflineModel

GPT_OSS = ModelArch(
    name="gpt-oss-20b",
    layers=24,
    hidden=2880,
    heads=64,
    kv_heads=8,
    head_dim=64,
    vocab=201088,
    num_experts=32,
    expert_intermediate=2880,
    top_k=4,
    sliding_window=128,
    sliding_layers=12,
)


def brute_fraction(new: int, cached: int, window: int) -> float:
    causal = sum(cached + i for i in range(1, new + 1))
    windowed = sum(min(cached + i, window) for i in range(1, new + 1))
    return windowed / causal


@pytest.mark.parametrize(
    "new,cached,window",
    [
        (1, 0, 128),
        (128, 0, 128),
        (129, 0, 128),
        (8192, 0, 128),
        (100, 60, 128),
        (500, 128, 128),
        (3, 127, 128),
        (4096, 10, 4096),
    ],
)
def test_fraction_matches_the_sum_over_tokens(new, cached, window):
    assert sliding_work_fraction(new, cached, window) == pytest.approx(
        brute_fraction(new, cached, window)
    )


def test_fraction_is_one_inside_the_window():
    assert sliding_work_fraction(128, 0, 128) == 1.0
    assert sliding_work_fraction(28, 100, 128) == 1.0


def prefill_attention(arch, new, cached=0):
    model = RooflineModel(arch, "bf16", "H200")
    return model._attn_prefill(new, cached)


def test_long_prompt_costs_less_attention_with_a_window():
    full = dataclasses.replace(GPT_OSS, sliding_window=0, sliding_layers=0)
    windowed, dense = prefill_attention(GPT_OSS, 8192), prefill_attention(full, 8192)
    # half the layers are windowed: their share of the quadratic work nearly vanishes
    assert windowed < 0.6 * dense
    assert windowed > 0.5 * dense


def test_prompt_inside_the_window_is_unchanged():
    full = dataclasses.replace(GPT_OSS, sliding_window=0, sliding_layers=0)
    assert prefill_attention(GPT_OSS, 100) == prefill_attention(full, 100)


def test_windowed_prefill_step_grows_with_the_prompt():
    model = RooflineModel(GPT_OSS, "bf16", "H200")
    times = [model.step_time(StepShape(((n, 0),))) for n in (64, 128, 129, 512, 2048, 8192)]
    assert times == sorted(times)
