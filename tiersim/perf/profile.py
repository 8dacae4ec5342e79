"""Calibration profiles: measured operator-latency tables and the step-time ops built on them.

A profile is a JSON file (schema ``tiersim.profile/1``, pinned in ``docs/CONTRACTS.md``) holding,
for one GPU, tables of per-layer operator latencies at a model's shapes: dense GEMMs vs token
count, MoE layers vs tokens, prefill attention vs new tokens x cached context, decode attention vs
batch x context per sequence, all-reduce vs bytes, and a fixed per-iteration overhead. Each table
says where its numbers come from (``source``: ``harness``, ``public`` or ``roofline``).
``overhead_s`` may carry an optional ``per_layer_s`` besides ``value`` (an addition to the
contract's schema; absent means 0): the per-iteration overhead is ``value + per_layer_s x layers``,
so one profile can serve models of different depth (the small per-layer kernels no table covers).

CUDA graphs and eager iterations (an addition to the contract's schema; absent means none)
------------------------------------------------------------------------------------------
An engine such as vLLM replays iterations of up to ``graph_max_tokens`` tokens from CUDA graphs
and runs larger ones (long prefill chunks) eagerly, launching every kernel from the host. The
optional ``eager_s`` object, ``{"graph_max_tokens": 512, "per_layer_s": ..., "per_moe_layer_s":
..., "source": ...}``, describes that: an eager iteration pays ``per_layer_s x layers +
per_moe_layer_s x MoE layers`` of host time beyond its kernels (:class:`EagerCost`). An engine
whose largest CUDA graph depends on the tensor-parallel size (SGLang's ``cuda_graph_max_bs``: 256
below TP 4 on an 80-141 GB GPU, else 512) gives the sizes where it differs from
``graph_max_tokens`` in an optional ``graph_max_tokens_by_tp`` object (``{"1": 256, "2": 256,
"3": 256}``); a step model reads its engine's (a MoE model's ``tp x dp`` GPUs: SGLang's ``--tp``
under attention data parallelism; a dense model's ``tp``). In a
graph-replayed iteration a table timed eagerly (``"timing": "eager"``: NVIDIA's block-FP8 GEMMs,
whose small-``m`` rows are the host launch path, not the kernel) is read without its launch
floor: ``max(roofline, latency - launch floor)`` (the floor: the median of its rows up to
:data:`LAUNCH_FLOOR_MAX_M` tokens), and never below the
graph-timed GEMM of the same shape in the format whose kernel does no more work (per-tensor FP8
for block FP8: the same weight bytes and MACs, fewer scales; :data:`GRAPH_FLOOR_DTYPE`). The
host costs are fitted on measured serving rows (``benchmarks/fidelity_silicon.py --fit``) and
labelled so.

:class:`ProfileOps` answers the per-layer operator questions of the step assembly
(:mod:`tiersim.perf.assembly`) from those tables. An operator whose table the profile lacks is
answered by the roofline fallback instead, and :meth:`ProfileOps.sources` says so, table by table:
nothing falls back silently.

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

import bisect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from tiersim.errors import ProfileError, shown
from tiersim.jsonio import read_json
from tiersim.perf.memory import heads_per_gpu

SCHEMA = "tiersim.profile/1"

#: Axis names per operator, in the order of the nested ``latency_s`` lists.
OP_AXES: dict[str, tuple[str, ...]] = {
    "gemm": ("m",),
    "moe": ("tokens",),
    "attn_prefill": ("tokens", "context"),
    "attn_decode": ("batch", "context"),
    "allreduce": ("bytes",),
    "gdn_decode": ("seqs",),
    "gdn_prefill": ("tokens",),
}
#: Key fields each operator's table must carry.
OP_KEYS: dict[str, tuple[str, ...]] = {
    "gemm": ("n", "k"),
    "moe": ("hidden", "inter", "num_experts", "top_k", "ep", "tp"),
    "attn_prefill": ("heads", "kv_heads", "head_dim"),
    "attn_decode": ("heads", "kv_heads", "head_dim"),
    "allreduce": ("tp",),
    "gdn_decode": ("hidden", "k_heads", "v_heads", "k_dim", "v_dim"),
    "gdn_prefill": ("hidden", "k_heads", "v_heads", "k_dim", "v_dim"),
}
#: Key fields an MLA module's attention table carries besides :data:`OP_KEYS`: the shapes its
#: projections and kernel run at (its ``head_dim`` is the cached latent, ``kv_lora_rank +
#: rope``, which another split of the same width shares). A table may leave them all out where
#: it was measured at DeepSeek-V3's shapes (:data:`DEEPSEEK_V3_MLA`), as NVIDIA's were.
MLA_KEYS = ("hidden", "q_lora", "rope", "nope", "v_dim")
#: Key fields a DSA module's attention table carries besides :data:`OP_KEYS`: the MLA block's
#: (:data:`MLA_KEYS`) and its indexer's (NVIDIA measured the modules at more than one model's
#: shapes; a model reads a table only at its own).
DSA_KEYS = (*MLA_KEYS, "index_heads", "index_dim", "index_topk")
#: DeepSeek-V3's MLA shapes (Kimi-K2 shares them), in the model's field names: those NVIDIA
#: measured its MLA modules at.
DEEPSEEK_V3_MLA = {"hidden": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512,
                   "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
#: Shapes NVIDIA measured the DSA (DeepSeek sparse attention) modules at, by the data's model
#: names: DeepSeek-V3.2's and GLM-5's. GLM-5-FP8 and GLM-5.2-NVFP4 have GLM-5's shape, and
#: NVIDIA filed some of GLM-5's modules under those names only (B200 SGLang's whole modules
#: with BF16 projections: GLM-5.2-NVFP4's; its zai-org GLM-5.2 rows time the module without
#: its indexer, ``*_skip_indexer``, which no table reads).
DSA_SHAPES = {
    "deepseek-ai/DeepSeek-V3.2": {"hidden": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512,
                                  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                                  "v_head_dim": 128, "index_heads": 64, "index_head_dim": 128,
                                  "index_topk": 2048},
    "zai-org/GLM-5": {"hidden": 6144, "q_lora_rank": 2048, "kv_lora_rank": 512,
                      "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
                      "index_heads": 32, "index_head_dim": 128, "index_topk": 2048},
}
DSA_SHAPES.update(dict.fromkeys(("zai-org/GLM-5-FP8", "nvidia/GLM-5.2-NVFP4"),
                                DSA_SHAPES["zai-org/GLM-5"]))
#: The format whose measured DSA modules stand for projections in another (the data times
#: BF16 and block-FP8 projections only): per-tensor FP8 through block FP8, a weight-only or FP4
#: format through BF16 (Hopper dequantises both to BF16 tensor cores).
DSA_PROXY_ROWS = {"fp8": "fp8_block", "nvfp4": "bf16", "w4a16": "bf16", "mxfp4": "bf16"}
#: The dtype field that selects a table besides its key (``None``: no such field).
OP_DTYPE: dict[str, str | None] = {
    "gemm": "precision",
    "moe": "precision",
    "attn_prefill": "kv_dtype",
    "attn_decode": "kv_dtype",
    "allreduce": None,
    "gdn_decode": None,
    "gdn_prefill": None,
}
#: Operators of one axis (tokens, sequences, bytes) an engine may pad to a larger measured size:
#: read non-decreasing over it (:func:`monotone`). Two-axis tables are read non-decreasing along
#: both (:func:`monotone_grid`): more new tokens, cached context or sequences are never faster.
PADDED_OPS = frozenset({"gemm", "moe", "allreduce", "gdn_decode", "gdn_prefill"})
SOURCES = ("harness", "public", "roofline")
_OPTIONAL_TABLE_FIELDS = ("kernel", "origin", "engine_version", "notes", "timing")
#: Tables NVIDIA's data measures through another format's rows, by (op, format): the rows the
#: importer read (its notes start with them), named in the source label. vLLM's per-tensor FP8
#: MoE runs its Triton fused-MoE kernel, timed in the data's block-FP8 rows; NVFP4 on Hopper runs
#: the weight-only Marlin MoE kernel, timed in its INT4 rows.
PROXY_ROWS = {("moe", "fp8"): "fp8_block", ("moe", "nvfp4"): "int4_wo"}
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
#: The ``extra`` field of an anchored table (:meth:`AnchoredTable.on_grid`) naming its source.
ANCHORED_FROM = "anchored_from"
#: The ``extra`` field of an interpolated GEMM table (:func:`gemm_corners`) naming the span of
#: grid tables it was interpolated between.
INTERPOLATED_FROM = "interpolated_from"


@dataclass(frozen=True)
class EagerCost:
    """Host time of iterations an engine runs outside CUDA graphs (see the module docstring).

    ``graph_max_tokens``: the largest iteration replayed from a CUDA graph (0: the engine makes
    no such distinction and nothing here applies). ``per_layer_s`` / ``per_moe_layer_s``: host
    seconds an eager iteration pays per layer and per MoE layer. ``source``: where the numbers
    come from (``fitted ...``, or ``roofline`` for none). ``graph_max_tokens_by_tp``:
    ``(tp, tokens)`` pairs, the largest CUDA-graph iteration at the tensor-parallel sizes where it
    is not ``graph_max_tokens`` (:meth:`graph_tokens`).
    """

    graph_max_tokens: int = 0
    per_layer_s: float = 0.0
    per_moe_layer_s: float = 0.0
    source: str = "roofline"
    graph_max_tokens_by_tp: tuple[tuple[int, int], ...] = ()

    def seconds(self, layers: int, moe_layers: int) -> float:
        """Host seconds of one eager iteration of a model with these layer counts."""
        return self.per_layer_s * layers + self.per_moe_layer_s * moe_layers

    def graph_tokens(self, tp: int) -> int:
        """The largest iteration replayed from a CUDA graph at tensor parallelism ``tp``: its
        ``graph_max_tokens_by_tp`` entry, else ``graph_max_tokens``."""
        return dict(self.graph_max_tokens_by_tp).get(int(tp), self.graph_max_tokens)

    def to_json(self) -> dict[str, Any]:
        """The ``eager_s`` object of a profile file (``graph_max_tokens_by_tp`` only where it
        names a size)."""
        by_tp = {str(tp): tokens for tp, tokens in sorted(self.graph_max_tokens_by_tp)}
        return {"graph_max_tokens": self.graph_max_tokens,
                **({"graph_max_tokens_by_tp": by_tp} if by_tp else {}),
                "per_layer_s": self.per_layer_s, "per_moe_layer_s": self.per_moe_layer_s,
                "source": self.source}


@dataclass
class Table:
    """One operator-latency table.

    op: one of :data:`OP_AXES`. dtype: the table's precision (gemm, moe) or KV dtype (attention),
    ``None`` for all-reduce. key: the shape it was measured at. axes: axis name -> ascending
    positive grid. latency: seconds, shape ``(len(axis) for axis in axes)``. extra: the optional
    descriptive fields (kernel, origin, engine_version, notes).
    """

    op: str
    dtype: str | None
    source: str
    key: dict[str, int]
    axes: dict[str, np.ndarray]
    latency: np.ndarray
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """A short readable name, e.g. ``gemm fp8 n=5120 k=2048``."""
        return table_name(self.op, self.dtype, self.key)

    def lookup(self, *coords: Any) -> np.ndarray:
        """Latency in seconds at the given coordinates (broadcast arrays), per the module rule."""
        grid = self.__dict__.get("_log_grid") or self._grid()
        if len(coords) != grid.ndim:
            raise ValueError(f"{self.name}: expected {grid.ndim} coordinates, got {len(coords)}")
        if grid.ndim == 1:
            x = coords[0]
            return np.asarray(grid.row(0, float(x) if _is_scalar(x) else x))
        if _is_scalar(coords[0]):  # one batch / token count: the engine's only case
            return np.asarray(grid.at(float(coords[0]), coords[1]))
        names = list(self.axes)
        return interp_2d(self.axes[names[0]], self.axes[names[1]], self.read_latency(), *coords)

    def read_latency(self) -> np.ndarray:
        """The latencies as read (module docstring): made non-decreasing along every axis
        (:func:`monotone`, :func:`monotone_grid`), except an eagerly timed table's, which is made
        so once read as in CUDA graphs (:meth:`ProfileOps._graph_gemm`)."""
        fitted = self.__dict__.get("_read_latency")
        if fitted is None:
            fitted = self.latency
            if self.latency.ndim == 2:
                fitted = monotone_grid(self.latency)
            elif self.op in PADDED_OPS and self.extra.get("timing") != "eager":
                fitted = monotone(self.latency)
            self.__dict__["_read_latency"] = fitted
        return fitted

    def _grid(self) -> _LogGrid:
        grid = self.__dict__.get("_log_grid")
        if grid is None:
            names = list(self.axes)
            if len(names) == 1:
                grid = _LogGrid(np.ones(1), self.axes[names[0]], self.read_latency()[None, :])
            else:
                grid = _LogGrid(self.axes[names[0]], self.axes[names[1]], self.read_latency())
            grid.ndim = len(names)
            self.__dict__["_log_grid"] = grid
        return grid

    def to_json(self) -> dict[str, Any]:
        """The table as the profile JSON writes it."""
        out: dict[str, Any] = {"op": self.op}
        dtype_field = OP_DTYPE[self.op]
        if dtype_field is not None:
            out[dtype_field] = self.dtype
        out["source"] = self.source
        out.update({k: v for k, v in self.extra.items() if k in _OPTIONAL_TABLE_FIELDS})
        out["key"] = {k: int(v) for k, v in written_key(self.dtype, self.key).items()}
        out["axes"] = {k: [_num(x) for x in v] for k, v in self.axes.items()}
        out["latency_s"] = _round_nested(self.latency.tolist())
        return out


@dataclass
class Profile:
    """A loaded calibration profile: metadata, overhead and tables (see module docstring)."""

    name: str
    gpu: str
    provenance: dict[str, str]
    overhead_s: float
    overhead_source: str
    tables: list[Table]
    path: str = "<memory>"
    overhead_per_layer_s: float = 0.0
    eager: EagerCost = field(default_factory=EagerCost)

    def find(self, op: str, dtype: str | None, key: dict[str, int]) -> Table | None:
        """The table for ``op`` at ``dtype`` and exactly ``key``, or ``None``."""
        for table in self.tables:
            if table.op == op and table.dtype == dtype and table.key == key:
                return table
        return None

    def source_label(self, table: Table) -> str:
        """How :meth:`ProfileOps.sources` names a table's origin.

        ``public`` tables read ``measured:<tool> <engine> <version>`` (e.g.
        ``measured:aiconfigurator vllm 0.24.0``), with ``(<format> read through its <rows>
        rows)`` where the importer read another format's measurement (:data:`PROXY_ROWS`);
        ``harness`` tables read ``harness on <device>`` (:meth:`harness_label`); ``roofline``
        is itself.
        """
        label = self._label(table.source, table.extra.get("engine_version"))
        rows = PROXY_ROWS.get((table.op, table.dtype)) or dsa_proxy_rows(table.dtype)
        notes = str(table.extra.get("notes", ""))
        if table.source == "public" and rows and notes.split(",")[0].strip() == rows:
            label += f" ({table.dtype} read through its {rows} rows)"
        return label

    def overhead_label(self) -> str:
        """The source label of the per-iteration overhead."""
        return self._label(self.overhead_source, None)

    def harness_label(self) -> str:
        """``harness on <device>``: the device that timed the profile's harness tables, from
        ``provenance.gpu_name`` ("NVIDIA H200" reads "H200"; a ``--device cpu`` run "cpu");
        bare ``harness`` for a profile that does not record it."""
        device = str(self.provenance.get("gpu_name") or "").strip()
        device = device.removeprefix("NVIDIA ").strip()
        return f"harness on {device}" if device else "harness"

    def _label(self, source: str, engine_version: str | None) -> str:
        if source == "harness":
            return self.harness_label()
        if source != "public":
            return source
        # an empty or blank tool is none given (its first word was an IndexError traceback)
        tool = (str(self.provenance.get("tool", "")).split() or ["public"])[0]
        tool = tool.removesuffix("-core")
        engine = self.provenance.get("engine", "")
        version = engine_version or self.provenance.get("engine_version", "")
        return " ".join(x for x in (f"measured:{tool}", engine, version) if x)

    def _overhead_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.overhead_s}
        if self.overhead_per_layer_s:
            out["per_layer_s"] = self.overhead_per_layer_s
        out["source"] = self.overhead_source
        return out

    def to_json(self) -> dict[str, Any]:
        """The profile as its JSON file holds it."""
        return {
            "schema": SCHEMA,
            "name": self.name,
            "gpu": self.gpu,
            "provenance": dict(self.provenance),
            "overhead_s": self._overhead_json(),
            **({"eager_s": self.eager.to_json()} if self.eager.graph_max_tokens else {}),
            "tables": [t.to_json() for t in self.tables],
        }


def table_name(op: str, dtype: str | None, key: dict[str, int]) -> str:
    """Readable table name: op, dtype, then ``field=value`` for each key field."""
    parts = [op] + ([dtype] if dtype else [])
    parts += [f"{k}={v}" for k, v in key.items()]
    return " ".join(parts)


# --------------------------------------------------------------------------- interpolation


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


# --------------------------------------------------------------------------- load / validate


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile JSON file; problems raise :class:`ProfileError` (one line)."""
    p = Path(path)
    raw = read_json(p, "a profile", ProfileError,
                    missing="file not found; give a profile JSON path or a bundled name")
    return profile_from_json(raw, str(p))


