"""The engine's speed paths change no number: a run with them equals, bit for bit, the same run
with one SimPy event per plan and every decode stretch evaluated on its own contexts
(``simulate(fast_paths=False)``), in every result field; and the decode table gives exactly
the direct evaluation for every kind of step model."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine import make_workload
from test_kv_offload import offload_tier
from test_prefix_cache import shared_prefix_workload

from tiersim.engine import Disagg, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.engine.decode_table import BLOCK, DecodeTable, DirectTimes
from tiersim.engine.simenv import SimEnv
from tiersim.engine.spec_decode import SpecDecoding, SpecStepModel
from tiersim.hardware.models import get_model
from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.base import LinearStepModel, StepShape
from tiersim.perf.profile import load_profile

fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_identical(a, b) -> None:
    """Every field of two SimResults equal (floats bit for bit, NaN where NaN)."""
    for name, va in vars(a).items():
        vb = getattr(b, name)
        if isinstance(va, np.ndarray):
            assert va.dtype == vb.dtype, name
            np.testing.assert_array_equal(va, vb, err_msg=name, strict=True)
        elif name == "prefix_stats":
            assert {k: vars(v) for k, v in va.items()} == {k: vars(v) for k, v in vb.items()}
        else:
            assert va == vb, name


def both(tiers, work, **kw):
    """The run with and without the speed paths, checked equal; the fast one returned."""
    a = simulate(tiers, work, fast_paths=True, **kw)
    assert_identical(a, simulate(tiers, work, fast_paths=False, **kw))
    return a


def tier(name="t", replicas=1, num_blocks=400, model=None, **kw):
    """A tier on the linear test model with small limits (preemption happens)."""
    lim = dict(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, watermark=0.01)
    extra = {k: kw.pop(k) for k in ("balancer", "disagg", "spec_decoding", "lockstep")
             if k in kw}
    lim.update(kw)
    return TierSpec(name, replicas, num_blocks, model or LinearStepModel(),
                    SchedulerLimits(**lim), **extra)


workloads = st.builds(make_workload, n=st.integers(1, 60), seed=st.integers(0, 10_000),
                      rate=st.floats(1.0, 300.0), max_in=st.integers(2, 900),
                      max_out=st.integers(2, 300), tiers=st.just(2), escalate=st.just(0.3))
limits = st.fixed_dictionaries({
    "max_num_seqs": st.integers(1, 32),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "num_blocks": st.integers(80, 600),
})


@fast
@given(workloads, limits, st.integers(1, 3), st.sampled_from(["least_tokens", "round_robin"]),
       st.booleans())
def test_cascade_of_tiers_is_identical(work, lim, replicas, balancer, per_iteration):
    """Two tiers, escalation, several replicas, preemption; fast-forward on and off."""
    tiers = [tier("a", replicas, balancer=balancer, **lim), tier("b", 1, **lim)]
    both(tiers, work, fast_forward=not per_iteration, sample_every=0.01)


@fast
@given(st.builds(shared_prefix_workload, n=st.integers(1, 60), seed=st.integers(0, 10_000),
                 rate=st.floats(1.0, 400.0), max_in=st.integers(2, 900),
                 max_out=st.integers(2, 300), families=st.integers(1, 4)),
       limits, st.integers(1, 4), st.sampled_from(["least_tokens", "round_robin",
                                                  "prefix_aware"]),
       st.booleans(), st.booleans())
def test_lazy_replicas_are_identical(work, lim, replicas, balancer, cache, per_iteration):
    """No escalation and no followers: replicas step only when looked at (no events), with
    every balancer, prefix caching, preemption and ties between arrivals and step ends."""
    work.arrival_s = np.round(work.arrival_s, 2)  # many arrivals at one instant
    tiers = [tier("a", replicas, balancer=balancer, enable_prefix_caching=cache, **lim)]
    res = both(tiers, work, fast_forward=not per_iteration, sample_every=0.01)
    assert np.all(~np.isnan(res.finish_s) ^ res.dropped)


def test_lazy_replicas_post_no_events():
    """The fleet's events are its arrival instants alone when replicas are lazy."""
    from tiersim.engine import cluster

    work = make_workload(200, seed=1, rate=50.0)
    fleet = cluster._Fleet([tier(replicas=2)], work, 4096, 1.0)
    assert fleet.lazy
    fleet.start_arrivals()
    steps = 0
    while fleet.env.peek() < float("inf"):
        fleet.env.step()
        steps += 1
    assert steps == len(np.unique(work.arrival_s))


