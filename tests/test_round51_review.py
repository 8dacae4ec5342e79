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
