"""Round 52 (price52): the cost-weighing routers price a request on a tier over the served
requests' own lengths, not at one reference step.

They priced it at one step (a 512-token prefill beside 32 decodes at 2,048 tokens of
context). NVIDIA's FP8 GEMM tables, which the step model reads, time 512 tokens at less than
half of 513's (0.160 against 0.362 ms at 28,672 x 8,192), and the step's 544 tokens sat on
the slow side: at Llama-3.1-70B TP2 on H200, FP8 was priced above BF16 (0.000173 against
0.00017 USD) and the floor router sent it nothing, though FP8's fleet is the smaller. One
probe of a piecewise table decided the routing.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml

from tiersim.engine.request import SchedulerLimits
from tiersim.errors import Note
from tiersim.inputs import (
    PRICE_SAMPLE,
    LengthMix,
    cost_weight,
    price_sample,
    priced,
    request_seconds,
    route,
    tier_infos,
)
from tiersim.perf.base import StepShape

LAYERS = 80


class JumpModel:
    """A step model whose dense layers read a GEMM table that jumps after ``jump`` tokens as
    NVIDIA's FP8 tables jump after 512 (0.160 ms at 512 tokens, 0.362 at 513, per layer),
    plus a term per token of context."""

    source = "test: a GEMM table with a jump"

    def __init__(self, jump: int = 512):
        self.jump = jump

    def gemm(self, tokens: np.ndarray | int) -> np.ndarray:
        """Seconds of one layer's GEMMs for ``tokens`` tokens: 0.160 ms per 512 up to the jump,
        0.362 ms per 513 beyond it."""
        n = np.asarray(tokens, dtype=np.float64)
        return np.where(n <= self.jump, 0.160e-3 * n / 512, 0.362e-3 * n / 513)

    def step_time(self, shape: StepShape) -> float:
        """One iteration: the GEMMs of all its tokens, and attention over its context."""
        context = shape.decode_context + sum(new * (cached + new / 2)
                                             for new, cached in shape.prefill_chunks)
        return float(2e-3 + LAYERS * self.gemm(shape.num_tokens) + 1e-9 * context)

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Pure-decode iterations, one per summed context."""
        ctx = np.asarray(decode_context, dtype=np.float64)
        return 2e-3 + LAYERS * self.gemm(decode_seqs) + 1e-9 * ctx


def spread_mix(shift: int = 0) -> LengthMix:
    """256 requests of prompts log-uniform over 50-8,000 tokens and outputs over 10-1,000
    (``shift`` tokens added to every prompt)."""
    rng = np.random.default_rng(7)
    prompt = np.rint(np.exp(rng.uniform(np.log(50), np.log(8000), 256))).astype(np.int64)
    output = np.rint(np.exp(rng.uniform(np.log(10), np.log(1000), 256))).astype(np.int64)
    return LengthMix(prompt=prompt + shift, output=output)


def tier_of(model, price_per_hour: float = 3.6) -> SimpleNamespace:
    """A built tier as :func:`cost_weight` reads it: ``model`` on vLLM's default limits, one
    GPU at ``price_per_hour`` USD, no speculative decoding; no KV blocks known (0: round 55's
    KV cap on the price's batch does not apply, ``max_num_seqs`` alone caps it)."""
    config = SimpleNamespace(cost_per_request_usd=None, output_length_multiplier=1.0,
                             speculative=None)
    return SimpleNamespace(config=config, step_model=model, limits=SchedulerLimits(),
                           num_blocks=0, usd_per_replica_second=price_per_hour / 3600)


def reference_step_price(model, price_per_hour: float = 3.6) -> float:
    """The routers' old price: the step of a 512-token prefill beside 32 decodes at 2,048."""
    shape = StepShape(prefill_chunks=((512, 0),), decode_seqs=32, decode_context=32 * 2048)
    return price_per_hour / 3600 * model.step_time(shape)


def test_one_reference_step_hinged_on_the_table_s_jump():
    """The old price of one step moved by more than half when the table's jump moved one
    token past the step's 544 tokens: the premise of the fix, on the constructed table."""
    below, above = reference_step_price(JumpModel(543)), reference_step_price(JumpModel(544))
    assert above < below / 1.5