#: The fields of a profile document and of one of its tables (anything else is a typo).
PROFILE_FIELDS = ("schema", "name", "gpu", "provenance", "overhead_s", "eager_s", "tables")
TABLE_FIELDS = ("op", "precision", "kv_dtype", "source", "key", "axes", "latency_s", "parts",
                *_OPTIONAL_TABLE_FIELDS)
MAX_SECONDS = 3600.0
"""Largest latency or overhead a profile may hold (one operator of one step: an hour is
already absurd; beyond it a value is a unit or typing error)."""
MAX_KEY = 1 << 31
"""Largest value of a table's key field (a dimension, expert count or parallel size)."""
MAX_GRAPH_TOKENS = 1 << 31
"""Largest ``eager_s.graph_max_tokens`` (more tokens than any iteration holds)."""
EAGER_FIELDS = ("graph_max_tokens", "graph_max_tokens_by_tp", "per_layer_s", "per_moe_layer_s",
                "source")
"""The fields an ``eager_s`` object may hold."""
MIN_SECONDS = 1e-9
"""Smallest operator latency a profile may hold (a nanosecond: no kernel is faster; 1e-320
would make an operator free)."""


class UnknownFieldError(ProfileError):
    """A field the profile format this tiersim reads does not have (:func:`_unknown_field`)."""


