"""Round 57 (price57): on decode-heavy traffic a saturated replica's prompts ride on its decode
steps (:func:`tiersim.inputs.riding_seconds`, :func:`tiersim.inputs.riding_prefill`).

Round 56 priced a replica past the heavy-load threshold (``rate x`` a prompt's mean seconds
alone above 1) with its prompts packed into full steps of ``max_num_batched_tokens``. On the
Azure conversation trace (1,237-token prompts, 273 output tokens on the tier) the engine's
running set is full of decoding sequences (``max_num_seqs`` 256) and lets a prompt in only
as one leaves: its prefill steps carry about 2,100 prompt tokens beside 250 decodes, and the
packed price read 0.78 x the run's attributed cost per request on tiny's BF16 tier at 15x and
0.74 x on FP8 (every figure modelled: roofline, tiny's ``profile: null``). The price is now
the dearer of the packed one and the prompts riding on the decode steps: ``q = 256 / 273``
sequences leave a step, so as many prompts come in, Poisson in number; a step with ``k`` of
them takes the step model's ``step_time`` of it over the pure-decode step's. It reads 0.995 x
and 0.991 x. The code trace (1,914-token prompts, 31 output tokens) is held back by its
prefill (``q x`` prompt far above the budget), so its price does not move; nor does any
price below the threshold.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, tiny_doc, write_yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.engine import SchedulerLimits
from tiersim.inputs import (
    DecodeSteps,
    LengthMix,
    PrefillSteps,
    cost_weight,
    fleet_replicas,
    price_sample,
    request_seconds,
    riding_prefill,
    riding_seconds,
)
from tiersim.perf.base import LinearStepModel, StepShape


@dataclass
class JumpModel:
    """A step of ``overhead`` plus ``jump`` where it holds any prompt token (prompt tokens
    otherwise free, decodes free): a mixed step costs ``jump`` more than a pure-decode one
    whatever its prompts."""

    overhead: float = 0.01
    jump: float = 0.05
    per_token: float = 0.0
    source: str = "jump (test model)"

    def step_time(self, shape: StepShape) -> float:
        """``overhead``, plus ``jump`` and ``per_token`` a prompt token where it has any."""
        tokens = shape.prefill_tokens
        return self.overhead + (self.jump + self.per_token * tokens if tokens else 0.0)

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Pure-decode steps: ``overhead`` each."""
        return np.full(len(np.atleast_1d(decode_context)), self.overhead)


def test_riding_on_a_jump_is_the_poisson_share_by_hand():
    """4 decoding sequences of 7 and 9 output tokens (8 on the mean): q = 0.5 leave a step.
    A step holding any of the 100-token prompts costs 0.05 s more, so the steps with prompts,
    1 - exp(-0.5) of them, add 0.05 s for the 0.5 prompts a step: each prompt 0.05 x (1 -
    exp(-0.5)) / 0.5 = 0.0393 s, where one a step (even spread) would be 0.1 s and packed ones
    less."""
    prompt = np.array([100, 100])
    got = riding_prefill(JumpModel(), prompt, np.array([7.0, 9.0]), np.array([104.0] * 2), 4, 8192)
    assert got == pytest.approx(np.full(2, 0.05 * -math.expm1(-0.5) / 0.5), rel=1e-12)


def test_riding_on_a_linear_step_is_the_token_s_time():
    """On an affine step model each prompt token adds ``per_prefill_token`` whatever rides
    with it (spilling past the step's room included), so a prompt rides at its tokens x
    that: 300 x 2e-5 and 900 x 2e-5 s, whatever the batch and outputs."""
    model = LinearStepModel(overhead=0.01, per_prefill_token=2e-5, per_decode_seq=1e-4)
    prompt = np.array([300, 900])
    for cap, output in ((8, 20.0), (64, 5.0), (12, 1.0)):
        got = riding_prefill(model, prompt, np.full(2, output), np.array([310.0, 910.0]), cap, 8192)
        assert got == pytest.approx(prompt * 2e-5, rel=1e-9), (cap, output)


