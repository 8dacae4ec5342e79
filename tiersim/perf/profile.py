"""Calibration profiles: measured operator-latency tables and the step-time ops built on them.

This module holds :class:`ProfileOps`; the rest of the profile code is in four modules, and
every name they define that callers import is importable from here as well:

- :mod:`tiersim.perf.profile_data`: the profile format (what a profile file holds, its
  ``eager_s`` object), :class:`Table`, :class:`Profile`, :class:`EagerCost`, table keys;
- :mod:`tiersim.perf.profile_json`: :func:`load_profile`, :func:`profile_from_json`,
  :func:`save_profile` and their checks;
- :mod:`tiersim.perf.profile_interp`: the interpolation rule every table is read by, and
  :func:`monotone` / :func:`monotone_grid`;
- :mod:`tiersim.perf.profile_anchor`: shapes the profile lacks (:func:`interpolated_gemm`,
  :class:`AnchoredTable`).

:class:`ProfileOps` answers the per-layer operator questions of the step assembly
(:mod:`tiersim.perf.assembly`) from those tables. An operator whose table the profile lacks is
answered by the roofline fallback instead, and :meth:`ProfileOps.sources` says so, table by table:
nothing falls back silently.

CUDA graphs and eager iterations
--------------------------------
In a graph-replayed iteration a table timed eagerly (``"timing": "eager"``: NVIDIA's block-FP8
GEMMs, whose small-``m`` rows are the host launch path, not the kernel) is read without its launch
floor: ``max(roofline, latency - launch floor)`` (the floor: the median of its rows up to
:data:`LAUNCH_FLOOR_MAX_M` tokens), and never below the graph-timed GEMM of the same shape in the
format whose kernel does no more work (per-tensor FP8 for block FP8: the same weight bytes and
MACs, fewer scales; :data:`GRAPH_FLOOR_DTYPE`).

Physical limit
--------------
Before that, a point faster than the physical limit of its operator at the model's shape
(:class:`~tiersim.perf.roofline.PhysicalLimitOps`: the data sheet's HBM bandwidth and
tensor-core peak, undiluted, and the cheapest way to do the work) is no kernel a server can run
and is read from the roofline instead, as a point the profile lacks would be; the table's
source label counts them (``(3 of 48 points below the physical limit, read from the
roofline)``). It first caught an MLA prefill table whose importer had extended a prompt curve
measured up to 512 tokens to a 32,768-token row at a fourteenth of the limit, reading a
131k-token prompt twice as fast as the tensor cores allow.

Lower-precision weights on Hopper (how W4A16, NVFP4 and MXFP4 are answered)
---------------------------------------------------------------------------
A table matches on the format name of the group that asks: a tier's precision, or with
``precision: checkpoint`` each group's checkpoint format (``fp8_block``, ``mxfp4`` ...). The
shipped H200 profile (``profiles/h200_aiconfigurator_vllm.json``) has no dense GEMM table for
``w4a16``, ``nvfp4`` or ``mxfp4`` (NVIDIA's aiconfigurator data has none: Hopper has no FP4
tensor cores and vLLM runs them as weight-only kernels), so those GEMMs come from the roofline's
weight-only path and are listed as ``roofline``. Its MoE tables for them are measured
weight-only kernels: INT4 Marlin (``w4a16``, and ``nvfp4``, which vLLM runs on Hopper through
the same Marlin kernel; the table's notes say so) and the gpt-oss MXFP4 kernel (``mxfp4``).
A checkpoint format timed through another format's tables but storing weights of another
width (FP8 W8A16: 8-bit weights on the 4-bit ``w4a16`` tables, vLLM's FP8 Marlin kernel) reads
them rescaled by the roofline from the bits they were timed at to its own, as anchoring
rescales a shape (:meth:`ProfileOps._rescaled`; at another shape both at once); its source
label starts ``rescaled:`` and names both formats. Within one width (W4A16 at group 32 or 128,
NVFP4A16) tables are read as timed: they do not record the group size they were timed at.
Attention tables are keyed by KV-cache dtype (MLA: KV dtype and the projections' format,
``"bf16 mla-bf16"``, keyed by the module's shapes too, :data:`MLA_KEYS`, DeepSeek-V3's where a
table leaves them out; DeepSeek sparse attention ``"fp8 dsa-fp8_block"``, keyed by the model's
shape too, the MLA block's and the indexer's, :data:`DSA_KEYS`, since NVIDIA measured its
modules at more than one model's shapes; ``rope`` and ``nope`` the measured shape's where a
table written before they were keyed leaves them out), so they are measured for every weight
format. A DSA module whose projections' format NVIDIA did not time reads another format's
rows (:data:`DSA_PROXY_ROWS`; its source label says so).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tiersim.errors import ProfileError
from tiersim.perf.memory import heads_per_gpu
from tiersim.perf.profile_anchor import (
    ANCHORED_FROM,
    INTERPOLATED_FROM,
    AnchoredTable,
    _on_grid,
    _shape_distance,
    anchors_attention,
    interpolated_gemm,
)
from tiersim.perf.profile_data import (  # noqa: F401 - re-exported
    DEEPSEEK_V3_MLA,
    DSA_KEYS,
    DSA_PROXY_ROWS,
    DSA_SHAPES,
    MLA_DEFAULT_KEY,
    MLA_KEYS,
    OP_AXES,
    PADDED_OPS,
    SCHEMA,
    EagerCost,
    Profile,
    Table,
    cpp_launched,
    dsa_key,
    mla_key,
    table_name,
)
from tiersim.perf.profile_interp import (  # noqa: F401 - re-exported
    interp_1d,
    interp_2d,
    interp_scalar,
    log_blend,
    log_corners,
    monotone,
    monotone_grid,
    within_fit,
)
from tiersim.perf.profile_json import (  # noqa: F401 - re-exported
    MAX_AXIS_POINTS,
    MAX_TABLE_POINTS,
    TABLE_FIELDS,
    UnknownFieldError,
    _parse_eager,
    _parse_overhead,
    load_profile,
    profile_from_json,
    save_profile,
)

#: Source-label prefix of an eagerly timed table read without its launch floor in graph steps.
GRAPH_READ = "graph-read:"
#: For an eagerly timed GEMM format, the graph-timed format whose kernel does no more work on the
#: same shape (same weight bytes and MACs, fewer scales): its time is a floor for the former's
#: graph-read time.
GRAPH_FLOOR_DTYPE = {"fp8_block": "fp8"}
#: An eagerly timed GEMM's launch floor is the median of its latencies at up to this many tokens
#: (where the kernel does next to nothing), not its first point alone: NVIDIA's B200 block-FP8
#: rows read 170-280 us at every size, and a low first point left up to 70 us of that noise in
#: every graph-read step of three shapes (a TP 4 step slower than TP 2's).
LAUNCH_FLOOR_MAX_M = 16
#: A table point is raised to the physical limit only where it falls below it by more than this
#: fraction: the importer writes some points at the limit itself (a one-token prefill over a long
#: cached context, read at HBM bandwidth), which rounding leaves a hair below.
LIMIT_TOLERANCE = 1e-3
#: Source-label suffix of a table read past the last point of an axis along the roofline
#: (:meth:`ProfileOps._continued`).
CONTINUED = " (continued along the roofline past its last point)"
#: Past a table's last point along an axis of two or more points, its last segment's slope is
#: taken only where the roofline over that segment grows at least this fast in log terms
#: (``d log roofline / d log axis``; 1: in proportion to the work, bandwidth- or compute-bound;
#: 0: flat, launch- or weight-bound) (:meth:`ProfileOps._untrusted`).
BOUND_LOG_SLOPE = 0.75


def _lone_axes(table: Table) -> list[str]:
    """The axes of ``table`` with a single grid point (a table cut short by the harness's time
    budget), along which no slope can be taken."""
    return [name for name, axis in table.axes.items() if axis.size == 1]


def _dtype_name(precision: Any) -> str:
    """A precision's scenario name, whether given as a string or a ``Precision``."""
    return str(getattr(precision, "name", precision)).lower()


