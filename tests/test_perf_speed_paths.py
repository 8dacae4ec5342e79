"""The engine's shortcuts through the step-time model give the general path's numbers bit for
bit: the plain-Python scalar interpolation equals ``np.interp``, and a decode stretch evaluated
through the decode-attention curve equals the ops' own lookups."""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.profile import interp_scalar, load_profile

finite = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=2, max_size=12, unique=True),
       st.lists(finite, min_size=12, max_size=12), st.lists(finite, min_size=1, max_size=8))
def test_interp_scalar_equals_numpy(xp, fp, xs):
    """Inside, outside and on the grid points, the same float as numpy."""
    xp = sorted(xp)
    fp = fp[: len(xp)]
    for x in [*xs, *xp]:
        assert interp_scalar(x, xp, fp) == float(np.interp(x, xp, fp))


def test_interp_scalar_nan_is_nan():
    assert np.isnan(interp_scalar(float("nan"), [0.0, 1.0], [1.0, 2.0]))


@functools.cache
def _model(name: str, precision: str = "bf16"):
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    return build_step_model(name, precision, "H200", profile=profile)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["Llama-3.1-8B", "Qwen3-Coder-30B-A3B"]), st.integers(1, 2048),
       st.integers(1, 300_000), st.integers(1, 64))
def test_decode_curve_equals_general_path(name, seqs, context_per_seq, k):
    """decode_times through the curve == the constant plus the ops' lookup (also beyond the
    table's context and batch axes, where the general path answers)."""
    model = _model(name)
    ctx = np.arange(k, dtype=np.float64) * seqs + float(seqs * context_per_seq)
    fast = model.decode_times(seqs, ctx)
    general = model._decode_constant(seqs) + model._attn_decode(seqs, ctx / seqs)
    assert np.array_equal(fast, general)


def test_decode_curve_is_used_for_a_profiled_model():
    """The shortcut is live for a shipped-profile model (else this file tests nothing)."""
    assert _model("Llama-3.1-8B")._decode_curve(8) is not None