@fast
@given(st.integers(1, 40), st.integers(0, 10_000), st.sampled_from([0.0, 0.05, 1.0]),
       st.integers(1, 3))
def test_closed_loop_sessions_are_identical(n, seed, think, replicas):
    """Followers released when a request finishes (at once with no think time): the hand-off a
    replica stepping itself must not run ahead of."""
    rng = np.random.default_rng(seed)
    follows = np.where(rng.random(n) < 0.6, np.arange(n) - 1, -1)
    follows[0] = -1
    work = Workload(np.sort(rng.uniform(0, 2, n)), rng.integers(1, 500, n),
                    rng.integers(1, 80, n), np.zeros(n, np.int64), follows=follows,
                    think_s=think)
    both([tier(replicas=replicas)], work)


@fast
@given(st.builds(shared_prefix_workload, n=st.integers(1, 50), seed=st.integers(0, 10_000),
                 rate=st.floats(1.0, 200.0), max_out=st.integers(2, 200)),
       st.integers(1, 2), st.integers(1, 2), st.booleans())
def test_disaggregated_and_prefix_cached_tiers_are_identical(work, prefill, decode, cache):
    split = Disagg(prefill, decode, 1e6, 0.001, 100.0)
    both([tier(replicas=prefill + decode, disagg=split, enable_prefix_caching=cache)], work)
    both([offload_tier(replicas=2, host_blocks=10, ssd_blocks=20, hbt=work.hash_block_tokens,
                       prefix_cache_fraction=0.05)], work)


@fast
@given(workloads, st.integers(1, 2))
def test_speculative_and_lockstep_tiers_are_identical(work, replicas):
    work.tier[:] = 0
    work.escalate_to[:] = -1
    both([tier(replicas=replicas, spec_decoding=SpecDecoding(3, (0.7,), seed=1))], work)
    both([tier(replicas=2 * replicas, lockstep=2)], work)


_SLIDING = dataclasses.replace(get_model("Llama-3.1-8B"), name="llama-sliding",
                               sliding_window=128, sliding_layers=16)


@functools.cache
def _profiled(name):
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    return build_step_model(name, "bf16", "H200", profile=profile)


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Qwen3-Coder-30B-A3B"])
def test_profiled_model_runs_are_identical(name):
    """The shipped profile's step times (decode curve, scalar lookups) through a loaded
    replica pair: long decode stretches cut by arrivals, block boundaries crossed."""
    rng = np.random.default_rng(3)
    n = 400
    work = Workload(np.cumsum(rng.exponential(0.05, n)), rng.integers(100, 3000, n),
                    rng.integers(1, 400, n), np.zeros(n, np.int64))
    spec = TierSpec("t", 2, 20_000, _profiled(name), SchedulerLimits(max_num_seqs=64))
    res = both([spec], work)
    assert not res.dropped.any()


def _models():
    """One step model of every kind the engine meets."""
    linear = LinearStepModel()
    return {
        "linear": linear,
        "llama": _profiled("Llama-3.1-8B"),
        "moe": _profiled("Qwen3-Coder-30B-A3B"),
        "sliding": _profiled(_SLIDING),
        "roofline": build_step_model("Llama-3.1-8B", "fp8", "H200", profile=None),
        "speculative": SpecStepModel(linear, SpecDecoding(3, (0.6,))),
        "spec_draft": SpecStepModel(_profiled("Llama-3.1-8B"),
                                    SpecDecoding(2, (0.6,), draft_model=linear)),
    }


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_models())), st.integers(1, 300), st.integers(1, 4000),
       st.integers(1, 200), st.floats(0.0, 1e5))