class ProfileOps:
    """Per-layer operator times from a profile, with roofline fallback per missing table.

    Implements the ``OpTimes`` protocol of :mod:`tiersim.perf.assembly`. Table keys are per GPU:
    attention heads and KV heads are divided by ``tp`` (MLA: ``kv_heads`` 1, ``head_dim`` the
    cached latent width, ``kv_lora_rank + rope``, which no GQA model has, and the module's
    shapes, :func:`mla_key`); MoE tables carry the
    full expert shape with the MoE split ``tp`` (``moe_tp``) and ``ep`` of
    :func:`tiersim.perf.memory.moe_split`, at the experts' format; all-reduce tables are keyed
    by the number of GPUs. Each table looked up is recorded with its source label in
    :meth:`sources`; an operator without a table is answered by ``fallback`` and recorded as
    ``roofline``.
    """

    #: :meth:`gemm` takes ``static_scale`` (the step assembly asks before passing it).
    reads_static_scale = True

    def __init__(
        self, profile, model, precision, gpu, tp: int = 1, kv_dtype: str = "bf16", fallback=None,
        dp: int = 1, ep: int = 1,
    ):
        from tiersim.hardware.precisions import FORMAT_GROUPS, resolve_kv_dtype, weight_formats
        from tiersim.perf.memory import moe_split

        self.profile = profile
        self.model = model
        self.weights = weight_formats(model, precision)
        self.precision = self.weights.headline.name
        self.gpu = gpu
        self.tp = int(tp)
        self.dp, self.ep = int(dp), int(ep)
        self.moe_tp, self.moe_ep = moe_split(self.tp, self.dp, self.ep)
        self.kv_dtype = resolve_kv_dtype(model, _dtype_name(kv_dtype))
        self.fallback = fallback
        self._named = {self.weights.of(g).name: self.weights.of(g) for g in FORMAT_GROUPS}
        self._sources: dict[str, str] = {"overhead": profile.overhead_label()}
        self._cache: dict[tuple, Table | None] = {}
        self._graph_fitted: dict[tuple, np.ndarray] = {}  # graph-read fits per GEMM shape
        self._launch_floors: dict[str, float] = {}  # launch floors per eagerly timed table

    @property
    def overhead_s(self) -> float:
        """Fixed per-iteration time from the profile: ``value + per_layer_s x layers``
        (scheduling, sampling and launch gaps, plus the small per-layer kernels no table
        covers: norms, rotary embedding, activation, residual adds)."""
        return self.profile.overhead_s + self.profile.overhead_per_layer_s * self.model.layers

    def eager_s(self, tokens: np.ndarray, triton_moe: bool = False) -> np.ndarray:
        """Host seconds beyond the kernels of iterations of ``tokens`` tokens: the profile's
        :class:`EagerCost` for those above its ``graph_max_tokens``, else 0. A MoE layer pays
        the profile's C++ rate where its MoE table's kernel launches C++ kernels alone
        (:meth:`cpp_moe`) and ``triton_moe`` (the step runs another path) is not set."""
        eager = self.profile.eager
        tokens = np.asarray(tokens, dtype=np.float64)
        cpp = not triton_moe and self.cpp_moe()
        cost = eager.seconds(self.model.layers, self.model.moe_layers, cpp)
        if not self._graph_max or not cost:
            return np.zeros(tokens.shape)
        self._sources["eager"] = self.profile._label(eager.moe_source(cpp), None)
        return np.where(tokens > self._graph_max, cost, 0.0)

    def cpp_moe(self) -> bool:
        """Whether this model's MoE table names a kernel path launched from C++ alone
        (:func:`~tiersim.perf.profile_data.cpp_launched`; no table, or a dense model: no)."""
        if not self.model.moe_layers:
            return False
        table = self._table("moe", self.weights.experts.name, self._moe_key())
        return table is not None and cpp_launched(table.extra.get("kernel", ""))

    def _moe_key(self) -> dict[str, int]:
        """The per-GPU shape a MoE table is keyed by."""
        m = self.model
        return {"hidden": m.hidden, "inter": m.expert_intermediate, "num_experts": m.num_experts,
                "top_k": m.top_k, "ep": self.moe_ep, "tp": self.moe_tp}

    @property
    def _graph_max(self) -> int:
        """The largest iteration (of one DP rank) the profile's engine replays from a CUDA graph
        on this replica (:meth:`EagerCost.replica_graph_tokens`)."""
        return self.profile.eager.replica_graph_tokens(self.model, self.tp, self.dp)

    def sources(self) -> dict[str, str]:
        """Every table used so far -> its source label (``roofline`` for fallbacks)."""
        return dict(self._sources)

    def requested(self) -> list[tuple[str, str | None, dict[str, int]]]:
        """Every ``(op, dtype, key)`` looked up so far, found or not (the importer uses this
        to learn which tables a model needs)."""
        return [(op, dtype, dict(key)) for op, dtype, key in self._cache]

    def _table(self, op: str, dtype: str | None, key: dict[str, int]) -> Table | None:
        """The matching table (cached), recording its source or the roofline fallback."""
        cache_key = (op, dtype, tuple(key.items()))
        if cache_key not in self._cache:
            table = self.profile.find(op, dtype, key) or interpolated_gemm(self.profile, op,
                                                                           dtype, key)
            if table is None and self.fallback is None:
                raise ProfileError(
                    f"{self.profile.path}: no {table_name(op, dtype, key)} table and no "
                    "roofline fallback; add the table or build the model with a fallback"
                )
            timed = self._timed_format(op, dtype)
            if table is None:
                table = self._anchor(op, dtype, key)
            elif timed is not None:
                table = self._rescaled(table, op, dtype)
            raised = ""
            if table is None:
                label = "roofline"
            else:
                label = self.profile.source_label(table)
                if ANCHORED_FROM in table.extra:
                    label = f"anchored:{label} ({table.extra[ANCHORED_FROM]})"
                elif INTERPOLATED_FROM in table.extra:
                    label = (f"interpolated:{label} (between grid tables "
                             f"{table.extra[INTERPOLATED_FROM]})")
                if timed is not None:
                    label = self._rescaled_label(label, op, dtype, timed)
                table, raised = self._at_least_limit(table)
                if self.fallback is not None and _lone_axes(table):
                    raised += CONTINUED
            if table is not None and self._graph_read(table):
                label = f"{GRAPH_READ}{label} (its launch floor removed in CUDA-graph steps"
                other = GRAPH_FLOOR_DTYPE.get(dtype or "")
                label += f", never below the {other} GEMM)" if other else ")"
            self._sources[table_name(op, dtype, key)] = label + raised
            self._cache[cache_key] = table
        return self._cache[cache_key]

    # ------------------------------------------------------------------ weight widths

    def _group_format(self, op: str, dtype: str | None):
        """The tier's own format that asks for a ``gemm`` or ``moe`` table of ``dtype`` (the
        experts' for the MoE; for a GEMM the group of that format name, as the roofline
        fallback reads it), or None for another operator."""
        if op == "moe":
            return self.weights.experts
        return self._named.get(dtype or "") if op == "gemm" else None

    def _timed_format(self, op: str, dtype: str | None):
        """The format whose weight bits the tables of ``dtype`` were timed at, where this
        tier's weights of that name are of another width
        (:func:`~tiersim.hardware.precisions.table_format`: FP8 W8A16 on W4A16's tables);
        None where they agree, or without a roofline to rescale by."""
        from tiersim.hardware.precisions import table_format

        fmt = self._group_format(op, dtype)
        return None if fmt is None or self.fallback is None else table_format(fmt)

    def _rescaled(self, table: Table, op: str, dtype: str | None) -> Table:
        """``table`` at its own shape, rescaled by the roofline from the weight bits it was
        timed at (:meth:`_timed_format`) to this tier's: a weight-only GEMM or MoE at a small
        batch is bound by reading its weights, and 8-bit weights are twice 4-bit's bytes."""
        anchor = AnchoredTable(table, self._target_roofline(op, dtype, table.key),
                               self._source_roofline(op, dtype, table.key))
        return anchor.on_grid(dtype, table.key, anchored=False)

    def _rescaled_label(self, label: str, op: str, dtype: str | None, timed) -> str:
        """``label`` of a table read at other weight bits than it was timed at, saying so."""
        fmt = self._group_format(op, dtype)
        return (f"rescaled:{label} ({fmt.label} at {fmt.weight_bits:g} bits a weight, rescaled "
                f"from {timed.label} tables ({timed.weight_bits:g} bits a weight) by the "
                "roofline)")

    # ------------------------------------------------------------------ physical limit

    def _at_least_limit(self, table: Table) -> tuple[Table, str]:
        """``table`` with every point below the physical limit
        (:class:`~tiersim.perf.roofline.PhysicalLimitOps`) answered by the roofline instead,
        as a point the profile lacks would be, and a label suffix saying how many were (``""``:
        none, ``table`` itself). Such a point is no kernel a server can run (an MLA prefill
        table once extended a prompt curve measured up to 512 tokens to a 32,768-token row at
        a fourteenth of what the tensor cores can do). Without a roofline
        fallback on a known GPU (a profile read alone) nothing is replaced."""
        limit = self._limit_ops()
        if limit is None:
            return table, ""
        impossible = table.latency < _on_grid(limit, table) * (1.0 - LIMIT_TOLERANCE)
        if not impossible.any():
            return table, ""
        latency = np.where(impossible, _on_grid(self.fallback, table), table.latency)
        replaced = Table(table.op, table.dtype, table.source, table.key, table.axes, latency,
                         table.extra)
        return replaced, (f" ({int(impossible.sum())} of {impossible.size} points below the "
                          "physical limit, read from the roofline)")

    def _limit_ops(self):
        """:class:`~tiersim.perf.roofline.PhysicalLimitOps` of this replica (built once), or
        ``None`` without a roofline fallback on a known GPU."""
        if getattr(self.fallback, "gpu", None) is None:
            return None
        limit = self.__dict__.get("_limit")
        if limit is None:
            from tiersim.perf.roofline import PhysicalLimitOps

            limit = self.__dict__["_limit"] = PhysicalLimitOps(
                self.model, self.weights, self.fallback.gpu, self.tp, self.kv_dtype, self.dp,
                self.ep)
        return limit

    def _past_grid(self, table: Table, value, coords: tuple, at, read=None):
        """``value`` (``table`` read at ``coords``) where they lie inside its grid; beyond its
        last point along an axis, where the module's rule extrapolates (:meth:`_continued`
        where the axis's slope cannot be trusted there; ``read``: how the table is read,
        default ``table.lookup``), never below the physical limit (``at(limit_ops,
        *coords)``): a GEMM continued past 32,768 tokens on its last segment's slope ran faster
        than the tensor cores."""
        value = self._continued(table, np.asarray(value, np.float64), coords, at, read)
        beyond = np.zeros(value.shape, dtype=bool)
        for x, axis in zip(coords, table.axes.values(), strict=True):
            beyond = beyond | (np.asarray(x, np.float64) > axis[-1])
        limit = self._limit_ops() if beyond.any() else None
        if limit is None:
            return value
        return np.where(beyond, np.maximum(value, np.asarray(at(limit, *coords), np.float64)),
                        value)

    def _continued(self, table: Table, value, coords: tuple, at, read=None):
        """``value`` (``table`` read at ``coords``) beyond the last point of an axis whose slope
        cannot be trusted there (:meth:`_untrusted`: a single point, or a last segment where
        the roofline itself is not affine) continued along the roofline's own shape through
        that point instead: the table at the point clamped to it (``read``, default
        ``table.lookup``) times ``roofline(x) / roofline(x_last)`` (``at(fallback,
        *coords)``), the rescaling :class:`AnchoredTable` uses between shapes, never below the
        physical limit; the table's source label then ends :data:`CONTINUED`. Unchanged
        elsewhere, and without a roofline fallback."""
        if self.fallback is None:
            return value
        clamped, past = [], np.zeros(np.shape(value), dtype=bool)
        for i, (x, axis) in enumerate(zip(coords, table.axes.values(), strict=True)):
            x = np.asarray(x, np.float64)
            off = self._untrusted(table, i, x, at)
            past = past | off
            clamped.append(np.where(off, axis[-1], x))
        if not past.any():
            return value
        self._label_continued(table)
        base = np.asarray((read or table.lookup)(*clamped), np.float64)
        ratio = (np.asarray(at(self.fallback, *coords), np.float64)
                 / np.asarray(at(self.fallback, *clamped), np.float64))
        continued = base * ratio
        limit = self._limit_ops()
        if limit is not None:
            continued = np.maximum(continued, np.asarray(at(limit, *coords), np.float64))
        return np.where(past, continued, value)

    def _untrusted(self, table: Table, i: int, x: np.ndarray, at) -> np.ndarray:
        """Where ``x`` (coordinates along axis ``i``) lies past the axis's last point and the
        module's rule (its last segment's slope) cannot be trusted: the axis has one point, or
        over its last two points the roofline grows less than :data:`BOUND_LOG_SLOPE` as fast
        as the axis in log terms, so the kernel is not yet bandwidth- or compute-bound there,
        the rule's premise (a MoE table of 1 and 2 tokens rose by its expert loading, 19 us a
        token, and read 155 ms a layer at 8,192 tokens; a GEMM's flat m = 1, 2 read large
        prefills at the physical limit). The other axes are held at their last points: the
        answer is one per axis, so a lookup's entries stay independent of one another."""
        axes = list(table.axes.values())
        axis = axes[i]
        off = x > axis[-1]
        if axis.size == 1 or not off.any():
            return off
        point = [a[-1] for a in axes]
        last = float(np.asarray(at(self.fallback, *point), np.float64).reshape(-1)[0])
        point[i] = axis[-2]
        prev = float(np.asarray(at(self.fallback, *point), np.float64).reshape(-1)[0])
        growth = math.log(last / prev) / math.log(axis[-1] / axis[-2])
        return off & (growth < BOUND_LOG_SLOPE)

    def _label_continued(self, table: Table) -> None:
        """End ``table``'s source label with :data:`CONTINUED` (once)."""
        label = self._sources.get(table.name, "")
        if not label.endswith(CONTINUED):
            self._sources[table.name] = label + CONTINUED

    # ------------------------------------------------------------------ anchoring

    def _anchor(self, op: str, dtype: str | None, key: dict[str, int]):
        """For a shape the profile lacks: the nearest table of the same operator and dtype,
        rescaled by the roofline's ratio between the two shapes (:class:`AnchoredTable`), or
        ``None`` (no such table at all, or none an attention read may anchor on:
        :func:`anchors_attention`)."""
        if self.fallback is None:
            return None
        candidates = [t for t in self.profile.tables if t.op == op and t.dtype == dtype
                      and anchors_attention(op, dtype, t.key, key)]
        if not candidates:
            return None
        near = min(candidates, key=lambda t: _shape_distance(op, t.key, key))
        source_roof = self._source_roofline(op, near.dtype, near.key)
        if source_roof is None:
            return None
        return AnchoredTable(near, self._target_roofline(op, dtype, key), source_roof).on_grid(
            dtype, key)

    def _target_roofline(self, op: str, dtype, key: dict[str, int]):
        fb = self.fallback
        if op == "gemm":
            return lambda m: fb.gemm(m, key["n"], key["k"], dtype)
        if op == "moe":
            return fb.moe
        if op == "allreduce":
            return lambda b: fb.allreduce(b, key["tp"])
        if op in ("gdn_decode", "gdn_prefill"):
            return getattr(fb, op)
        return fb.attn_prefill if op == "attn_prefill" else fb.attn_decode

    def _source_roofline(self, op: str, dtype, key: dict[str, int]):
        """The roofline at the anchor table's own shape (same GPU, constants, KV dtype) and,
        where this tier's weights are of another width than the tables' (:meth:`_timed_format`),
        at the bits the table was timed at."""
        import dataclasses

        from tiersim.perf.roofline import RooflineOps

        fb = self.fallback
        if op == "gemm":
            timed = self._timed_format(op, dtype)
            ops = fb if timed is None else RooflineOps(self.model, timed, fb.gpu,
                                                       kv_dtype=fb.kv_dtype, constants=fb.c)
            return lambda m: ops.gemm(m, key["n"], key["k"], dtype)
        if op == "allreduce":
            return lambda b: fb.allreduce(b, key["tp"])
        if op == "moe":  # at the bits the table was timed at, else the tier's experts' own
            arch = dataclasses.replace(self.model, hidden=key["hidden"],
                                       expert_intermediate=key["inter"],
                                       num_experts=key["num_experts"], top_k=key["top_k"])
            timed = self._timed_format(op, dtype) or self._group_format(op, dtype) or dtype
            ops = RooflineOps(arch, timed, fb.gpu, tp=1, kv_dtype=fb.kv_dtype, constants=fb.c,
                              dp=key["tp"] * key["ep"], ep=key["ep"])
            return ops.moe
        if op in ("gdn_decode", "gdn_prefill"):  # the anchor's per-GPU heads, on one GPU
            arch = dataclasses.replace(self.model, hidden=key["hidden"],
                                       linear_k_heads=key["k_heads"],
                                       linear_v_heads=key["v_heads"],
                                       linear_k_dim=key["k_dim"], linear_v_dim=key["v_dim"])
            ops = RooflineOps(arch, "bf16", fb.gpu, tp=1, kv_dtype=fb.kv_dtype, constants=fb.c)
            return getattr(ops, op)
        if self.model.is_mla:  # same module shape, another number of query heads per GPU
            arch = dataclasses.replace(self.model, heads=key["heads"], kv_heads=key["heads"])
        else:
            arch = dataclasses.replace(self.model, heads=key["heads"], kv_heads=key["kv_heads"],
                                       head_dim=key["head_dim"])
        ops = RooflineOps(arch, "bf16", fb.gpu, tp=1, kv_dtype=fb.kv_dtype, constants=fb.c)
        return ops.attn_prefill if op == "attn_prefill" else ops.attn_decode

    def _attn_key(self) -> dict[str, int]:
        key = self.__dict__.get("_attn_key_cached")
        if key is None:
            heads, kv_heads = heads_per_gpu(self.model, self.tp)
            key = {"heads": heads, "kv_heads": kv_heads, "head_dim": self.model.head_dim}
            if self.model.is_mla:
                key = {"heads": heads, "kv_heads": 1, "head_dim": self.model.kv_latent_dim,
                       **(dsa_key if self.model.is_dsa else mla_key)(self.model)}
            self.__dict__["_attn_key_cached"] = key
        return key

    def gemm(self, m, n: int, k: int, precision=None, *, tokens=None,
             static_scale: bool = False, group: int = 1) -> np.ndarray:
        """Seconds of one ``m x k @ k x n`` GEMM at ``precision`` (default: the tier's) in a step
        of ``tokens`` batched tokens (default ``m``), which decide whether the step replays a
        CUDA graph (:meth:`_step_gemm`). ``static_scale``: the checkpoint's input scale is
        static, so a per-tensor FP8 GEMM skips computing it (:meth:`_less_scale`). ``group``
        (one of that many alike GEMMs run as one grouped kernel) changes nothing here: the
        tables are read at the one GEMM's shape, and the fallback is the bare roofline."""
        dtype = _dtype_name(precision) if precision is not None else self.precision
        value = self._gemm(m, n, k, precision, dtype, tokens)
        if static_scale and dtype == "fp8" and self._table(
                "gemm", dtype, {"n": int(n), "k": int(k)}) is not None:
            return self._less_scale(value, m, n, k)
        return value

    def _less_scale(self, value, m, n: int, k: int) -> np.ndarray:
        """``value`` (a per-tensor FP8 GEMM as its table times it, its input's scale computed at
        run time) less the profile's ``fp8_scale`` time at ``m x k``, never below the GEMM's
        physical limit (:class:`~tiersim.perf.roofline.PhysicalLimitOps`: the speed of light
        aiconfigurator floors its ``fp8_static`` GEMMs at; 0 without a roofline fallback on a
        known GPU) nor above ``value``; ``value`` itself where the profile has no such table.
        NOTE: floored at the derated roofline instead, a prefill-sized GEMM read slower static
        than dynamic (H200 TensorRT-LLM, 4,096 x 8,192 @ 8,192 x 57,344: 2,327 us as timed,
        2,804 us static, the roofline at 70% of the FP8 peak)."""
        table = self._scale_table(int(k))
        if table is None:
            return value
        value = np.asarray(value, np.float64)
        less = value - np.asarray(table.lookup(m), np.float64)
        limit = self._limit_ops()
        floor = 0.0 if limit is None else limit.gemm(m, n, k, "fp8")
        return np.maximum(np.minimum(floor, value), less)

    def _scale_table(self, k: int) -> Table | None:
        """The ``fp8_scale`` table at ``k``, else the one of the nearest ``k`` (the time is a
        pass over the input, nearly flat at decode sizes), recorded with its source; ``None``
        where the profile has none (nothing is taken off, and nothing recorded)."""
        cache_key = ("fp8_scale", None, (("k", k),))
        if cache_key not in self._cache:
            tables = [t for t in self.profile.tables if t.op == "fp8_scale"]
            table = min(tables, key=lambda t: abs(math.log(t.key["k"] / k)), default=None)
            self._cache[cache_key] = table
            if table is not None:
                label = self.profile.source_label(table)
                if table.key["k"] != k:
                    label = f"anchored:{label} (nearest k {table.key['k']})"
                self._sources[table_name("fp8_scale", None, {"k": k})] = label
        return self._cache[cache_key]

    def _gemm(self, m, n: int, k: int, precision, dtype: str, tokens) -> np.ndarray:
        """:meth:`gemm` as its table times it (dynamic input scales)."""
        table = self._table("gemm", dtype, {"n": int(n), "k": int(k)})
        if table is None:
            return self.fallback.gemm(m, n, k, precision if precision is not None else dtype)
        if not self._graph_read(table):
            return self._past_grid(table, table.lookup(m), (m,),
                                   lambda ops, x: ops.gemm(x, n, k, dtype))
        graph_max = self._graph_max
        if tokens is not None:
            in_graph = np.asarray(tokens, np.float64) <= graph_max
            return self._step_gemm(table, m, (n, k, dtype), in_graph)

        def read(x):
            """The table at ``x`` (``m`` clamped to the grid) as ``m``'s own iteration reads
            it: graph-read where ``m`` fits a CUDA graph, as measured where it runs eagerly."""
            graph = self._graph_gemm(table, x, n, k, dtype, graph_max)
            return np.where(np.asarray(m, np.float64) <= graph_max, graph, table.lookup(x))

        value = self._graph_gemm(table, m, n, k, dtype, graph_max)
        return self._past_grid(table, value, (m,), lambda ops, x: ops.gemm(x, n, k, dtype), read)

    def _step_gemm(self, table, m, shape, in_graph) -> np.ndarray:
        """An eagerly timed GEMM of ``m`` rows that are not its step's tokens (DeepGEMM's
        padded expert rows): graph-read at ``m`` where ``in_graph`` (the step's tokens fit a
        CUDA graph, whatever ``m`` is), as measured where the step runs eagerly."""
        n, k, dtype = shape

        def read(x):
            """The table at ``x`` read as the step runs (graph or eager)."""
            graph = self._graph_gemm(table, x, n, k, dtype, math.inf)
            return np.where(in_graph, graph, self._graph_gemm(table, x, n, k, dtype, 0))

        return self._past_grid(table, read(m), (m,), lambda ops, x: ops.gemm(x, n, k, dtype), read)

    def _graph_read(self, table) -> bool:
        """True for an eagerly timed table this profile reads differently inside CUDA graphs."""
        return bool(self._graph_max) and table.extra.get("timing") == "eager"

    def _graph_gemm(self, table, m, n: int, k: int, dtype: str, graph_max: int):
        """An eagerly timed GEMM table inside CUDA-graph iterations (``m <= graph_max``, as
        ``m`` is the iteration's token count for every GEMM but :meth:`_step_gemm`'s, which
        passes ``math.inf`` for a graph step and 0 for an eager one): its latency less its
        launch floor (:meth:`_launch_floor`), never below the roofline (module docstring); the
        curve on the table's grid made :func:`monotone` and interpolated as a table is."""
        m_arr = np.asarray(m, dtype=np.float64)
        grid = table.axes["m"]
        key = (table.name, n, k, dtype, graph_max)
        fitted = self._graph_fitted.get(key)
        if fitted is None:
            curve = self._graph_curve(table, table.lookup(grid), grid, (n, k, dtype), graph_max)
            fitted = self._graph_fitted[key] = monotone(curve)
        raw = self._graph_curve(table, np.asarray(table.lookup(m_arr), np.float64), m_arr,
                                (n, k, dtype), graph_max)
        return within_fit(raw, m_arr, grid, fitted)

    def _graph_curve(self, table, t, m, shape, graph_max: int) -> np.ndarray:
        """``t`` (the table's eager latency at ``m``) with the graph-read rule applied where
        ``m <= graph_max``: the per-tensor floor (:meth:`_graph_floor`) lifts the graph read at
        most to ``t`` itself, as replaying a CUDA graph takes host work off a kernel and cannot
        make it slower than it ran eagerly (at DeepGEMM's 16,384 padded rows the per-tensor
        FP8 table is above the block-FP8 one: 322 against 300 us at n 1,536, k 4,096)."""
        n, k, dtype = shape
        if not (m <= graph_max).any():
            return t
        floor = self._launch_floor(table)
        roof = 0.0 if self.fallback is None else self.fallback.gemm(m, n, k, dtype)
        graph = np.maximum(roof, t - floor)
        graph = np.maximum(graph, np.minimum(self._graph_floor(m, n, k, dtype), t))
        return np.where(m <= graph_max, graph, t)

    def _launch_floor(self, table) -> float:
        """Seconds of an eagerly timed table's launch floor: the median of its latencies at
        grid points up to :data:`LAUNCH_FLOOR_MAX_M` tokens (its first point where it has
        none), remembered per table."""
        floor = self._launch_floors.get(table.name)
        if floor is None:
            grid = table.axes["m"]
            small = grid[grid <= LAUNCH_FLOOR_MAX_M]
            points = table.lookup(small if small.size else grid[:1])
            floor = float(np.median(np.asarray(points, np.float64)))
            self._launch_floors[table.name] = floor
        return floor

    def _graph_floor(self, m, n: int, k: int, dtype: str):
        """Seconds of the graph-timed GEMM of :data:`GRAPH_FLOOR_DTYPE` at this shape (its
        table, else the nearest one rescaled by the roofline), or 0 where there is none."""
        other = GRAPH_FLOOR_DTYPE.get(dtype)
        key = {"n": int(n), "k": int(k)}
        table = None if other is None else self.profile.find("gemm", other, key)
        if table is None and other is not None:
            table = self._anchor("gemm", other, key)
        return 0.0 if table is None else np.asarray(table.lookup(m), dtype=np.float64)

    def gdn_decode(self, seqs) -> np.ndarray:
        """Seconds of one gated delta-net layer's kernels (convolution and recurrent state
        update) for ``seqs`` decoding sequences."""
        table = self._table("gdn_decode", None, self._gdn_key())
        if table is None:
            return self.fallback.gdn_decode(seqs)
        return self._continued(table, table.lookup(seqs), (seqs,), lambda ops, x: ops.gdn_decode(x))

    def gdn_prefill(self, tokens) -> np.ndarray:
        """Seconds of one gated delta-net layer's kernels (causal convolution and chunked delta
        rule) for one sequence's prefill chunk of ``tokens`` tokens."""
        table = self._table("gdn_prefill", None, self._gdn_key())
        if table is None:
            return self.fallback.gdn_prefill(tokens)
        return self._continued(table, table.lookup(tokens), (tokens,),
                               lambda ops, x: ops.gdn_prefill(x))

    def _gdn_key(self) -> dict[str, int]:
        """The per-GPU shape of a gated delta-net layer's kernels."""
        m = self.model
        return {"hidden": m.hidden, "k_heads": m.linear_k_heads // self.tp,
                "v_heads": m.linear_v_heads // self.tp, "k_dim": m.linear_k_dim,
                "v_dim": m.linear_v_dim}

    def moe(self, tokens) -> np.ndarray:
        """Seconds of one MoE layer (router excluded) for ``tokens`` tokens."""
        table = self._table("moe", self.weights.experts.name, self._moe_key())
        if table is None:
            return self.fallback.moe(tokens)
        return self._past_grid(table, table.lookup(tokens), (tokens,),
                               lambda ops, x: ops.moe(x))

    def attn_prefill(self, tokens, context) -> np.ndarray:
        """Seconds of one layer's prefill attention: ``tokens`` new over ``context`` cached."""
        table = self._attn_table("attn_prefill")
        if table is None:
            return self.fallback.attn_prefill(tokens, context)
        return self._past_grid(table, table.lookup(tokens, context), (tokens, context),
                               lambda ops, t, c: ops.attn_prefill(int(t), int(c)))

    def attn_decode(self, batch, context_per_seq) -> np.ndarray:
        """Seconds of one layer's decode attention over ``batch`` sequences of that context."""
        table = self._attn_table("attn_decode")
        if table is None:
            return self.fallback.attn_decode(batch, context_per_seq)
        return self._past_grid(table, table.lookup(batch, context_per_seq),
                               (batch, context_per_seq),
                               lambda ops, b, c: ops.attn_decode(int(b), c))

    def attn_decode_curve(self, batch: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The decode attention table at ``batch`` as ``(log context axis, log latency row,
        last context)``, so a caller can evaluate many contexts exactly as
        :meth:`attn_decode` does (``exp(interp(log(max(c, 1e-300)), axis, row))`` for contexts
        up to the last); ``None`` where that shortcut does not apply (no table, an anchored
        one, or ``batch`` beyond the table's batch axis)."""
        table = self._attn_table("attn_decode")
        if type(table) is not Table or len(table.axes) != 2:
            return None
        grid, x0 = table._grid(), float(batch)
        if x0 > grid.ax0[-1]:
            return None
        return grid.lax1, grid._blended(x0), grid.last1

    def attn_point(self, op: str):
        """``op``'s one-point lookup, ``(x0, x1) -> latency`` with ``x0`` a float and ``x1`` a
        number: the number ``float(getattr(self, op)(x0, x1))`` gives for one point, without
        the calls around it; ``None`` where ``op`` has no plain two-axis table (the caller
        then asks ``op`` itself)."""
        table = self._attn_table(op)
        if type(table) is not Table or len(table.axes) != 2:
            return None
        grid, limit = table._grid(), self._limit_ops()
        last0, last1 = (float(axis[-1]) for axis in table.axes.values())
        # beyond the grid: the table's extrapolation, held at the physical limit where known
        # and continued along the roofline where its slope is not trusted (the op does both)
        plain = limit is None and self.fallback is None
        beyond = grid.at if plain else getattr(self, op)
        inside = grid.point

        def point(x0: float, x1: float):
            """The table's point inside its grid (:meth:`_LogGrid.point`); beyond it,
            ``beyond``."""
            if x0 > last0 or x1 > last1:
                return beyond(x0, x1)
            return inside(x0, x1)

        return point

    def _attn_table(self, op: str) -> Table | None:
        """The attention table for ``op`` (resolved once: this is on the engine's hot path).
        MLA tables are keyed by KV dtype and the attention projections' format, since the
        measured modules include those projections (``"bf16 mla-fp8_block"``)."""
        resolved = self.__dict__.setdefault("_attn_tables", {})
        if op not in resolved:
            dtype = self.kv_dtype
            if self.model.is_mla:
                kind = "dsa" if self.model.is_dsa else "mla"
                dtype = f"{self.kv_dtype} {kind}-{self.weights.attention.name}"
            resolved[op] = self._table(op, dtype, self._attn_key())
        return resolved[op]

    def allreduce(self, nbytes, gpus: int | None = None) -> np.ndarray:
        """Seconds of one all-reduce of ``nbytes`` across ``gpus`` GPUs (default ``tp``)."""
        n = self.tp if gpus is None else int(gpus)
        if n == 1:
            return np.zeros_like(np.asarray(nbytes, dtype=np.float64))
        node = getattr(getattr(self.fallback, "gpu", None), "gpus_per_node", n)
        if n > node and self.profile.find("allreduce", None, {"tp": n}) is None:
            return self._across_nodes(nbytes, n, node)
        table = self._table("allreduce", None, {"tp": n})
        if table is None:
            return self.fallback.allreduce(nbytes, n)
        return self._continued(table, table.lookup(nbytes), (nbytes,),
                               lambda ops, x: ops.allreduce(x, n))

    def _across_nodes(self, nbytes, n: int, node: int) -> np.ndarray:
        """An all-reduce over ``n`` GPUs spanning nodes, which no table covers: the measured
        all-reduce over one node's ``node`` GPUs plus the roofline's inter-node part
        (:meth:`tiersim.perf.roofline.RooflineOps.internode_allreduce`); a measured table at
        ``n`` GPUs would be an intra-node figure anchored far below the network's cost."""
        within = self.allreduce(nbytes, node)
        name = table_name("allreduce", None, {"tp": n})
        if name not in self._sources:
            inner = self._sources.get(table_name("allreduce", None, {"tp": node}), "roofline")
            nodes = -(-n // node)
            self._sources[name] = f"{inner} within a node + roofline across {nodes} nodes"
        return within + self.fallback.internode_allreduce(nbytes, n)
