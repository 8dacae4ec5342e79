"""Prefill/decode disaggregation: fast-forward stays exact, nothing is lost, KV stays within
capacity, the KV transfer delays the first decode (not the first token) by bytes over the link,
and decode replicas spared from prefill chunks keep TPOT steady."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_fast_forward_exact_and_conserving
from test_prefix_cache import shared_prefix_workload

from tiersim.engine import Disagg, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel, StepShape

fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def split_tier(prefill=1, decode=1, bw=1e6, latency=0.0, per_token=100.0, num_blocks=400,
               **limits):
    """A tier of ``prefill`` + ``decode`` replicas on the linear test model."""
    lim = dict(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, watermark=0.01)
    lim.update(limits)
    return TierSpec("t", prefill + decode, num_blocks, LinearStepModel(), SchedulerLimits(**lim),
                    disagg=Disagg(prefill, decode, bw, latency, per_token))


setups = st.fixed_dictionaries({
    "prefill": st.integers(1, 3),
    "decode": st.integers(1, 3),
    "bw": st.sampled_from([1e4, 1e6, 1e9]),
    "latency": st.sampled_from([0.0, 0.002]),
    "max_num_seqs": st.integers(1, 32),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(60, 600),
    "enable_prefix_caching": st.booleans(),
})
workloads = st.builds(
    shared_prefix_workload, n=st.integers(1, 50), seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0), max_in=st.integers(2, 800), max_out=st.integers(2, 200),
    families=st.integers(1, 4), block=st.sampled_from([16, 32]),
)


@fast
@given(workloads, setups)
def test_fast_forward_exact_nothing_lost_kv_within_capacity(work, setup):
    spec = split_tier(**setup)
    a = assert_fast_forward_exact_and_conserving(spec, work, simulate)
    done = ~a.dropped
    assert np.all(a.first_token_s[done] <= a.finish_s[done])
    longer = done & (np.asarray(work.output_tokens) > 1)  # answered by a decode replica
    assert np.all(a.replica[longer] >= setup["prefill"])


def test_transfer_delays_the_first_decode_by_bytes_over_the_link():
    prompt, out, bw, lat, per_token = 400, 5, 2e6, 0.003, 100.0
    work = Workload(np.array([0.0]), np.array([prompt]), np.array([out]), np.zeros(1, np.int64))
    res = simulate([split_tier(bw=bw, latency=lat, per_token=per_token)], work)
    m = LinearStepModel()
    t1 = m.step_time(StepShape(((prompt, 0),), 0, 0))
    assert res.first_token_s[0] == pytest.approx(t1)
    t = t1 + lat + prompt * per_token / bw + m.step_time(StepShape(((1, prompt),), 0, 0))
    for j in range(out - 2):
        t += float(m.decode_times(1, np.array([prompt + 2 + j]))[0])
    assert res.finish_s[0] == pytest.approx(t)
    assert res.replica[0] == 1  # answered by the decode replica


def test_one_token_answers_end_on_the_prefill_replica():
    work = Workload(np.array([0.0]), np.array([100]), np.array([1]), np.zeros(1, np.int64))
    res = simulate([split_tier()], work)
    assert res.replica[0] == 0 and res.finish_s[0] == res.first_token_s[0]


def _long_prompts(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return Workload(np.cumsum(rng.exponential(0.05, n)), rng.integers(2000, 6000, n),
                    rng.integers(50, 150, n), np.zeros(n, np.int64))


def test_decoders_spared_prefill_chunks_keep_tpot_steady():
    work = _long_prompts()
    lim = dict(max_num_seqs=64, max_num_batched_tokens=2048, num_blocks=20_000)
    agg = TierSpec("t", 2, 20_000, LinearStepModel(),
                   SchedulerLimits(max_num_seqs=64, max_num_batched_tokens=2048))
    split = split_tier(prefill=1, decode=1, bw=1e9, latency=0.001, **lim)

    def tpot_p99(res):
        return float(np.percentile((res.finish_s - res.first_token_s) /
                                   (work.output_tokens - 1), 99))

    assert tpot_p99(simulate([split], work)) < 0.5 * tpot_p99(simulate([agg], work))


def test_split_must_cover_the_replicas():
    with pytest.raises(ValueError, match="must equal"):
        TierSpec("t", 3, 100, LinearStepModel(), disagg=Disagg(1, 1, 1e9))


def test_prefill_counts_are_every_split_up_to_the_cap_then_spread():
    from tiersim.disagg import MAX_SPLITS, prefill_counts

    assert prefill_counts(2) == [1]
    assert prefill_counts(MAX_SPLITS + 1) == list(range(1, MAX_SPLITS + 1))
    spread = prefill_counts(1024)
    assert len(spread) == MAX_SPLITS and spread[0] == 1 and spread[-1] == 1023
    assert spread == sorted(set(spread))
