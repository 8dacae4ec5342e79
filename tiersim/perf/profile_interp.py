"""Interpolation of profile tables: the rule every table is read by, and the fits that
make a table non-decreasing along its axes.

Interpolation rule (every table, every axis)
--------------------------------------------
- Inside the grid: linear in ``log(axis)`` and ``log(latency)`` (a power law between neighbouring
  points), axis by axis (bilinear in log space for two-axis tables).
- Above the last grid point: linear in the axis itself, continuing the straight line through the
  last two points (latency is affine in size once a kernel is bandwidth- or compute-bound), with
  the slope floored at zero so latency never falls as work grows (two-axis tables, beyond the
  second axis: and at every earlier row's slope, :func:`end_slopes`).
- Above the last point of an axis whose slope cannot be trusted there: one with a single point
  (a table the harness's time budget cut short, e.g. a decode table with its batch-1 row only:
  no slope can be taken; read flat, 64 sequences decoded as fast as one), or one whose last two
  points are not where the kernel is bound, as the roofline tells (over them it grows less
  than :data:`BOUND_LOG_SLOPE` as fast as the axis in log terms: a MoE table of 1 and 2 tokens
  rose by its expert loading, 19 us a token, and read 155 ms a layer at 8,192 tokens; a GEMM's
  flat m = 1, 2 read large prefills at the physical limit): the table is
  continued along the roofline's own shape through its last point, ``value x roofline(x) /
  roofline(x_last)`` (:meth:`ProfileOps._continued`), and its source label ends ``(continued
  along the roofline past its last point)``. Without a roofline fallback the rule above applies
  (a single point: read flat).
- Below the first grid point (including a context of 0): the first point's latency. Small
  operators are bounded below by launch cost, so latency is flat there.
- Beyond the grid (the extrapolated part), never below the physical limit (below): a GEMM
  continued on its last segment's slope past 32,768 tokens had run faster than the tensor cores.
- Every table is first made non-decreasing along every axis (:func:`monotone` for one-axis
  tables: a step of more tokens, sequences or bytes is never faster, as an engine can pad to a
  larger measured size; NVIDIA's block-FP8 GEMM at n=5120 k=2048 reads 195 us at m=128 beside
  108 us at m=129, its B200 all-reduce falls by a third at one size; :func:`monotone_grid` for
  attention tables: more new tokens, cached context or sequences are never faster),
  and so are anchored curves (another shape's rescaling can make a smaller batch slower) and
  graph-read curves. The fit pools falling neighbours at their median, so a flat run of noisy
  points is not read low, as a running minimum would read it (about 2% on NVIDIA's GEMMs).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np


def interp_scalar(x: float, xp: list[float], fp: list[float]) -> float:
    """``float(np.interp(x, xp, fp))`` for one point, bit for bit, in plain Python.

    NOTE (speed): ``np.interp`` on a scalar costs microseconds of conversion; the engine asks
    once per iteration. The arithmetic is numpy's (``slope * (x - xp[j]) + fp[j]``, the other
    end if that is NaN, ``fp[j]`` on a grid point, the end values outside); tests compare the
    two on random points for equality.
    """
    if x != x:
        return x
    n = len(xp)
    if x < xp[0]:
        return fp[0]
    j = bisect.bisect_right(xp, x) - 1
    if j >= n - 1:
        return fp[n - 1]
    if xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    value = slope * (x - xp[j]) + fp[j]
    if value != value:
        value = slope * (x - xp[j + 1]) + fp[j + 1]
        if value != value and fp[j] == fp[j + 1]:
            value = fp[j]
    return value


def log_bracket(axis: np.ndarray, x: float) -> list[tuple[int, float]]:
    """Indices into the ascending ``axis`` and log-space weights of the points bracketing ``x``
    (clamped to the axis): one point at weight 1 where ``x`` is on it, else two."""
    x = min(max(x, axis[0]), axis[-1])
    hi = int(np.searchsorted(axis, x))
    if axis[hi] == x:
        return [(hi, 1.0)]
    lo = hi - 1
    t = (math.log(x) - math.log(axis[lo])) / (math.log(axis[hi]) - math.log(axis[lo]))
    return [(lo, 1.0 - t), (hi, t)]


def log_corners(n_axis: np.ndarray, n: float, k_axis: np.ndarray, k: float):
    """The ``((n index, k index), weight)`` grid corners around ``(n, k)`` (one, two or four;
    :func:`log_bracket` on each axis), the weights summing to 1."""
    return [((a, b), wa * wb) for a, wa in log_bracket(n_axis, n)
            for b, wb in log_bracket(k_axis, k)]


def log_blend(parts: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """The weighted geometric mean of ``(weight, latencies)`` pairs (interpolation in log
    latency; weights renormalised where some corners were left out)."""
    total = sum(weight for weight, _ in parts)
    return np.exp(sum(weight * np.log(values) for weight, values in parts) / total)


def _is_scalar(x: Any) -> bool:
    """A Python or numpy scalar (cheaper than ``np.ndim(x) == 0`` on the hot path)."""
    return isinstance(x, (int, float, np.integer, np.floating)) or np.ndim(x) == 0


#: Points a table remembers (see :meth:`_LogGrid.at`) before it forgets them all.
_MEMO_LIMIT = 1 << 16


class _LogGrid:
    """A table prepared for fast lookups with the module's rule (logs taken once).

    NOTE (speed): the engine asks a table once per iteration or decode stretch, so lookups with
    one value on the first axis avoid the general broadcasting path: ``np.interp`` in log space
    on the two bracketing rows, then the same rule along the first axis. Equal to
    :func:`interp_2d` (tests compare them).
    """

    def __init__(self, axis0: np.ndarray, axis1: np.ndarray, grid: np.ndarray):
        self.ax0 = np.asarray(axis0, np.float64)
        self.ax1 = np.asarray(axis1, np.float64)
        self.g = np.asarray(grid, np.float64)
        self.lax0 = np.log(self.ax0)
        self.lax1 = np.log(self.ax1)
        self.lg = np.log(self.g)
        self.slope1 = end_slopes(self.ax1, self.g)
        self.last1 = float(self.ax1[-1])
        self._blend_cache: dict[float, np.ndarray] = {}
        self.ndim = 2  # the table's own axis count (1 for a one-axis table: see Table._grid)
        # Python-list mirrors for scalar lookups (see interp_scalar): same numbers, no numpy
        self._lax0_list = self.lax0.tolist()
        self._lax1_list = self.lax1.tolist()
        self._lg_lists = [row.tolist() for row in self.lg]
        self._memo: dict[tuple[float, float], Any] = {}  # see at()
        self._brackets: dict[float, tuple] = {}  # see _at_scalar()

    def row(self, r: int, x1: Any) -> Any:
        """Row ``r`` interpolated along axis 1 at ``x1`` (float or array)."""
        if np.ndim(x1) == 0:
            x = float(x1)
            if x > self.last1:
                return float(self.g[r, -1] + (x - self.last1) * self.slope1[r])
            # numpy's log and exp, as the array path below: libm's may differ in the last bit
            return float(np.exp(np.interp(np.log(max(x, 1e-300)), self.lax1, self.lg[r])))
        x = np.asarray(x1, np.float64)
        inside = np.exp(np.interp(np.log(np.maximum(x, 1e-300)), self.lax1, self.lg[r]))
        if x.size and x.max() > self.last1:
            above = self.g[r, -1] + (x - self.last1) * self.slope1[r]
            inside = np.where(x > self.last1, above, inside)
        return inside

    def at(self, x0: float, x1: Any) -> Any:
        """Latency at one first-axis value ``x0`` and ``x1`` (float or array).

        NOTE (speed): one point is remembered by ``(x0, x1)``, so a repeated point (a prefill
        chunk's shape, a mixed step's decode batch) costs a dict lookup. A scalar point always
        takes :meth:`_at_scalar` (rows interpolated, then blended): reading a row blended for an
        array lookup instead could differ in the last bit, and a run's numbers would depend on
        which lookups came before.
        """
        if not _is_scalar(x1):
            return self._at(x0, x1)
        key = (x0, float(x1))
        value = self._memo.get(key)
        if value is None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            value = self._memo[key] = self._at(x0, x1)
        return value

    def point(self, x0: float, x1: float) -> float:
        """:meth:`at` for one point inside the grid (``x0`` at most axis 0's last value, the
        number ``x1`` at most axis 1's): the same float, by the same memo and
        :meth:`_at_scalar`, without the argument checks (the engine's one-point reads)."""
        key = (x0, float(x1))
        value = self._memo.get(key)
        if value is None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            value = self._memo[key] = self._at_scalar(x0, math.log(max(key[1], 1e-300)))
        return value

    def _at(self, x0: float, x1: Any) -> Any:
        """:meth:`at` without the memo."""
        ax0, n = self.ax0, self.ax0.size
        if n > 1 and x0 > ax0[-1]:
            last, prev = self.row(n - 1, x1), self.row(n - 2, x1)
            slope = np.maximum((last - prev) / (ax0[-1] - ax0[-2]), 0.0)
            return last + (x0 - ax0[-1]) * slope
        if _is_scalar(x1):
            x = float(x1)
            if x > self.last1:
                return self._at_slow(x0, x)
            return self._at_scalar(x0, math.log(max(x, 1e-300)))
        lrow = self._blended(x0)
        x = np.asarray(x1, np.float64)
        out = np.exp(np.interp(np.log(np.maximum(x, 1e-300)), self.lax1, lrow))
        if x.size and x.max() > self.last1:
            out = np.where(x > self.last1, self._at_slow(x0, x), out)
        return out

    def _at_scalar(self, x0: float, lx1: float) -> float:
        """One point: the two bracketing rows along axis 1, blended in log space (no row
        arithmetic, so token counts that never repeat cost two scalar interpolations).

        NOTE (speed): the rows and weight of an ``x0`` are remembered (:meth:`_bracket`): a
        decode batch size or chunk length recurs with contexts that do not.
        """
        bracket = self._brackets.get(x0)
        if bracket is None:
            if len(self._brackets) >= _MEMO_LIMIT:
                self._brackets.clear()
            bracket = self._brackets[x0] = self._bracket(x0)
        t, lo_row, hi_row = bracket
        if lo_row is None:
            return math.exp(np.interp(lx1, self.lax1, self.lg[0]))
        lo_v = interp_scalar(lx1, self._lax1_list, lo_row)
        hi_v = interp_scalar(lx1, self._lax1_list, hi_row)
        return math.exp((1.0 - t) * lo_v + t * hi_v)

    def _bracket(self, x0: float) -> tuple:
        """``(t, lower row, upper row)``: the log rows (lists) around ``x0`` along axis 0 and
        the weight of the upper one; ``(0.0, None, None)`` at or below the first row."""
        ax0, n = self.ax0, self.ax0.size
        if n == 1 or x0 <= ax0[0]:
            return 0.0, None, None
        lax0, lx0 = self._lax0_list, math.log(x0)
        hi = min(max(bisect.bisect_right(lax0, lx0), 1), n - 1)
        t = (lx0 - lax0[hi - 1]) / (lax0[hi] - lax0[hi - 1])
        t = min(max(t, 0.0), 1.0)
        return t, self._lg_lists[hi - 1], self._lg_lists[hi]

    def _blended(self, x0: float) -> np.ndarray:
        """log latency along axis 1 at ``x0`` inside (or below) axis 0's range, cached.

        Log-linear blending of the two bracketing rows commutes with log-linear interpolation
        along axis 1, so blending first and interpolating once gives the same number.
        """
        lrow = self._blend_cache.get(x0)
        if lrow is None:
            ax0, n = self.ax0, self.ax0.size
            if n == 1 or x0 <= ax0[0]:
                lrow = self.lg[0]
            else:
                hi = min(max(int(np.searchsorted(self.lax0, math.log(x0), side="right")), 1), n - 1)
                t = (math.log(x0) - self.lax0[hi - 1]) / (self.lax0[hi] - self.lax0[hi - 1])
                t = min(max(t, 0.0), 1.0)
                lrow = (1.0 - t) * self.lg[hi - 1] + t * self.lg[hi]
            if len(self._blend_cache) > 4096:
                self._blend_cache.clear()
            self._blend_cache[x0] = lrow
        return lrow

    def _at_slow(self, x0: float, x1: Any) -> Any:
        """The rule applied row by row (for points beyond the grid on axis 1)."""
        ax0, n = self.ax0, self.ax0.size
        if n == 1 or x0 < ax0[0]:
            return self.row(0, x1)
        hi = min(max(int(np.searchsorted(self.lax0, math.log(x0), side="right")), 1), n - 1)
        t = (math.log(x0) - self.lax0[hi - 1]) / (self.lax0[hi] - self.lax0[hi - 1])
        t = min(max(t, 0.0), 1.0)
        v_lo, v_hi = self.row(hi - 1, x1), self.row(hi, x1)
        return np.exp(np.log(v_lo) + t * (np.log(v_hi) - np.log(v_lo)))


def _interp_columns(axis: np.ndarray, values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Interpolate along ``axis`` with one value column per query point.

    ``values`` has shape ``(len(axis), N)`` (column j serves query ``x[j]``); ``x`` has shape
    ``(N,)``. Implements the module's rule: log-log inside, flat below, linear in x above.
    """
    ax = np.asarray(axis, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if ax.size == 1:
        return values[0].copy()
    cols = np.arange(x.size)
    lx = np.log(np.maximum(x, 1e-300))
    lax = np.log(ax)
    hi = np.clip(np.searchsorted(lax, lx, side="right"), 1, ax.size - 1)
    lo = hi - 1
    t = np.clip((lx - lax[lo]) / (lax[hi] - lax[lo]), 0.0, 1.0)
    v_lo, v_hi = values[lo, cols], values[hi, cols]
    out = np.exp(np.log(v_lo) + t * (np.log(v_hi) - np.log(v_lo)))
    slope = np.maximum((values[-1] - values[-2]) / (ax[-1] - ax[-2]), 0.0)
    above = x > ax[-1]
    out = np.where(above, values[-1] + (x - ax[-1]) * slope, out)
    return np.where(x < ax[0], values[0], out)


def interp_1d(axis: np.ndarray, latency: np.ndarray, x: Any) -> np.ndarray:
    """Latency at ``x`` (scalar or array) on a one-axis table; same shape as ``x``."""
    xa = np.asarray(x, dtype=np.float64)
    flat = xa.reshape(-1)
    lat = np.asarray(latency, dtype=np.float64)
    values = np.broadcast_to(lat[:, None], (lat.size, flat.size))  # a view, no copy
    return _interp_columns(axis, values, flat).reshape(xa.shape)


def interp_2d(axis0: np.ndarray, axis1: np.ndarray, grid: np.ndarray, x0: Any, x1: Any):
    """Latency at ``(x0, x1)`` (broadcast) on a two-axis table: along axis 1, then axis 0.

    NOTE (speed): the rule along axis 0 reads only the bracketing rows and the first and last
    two rows, so only those rows are interpolated along axis 1 (at most five when ``x0`` is one
    value, as in a decode stretch), not every row of the grid.
    """
    a, b = np.broadcast_arrays(np.asarray(x0, np.float64), np.asarray(x1, np.float64))
    f0, f1 = a.reshape(-1), b.reshape(-1)
    g = np.asarray(grid, np.float64)
    ax0 = np.asarray(axis0, np.float64)
    if ax0.size == 1:
        return interp_1d(axis1, g[0], f1).reshape(a.shape)
    lx0 = np.log(np.maximum(f0, 1e-300))
    hi = np.clip(np.searchsorted(np.log(ax0), lx0, side="right"), 1, ax0.size - 1)
    needed = np.unique(np.concatenate(([0, ax0.size - 2, ax0.size - 1], hi - 1, hi)))
    rows = np.empty((ax0.size, f1.size))
    ax1 = np.asarray(axis1, np.float64)
    slopes, above = end_slopes(ax1, g), f1 > ax1[-1]
    for r in needed:
        rows[r] = np.where(above, g[r, -1] + (f1 - ax1[-1]) * slopes[r],
                           interp_1d(axis1, g[r], f1))
    return _interp_columns(ax0, rows, f0).reshape(a.shape)


def end_slopes(axis1: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per row of a two-axis ``grid``, the slope it is continued at beyond ``axis1``'s last
    point: its last segment's, floored at zero and at every earlier row's (so a row of more work,
    a larger batch, never grows slower beyond the grid than a smaller one: NVIDIA's B200
    decode rows end at 32,768 tokens of context, and batch 2 read faster than batch 1 at
    131,072)."""
    if axis1.size < 2:
        return np.zeros(grid.shape[0])
    dx = axis1[-1] - axis1[-2]
    return np.maximum.accumulate(np.maximum((grid[:, -1] - grid[:, -2]) / dx, 0.0))


def monotone(latency: np.ndarray) -> np.ndarray:
    """``latency`` over an ascending token axis made non-decreasing: the least-absolute-error
    isotonic fit (adjacent points pooled while they fall, each pool at its median).

    A step of more tokens is never faster (an engine can pad ``m`` tokens to a larger measured
    ``m'``), but a measured table is noisy and may hold spikes (NVIDIA's block-FP8 GEMM at
    n=5120 k=2048 reads 195 us at m=128 and 108 us at m=129). Pooling at medians takes a spike
    out without moving a flat run of noisy points, where a running minimum would read every
    table about 2% fast (the least of many noisy samples)."""
    pools: list[tuple[list[float], float]] = []  # each pool sorted, with its median
    for value in np.asarray(latency, np.float64).tolist():
        pools.append(([value], value))
        while len(pools) > 1 and pools[-2][1] > pools[-1][1]:
            last, before = pools.pop()[0], pools.pop()[0]
            merged = _merge_sorted(before, last)
            pools.append((merged, _median(merged)))
    return np.array([median for pool, median in pools for _ in pool])


def monotone_grid(latency: np.ndarray) -> np.ndarray:
    """A two-axis table made non-decreasing along both axes: :func:`monotone` along each row,
    then each column, repeated while a column's fit makes a row fall again (at most
    :data:`GRID_FIT_ROUNDS` rounds), then a running maximum along the rows (which keeps the
    columns non-decreasing) for whatever is left."""
    fitted = np.asarray(latency, np.float64)
    for _ in range(GRID_FIT_ROUNDS):
        fitted = np.apply_along_axis(monotone, 1, fitted)
        fitted = np.apply_along_axis(monotone, 0, fitted)
        if (np.diff(fitted, axis=1) >= 0).all():
            return fitted
    return np.maximum.accumulate(fitted, axis=1)


#: Row-then-column fitting rounds of :func:`monotone_grid` before its running maximum.
GRID_FIT_ROUNDS = 4


def _merge_sorted(a: list[float], b: list[float]) -> list[float]:
    """Two sorted lists as one, the shorter inserted into the longer (a falling run of
    ``n`` points costs ``n`` insertions, not ``n`` sorts: a long table fits in seconds)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    for value in small:
        bisect.insort(large, value)
    return large


def within_fit(raw, x, grid: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """``raw`` (a curve's value at ``x``) held between the :func:`monotone` fit's values at the
    grid points around ``x``: the curve itself wherever the fit did not move it, and a curve
    that never falls as ``x`` grows. Beyond the last point, at least the last fitted value;
    below the first, at most the first."""
    raw = np.asarray(raw, np.float64)
    x = np.asarray(x, np.float64)
    above = np.searchsorted(grid, x, side="left")  # the first grid point >= x
    low = np.append(0.0, fitted)[np.searchsorted(grid, x, side="right")]
    high = np.append(fitted, np.inf)[above]
    return np.minimum(np.maximum(raw, low), high)


def _median(ordered: list[float]) -> float:
    """The median of a sorted list (a pair pools at its mean: the lower one would read low),
    computed as ``np.median`` computes it."""
    k = len(ordered)
    if k % 2:
        return ordered[k // 2]
    return float(np.mean(ordered[k // 2 - 1:k // 2 + 1]))
