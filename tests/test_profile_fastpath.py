"""The fast table lookup used by the engine equals the general interpolation rule (over the
table's latencies made non-decreasing along every axis, unless it was timed eagerly: profile
docstring)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.paths import bundled
from tiersim.perf.profile import (
    PADDED_OPS,
    interp_1d,
    interp_2d,
    load_profile,
    monotone,
    monotone_grid,
)

PROFILE = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
TABLES = [t for t in PROFILE.tables]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TABLES), st.floats(-2.0, 2.0), st.lists(st.floats(-2.0, 2.0),
                                                                min_size=1, max_size=6))
def test_fast_lookup_equals_general_rule(table, u0, us):
    """Points inside, below and above each axis (u: position in log units of the axis span)."""
    axes = list(table.axes.values())

    def point(axis, u):
        lo, hi = np.log(axis[0]), np.log(axis[-1])
        return float(np.exp(lo + u * max(hi - lo, 1.0)))

    if len(axes) == 1:
        xs = np.array([point(axes[0], u) for u in us])
        latency = table.latency
        if table.op in PADDED_OPS and table.extra.get("timing") != "eager":
            latency = monotone(latency)
        np.testing.assert_allclose(table.lookup(xs), interp_1d(axes[0], latency, xs),
                                   rtol=1e-12)
        return
    x0 = point(axes[0], u0)
    xs = np.array([point(axes[1], u) for u in us])
    expected = interp_2d(axes[0], axes[1], monotone_grid(table.latency), x0, xs)
    np.testing.assert_allclose(table.lookup(x0, xs), expected, rtol=1e-12)
    np.testing.assert_allclose(table.lookup(x0, float(xs[0])), expected[0], rtol=1e-12)