def _unknown_field(raw: dict, allowed: tuple[str, ...], where: str) -> None:
    """One line for the first field of ``raw`` not in ``allowed``."""
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise UnknownFieldError(f"{where}: unknown field {unknown[0]!r}; allowed: "
                                f"{', '.join(allowed)}")


def _later_harness(raw: dict) -> str | None:
    """The tool a profile names as its writer (``provenance.tool``) where that is a later
    tiersim release's harness (``tiersim.calibrate 0.2.0``), else None."""
    from tiersim.versions import later_than_this

    prov = raw.get("provenance")
    tool = prov.get("tool") if isinstance(prov, dict) else None
    if not isinstance(tool, str) or not tool.startswith("tiersim.calibrate "):
        return None
    return tool if len(tool) <= 60 and later_than_this(tool.split(" ", 1)[1]) else None


_MISSING = object()


def _check_schema(schema: Any, path: str) -> None:
    """One line with its fix for a ``schema`` other than :data:`SCHEMA`: another version of
    the profile format (a later tiersim's), none at all, or another file's."""
    if schema == SCHEMA:
        return
    if schema is _MISSING:
        raise ProfileError(f'{path}: schema: missing; a profile starts {{"schema": "{SCHEMA}", '
                           '...}: is this file a profile?')
    family = SCHEMA.rsplit("/", 1)[0] + "/"
    if isinstance(schema, str) and schema.startswith(family) and len(schema) <= 40:
        raise ProfileError(f"{path}: schema: {schema!r} is a profile format this tiersim does "
                           f"not read (it reads {SCHEMA!r}); use the tiersim that wrote it, or "
                           f"write the profile as {SCHEMA!r}")
    raise ProfileError(f"{path}: schema: expected {SCHEMA!r}, got {shown(schema)}; is this file "
                       "a profile?")