@pytest.mark.parametrize("jump", range(500, 600, 4))
def test_the_price_over_the_requests_is_continuous_in_the_jump(jump):
    """Priced over a spread of requests, moving the table's jump one token (or every prompt
    one token) moves the price by less than 0.5 %: only the requests at the jump move."""
    mix = spread_mix()
    here = cost_weight(tier_of(JumpModel(jump)), "provisioned", mix)
    assert cost_weight(tier_of(JumpModel(jump + 1)), "provisioned", mix) == pytest.approx(
        here, rel=5e-3)
    assert cost_weight(tier_of(JumpModel(jump)), "provisioned", spread_mix(1)) == (
        pytest.approx(here, rel=5e-3))


def test_the_price_across_the_whole_jump_range_moves_a_few_percent():
    """Across jumps from 500 to 600 tokens the price moves by under 5 %, where the old price
    doubled between two of them."""
    mix = spread_mix()
    prices = [cost_weight(tier_of(JumpModel(j)), "provisioned", mix) for j in range(500, 601)]
    assert max(prices) / min(prices) < 1.05


def test_a_request_s_seconds_are_its_chunks_and_its_share_of_decode_steps():
    """A 20,000-token prompt is three steps of the scheduler's 8,192-token chunks (each beside
    the earlier chunks in the cache); with no load (``rate`` 0) its 100 output tokens are 100
    one-sequence decode steps at the request's mean context (20,000 + 50). Round 53: it was
    100 thirty-seconds of a 32-sequence step whatever the load."""
    model = JumpModel()
    mix = LengthMix(prompt=np.array([20_000]), output=np.array([100]))
    got = request_seconds(model, SchedulerLimits(), 1.0, mix)
    chunks = [((8192, 0),), ((8192, 8192),), ((3616, 16384),)]
    prefill = sum(model.step_time(StepShape(prefill_chunks=c)) for c in chunks)
    decode = 100 * model.step_time(StepShape(decode_seqs=1, decode_context=20_050))
    assert got == pytest.approx([prefill + decode], rel=1e-12)
    # the tier's output multiplier lengthens the output (rounded, at least one token); a
    # tier of max_num_seqs 8 under more load than it can take shares each step among 8
    twice = request_seconds(model, SchedulerLimits(max_num_seqs=8), 2.0, mix, rate=1e6)
    decode8 = 200 * model.step_time(StepShape(decode_seqs=8, decode_context=8 * 20_100)) / 8
    assert twice == pytest.approx([prefill + decode8], rel=1e-12)


def test_no_request_is_priced_at_nothing():
    """A mix of no request (a response cache answered every one) prices every tier at 0."""
    empty = LengthMix(prompt=np.array([], dtype=np.int64), output=np.array([], dtype=np.int64))
    assert cost_weight(tier_of(JumpModel()), "provisioned", empty) == 0.0


def table(rows: int) -> pd.DataFrame:
    """A routed table of ``rows`` requests of distinct lengths, two a second."""
    return pd.DataFrame({"input_tokens": np.arange(rows) + 100,
                         "output_tokens": np.arange(rows) % 97 + 1,
                         "arrival_s": np.arange(rows) * 0.5})


def test_the_sample_is_the_seed_s_and_bounded():
    """Up to PRICE_SAMPLE rows in table order, the same for one seed, others for another;
    every row of a table no longer than that."""
    big = table(10_000)
    first, again, other = (price_sample(big, 3), price_sample(big, 3), price_sample(big, 4))
    assert len(first.prompt) == PRICE_SAMPLE == 256
    assert np.array_equal(first.prompt, again.prompt)
    assert np.array_equal(first.output, again.output)
    assert not np.array_equal(first.prompt, other.prompt)
    assert np.all(np.diff(first.prompt) > 0)  # distinct rows, in table order
    small = table(200)
    assert np.array_equal(price_sample(small, 3).prompt, small["input_tokens"].to_numpy())




