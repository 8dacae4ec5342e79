"""A bracketing root finder for the accuracy model's capability curves, without SciPy.

:func:`brentq` is Brent's method (inverse quadratic interpolation, secant steps and bisection)
in the variant SciPy ships as ``scipy.optimize.brentq`` (written for SciPy by Charles Harris,
BSD-3): every step is the same floating-point arithmetic in the same order, so the two return
the same root bit for bit (``tests/test_memory_imports.py`` holds them equal). Importing
``scipy.optimize`` costs about 0.4 s, a tenth of a 100k-request run (issue 13).
"""

from __future__ import annotations

import math
from collections.abc import Callable

RTOL = 4 * 2.220446049250313e-16
"""Smallest relative tolerance (four machine epsilons), SciPy's default."""
MAX_ITER = 100


def brentq(f: Callable[[float], float], a: float, b: float, xtol: float = 2e-12,
           rtol: float = RTOL, maxiter: int = MAX_ITER) -> float:
    """A root of ``f`` in ``[a, b]``, where ``f(a)`` and ``f(b)`` differ in sign, to within
    ``xtol + rtol x |root|``.

    Raises ValueError when the signs agree or ``f`` gives NaN, RuntimeError when ``maxiter``
    steps do not converge (as SciPy does).
    """
    if xtol <= 0 or rtol < RTOL:
        raise ValueError(f"xtol must be > 0 and rtol >= {RTOL} (got {xtol}, {rtol})")
    fa, fb = _value(f, a), _value(f, b)
    if fa != 0 and fb != 0 and _sign(fa) == _sign(fb):  # signs, not a product (underflow)
        raise ValueError("f(a) and f(b) must have different signs")
    if fa == 0:
        return float(a)
    if fb == 0:
        return float(b)
    return _iterate(f, _State(float(a), fa, float(b), fb), xtol, rtol, maxiter)


class _State:
    """The bracket: ``cur`` the best estimate, ``pre`` the one before, ``blk`` the point across
    the root from ``cur``; ``step``/``last`` the latest two step lengths."""

    __slots__ = ("blk", "cur", "f_blk", "f_cur", "f_pre", "last", "pre", "step")

    def __init__(self, pre: float, f_pre: float, cur: float, f_cur: float):
        self.pre, self.f_pre, self.cur, self.f_cur = pre, f_pre, cur, f_cur
        self.blk, self.f_blk, self.last, self.step = 0.0, 0.0, 0.0, 0.0

    def rebracket(self) -> None:
        """Keep the root between ``cur`` and ``blk``, with ``cur`` the smaller residual."""
        if self.f_pre != 0 and self.f_cur != 0 and _sign(self.f_pre) != _sign(self.f_cur):
            self.blk, self.f_blk = self.pre, self.f_pre
            self.last = self.step = self.cur - self.pre
        if abs(self.f_blk) < abs(self.f_cur):
            self.pre, self.cur, self.blk = self.cur, self.blk, self.cur
            self.f_pre, self.f_cur, self.f_blk = self.f_cur, self.f_blk, self.f_cur


def _iterate(f, s: _State, xtol: float, rtol: float, maxiter: int) -> float:
    for _ in range(maxiter):
        s.rebracket()
        delta = (xtol + rtol * abs(s.cur)) / 2
        half = (s.blk - s.cur) / 2
        if s.f_cur == 0 or abs(half) < delta:
            return s.cur
        s.last, s.step = _next_steps(s, delta, half)
        s.pre, s.f_pre = s.cur, s.f_cur
        s.cur += s.step if abs(s.step) > delta else (delta if half > 0 else -delta)
        s.f_cur = _value(f, s.cur)
    raise RuntimeError(f"brentq failed to converge after {maxiter} iterations")


def _next_steps(s: _State, delta: float, half: float) -> tuple[float, float]:
    """(previous step, next step): an interpolated step when it is short enough, else
    bisection (``half``)."""
    if abs(s.last) > delta and abs(s.f_cur) < abs(s.f_pre):
        if s.pre == s.blk:  # secant
            trial = -s.f_cur * (s.cur - s.pre) / (s.f_cur - s.f_pre)
        else:  # inverse quadratic
            d_pre = (s.f_pre - s.f_cur) / (s.pre - s.cur)
            d_blk = (s.f_blk - s.f_cur) / (s.blk - s.cur)
            trial = (-s.f_cur * (s.f_blk * d_blk - s.f_pre * d_pre)
                     / (d_blk * d_pre * (s.f_blk - s.f_pre)))
        if 2 * abs(trial) < min(abs(s.last), 3 * abs(half) - delta):
            return s.step, trial
    return half, half


def _sign(y: float) -> float:
    """The sign bit of ``y`` as SciPy's ``signbit`` reads it (a product of two tiny residuals
    underflows to 0 and would hide a sign change)."""
    return math.copysign(1.0, y)


def _value(f, x: float) -> float:
    """``f(x)`` as a float; NaN is an error."""
    y = float(f(x))
    if math.isnan(y):
        raise ValueError(f"the function is NaN at {x!r}")
    return y