def profile_from_json(raw: Any, path: str = "<memory>") -> Profile:
    """Validate a parsed profile document and build a :class:`Profile`. A field this
    tiersim does not know in a profile a later release's harness wrote is refused naming that
    release (a field it added, not a typo to remove)."""
    try:
        return _profile_from(raw, path)
    except UnknownFieldError as err:
        import tiersim

        later = _later_harness(raw)
        if later is None:
            raise
        raise ProfileError(f"{err}; the profile was written by {later}, a later release than "
                           f"this tiersim {tiersim.__version__}: read it with that tiersim or "
                           "a later one") from None


def _profile_from(raw: Any, path: str) -> Profile:
    """:func:`profile_from_json`'s checks and build."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{path}: top level must be a JSON object")
    _check_schema(raw.get("schema", _MISSING), path)
    _unknown_field(raw, PROFILE_FIELDS, path)
    for name in ("name", "gpu"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise ProfileError(f"{path}: {name}: must be a non-empty string")
    prov = raw.get("provenance", {})
    if not isinstance(prov, dict):
        raise ProfileError(f"{path}: provenance: must be an object")
    overhead, per_layer, overhead_source = _parse_overhead(raw.get("overhead_s"), path)
    eager = _parse_eager(raw.get("eager_s"), path)
    tables_raw = raw.get("tables")
    if not isinstance(tables_raw, list):
        raise ProfileError(f"{path}: tables: must be a list of table objects")
    tables = [_parse_table(t, f"tables[{i}]", path) for i, t in enumerate(tables_raw)]
    _check_unique(tables, path)
    return Profile(
        name=raw["name"],
        gpu=raw["gpu"],
        provenance={str(k): str(v) for k, v in prov.items()},
        overhead_s=overhead,
        overhead_source=overhead_source,
        tables=tables,
        path=path,
        overhead_per_layer_s=per_layer,
        eager=eager,
    )


def save_profile(profile: Profile, path: str | Path) -> Path:
    """Write ``profile`` as JSON (validated by re-reading); returns the path.

    The file is written whole under a temporary name beside ``path``, then renamed over it: a
    write that fails or is interrupted (a full disk, Ctrl-C) leaves the earlier profile as it
    was and no temporary file (it was written in place: a full disk left half a profile). The
    temporary name keeps the first 50 characters of ``path``'s, so that it stays within the
    system's 255 bytes a name where ``path``'s own does."""
    import os

    from tiersim.atomic import create_temp

    p = Path(path)
    doc = profile.to_json()
    profile_from_json(json.loads(json.dumps(doc)), str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temp(p.parent, f".{p.name[:50]}.", ".tmp")  # an ordinary file's mode
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(doc, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, p)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(p)) from None  # names the profile, not tmp
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


#: The fields of a profile's ``overhead_s`` object: the numbers read and their source, and the
#: descriptive fields the harness writes beside them (what ran, how, its sub-timings).
OVERHEAD_FIELDS = ("value", "per_layer_s", "source", "kernel", "notes", "parts")


def _parse_overhead(raw: Any, path: str) -> tuple[float, float, str]:
    """``(value, per_layer_s, source)``; ``per_layer_s`` is optional (default 0). A field not
    in :data:`OVERHEAD_FIELDS` is refused: a misspelt ``per_layer_s`` was read as none.
    ``overhead_s`` absent is the roofline's assumption, labelled ``roofline``, as a table the
    profile lacks is: the harness writes none when it did not measure it (``--ops`` without
    ``overhead``, a section that failed), and such a profile was refused."""
    where = f"{path}: overhead_s"
    if raw is None:
        from tiersim.perf.roofline import RooflineConstants

        constants = RooflineConstants()
        return constants.base_overhead_s, constants.per_layer_overhead_s, "roofline"
    if not isinstance(raw, dict):
        example = '{"value": 0.004, "source": "public"}'
        raise ProfileError(f"{where}: must be an object like {example}")
    _unknown_field(raw, OVERHEAD_FIELDS, where)
    numbers = []
    for name, default in (("value", None), ("per_layer_s", 0.0)):
        numbers.append(_seconds(raw.get(name, default), f"{where}.{name}"))
    return numbers[0], numbers[1], _parse_source(raw.get("source"), f"{where}.source", True)


def _parse_eager(raw: Any, path: str) -> EagerCost:
    """The optional ``eager_s`` object (absent: no CUDA-graph / eager distinction). A cost per
    layer with ``graph_max_tokens`` 0, which turns the cost off, is refused: it was ignored."""
    if raw is None:
        return EagerCost()
    where = f"{path}: eager_s"
    if not isinstance(raw, dict):
        example = '{"graph_max_tokens": 512, "per_layer_s": 0.0002, "source": "roofline"}'
        raise ProfileError(f"{where}: must be an object like {example}")
    unknown = sorted(set(raw) - set(EAGER_FIELDS))
    if unknown:
        raise ProfileError(f"{where}: unknown field {unknown[0]!r}; allowed: "
                           f"{', '.join(EAGER_FIELDS)}")
    graph_max = raw.get("graph_max_tokens")
    if (isinstance(graph_max, bool) or not isinstance(graph_max, int)
            or not 0 <= graph_max <= MAX_GRAPH_TOKENS):
        raise ProfileError(f"{where}.graph_max_tokens: must be a whole number of tokens from 0 "
                           f"to {MAX_GRAPH_TOKENS} (got {shown(graph_max)})")
    numbers = []
    for name in ("per_layer_s", "per_moe_layer_s"):
        numbers.append(_seconds(raw.get(name, 0.0), f"{where}.{name}"))
        if not graph_max and numbers[-1]:  # 0 graph tokens reads no eager step at all
            raise ProfileError(f"{where}.graph_max_tokens: 0 turns the eager-step cost off, so "
                               f"{name} {numbers[-1]:g} would be ignored; give the largest step "
                               "the engine replays from a CUDA graph (vLLM: 512 tokens by "
                               "default), or remove eager_s")
    value = raw.get("source")
    if not (isinstance(value, str) and value.startswith("fitted")) and value not in SOURCES:
        raise ProfileError(f"{where}.source: must be one of {', '.join(SOURCES)} or start with "
                           f"'fitted' (got {value!r})")
    by_tp = _parse_graph_by_tp(raw.get("graph_max_tokens_by_tp", {}), graph_max, where)
    return EagerCost(graph_max, numbers[0], numbers[1], value, by_tp)


def _parse_graph_by_tp(raw: Any, graph_max: int, where: str) -> tuple[tuple[int, int], ...]:
    """The optional ``eager_s.graph_max_tokens_by_tp`` object: tensor-parallel sizes (whole
    numbers written as text, JSON's only keys) to the largest CUDA-graph iteration there (a
    whole number of tokens from 1), or one error line. Refused beside ``graph_max_tokens`` 0,
    which turns the eager cost off at every size."""
    where = f"{where}.graph_max_tokens_by_tp"
    example = '{"1": 256, "2": 256, "3": 256}'
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: must be an object of tensor-parallel sizes to tokens, like "
                           f"{example} (got {shown(raw)})")
    if raw and not graph_max:
        raise ProfileError(f"{where}: graph_max_tokens 0 turns the eager-step cost off at every "
                           "size, so these sizes would be ignored; give graph_max_tokens, or "
                           "remove graph_max_tokens_by_tp")
    pairs = []
    for key, tokens in raw.items():
        if not (key.isascii() and key.isdigit() and int(key) >= 1 and str(int(key)) == key
                and int(key) <= MAX_KEY):
            raise ProfileError(f"{where}: {key!r} is no tensor-parallel size; the keys are whole "
                               f"numbers from 1 written as text, like {example}")
        if (isinstance(tokens, bool) or not isinstance(tokens, int)
                or not 1 <= tokens <= MAX_GRAPH_TOKENS):
            raise ProfileError(f"{where}.{key}: must be a whole number of tokens from 1 to "
                               f"{MAX_GRAPH_TOKENS} (got {shown(tokens)})")
        pairs.append((int(key), tokens))
    return tuple(sorted(pairs))


def _seconds(value: Any, where: str) -> float:
    """A number of seconds from 0 to :data:`MAX_SECONDS`, or one error line at ``where``."""
    if not _is_number(value) or not 0 <= value <= MAX_SECONDS:
        raise ProfileError(f"{where}: must be a number of seconds from 0 to {MAX_SECONDS:g} "
                           f"(got {shown(value)})")
    return float(value)


def _parse_source(value: Any, where: str, fitted: bool = False) -> str:
    if fitted and isinstance(value, str) and value.startswith("fitted"):
        return value
    if value not in SOURCES:
        raise ProfileError(f"{where}: must be one of {', '.join(SOURCES)} (got {value!r})")
    return value


def _parse_table(raw: Any, where: str, path: str) -> Table:
    loc = f"{path}: {where}"
    if not isinstance(raw, dict):
        raise ProfileError(f"{loc}: must be an object")
    _unknown_field(raw, TABLE_FIELDS, loc)
    op = raw.get("op")
    if not isinstance(op, str) or op not in OP_AXES:  # a list or object is no op (unhashable)
        raise ProfileError(f"{loc}.op: must be one of {', '.join(OP_AXES)} (got {shown(op)})")
    dtype = _parse_dtype(raw, op, loc)
    _check_timing(raw.get("timing"), op, f"{loc}.timing")
    source = _parse_source(raw.get("source"), f"{loc}.source")
    key = _parse_key(raw.get("key"), op, f"{loc}.key", module_dtype(dtype or "")[1])
    axes = _parse_axes(raw.get("axes"), op, f"{loc}.axes")
    latency = _parse_latency(raw.get("latency_s"), axes, f"{loc}.latency_s")
    extra = {k: str(raw[k]) for k in _OPTIONAL_TABLE_FIELDS if k in raw}
    return Table(op, dtype, source, key, axes, latency, extra)


#: Values of a table's optional ``timing`` field: ``eager`` (timed outside CUDA graphs, read
#: without its launch floor in graph steps) or ``graph`` (as if absent).
TIMINGS = ("eager", "graph")


def _check_timing(value: Any, op: str, where: str) -> None:
    """Refuse a ``timing`` other than :data:`TIMINGS` (a typo would read an eagerly timed
    table with its launch floor in every CUDA-graph step), and ``eager`` on a table of another
    op than ``gemm``: only GEMMs are read without their launch floor (such a MoE or attention
    table was labelled so, read as measured, and not made non-decreasing)."""
    if value is not None and value not in TIMINGS:
        raise ProfileError(f"{where}: must be one of {', '.join(TIMINGS)} (got {shown(value)}); "
                           "eager: timed outside CUDA graphs")
    if value == "eager" and op != "gemm":
        raise ProfileError(f"{where}: 'eager' applies to gemm tables only (their launch floor "
                           f"is removed in CUDA-graph steps); remove it from this {op} table")


def _parse_dtype(raw: dict, op: str, loc: str) -> str | None:
    field_name = OP_DTYPE[op]
    other = next((f for f in ("precision", "kv_dtype") if f in raw and f != field_name), None)
    if other is not None:
        takes = f"takes {field_name}" if field_name else "has no dtype field"
        raise ProfileError(f"{loc}.{other}: not a field of op {op!r} (it {takes}); remove it")
    if field_name is None:
        return None
    value = raw.get(field_name)
    if not isinstance(value, str) or not value:
        raise ProfileError(f"{loc}.{field_name}: required for op {op!r} (e.g. 'bf16', 'fp8')")
    from tiersim.hardware.precisions import PRECISIONS

    formats = ", ".join(PRECISIONS)
    if field_name == "precision" and value not in PRECISIONS:
        raise ProfileError(f"{loc}.precision: unknown weight format {shown(value)}; use one of "
                           f"{formats}")
    kv, module, weights = module_dtype(value)
    if field_name == "kv_dtype" and (kv not in TABLE_KV_DTYPES
                                     or (module and weights not in PRECISIONS)):
        raise ProfileError(f"{loc}.kv_dtype: unknown KV-cache dtype {shown(value)}; use one of "
                           f"{', '.join(TABLE_KV_DTYPES)}, or for an MLA (or DSA) module "
                           f"'<kv> mla-<weight format>' ('<kv> dsa-...') ({formats})")
    if field_name == "kv_dtype":  # one name per format: fp8_e4m3 is the fp8 tables' format
        from tiersim.hardware.precisions import kv_dtype_name

        return kv_dtype_name(kv) + (f" {module}-{weights}" if module else "")
    return value


#: Attention modules measured whole (projections included), named in a table's dtype.
MODULE_KINDS = ("mla", "dsa")


def module_dtype(value: str) -> tuple[str, str, str]:
    """``(kv dtype, module kind, weight format)`` of an attention table's dtype:
    ``"fp8 dsa-fp8_block"`` -> ``("fp8", "dsa", "fp8_block")``; ``("bf16", "", "")`` for a
    plain ``"bf16"``."""
    for kind in MODULE_KINDS:
        kv, sep, weights = value.partition(f" {kind}-")
        if sep:
            return kv, kind, weights
    return value, "", ""


def dsa_proxy_rows(dtype: str | None) -> str | None:
    """The measured projections' format a DSA module table of ``dtype`` reads, where it is
    another format's (:data:`DSA_PROXY_ROWS`), else ``None``."""
    _, kind, weights = module_dtype(dtype or "")
    return DSA_PROXY_ROWS.get(weights) if kind == "dsa" else None


