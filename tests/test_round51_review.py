"""Round 51 review: findings of a code review pinned by tests.

Each test names the finding it holds: duplicated formulas now shared, dead code gone,
docstrings true to the code.
"""

import numpy as np

from tiersim import metrics, response_cache, session_metrics


def test_one_percentile_for_run_sessions_and_response_cache():
    """The response cache's and the sessions' percentiles were two private copies of
    metrics.percentile (finite values only, numpy's linear interpolation): they are that one
    function now, so a change of convention cannot reach the run's p99 and not theirs."""
    assert not hasattr(response_cache, "_pct")
    assert not hasattr(session_metrics, "_pct")
    assert response_cache.percentile is metrics.percentile
    assert session_metrics.percentile is metrics.percentile
    values = np.array([3.0, np.nan, 1.0, np.inf, 2.0, 10.0])
    assert metrics.percentile(values, 50) == 2.5
    assert metrics.percentile(values, 99) == np.percentile([1.0, 2.0, 3.0, 10.0], 99)
    assert np.isnan(values[1]) and values[0] == 3.0  # the caller's array is left as it was
    assert metrics.percentile(np.array([np.nan]), 99) is None


def test_dead_code_is_gone():
    """Precision.bf16_groups, Precision.activation_bytes_on (the roofline reads DTYPE_BYTES of
    compute_dtype_on itself) and PlanEvaluator._specs were called nowhere, tests included."""
    from tiersim.hardware.precisions import Precision
    from tiersim.plan import evaluate

    assert not hasattr(Precision, "bf16_groups")
    assert not hasattr(Precision, "activation_bytes_on")
    assert not any(hasattr(obj, "_specs") for obj in vars(evaluate).values()
                   if isinstance(obj, type))


def test_request_times_are_none_until_they_happen():
    """STYLE.md: no ``-1.0`` meaning "not yet" in request state. Req's admitted, first_token and
    finish were -1.0 until set (a read before then gave a plausible negative time); they are
    None now, so such a read fails loudly instead of entering a latency."""
    from tiersim.engine import ReplicaScheduler, Req, SchedulerLimits

    sched = ReplicaScheduler(SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64), 100)
    req = Req(0, prompt=100, output=2, arrival=0.5)
    assert (req.admitted, req.first_token, req.finish) == (None, None, None)
    assert sched.add(req)
    plan = sched.schedule(1.0)
    assert req.admitted == 1.0 and req.first_token is None
    sched.complete(plan, 1, 2.0, 1.0)
    plan = sched.schedule(2.0)
    sched.complete(plan, 1, 3.0, 1.0)
    assert req.first_token == 3.0 and req.finish is None
    plan = sched.schedule(3.0)
    assert sched.complete(plan, 1, 4.0, 1.0) == [req]
    assert (req.admitted, req.first_token, req.finish) == (1.0, 3.0, 4.0)


def test_plan_latencies_are_the_runs_formula():
    """plan/evaluate.py's _tier_run computed TTFT, TPOT and e2e with its own copy of the
    formula in metrics.latency_columns (the run's); it calls that now. A dropped request
    (NaN times) and a one-token output (no TPOT) are where copies drift."""
    from types import SimpleNamespace

    from tiersim.plan.evaluate import _tier_run

    arrival = np.array([0.0, 1.0, 2.0])
    result = SimpleNamespace(first_token_s=np.array([0.5, 1.25, np.nan]),
                             finish_s=np.array([2.5, 1.25, np.nan]),
                             output_tokens=np.array([5, 1, 3], dtype=np.int32),
                             dropped=np.array([False, False, True]))
    run = _tier_run(np.arange(3), arrival, result, busy_s=1.0)
    want = metrics.latency_columns(arrival, result.first_token_s, result.finish_s,
                                   result.output_tokens)
    np.testing.assert_array_equal(run.ttft, want["ttft_s"])
    np.testing.assert_array_equal(run.tpot, want["tpot_s"])
    np.testing.assert_array_equal(run.e2e, want["e2e_s"])
    assert run.tpot[0] == 0.5 and np.isnan(run.tpot[1]) and np.isnan(run.tpot[2])
    assert (run.last_finish, run.last_arrival) == (2.5, 2.0)


