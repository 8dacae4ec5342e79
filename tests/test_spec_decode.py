"""Speculative decoding: the engine matches the naive loop with the same draws, tokens per
verify step match the closed form within sampling error, runs are reproducible from the seed,
nothing is lost, KV stays within capacity, and it helps small batches but hurts large ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import (
    assert_fast_forward_exact_and_conserving,
    assert_matches_reference,
)
from test_prefix_cache import shared_prefix_workload

from tiersim.engine import SchedulerLimits, SpecDecoding, TierSpec, Workload, simulate
from tiersim.engine.request import Req
from tiersim.engine.spec_decode import SpecScheduler, SpecStepModel
from tiersim.perf.base import LinearStepModel

fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def spec_tier(k=3, acceptance=(0.7,), num_blocks=400, replicas=1, head_cost=0.05, seed=0,
              **limits):
    """A small tier with speculative decoding (a draft head) on the linear test model."""
    lim = dict(max_num_seqs=8, max_num_batched_tokens=512, block_size=16, watermark=0.01)
    lim.update(limits)
    lim["max_num_batched_tokens"] = max(lim["max_num_batched_tokens"],
                                        lim["max_num_seqs"] * (k + 1))
    sd = SpecDecoding(k, tuple(acceptance), head_cost=head_cost, seed=seed)
    return TierSpec("t", replicas, num_blocks, LinearStepModel(), SchedulerLimits(**lim),
                    spec_decoding=sd)


setups = st.fixed_dictionaries({
    "k": st.integers(1, 5),
    "acceptance": st.sampled_from([(0.0,), (0.5,), (0.8,), (1.0,), (0.9, 0.6, 0.3)]),
    "max_num_seqs": st.integers(1, 16),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(60, 600),
    "enable_prefix_caching": st.booleans(),
    "seed": st.integers(0, 3),
})
workloads = st.builds(
    shared_prefix_workload, n=st.integers(1, 40), seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0), max_in=st.integers(2, 600), max_out=st.integers(2, 300),
    families=st.integers(1, 4), block=st.sampled_from([16, 32]),
)


def _tier(setup):
    setup = dict(setup)
    k, acc = setup.pop("k"), setup.pop("acceptance")
    if len(acc) > 1:
        acc = (acc * k)[:k]
    return spec_tier(k=k, acceptance=acc, **setup)


@fast
@given(workloads, setups)
def test_matches_naive_loop_with_speculative_decoding(work, setup):
    spec = _tier(setup)
    assert_matches_reference(simulate([spec], work), work, spec, spec=spec.spec_decoding)


@fast
@given(workloads, setups, st.integers(1, 3))
def test_fast_forward_equals_per_iteration_and_nothing_is_lost(work, setup, replicas):
    spec = _tier(setup)
    spec.replicas = replicas
    assert_fast_forward_exact_and_conserving(spec, work, simulate)


def _tokens_per_step(sd: SpecDecoding, n=8, output=20_000, accept=None) -> tuple[float, float]:
    """Drive a scheduler by hand: mean tokens per verify step and its standard error."""
    lim = SchedulerLimits(max_num_seqs=n, max_num_batched_tokens=n * (sd.k + 1) + 64)
    sched = SpecScheduler(lim, 10**6, sd, accept=accept)
    for i in range(n):
        assert sched.add(Req(i, prompt=16, output=output, arrival=0.0))
    while not sched.idle():
        plan = sched.schedule(0.0)
        sched.complete(plan, 1, 0.0, 0.0)
    rates = sd.rates(None if accept is None else accept[0])
    pmf, p = [], 1.0  # P(emit i+1) for i = 0..k
    for a in rates:
        pmf.append(p * (1 - a))
        p *= a
    pmf.append(p)
    m = np.arange(1, sd.k + 2)
    var = float(np.sum(pmf * m**2) - np.sum(pmf * m) ** 2)
    return sched.spec_tokens / sched.verify_steps, np.sqrt(var / sched.verify_steps)


@pytest.mark.parametrize("k,a", [(1, 0.5), (3, 0.7), (5, 0.85), (4, 0.3)])
def test_tokens_per_step_match_the_closed_form(k, a):
    sd = SpecDecoding(k, (a,), seed=11)
    mean, se = _tokens_per_step(sd)
    closed = (1 - a ** (k + 1)) / (1 - a)
    assert sd.expected_tokens() == pytest.approx(closed)
    assert abs(mean - closed) < 4 * se + 1e-3  # truncated last steps: at most n * k tokens


def test_per_position_rates_and_a_trace_column():
    sd = SpecDecoding(3, (0.9, 0.5, 0.2), seed=5)
    mean, se = _tokens_per_step(sd)
    assert abs(mean - (1 + 0.9 + 0.45 + 0.09)) < 4 * se + 1e-3
    mean, se = _tokens_per_step(sd, accept=np.full(8, 0.6))
    assert abs(mean - (1 - 0.6**4) / 0.4) < 4 * se + 1e-3


def _batch_workload(n, output=200, seed=0):
    rng = np.random.default_rng(seed)
    return Workload(np.zeros(n), rng.integers(50, 200, n), np.full(n, output),
                    np.zeros(n, dtype=np.int64))


def test_runs_are_reproducible_from_the_seed():
    work = _batch_workload(20)
    a = simulate([spec_tier(seed=1, max_num_seqs=4)], work)
    b = simulate([spec_tier(seed=1, max_num_seqs=4)], work)
    c = simulate([spec_tier(seed=2, max_num_seqs=4)], work)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)
    assert not np.array_equal(a.finish_s, c.finish_s)


def _tpot(res, work):
    return float(np.mean((res.finish_s - res.first_token_s) / (work.output_tokens - 1)))


def test_helps_small_batches_and_hurts_large_ones():
    small, large = _batch_workload(2), _batch_workload(256)
    for work, seqs, helps in ((small, 2, True), (large, 256, False)):
        plain = TierSpec("t", 1, 100_000, LinearStepModel(),
                         SchedulerLimits(max_num_seqs=seqs, max_num_batched_tokens=4096))
        spec = spec_tier(k=3, acceptance=(0.7,), num_blocks=100_000, max_num_seqs=seqs,
                         max_num_batched_tokens=4096)
        ratio = _tpot(simulate([spec], work), work) / _tpot(simulate([plain], work), work)
        assert (ratio < 0.6) if helps else (ratio > 1.2), (seqs, ratio)


def test_verify_step_costs_k_plus_1_tokens_and_the_draft():
    target = LinearStepModel()
    sd = SpecDecoding(3, (0.5,), head_cost=0.1)
    model = SpecStepModel(target, sd)
    ctx = np.array([1000.0])
    want = target.decode_times(40, ctx) + 3 * 0.1 * target.decode_times(10, ctx)
    np.testing.assert_allclose(model.decode_times(10, ctx), want)
    draft = SpecDecoding(2, (0.5,), draft_model=LinearStepModel(overhead=0.001))
    model = SpecStepModel(target, draft)
    want = target.decode_times(30, ctx) + 2 * draft.draft_model.decode_times(10, ctx)
    np.testing.assert_allclose(model.decode_times(10, ctx), want)


def test_budget_must_cover_every_decoder_verifying():
    with pytest.raises(ValueError, match="max_num_seqs x"):
        SpecScheduler(SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=512), 100,
                      SpecDecoding(3, (0.5,)))


@fast
@given(workloads, setups)
def test_kv_peak_holds_every_sampled_step(work, setup):
    """The replica's peak KV use is at least what any step it held: the peak is taken
    while the step's blocks are held, before finished requests free theirs (it was taken
    after, so the summary's kv_peak_frac fell below timeseries.parquet's samples). The
    series' rows are means over intervals of 1e-12 s (round 26): one rounding of the mean
    is allowed."""
    res = simulate([_tier(setup)], work, sample_every=1e-12)
    for peak, samples in zip(res.kv_peak_blocks["t"], res.samples["t"]):
        assert peak * (1 + 1e-12) >= max((s[3] for s in samples), default=0)