#: KV-cache dtypes an attention table may be measured at.
TABLE_KV_DTYPES = ("bf16", "fp16", "fp8", "fp8_e4m3")


def mla_key(model) -> dict[str, int]:
    """The :data:`MLA_KEYS` fields of an MLA model's attention tables (``q_lora`` the hidden
    size where queries have no low-rank projection)."""
    return {"hidden": model.hidden, "q_lora": model.q_lora_rank or model.hidden,
            "rope": model.qk_rope_head_dim, "nope": model.qk_nope_head_dim,
            "v_dim": model.v_head_dim}


def dsa_key(model) -> dict[str, int]:
    """The :data:`DSA_KEYS` fields of a DSA model's attention tables: its MLA block's
    (:func:`mla_key`) and its indexer's."""
    return {**mla_key(model), "index_heads": model.index_heads,
            "index_dim": model.index_head_dim, "index_topk": model.index_topk}


#: The :data:`MLA_KEYS` of a table that leaves them out: DeepSeek-V3's.
MLA_DEFAULT_KEY = mla_key(SimpleNamespace(**DEEPSEEK_V3_MLA))
#: Key fields each module kind's attention tables carry besides :data:`OP_KEYS`.
MODULE_KEYS = {"mla": MLA_KEYS, "dsa": DSA_KEYS}
#: Module key fields a table may leave out (all of them or none), by module kind: an MLA
#: table its :data:`MLA_KEYS`, a DSA table ``rope`` and ``nope``, which profiles written before
#: they were keyed lack (round 32; such a table read any split of its latent).
OMITTED_KEYS = {"mla": MLA_KEYS, "dsa": ("rope", "nope")}