def test_prefix_stats_count_every_level_by_default():
    """PrefixStats.hit_tokens defaulted to [], and count_admission zipped it with a pass's
    per-level hits: left at its default, every hit was silently dropped (rates() read 0). The
    fleet passed zeros itself; the default is one zero per level now, and a mismatch raises."""
    import pytest

    from tiersim.engine import Req
    from tiersim.engine.cluster import PrefixStats

    stats = PrefixStats(["gpu", "host"])
    assert stats.hit_tokens == [0, 0]
    req = Req(0, prompt=100, output=2, arrival=0.0)
    req.level_hits, req.recomputed, req.offload_loaded = [32, 16], 0, True
    stats.count_admission(req)
    stats.prompt_tokens = 100
    assert stats.rates()[0] == 0.48 and stats.offload_loads == 1
    with pytest.raises(ValueError, match="2 counts for 1 levels"):
        PrefixStats(["gpu"], hit_tokens=[0, 0])


def test_report_cdf_is_what_its_docstring_says():
    """report/figures.py's _cdf said it kept "the exact tail above p99"; it keeps 50
    interpolated quantiles from p99 to the maximum. The docstring says so now; this pins it."""
    import pandas as pd

    from tiersim.report.figures import CDF_POINTS, _cdf

    values = pd.Series(np.arange(100_000, dtype=float))
    x, y = _cdf(values)
    assert len(x) == len(y) <= CDF_POINTS + 50
    assert (y > 0.99).sum() == 49 and x[-1] == 99_999.0 and y[-1] == 1.0
    assert "exact tail" not in _cdf.__doc__


def test_one_output_length_formula_outside_the_engine_and_the_engine_agrees():
    """A tier's output_length_multiplier was applied by four copies of one formula (routing's
    capability check, its accuracy model, the plan's context check, the run's dropped-request
    note: np.round in three, np.rint in one); they call routing.capability.output_on_tier now.
    The engine's dispatch rounds a scalar with Python's round: both are half to even, pinned
    here where it matters (x.5 cases) so the context check and the engine never disagree."""
    from tiersim.routing.capability import output_on_tier

    outputs = np.array([1, 3, 5, 7, 9, 200, 1], dtype=np.int32)
    for mult in (0.5, 1.5, 0.3, 1.0, 2.5, 0.1):
        got = output_on_tier(outputs, mult)
        assert got.dtype == np.float64
        assert got.tolist() == [float(max(1, round(int(o) * mult))) for o in outputs]
    assert output_on_tier(np.array([5, 7]), 0.5).tolist() == [2.0, 4.0]  # 2.5 -> 2, 3.5 -> 4
    per_request = output_on_tier(np.array([5, 5]), np.array([0.5, 1.5]))
    assert per_request.tolist() == [2.0, 8.0]  # 7.5 -> 8


def test_whole_prompt_keys_tell_minus_one_from_minus_two():
    """response_cache.whole_prompt_keys keyed a prompt by Python's hash() of (ids, length);
    CPython hashes -1 as -2, so the prompts [-1] and [-2] (one block each, same length) had one
    key and the second was answered from the first's cache entry. Keys are a digest now."""
    import pandas as pd

    from tiersim.response_cache import hits, whole_prompt_keys

    assert hash(((-1,), 100)) == hash(((-2,), 100))  # the collision the old key had
    hashes = pd.Series([[-1], [-2], [-1], [5, 6], [6, 5], [5], []], dtype=object)
    lengths = np.array([100, 100, 100, 600, 600, 100, 100])
    keys = whole_prompt_keys(hashes, lengths)
    assert keys[0] == keys[2] and keys[0] != keys[1]
    assert keys[3] != keys[4]  # order matters: another prompt
    assert keys[5] != keys[0] and keys[6] is None
    other = whole_prompt_keys(pd.Series([[-1]], dtype=object), np.array([101]))
    assert other[0] != keys[0]  # the length is part of the key

    from tiersim.response_cache import ResponseCacheConfig

    cfg = ResponseCacheConfig.model_validate({"mode": "lru", "size": 10})
    assert hits(keys, cfg).tolist() == [False, False, True, False, False, False, False]
