"""Shapes a profile lacks: a dense GEMM interpolated between the grid tables around it, any
other operator anchored on the nearest table of its kind (:class:`AnchoredTable`).

Shapes the profile lacks (interpolation, anchoring)
---------------------------------------------------
A dense GEMM whose exact table is missing but whose ``n x k`` lies inside the profile's GEMM
tables of its format is interpolated between the four (or, on one axis's grid, two) tables
around it, in log n and log k, as the aiconfigurator importer reads NVIDIA's measured grid
(:func:`interpolated_gemm`: the tightest bracket of tables held, the importer's
:func:`log_corners` and :func:`log_blend`). ``sources()`` labels it ``interpolated:<source>
(between grid tables gemm <dtype> n=<lo>..<hi> k=<lo>..<hi>)``; it needs no roofline. Shipped
profiles carry NVIDIA's whole grid, so a model's GEMM off it (Qwen3-32B's projections at TP 8,
Llama-3.1-405B's at TP 8) reads what importing it would give (``benchmarks/op_anchoring.py
--off-grid``: 0.84-1.13x before, 1.00x after). Beyond or below every table on an axis (an LM
head of 151,936 x 1,024 past the grid's 65,536) there is nothing to interpolate between and the
GEMM is anchored, as below: the importer would scale its last column linearly in n x k, which is
its guess rather than a measurement, and the roofline knows whether the shape is bound by its
weights or its maths. Corner tables of different sources, timing (``eager``) or token axes are
not blended (anchored instead).

Any other operator whose exact table is missing, where the profile holds tables of the same
operator and dtype at other shapes, is answered by the nearest of them (log distance over the
key; MoE over per-GPU expert width and count) times the roofline's ratio between the wanted
shape and that table's own at each of its grid points (:class:`AnchoredTable`): the measured kernel
efficiency is kept, the bytes and FLOPs rescaled, and the result is read as any table is
(non-decreasing, within the physical limit). ``sources()`` labels it ``anchored:<source>
(<table it came from>)``. Attention tables anchor only at their own head width
(:func:`anchors_attention`): GQA tables across head counts of the same ``head_dim``, MLA
and DSA tables across query-head counts of the same module shape (latent, rope, nope, v and
projection widths: :data:`MLA_KEYS`; DSA's with its indexer's, :data:`DSA_KEYS`); a read with
no table of its head width is the roofline's. With no table of that operator and dtype at all
the operator is ``roofline``: anchoring across formats was tried and rejected (gpt-oss's MXFP4
MoE anchored on an INT4 Marlin table came out 1.5-5x slow; the 4-bit kernels differ too much
to share a measured efficiency).
"""

from __future__ import annotations

import math

import numpy as np

from tiersim.perf.profile_data import Profile, Table, module_dtype, table_name
from tiersim.perf.profile_interp import log_blend, log_corners

#: The ``extra`` field of an anchored table (:meth:`AnchoredTable.on_grid`) naming its source.
ANCHORED_FROM = "anchored_from"
#: The ``extra`` field of an interpolated GEMM table (:func:`gemm_corners`) naming the span of
#: grid tables it was interpolated between.
INTERPOLATED_FROM = "interpolated_from"


def _shape_distance(op: str, have: dict[str, int], want: dict[str, int]) -> tuple[float, ...]:
    """How far a table key of ``op`` is from the wanted one, compared as a tuple (log
    distances). MoE: first the whole expert shape (hidden, width, count, top-k), then the
    per-GPU split, so that every layout of one model anchors on the same measured model."""
    def log_distance(a: list[float], b: list[float]) -> float:
        return float(sum(abs(math.log(x / y)) for x, y in zip(a, b, strict=True)))

    if op != "moe":
        return (log_distance([float(v) for v in have.values()],
                             [float(v) for v in want.values()]),)
    shape = ("hidden", "inter", "num_experts", "top_k")

    def split(k: dict[str, int]) -> list[float]:
        return [k["inter"] / k["tp"], k["num_experts"] / k["ep"]]

    return (log_distance([have[f] for f in shape], [want[f] for f in shape]),
            log_distance(split(have), split(want)))


#: The attention operators, whose tables anchor only within one head shape
#: (:func:`anchors_attention`).
ATTENTION_OPS = ("attn_prefill", "attn_decode")


def anchors_attention(op: str, dtype: str | None, have: dict[str, int],
                      want: dict[str, int]) -> bool:
    """Whether a table of ``op`` keyed ``have`` may anchor a read keyed ``want``, as far as
    attention goes. Any other operator may. A GQA attention table may only at the same
    ``head_dim``: a kernel's tiles, and so the efficiency measured, are set by the head width,
    which the roofline's ratio does not carry over. A measured module (MLA, DSA) may only at
    the same shape but its query heads: its key holds the module's shapes (:data:`MLA_KEYS`,
    :data:`DSA_KEYS`), measured at one architecture's dimensions. A read no table may anchor is
    the roofline's."""
    if op not in ATTENTION_OPS:
        return True
    if dtype and module_dtype(dtype)[1]:
        return {**have, "heads": 0} == {**want, "heads": 0}
    return have["head_dim"] == want["head_dim"]