def _measured_dsa_keys() -> dict[str, dict[str, int]]:
    """The key fields of each shape of :data:`DSA_SHAPES` (its cached latent, ``head_dim``,
    and :data:`DSA_KEYS`), by the shape's first model name without its organisation."""
    keys: dict[str, dict[str, int]] = {}
    for name, shape in DSA_SHAPES.items():
        arch = SimpleNamespace(**shape)
        key = {"head_dim": shape["kv_lora_rank"] + shape["qk_rope_head_dim"], **dsa_key(arch)}
        if key not in keys.values():
            keys[name.rsplit("/", 1)[-1]] = key
    return keys


#: The measured shapes a module table that leaves :data:`OMITTED_KEYS` out was measured at,
#: by name: the one whose other key fields it gives (an MLA table's: DeepSeek-V3's).
MEASURED_MODULE_KEYS = {"mla": {"DeepSeek-V3": MLA_DEFAULT_KEY}, "dsa": _measured_dsa_keys()}


def _stray_module_field(raw: dict, names: tuple[str, ...], loc: str) -> None:
    """Refuse a module key field (:data:`MODULE_KEYS`) on a table of another kind."""
    for name in raw:
        kinds = [k for k, fields in MODULE_KEYS.items() if name in fields]
        if kinds and name not in names:
            which = " or ".join(k.upper() for k in kinds)
            dtypes = " or ".join(f"'<kv> {k}-<weight format>'" for k in kinds)
            raise ProfileError(f"{loc}.{name}: only {'an' if kinds[0] == 'mla' else 'a'} "
                               f"{which} module's table (kv_dtype {dtypes}) carries it; "
                               "remove it")


