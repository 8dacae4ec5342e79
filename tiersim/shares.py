"""Shares that must sum to 1 (router fractions, a session's step mix): one rule for all."""

from __future__ import annotations

import math

SUM_TOLERANCE = 1e-6
"""How far from 1 shares that must sum to 1 may sum."""


def sums_to_one(shares) -> bool:
    """Whether ``shares`` sum to 1 within :data:`SUM_TOLERANCE`, on both sides alike: the
    decimal 0.999999 is a double 1.00000000003e-6 below 1, so a plain ``<= 1e-6`` took
    1.000001 and refused 0.999999; the sum is exact (``math.fsum``) and allowed a rounding's
    slack."""
    return abs(math.fsum(shares) - 1.0) <= SUM_TOLERANCE * (1 + 1e-9)