class AnchoredTable:
    """A measured table moved to a shape it was not measured at: its latency times the
    roofline's ratio between the wanted shape and the table's own (the measured kernel
    efficiency kept, bytes and FLOPs rescaled), as a :class:`Table` (:meth:`on_grid`). Shown
    as ``anchored:<source label> (<table>)``.
    """

    def __init__(self, source: Table, target_roofline, source_roofline):
        self.source = source
        self._target, self._source = target_roofline, source_roofline

    def on_grid(self, dtype: str | None, key: dict[str, int], anchored: bool = True) -> Table:
        """The rescaled latencies at the source table's grid points, as a table of the wanted
        shape (``dtype``, ``key``; its ``extra`` names the source under ``anchored_from``
        where ``anchored``, i.e. the shape is another one). Read as any table is
        (non-decreasing along every axis, within the physical limit), it is interpolated
        between the grid points rather than rescaled at each one."""
        src = self.source
        ratio = grid_values(self._target, src) / grid_values(self._source, src)
        extra = {**src.extra, ANCHORED_FROM: src.name} if anchored else dict(src.extra)
        return Table(src.op, dtype, src.source, dict(key), src.axes, src.latency * ratio, extra)


def interpolated_gemm(profile: Profile, op: str, dtype: str | None,
                      key: dict[str, int]) -> Table | None:
    """A ``gemm`` table at an ``n x k`` the profile lacks but whose grid tables of ``dtype``
    bracket it (:func:`gemm_corners`): their latencies interpolated in log n, log k, as the
    aiconfigurator importer interpolates NVIDIA's grid (:func:`log_corners`,
    :func:`log_blend`). ``None`` for another operator, or where no tables bracket the shape
    (beyond or below the grid: it is then anchored, :meth:`ProfileOps._anchor`), or where the
    corners differ in source, timing or token axis."""
    if op != "gemm":
        return None
    corners = gemm_corners(profile.tables, dtype, key["n"], key["k"])
    if corners is None:
        return None
    first = corners[0][0]
    same = all(t.source == first.source and t.extra.get("timing") == first.extra.get("timing")
               and np.array_equal(t.axes["m"], first.axes["m"]) for t, _ in corners)
    if not same:
        return None
    ns = sorted({t.key["n"] for t, _ in corners})
    ks = sorted({t.key["k"] for t, _ in corners})
    span = table_name(op, dtype, {"n": "..".join(map(str, ns)), "k": "..".join(map(str, ks))})
    latency = log_blend([(weight, t.latency) for t, weight in corners])
    extra = {**first.extra, "notes": "interpolated in log n, log k", INTERPOLATED_FROM: span}
    return Table(op, dtype, first.source, dict(key), first.axes, latency, extra)


def gemm_corners(tables: list[Table], dtype: str | None, n: int, k: int):
    """The ``(table, weight)`` corners of the tightest bracket of ``n x k`` (least
    ``log(n_hi / n_lo) + log(k_hi / k_lo)``) among the ``gemm`` tables of ``dtype``: four
    tables, or two where ``n`` or ``k`` is on the grid; ``None`` where none brackets it (the
    shape lies beyond or below every table on an axis)."""
    by_shape = {(t.key["n"], t.key["k"]): t for t in reversed(tables)
                if t.op == "gemm" and t.dtype == dtype and set(t.key) == {"n", "k"}}
    k_of: dict[int, set[int]] = {}
    for a, b in by_shape:
        k_of.setdefault(a, set()).add(b)
    best = _tightest(sorted(k_of), k_of, n, k)
    if best is None:
        return None
    n_axis, k_axis = (np.array(sorted(set(pair)), np.float64) for pair in best)
    return [(by_shape[(int(n_axis[a]), int(k_axis[b]))], weight)
            for (a, b), weight in log_corners(n_axis, n, k_axis, k)]


def _tightest(ns: list[int], k_of: dict[int, set[int]], n: int, k: int):
    """``((n_lo, n_hi), (k_lo, k_hi))``, the narrowest in log terms with all four of
    ``(n_lo|n_hi, k_lo|k_hi)`` in ``k_of`` (n -> the ks held at it), or ``None``."""
    best, width = None, math.inf
    for n_lo in reversed([v for v in ns if v <= n]):
        for n_hi in (v for v in ns if v >= n):
            n_width = math.log(n_hi / n_lo)
            if n_width >= width:
                break
            ks = k_of[n_lo] & k_of[n_hi]
            k_lo = max((v for v in ks if v <= k), default=None)
            k_hi = min((v for v in ks if v >= k), default=None)
            if k_lo is not None and k_hi is not None and n_width + math.log(k_hi / k_lo) < width:
                best, width = ((n_lo, n_hi), (k_lo, k_hi)), n_width + math.log(k_hi / k_lo)
    return best


def _on_grid(ops, table: Table) -> np.ndarray:
    """``ops``' time (a roofline's or the physical limit's) at every point of ``table``'s
    grid, in its shape."""
    key = table.key
    if table.op == "gemm":
        def at(m):
            return ops.gemm(m, key["n"], key["k"], table.dtype)
    elif table.op == "allreduce":
        def at(size):
            return ops.allreduce(size, key["tp"])
    else:  # moe, gdn_*, attention: the model's own shape
        at = getattr(ops, table.op)
    return grid_values(at, table)


def grid_values(at, table: Table) -> np.ndarray:
    """``at`` (an operator's time as ``ops`` methods take it) at every point of ``table``'s
    grid, in its shape: one-axis ops vectorised, decode per batch over the contexts, prefill
    per point."""
    axes = list(table.axes.values())
    if len(axes) == 1:
        return np.asarray(at(axes[0]), np.float64)
    if table.op == "attn_decode":
        return np.array([np.asarray(at(int(b), axes[1]), np.float64) for b in axes[0]])
    return np.array([[at(int(t), int(c)) for c in axes[1]] for t in axes[0]], np.float64)