def _article(kind: str) -> str:
    """``"an MLA"`` or ``"a DSA"``: a module kind with its article."""
    return f"{'an' if kind == 'mla' else 'a'} {kind.upper()}"


def _with_module_default(raw: dict, kind: str, loc: str) -> dict:
    """A module table's key with the :data:`OMITTED_KEYS` of the measured shape
    (:data:`MEASURED_MODULE_KEYS`) its other fields give, where it leaves them all out;
    refused where it gives some only, or where it leaves them out at a shape none was
    measured at."""
    omitted = OMITTED_KEYS.get(kind, ())
    missing = [n for n in omitted if n not in raw]
    if not missing:
        return raw
    shapes = MEASURED_MODULE_KEYS[kind]
    names = " or ".join(f"{name}'s" for name in shapes)
    if len(missing) < len(omitted):
        raise ProfileError(f"{loc}.{missing[0]}: {_article(kind)} module's key gives all of "
                           f"{', '.join(omitted)} or none (none: {names} shapes); "
                           f"add {', '.join(missing)}")
    found = [key for key in shapes.values()
             if all(raw.get(n) == v for n, v in key.items() if n not in omitted)]
    if not found:
        raise ProfileError(f"{loc}.{omitted[0]}: {_article(kind)} module's key leaves out "
                           f"{' and '.join(omitted)} only at {names} shapes, and this key is "
                           f"at none of them; add {', '.join(omitted)}")
    return {**raw, **{n: found[0][n] for n in omitted}}


def written_key(dtype: str | None, key: dict[str, int]) -> dict[str, int]:
    """A table's key as its file writes it: an MLA module's at DeepSeek-V3's shapes without
    its :data:`MLA_KEYS`, which it is read back with (:func:`_with_module_default`), so that a
    profile saved again or imported again is the file it was."""
    at_default = all(key.get(n) == v for n, v in MLA_DEFAULT_KEY.items())
    if module_dtype(dtype or "")[1] == "mla" and at_default:
        return {k: v for k, v in key.items() if k not in MLA_KEYS}
    return key


def _parse_key(raw: Any, op: str, loc: str, kind: str = "") -> dict[str, int]:
    """The key of a table of ``op`` (a module's of ``kind``, :data:`MODULE_KINDS`: with its
    :data:`MODULE_KEYS`, which no other table carries)."""
    names = (*OP_KEYS[op], *MODULE_KEYS.get(kind, ()))
    if not isinstance(raw, dict):
        raise ProfileError(f"{loc}: must be an object with {', '.join(names)}")
    _stray_module_field(raw, names, loc)
    raw = _with_module_default(raw, kind, loc)
    module_fields = {n for fields in MODULE_KEYS.values() for n in fields}
    unknown = sorted(str(k) for k in raw if k not in names and k not in module_fields)
    if unknown:  # a table is matched on its whole key: a field it ignored would match anyway
        raise ProfileError(f"{loc}.{unknown[0]}: not a key field of op {op!r} (its key is "
                           f"{', '.join(names)}); remove it")
    key = {}
    for name in names:
        value = raw.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_KEY:
            raise ProfileError(f"{loc}.{name}: must be a whole number from 1 to {MAX_KEY} "
                               f"(got {shown(value)})")
        key[name] = value
    return key


def _parse_axes(raw: Any, op: str, loc: str) -> dict[str, np.ndarray]:
    names = OP_AXES[op]
    if not isinstance(raw, dict) or set(raw) != set(names):
        got = sorted(raw) if isinstance(raw, dict) else raw
        raise ProfileError(f"{loc}: op {op!r} needs exactly the axes {list(names)} (got {got})")
    axes = {}
    for name in names:
        values = raw[name]
        arr = _plain_axis(values)
        if arr is None:  # not the common case: each check in turn, naming what is wrong
            arr = _checked_axis(values, f"{loc}.{name}")
        if np.any(np.diff(arr) <= 0):
            raise ProfileError(f"{loc}.{name}: must be strictly ascending")
        axes[name] = arr
    points = math.prod(a.size for a in axes.values())
    if points > MAX_TABLE_POINTS:
        sizes = " x ".join(f"{a.size:,}" for a in axes.values())
        raise ProfileError(f"{loc}: {points:,} points ({sizes}); a table holds at most "
                           f"{MAX_TABLE_POINTS:,} (thin it: the step model interpolates between "
                           "points)")
    return axes


def _checked_axis(values: Any, where: str) -> np.ndarray:
    """An axis's ``values`` as float64, or the first of its checks it fails as one line."""
    if (
        not isinstance(values, list)
        or not values
        or not all(_is_number(v) and v > 0 for v in values)
    ):
        raise ProfileError(f"{where}: must be a non-empty list of positive numbers")
    if len(values) > MAX_AXIS_POINTS:
        raise ProfileError(f"{where}: {len(values):,} points; a table axis holds at "
                           f"most {MAX_AXIS_POINTS:,} (thin it: the step model interpolates "
                           "between points)")
    arr = _floats(values)
    if arr is None or not np.all(np.isfinite(arr)):
        raise ProfileError(f"{where}: a value is too large for a number (at most "
                           "about 1.8e308)")
    return arr


