"""Round 32, a run's fixed costs: what a ``--no-report`` run imports, the SciPy stand-ins that
keep SciPy out of it (``expit`` and the 95% interval's normal quantile) bit for bit, and the
profile read's fast checks, which accept only what the checks one by one accept."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.paths import bundled
from tiersim.perf import profile_json as prof
from tiersim.routing.accuracy import capability
from tiersim.routing.metrics import Z_975, normal_quantile

TINY = Path(__file__).resolve().parents[1] / "tiersim" / "scenarios" / "tiny.yaml"


def test_a_run_without_a_report_imports_neither_plotly_nor_scipy(tmp_path):
    """``tiersim run --no-report`` of a scenario with tier accuracies (solved on the logistic
    curve) and an accuracy interval: plotly was imported for the page it does not write, and
    SciPy for ``expit`` and ``ndtri(0.975)`` (together 0.6 s of a 100,000-request run)."""
    code = ("import contextlib, io, sys\nfrom tiersim.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    status = main(['run', {str(TINY)!r}, '--out', {str(tmp_path / 'o')!r}, "
            "'--no-report', '--no-baselines'])\n"
            "print(status, sorted({m.split('.')[0] for m in sys.modules} & {'plotly', 'scipy'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "0 []"
    assert (tmp_path / "o" / "summary.json").is_file()
    assert not (tmp_path / "o" / "report.html").exists()


def same_bits(a, b) -> bool:
    """Whether two float64 arrays (or scalars) hold the same bits, NaNs included."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


EXPIT_RTOL = 1e-15
"""How far ``capability`` may lie from SciPy's ``expit``, relative: equal to the bit on the
AVX2 machines measured first, but numpy's exp has other SIMD paths (AVX-512) that round its
last bits apart from SciPy's C ``exp``, and ``1 + e`` and ``1 / s`` carry that on: up to 4
units in the last place (below 9e-16 relative) over 900,000 values on an AVX-512 machine, where
the bound of one unit this test had failed in CI (theta 0.5, width 0.5, 2 units). No figure
tiersim writes (10 significant digits) can show it."""


def expit_bits(a, b) -> bool:
    """Whether ``capability``'s values are expit's: NaN where it is NaN, else within
    :data:`EXPIT_RTOL` of it (0 where it is 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    ok = ~np.isnan(a)
    np.testing.assert_allclose(a[ok], b[ok], rtol=EXPIT_RTOL, atol=0)
    return True


@settings(max_examples=200, deadline=None)
@given(theta=st.floats(-50, 50), width=st.floats(1e-6, 10), seed=st.integers(0, 2**32 - 1),
       n=st.integers(1, 300))
def test_capability_is_scipys_expit_to_1e_15(theta, width, seed, n):
    from scipy.special import expit

    d = np.random.default_rng(seed).random(n)
    assert expit_bits(capability(d, theta, width), expit((theta - d) / width))


def test_capability_at_the_extremes_is_expits_without_a_warning():
    """Where exp(-x) overflows (x below about -709) the result is 0, as expit's, with no
    'overflow encountered' warning in the run's output."""
    from scipy.special import expit

    d = np.array([0.0, 1.0, -1e300, 1e300, 0.5, np.inf, -np.inf, np.nan, 1e-320])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = capability(d, 0.25, 1e-3)
    assert expit_bits(got, expit((0.25 - d) / 1e-3))
    assert expit_bits(capability(np.float64(0.3), 0.2, 0.1), expit((0.2 - 0.3) / 0.1))


def test_the_95_percent_z_is_scipys_ndtri():
    from scipy.special import ndtri

    assert 0.5 + 0.95 / 2.0 == 0.975  # the level the intervals are asked at reaches it exactly
    assert same_bits(Z_975, ndtri(0.975))
    assert normal_quantile(0.975) == Z_975
    for p in (0.5, 0.72, 0.9, 0.995, 1e-9):
        assert same_bits(normal_quantile(p), ndtri(p))


AXIS_VALUES = st.one_of(
    st.integers(-3, 10**6), st.integers(2**1023, 2**1100), st.floats(allow_nan=True),
    st.sampled_from([True, False, None, "1", 0, 0.0, -0.0, math.inf, math.nan, 1e308]),
    st.floats(1e-9, 1e9).map(np.float64), st.lists(st.floats(1, 10), max_size=2))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(AXIS_VALUES, max_size=8), st.lists(st.floats(1e-9, 1e12), max_size=8),
                 st.just({"a": 1}), st.just("1, 2")))
def test_the_fast_axis_check_accepts_only_what_the_checks_one_by_one_accept(values):
    fast = prof._plain_axis(values)
    try:
        slow = prof._checked_axis(values, "axes.x")
    except prof.ProfileError:
        assert fast is None
        return
    assert fast is None or same_bits(fast, slow)


def test_the_fast_axis_check_leaves_an_overlong_axis_to_the_checks_one_by_one():
    values = [float(i + 1) for i in range(prof.MAX_AXIS_POINTS + 1)]
    assert prof._plain_axis(values) is None
    with pytest.raises(prof.ProfileError, match="10,001 points"):
        prof._checked_axis(values, "axes.x")


@pytest.mark.parametrize("raw", [[[1, 2.5], [3, 4]], [], [[]], [1, [2, 3]], [[1, True]],
                                 [[1, "2"]], [np.float64(1.0), 2], [[1, None]], 3, True])
def test_the_fast_number_check_answers_as_the_checks_one_by_one(raw):
    def one_by_one(x):
        if isinstance(x, list):
            return all(one_by_one(v) for v in x)
        return isinstance(x, int | float) and not isinstance(x, bool)

    assert prof._all_numbers(raw) == one_by_one(raw)


def test_a_shipped_profile_reads_the_same_with_and_without_the_fast_checks(monkeypatch):
    """Every table of the H200 profile: the same axes, latencies and keys, to the bit."""
    path = bundled("profiles", "h200_aiconfigurator_vllm.json")
    fast = prof.load_profile(path)
    monkeypatch.setattr(prof, "_plain_axis", lambda values: None)
    monkeypatch.setattr(prof, "_PLAIN_NUMBERS", set())
    slow = prof.load_profile(path)
    assert len(fast.tables) == len(slow.tables) > 2000
    for a, b in zip(fast.tables, slow.tables, strict=True):
        assert (a.op, a.dtype, a.source, a.key, a.extra) == (b.op, b.dtype, b.source, b.key,
                                                            b.extra)
        assert list(a.axes) == list(b.axes)
        assert all(same_bits(a.axes[k], b.axes[k]) for k in a.axes)
        assert same_bits(a.latency, b.latency)