def test_prefill_bound_traffic_does_not_ride():
    """The prompts q a step make room for must fit beside the decodes on average: 256 / 31
    = 8.26 prompts of 1,914 tokens is 15,800 a step, past 8,192 - 256 (the code trace: its
    prefill holds it back), and a budget no larger than the batch leaves no room."""
    model = LinearStepModel()
    assert (
        riding_prefill(model, np.array([1914]), np.array([31.0]), np.array([1930.0]), 256, 8192)
        is None
    )
    assert (
        riding_prefill(model, np.array([100]), np.array([100.0]), np.array([150.0]), 256, 256)
        is None
    )
    assert (
        riding_prefill(model, np.array([], dtype=np.int64), np.array([]), np.array([]), 8, 8192)
        is None
    )


def test_a_running_set_the_kv_cache_holds_to_fewer_does_not_ride():
    """1,000 KV blocks of 16 tokens hold 9 sequences of 1,500 tokens (94 blocks; 990 above
    the 1 % watermark): fewer than max_num_seqs 16, so the engine lets prompts in as blocks
    free and the price keeps the packed prefill; 2,000 blocks hold 21, so the running set is
    full by count and the prompts ride."""
    model = JumpModel()
    limits = SchedulerLimits(max_num_seqs=16)
    prompt, output = np.array([1000, 1000]), np.array([1000.0, 1000.0])
    step = DecodeSteps(model, prompt + output / 2.0)
    alone = PrefillSteps(model, prompt, 8192).cost(1)
    assert riding_seconds(model, limits, prompt, output, step, alone, 1000) is None
    assert riding_seconds(model, limits, prompt, output, step, alone, 2000) is not None


def _decode_heavy(rate: float) -> tuple[JumpModel, SchedulerLimits, LengthMix]:
    """1,000-token prompts, 63 and 65 output tokens (64 on the mean, not all one length, so
    the finishes are Poisson, not cohorts), 8 sequences a replica at most, ``rate`` a second,
    on :class:`JumpModel` (prompt tokens 2e-6 s each)."""
    mix = LengthMix(prompt=np.full(4, 1000), output=np.array([63, 65, 63, 65]), rate=rate)
    return JumpModel(per_token=2e-6), SchedulerLimits(max_num_seqs=8), mix


def test_the_decode_heavy_price_by_hand():
    """Alone a prompt is one 0.062 s step: the threshold is 16.1 a second. At 100 a second
    the packed price takes 7.5 prompts a round (100 x (0.06 + 0.002 n) = n: 7,500 tokens,
    one 0.075 s step, 0.01 s each);
    riding, q = 8 / 64 = 0.125 prompts a step, each step with any adds 0.05 s + 2e-6 a token:
    (0.05 x (1 - exp(-0.125)) + 0.125 x 0.002) / 0.125 = 0.0490 s, dearer, so taken; the
    output is its 63 or 65 eighths of a 0.01 s decode step either way."""
    model, limits, mix = _decode_heavy(100.0)
    got = request_seconds(model, limits, 1.0, mix, mix.rate)
    riding = (0.05 * -math.expm1(-0.125) + 0.125 * 0.002) / 0.125
    assert got == pytest.approx(riding + mix.output * 0.01 / 8, rel=1e-9)
    assert riding > 0.075 / 7.5