def _plain_axis(values: Any) -> np.ndarray | None:
    """An axis's ``values`` as float64 where they pass :func:`_checked_axis` as the common
    case does: a list of at most :data:`MAX_AXIS_POINTS` ints and finite floats, all above 0,
    checked at C speed; None otherwise, and :func:`_checked_axis` says why. NOTE: a shipped
    profile's 150,000 axis and 210,000 latency values checked one by one (here and in
    :func:`_all_numbers`) were a quarter of reading it, once per run."""
    if (not isinstance(values, list) or not values or len(values) > MAX_AXIS_POINTS
            or not set(map(type, values)) <= _PLAIN_NUMBERS):
        return None
    arr = _floats(values)
    if arr is None or not 0.0 < arr.min() <= arr.max() < np.inf:  # a NaN fails both
        return None
    return arr


_PLAIN_NUMBERS = {int, float}
"""The types JSON numbers are read as (a ``bool``, an int subclass, is no number here)."""


#: Most points one table axis may hold: measured tables hold tens to hundreds, and every
#: table read is fitted non-decreasing (:func:`monotone`) when a model first uses it.
MAX_AXIS_POINTS = 10_000
MAX_TABLE_POINTS = 100_000
"""Most points one table may hold, over all its axes (the shipped tables hold at most 204):
every point of a table read is fitted and checked against the roofline in Python, about 8 us
each, so a 4,000 x 4,000 table (31 MiB) ran a two-minute scenario for 92 s at 1.4 GB."""


def _parse_latency(raw: Any, axes: dict[str, np.ndarray], loc: str) -> np.ndarray:
    shape = tuple(a.size for a in axes.values())
    try:
        arr = np.asarray(raw, dtype=np.float64) if _all_numbers(raw) else None
    except (TypeError, ValueError):
        arr = None
    except OverflowError:  # an integer beyond float64: out of range below
        arr = np.full(shape, np.inf) if np.shape(raw) == shape else None
    if arr is None or arr.shape != shape:
        got = "ragged or non-numeric" if arr is None else f"shape {arr.shape}"
        raise ProfileError(f"{loc}: must have shape {shape} to match the axes (got {got})")
    bad = ~np.isfinite(arr) | (arr < MIN_SECONDS) | (arr > MAX_SECONDS)
    if np.any(bad):
        raise ProfileError(f"{loc}{np.argwhere(bad)[0].tolist()}: latencies must be seconds "
                           f"from {MIN_SECONDS:g} to {MAX_SECONDS:g}")
    return arr


def _floats(values: list) -> np.ndarray | None:
    """``values`` as float64, None where one is an integer beyond float64's range."""
    try:
        return np.asarray(values, dtype=np.float64)
    except OverflowError:
        return None


def _all_numbers(raw: Any) -> bool:
    """Whether ``raw`` is a number or (nested) lists of JSON numbers only: numpy would also
    read the text "1e-5" as a number, which a profile never writes."""
    if isinstance(raw, list):
        if set(map(type, raw)) <= _PLAIN_NUMBERS:  # a row of numbers, checked at C speed
            return True
        return all(_all_numbers(x) for x in raw)
    return isinstance(raw, int | float) and not isinstance(raw, bool)


def _check_unique(tables: list[Table], path: str) -> None:
    seen: dict[str, int] = {}
    for i, t in enumerate(tables):
        if t.name in seen:
            raise ProfileError(
                f"{path}: tables[{i}]: duplicates tables[{seen[t.name]}] ({t.name}); keep one"
            )
        seen[t.name] = i


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)  # any int: ranges are checked after


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def _round_nested(value: Any) -> Any:
    if isinstance(value, list):
        return [_round_nested(v) for v in value]
    return float(f"{value:.6g}")


# --------------------------------------------------------------------------- ProfileOps


def _lone_axes(table: Table) -> list[str]:
    """The axes of ``table`` with a single grid point (a table cut short by the harness's time
    budget), along which no slope can be taken."""
    return [name for name, axis in table.axes.items() if axis.size == 1]


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

    def eager_s(self, tokens: np.ndarray) -> np.ndarray:
        """Host seconds beyond the kernels of iterations of ``tokens`` tokens: the profile's
        :class:`EagerCost` for those above its ``graph_max_tokens``, else 0."""
        eager = self.profile.eager
        tokens = np.asarray(tokens, dtype=np.float64)
        cost = eager.seconds(self.model.layers, self.model.moe_layers)
        if not self._graph_max or not cost:
            return np.zeros(tokens.shape)
        self._sources["eager"] = self.profile._label(eager.source, None)
        return np.where(tokens > self._graph_max, cost, 0.0)

    @property
    def _graph_max(self) -> int:
        """The largest iteration (of one DP rank) the profile's engine replays from a CUDA graph
        on this replica (:meth:`EagerCost.graph_tokens` at the engine's TP: a MoE model's
        ``tp x dp`` GPUs, one engine with attention DP whose ``--tp`` counts every rank's GPUs,
        as SGLang's does; a dense model's ``tp``, its DP ranks separate engines; 0: no eager
        distinction)."""
        engine_tp = self.tp * self.dp if self.dp > 1 and self.model.is_moe else self.tp
        return self.profile.eager.graph_tokens(engine_tp)

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

    def gemm(self, m, n: int, k: int, precision=None, *, tokens=None) -> np.ndarray:
        """Seconds of one ``m x k @ k x n`` GEMM at ``precision`` (default: the tier's) in a step
        of ``tokens`` batched tokens (default ``m``), which decide whether the step replays a
        CUDA graph (:meth:`_step_gemm`)."""
        dtype = _dtype_name(precision) if precision is not None else self.precision
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
        m = self.model
        key = {
            "hidden": m.hidden,
            "inter": m.expert_intermediate,
            "num_experts": m.num_experts,
            "top_k": m.top_k,
            "ep": self.moe_ep,
            "tp": self.moe_tp,
        }
        table = self._table("moe", self.weights.experts.name, key)
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
