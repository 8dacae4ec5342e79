"""Issue 13, whole process: what ``tiersim run`` imports, and the SciPy stand-ins that keep
``scipy.optimize`` and ``scipy.stats`` out of it give SciPy's answers bit for bit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tiersim.routing.roots import brentq

HEAVY = ("scipy", "sklearn", "plotly", "ray", "torch")


def loaded_after(code: str) -> list[str]:
    """Heavy top-level packages imported by ``code`` in a fresh interpreter."""
    probe = (f"{code}\nimport sys\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list


def test_the_cli_and_the_runner_import_no_heavy_package():
    assert loaded_after("import tiersim.cli\nimport tiersim.runner") == []


APP_MODULES = ("tiersim.cli.app", "tiersim.cli.usage", "tiersim.cli.stops", "tiersim.cli.width",
               "tiersim.cli.streams")
"""The app's own modules, which every command loads: the app, its usage-error lines, its
stopping signals, its output width and its standard streams."""


def test_the_cli_mounts_commands_without_importing_them():
    """``tiersim --help`` lists every command without importing pandas or any command (the app
    and its own modules, :data:`APP_MODULES`, are not commands)."""
    code = ("from tiersim.cli import main\nimport contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])\n"
            "import sys\nassert 'pandas' not in sys.modules, 'pandas'\n"
            "assert not [m for m in sys.modules if m.startswith('tiersim.cli.')\n"
            f"            and m not in {APP_MODULES!r}], "
            "'a command module'")
    subprocess.run([sys.executable, "-c", code], check=True)


def scipy_brentq(f, a, b, **kw):
    from scipy.optimize import brentq as reference

    return reference(f, a, b, **kw)


@settings(max_examples=200, deadline=None)
@given(target=st.floats(0.01, 0.99), width=st.floats(0.01, 0.5),
       seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200))
def test_brentq_gives_scipys_root_bit_for_bit_on_capability_curves(target, width, seed, n):
    """The accuracy model's own equation: mean logistic capability = target."""
    from scipy.special import expit

    d = np.random.default_rng(seed).random(n)

    def gap(theta: float) -> float:
        return expit((theta - d) / width).sum() / n - target

    lo, hi = -1.0 - 40 * width, 2.0 + 40 * width
    assert brentq(gap, lo, hi, xtol=1e-12) == scipy_brentq(gap, lo, hi, xtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(root=st.floats(-5, 5), power=st.integers(1, 5), scale=st.floats(0.1, 10),
       xtol=st.sampled_from([1e-12, 2e-12, 1e-6, 0.1]))
@example(root=5e-324, power=1, scale=8.913969547414933, xtol=1e-12)  # residuals underflow
def test_brentq_gives_scipys_root_bit_for_bit_on_odd_powers(root, power, scale, xtol):
    def f(x: float) -> float:
        return scale * (x - root) ** (2 * power - 1) + 1e-3 * (x - root)

    assert brentq(f, -7.0, 8.0, xtol=xtol) == scipy_brentq(f, -7.0, 8.0, xtol=xtol)


def test_brentq_refuses_what_scipy_refuses():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        brentq(lambda x: float("nan"), -1.0, 1.0)
    with pytest.raises(RuntimeError, match="converge"):
        brentq(lambda x: x ** 3 - 0.5, 0.0, 1.0, maxiter=2)
    assert brentq(lambda x: x, 0.0, 1.0) == 0.0


def test_ndtri_is_norm_ppf():
    """The normal quantile used for the accuracy interval and the difficulty hint."""
    from scipy.special import ndtri
    from scipy.stats import norm

    q = np.concatenate([np.random.default_rng(1).random(10_000), [0.975, 0.5, 0.72]])
    assert np.array_equal(ndtri(q), norm.ppf(q))