def test_decode_table_equals_direct_evaluation(kind, n, per_seq, k, start):
    """Stretches inside one block, across blocks and beyond the profiles' context axes."""
    model = _models()[kind]
    c0 = n * per_seq + int(per_seq) % n
    table, direct = DecodeTable(model), DirectTimes(model)
    assert table.ends(n, c0, k, start) == direct.ends(n, c0, k, start)
    assert table.ends(n, c0, k, start) == direct.ends(n, c0, k, start)  # from the filled blocks


def test_decode_table_crosses_blocks():
    model = _profiled("Llama-3.1-8B")
    c0 = 3 * BLOCK - 5
    ends = DecodeTable(model).ends(7, c0, 300, 12.5)
    assert ends == DirectTimes(model).ends(7, c0, 300, 12.5)
    assert len(ends) == 300


def test_advance_never_passes_a_pending_event():
    env = SimEnv()
    env.at(2.0).callbacks.append(lambda _e: None)
    assert env.advance(1.0) and env.now == 1.0
    assert not env.advance(2.0) and env.now == 1.0  # an event at the same instant comes first
    assert not env.advance(5.0) and env.now == 1.0
    with pytest.raises(ValueError):
        env.advance(0.5)
    slow = SimEnv(fast_paths=False)
    assert not slow.advance(1.0) and slow.now == 0.0


def test_no_op_events_are_dropped_but_still_end_the_run():
    """A superseded end (callbacks cleared) is skipped, yet the run ends at its time as SimPy
    would after processing it."""
    env = SimEnv()
    live, dead = env.at(1.0), env.at(3.0)
    live.callbacks.append(lambda _e: None)
    assert env.next_time() == 1.0
    env.run()
    assert env.now == 3.0
    env = SimEnv()
    env.at(3.0)
    assert env.next_time() == float("inf")
    assert env.end_time == 3.0
    del dead


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["attn_decode", "attn_prefill"]), st.integers(1, 20_000),
       st.floats(1.0, 3e5), st.booleans())
def test_remembered_points_equal_fresh_lookups(op, x0, x1, blended):
    """A point read twice gives what a fresh lookup gives, also after the table gained a
    blended row for ``x0`` (the other path, which may differ in the last bit)."""
    ops = _profiled("Llama-3.1-8B").ops
    grid = ops._attn_table(op)._grid()
    first = grid.at(float(x0), x1)
    assert first == grid._at(float(x0), x1)
    if blended:
        grid.at(float(x0), np.array([x1]))  # an array lookup blends the rows at x0
    assert grid.at(float(x0), x1) == grid._at(float(x0), x1)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["llama", "moe", "sliding", "roofline"]),
       st.lists(st.tuples(st.integers(1, 9000), st.integers(0, 40_000)), min_size=1,
                max_size=3),
       st.integers(0, 300), st.integers(1, 30_000))
def test_step_time_point_lookups_equal_the_ops(kind, chunks, seqs, per_seq):
    """A mixed step timed through the one-point lookups equals the same step timed through
    the ops' own methods."""
    model = _models()[kind]
    shape = StepShape(tuple(chunks), seqs, seqs * per_seq)
    fast = model.step_time(shape)
    saved = model.__dict__.pop("_attn_points", None)
    model.__dict__["_attn_points"] = {"attn_prefill": None, "attn_decode": None}
    try:
        assert model.step_time(shape) == fast
    finally:
        model.__dict__.pop("_attn_points")
        if saved is not None:
            model.__dict__["_attn_points"] = saved


def test_point_lookups_are_live_for_a_profiled_model():
    model = _profiled("Llama-3.1-8B")
    model.step_time(StepShape(((100, 0),), 2, 300))
    assert all(model._attn_point(op) is not None for op in ("attn_prefill", "attn_decode"))


def test_a_full_decode_table_starts_again_with_the_same_numbers(monkeypatch):
    """Cleared wholesale when full (bounded memory), then refilled with the same values."""
    from tiersim.engine import decode_table

    monkeypatch.setattr(decode_table, "MAX_BLOCKS", 2)
    model = _profiled("Llama-3.1-8B")
    table, direct = DecodeTable(model), DirectTimes(model)
    for c0 in (10, 5 * BLOCK, 9 * BLOCK + 3, 10, 5 * BLOCK):
        assert table.ends(3, c0, 50, 1.0) == direct.ends(3, c0, 50, 1.0)
        assert len(table._blocks) <= 2