def test_fp8_at_tp2_is_no_longer_priced_above_bf16(tmp_path):
    """Llama-3.1-70B at TP2 on H200 (shipped profile), the first minute of the bundled
    conversation trace in BurstGPT's columns (191 requests, test_round51_fresh's user): the
    old reference step still reads FP8 dearer (0.000173 against 0.00017 USD: the table's
    jump is still there), and the price over the served requests reads it cheaper. Round 52
    priced output at a 32-sequence step's share: 0.000443 against 0.000581 (0.76 x). Round 53
    prices it at the batch the run's load gives each of its 2 replicas (Little's law: 6.3
    sequences on FP8, 9.9 on BF16): 0.0013 against 0.00131 (0.994 x; 0.001301 against
    0.001307 at round 54, 0.995 x); round 55 reads the rate as the 190 gaps over the minute,
    not the 191 rows (0.5 % less load, a smaller batch): 0.001307 against 0.001314, both
    0.5 % dearer, 0.995 x still; each run alone at 2
    replicas, FP8 costs 0.889 x BF16 per request (attributed, modelled). Both replicas are
    busy nearly all the time here, where a tier's slower step gathers a larger batch and the
    price loses most of the speed difference (docs/planning.md). The prices move with the
    shipped profile."""
    from test_round51_fresh import FP8_BF16_TP2, burstgpt_csv

    from tiersim.fleet import build_fleet
    from tiersim.inputs import load_scenario_trace, prepare_all
    from tiersim.runner import workload_rng
    from tiersim.scenario import load_scenario

    burstgpt_csv(tmp_path / "ours.csv")
    path = tmp_path / "s.yaml"
    path.write_text(FP8_BF16_TP2)
    scenario = load_scenario(path)
    fleet = build_fleet(scenario)
    unpriced = tier_infos(scenario, fleet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)  # the priors note
        df = prepare_all(load_scenario_trace(scenario, str(path)), unpriced, scenario,
                         workload_rng(scenario), str(path)).df
    old = [reference_step_price(t.step_model, 2 * 3.80) for t in fleet.tiers]
    assert [f"{w:.3g}" for w in old] == ["0.000173", "0.00017"]
    new = [t.cost_weight for t in priced(unpriced, scenario, fleet, df)]
    assert len(df) == 191
    assert [f"{w:.4g}" for w in new] == ["0.001307", "0.001314"]
    assert new[0] / new[1] == pytest.approx(0.9951, abs=1e-4)
    # route() prices tiers not priced yet over the table it routes, as the run prices them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)  # the classifier's small-class note
        rngs = (np.random.default_rng(1), np.random.default_rng(2))
        by_route = route(scenario, df, unpriced, rngs, str(path))
        rngs = (np.random.default_rng(1), np.random.default_rng(2))
        by_run = route(scenario, df, priced(unpriced, scenario, fleet, df), rngs, str(path))
    assert np.array_equal(by_route.tier, by_run.tier)


def test_the_order_note_under_fixed_prices_names_them(tmp_path, capsys):
    """Under ``fixed_per_request`` with every tier priced, the routers' price is the tier's
    ``cost_per_request_usd``, and the order note says so, not the step model's price."""
    from tiersim.cli import main

    w4a16, bf16 = tiny_doc()["tiers"]
    doc = tiny_doc(tiers=[{**bf16, "cost_per_request_usd": 0.002},
                          {**w4a16, "cost_per_request_usd": 0.001}],
                   cost_model="fixed_per_request")
    path = write_yaml(tmp_path / "s.yaml", doc)
    capsys.readouterr()
    assert main(["run", str(path), "--no-baselines", "--no-report"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "listed first" in line]
    assert notes == [
        f"note: {path}: tiers 'bf16' and 'w4a16' cost the same per replica-hour (3.5 USD, "
        "cost_per_gpu_hour x gpus_per_replica) and 'bf16', listed first, costs more per "
        "request (0.002 against 0.001 USD, their cost_per_request_usd, as the cost model is "
        "fixed_per_request); tiers are taken as listed, cheapest first (the routers, FPR/FNR "
        "and the closed form assume it), so only the order makes 'bf16' the cheap one: list "
        "the tier you mean as cheaper first unless this is on purpose"]


def test_the_words_naming_the_price():
    """The words the notes name the routers' price with (exact)."""
    from tiersim.runner import PRICE_WORDS

    assert PRICE_WORDS == (
        "priced over up to 256 of the served requests, each by the replica-seconds it takes on "
        "the tier's step model, its prompt in the engine's chunks and its output at the decode "
        "batch the run's load gives a replica of its fleet (Little's law)")