def test_the_price_never_rises_with_the_load_and_does_not_jump_at_the_threshold():
    """From below the threshold (unchanged, to the bit) through it (no jump: riding is at
    most the price there) to 400 a second, on the decode-heavy mix."""
    model, limits, mix = _decode_heavy(0.0)
    threshold = 1.0 / 0.062
    rates = [threshold * s for s in (0.5, 0.99, 1.0, 1.0 + 1e-9, 1.01, 1.5, 3.0)] + [100, 400]
    prices = [
        float(np.mean(request_seconds(model, limits, 1.0, replace(mix, rate=r), r))) for r in rates
    ]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(prices, prices[1:]))
    assert prices[3] == pytest.approx(prices[2], rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    prompts=st.lists(st.integers(1, 12000), min_size=1, max_size=6),
    outputs=st.lists(st.integers(1, 2000), min_size=1, max_size=6),
    seqs=st.integers(1, 256),
    jump=st.floats(0.0, 0.1),
    per_token=st.floats(0.0, 1e-4),
    shares=st.lists(st.floats(0.01, 40.0), min_size=2, max_size=6),
)
def test_the_price_never_rises_with_the_load(prompts, outputs, seqs, jump, per_token, shares):
    """Any mix, batch cap and jump: the mean price per request at a heavier load is no
    dearer (the packed price falls, the riding one does not move and is at most the price at
    the threshold)."""
    size = min(len(prompts), len(outputs))
    prompt = np.array(prompts[:size], dtype=np.int64)
    mix = LengthMix(prompt=prompt, output=np.array(outputs[:size]), rate=0.0)
    model = JumpModel(jump=jump, per_token=per_token)
    limits = SchedulerLimits(max_num_seqs=seqs)
    alone = float(np.mean(PrefillSteps(model, prompt, 8192).held(1)))
    prices = [
        float(np.mean(request_seconds(model, limits, 1.0, replace(mix, rate=r), r)))
        for r in sorted(s / alone for s in shares)
    ]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(prices, prices[1:]))


def _run_and_price(tmp_path: Path, trace: str, precision: str, scale: float) -> tuple:
    """(the run's attributed cost per request, the price, the run's requests) for tiny's
    tier at ``precision`` alone (``gpu_memory_utilization`` 0.9), 240-840 s of the Azure
    ``trace`` at ``scale``."""
    from tiersim.fleet import build_fleet
    from tiersim.inputs import load_scenario_trace
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(name=f"{trace}{precision}", router={"policy": "uniform"})
    doc["tiers"] = [{**doc["tiers"][1], "name": precision, "precision": precision}]
    doc["trace"] = {
        **doc["trace"],
        "path": str(REPO / "traces" / f"azure2023_{trace}.parquet"),
        "window": [240, 840],
        "time_scale": scale,
    }
    path = write_yaml(tmp_path / f"{trace}{precision}{scale}.yaml", doc)
    scenario = load_scenario(path)
    out = tmp_path / f"out{trace}{precision}{scale}"
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(record=True),
    ):
        run_scenario(scenario, out_dir=out, baselines=False)
        tier = build_fleet(scenario).tiers[0]
        mix = price_sample(
            load_scenario_trace(scenario, str(path)).table, scenario.seed, fleet_replicas(scenario)
        )
    (ran,) = json.loads((out / "summary.json").read_text())["tiers"].values()
    return (
        ran["attributed_cost_usd"] / ran["requests"],
        cost_weight(tier, scenario.cost_model, mix),
        ran["requests"],
    )


@pytest.mark.parametrize(
    ("precision", "scale", "level"),
    [("bf16", 15.0, 0.995), ("fp8", 15.0, 0.991), ("bf16", 8.0, 0.983), ("fp8", 30.0, 0.988)],
)
def test_the_conversation_trace_is_priced_within_the_band(tmp_path, precision, scale, level):
    """The Azure conversation trace on one replica of tiny's tier, 3,003 requests, its
    running set full: the price over the run's attributed cost per request read 0.782 (BF16,
    15x), 0.741 (FP8, 15x), 0.811 (BF16, 8x) and 0.739 (FP8, 30x) packed; riding, within
    the band the code trace's check holds (modelled)."""
    run_cost, price, requests = _run_and_price(tmp_path, "conv", precision, scale)
    assert requests == 3003
    assert 0.90 <= price / run_cost <= 1.10
    assert price / run_cost == pytest.approx(level, abs=0.005)


@pytest.mark.parametrize(("precision", "level"), [("bf16", 0.927), ("fp8", 0.909)])
def test_the_code_trace_does_not_move(tmp_path, precision, level):
    """The code trace at 15x is held back by its prefill: its price is the packed one, as in
    round 56 (0.927 and 0.909 x the run, modelled)."""
    run_cost, price, _ = _run_and_price(tmp_path, "code", precision, 15.0)
    assert price / run_cost == pytest.approx(level, abs=0.002)
