"""The profile format's constants and data classes (:class:`EagerCost`, :class:`Table`,
:class:`Profile`) and the keys of attention-module tables.

A profile is a JSON file (schema ``tiersim.profile/1``, pinned in ``docs/CONTRACTS.md``) holding,
for one GPU, tables of per-layer operator latencies at a model's shapes: dense GEMMs vs token
count, MoE layers vs tokens, prefill attention vs new tokens x cached context, decode attention vs
batch x context per sequence, all-reduce vs bytes, the time a per-tensor FP8 GEMM spends
computing its input's scale (``fp8_scale`` vs token count, keyed by ``k``; below), and a fixed
per-iteration overhead. Each table
says where its numbers come from (``source``: ``harness``, ``public`` or ``roofline``).
``overhead_s`` may carry an optional ``per_layer_s`` besides ``value`` (an addition to the
contract's schema; absent means 0): the per-iteration overhead is ``value + per_layer_s x layers``,
so one profile can serve models of different depth (the small per-layer kernels no table covers).

Static FP8 activation scales (an addition to the contract's schema; absent means none)
---------------------------------------------------------------------------------------
NVIDIA's per-tensor FP8 GEMM tables time each GEMM with its input quantised dynamically (the
input's scale computed, then applied). A checkpoint with calibrated (static) input scales skips
the first step. An ``fp8_scale`` table holds that step's time for an ``m x k`` input, NVIDIA's
``compute_scale`` measurement (dynamic less static quantisation); a static checkpoint's
per-tensor FP8 GEMMs are read as the GEMM table less it, never below the GEMM's physical limit
(its speed of light) nor above the table, as aiconfigurator reads its ``fp8_static`` mode
(which also takes off the static quantisation of inputs it assumes arrive in FP8 from a fused
kernel; tiersim does not, as which kernels an engine fuses is not in the data).

Tables are read by the rule of :mod:`tiersim.perf.profile_interp`; files are read, checked
and written by :mod:`tiersim.perf.profile_json`.

CUDA graphs and eager iterations (an addition to the contract's schema; absent means none)
------------------------------------------------------------------------------------------
An engine such as vLLM replays iterations of up to ``graph_max_tokens`` tokens from CUDA graphs
and runs larger ones (long prefill chunks) eagerly, launching every kernel from the host. The
optional ``eager_s`` object, ``{"graph_max_tokens": 512, "per_layer_s": ..., "per_moe_layer_s":
..., "source": ...}``, describes that: an eager iteration pays ``per_layer_s x layers +
per_moe_layer_s x MoE layers`` of host time beyond its kernels (:class:`EagerCost`); a profile
may also give ``per_cpp_moe_layer_s`` (with its ``cpp_moe_source``), the host time of a MoE layer
whose experts launch C++ kernels alone (:func:`cpp_launched`), where ``per_moe_layer_s`` is the
time of a path that launches Triton kernels from Python. An engine
whose largest CUDA graph depends on the tensor-parallel size (SGLang's ``cuda_graph_max_bs``: 256
below TP 4 on an 80-141 GB GPU, else 512) gives the sizes where it differs from
``graph_max_tokens`` in an optional ``graph_max_tokens_by_tp`` object (``{"1": 256, "2": 256,
"3": 256}``); a step model reads its engine's (a MoE model's ``tp x dp`` GPUs: SGLang's ``--tp``
under attention data parallelism; a dense model's ``tp``). The host costs are fitted on
measured serving rows (``benchmarks/fidelity_silicon.py --fit``) and labelled so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from tiersim.perf.profile_interp import _is_scalar, _LogGrid, interp_2d, monotone, monotone_grid

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
    "fp8_scale": ("m",),
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
    "fp8_scale": ("k",),
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
    "fp8_scale": None,
}
#: Operators of one axis (tokens, sequences, bytes) an engine may pad to a larger measured size:
#: read non-decreasing over it (:func:`monotone`). Two-axis tables are read non-decreasing along
#: both (:func:`monotone_grid`): more new tokens, cached context or sequences are never faster.
PADDED_OPS = frozenset({"gemm", "moe", "allreduce", "gdn_decode", "gdn_prefill", "fp8_scale"})
SOURCES = ("harness", "public", "roofline")
_OPTIONAL_TABLE_FIELDS = ("kernel", "origin", "engine_version", "notes", "timing")
#: Tables NVIDIA's data measures through another format's rows, by (op, format): the rows the
#: importer read (its notes start with them), named in the source label. vLLM's per-tensor FP8
#: MoE runs its Triton fused-MoE kernel, timed in the data's block-FP8 rows; NVFP4 on Hopper runs
#: the weight-only Marlin MoE kernel, timed in its INT4 rows.
PROXY_ROWS = {("moe", "fp8"): "fp8_block", ("moe", "nvfp4"): "int4_wo"}


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
    per_cpp_moe_layer_s: float | None = None
    cpp_moe_source: str = ""

    def seconds(self, layers: int, moe_layers: int, cpp_moe: bool = False) -> float:
        """Host seconds of one eager iteration of a model with these layer counts; ``cpp_moe``:
        its experts run kernels launched from C++ alone (:func:`cpp_launched`), which pay
        ``per_cpp_moe_layer_s`` a MoE layer where the profile gives it."""
        return self.per_layer_s * layers + self.moe_layer_s(cpp_moe) * moe_layers

    def moe_layer_s(self, cpp_moe: bool = False) -> float:
        """Host seconds an eager iteration pays per MoE layer: ``per_cpp_moe_layer_s`` for
        experts launched from C++ alone where the profile gives it, else ``per_moe_layer_s``
        (the value fitted on experts whose path launches Triton kernels from Python)."""
        if cpp_moe and self.per_cpp_moe_layer_s is not None:
            return self.per_cpp_moe_layer_s
        return self.per_moe_layer_s

    def moe_source(self, cpp_moe: bool = False) -> str:
        """Where :meth:`seconds` comes from for a model whose experts run so."""
        if cpp_moe and self.per_cpp_moe_layer_s is not None and self.cpp_moe_source:
            return f"{self.source}; {self.cpp_moe_source}"
        return self.source

    def graph_tokens(self, tp: int) -> int:
        """The largest iteration replayed from a CUDA graph at tensor parallelism ``tp``: its
        ``graph_max_tokens_by_tp`` entry, else ``graph_max_tokens``."""
        return dict(self.graph_max_tokens_by_tp).get(int(tp), self.graph_max_tokens)

    def replica_graph_tokens(self, model, tp: int, dp: int) -> int:
        """The largest iteration (of one DP rank) replayed from a CUDA graph on a replica of
        ``tp x dp`` GPUs serving ``model``: :meth:`graph_tokens` at the engine's TP, a MoE
        model's ``tp x dp`` GPUs (one engine with attention DP whose ``--tp`` counts every
        rank's GPUs, as SGLang's does), a dense model's ``tp`` (its DP ranks separate engines);
        0: no eager distinction."""
        return self.graph_tokens(tp * dp if dp > 1 and model.is_moe else tp)

    def to_json(self) -> dict[str, Any]:
        """The ``eager_s`` object of a profile file (``graph_max_tokens_by_tp`` only where it
        names a size)."""
        by_tp = {str(tp): tokens for tp, tokens in sorted(self.graph_max_tokens_by_tp)}
        cpp = ({"per_cpp_moe_layer_s": self.per_cpp_moe_layer_s,
                "cpp_moe_source": self.cpp_moe_source}
               if self.per_cpp_moe_layer_s is not None else {})
        return {"graph_max_tokens": self.graph_max_tokens,
                **({"graph_max_tokens_by_tp": by_tp} if by_tp else {}),
                "per_layer_s": self.per_layer_s, "per_moe_layer_s": self.per_moe_layer_s,
                **cpp, "source": self.source}


#: Words in a MoE table's ``kernel`` naming a path whose kernels are launched from C++
#: (Marlin, FlashInfer's TensorRT-LLM and CUTLASS MoE; NVIDIA's vLLM names, such as
#: ``vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts``).
CPP_MOE_WORDS = ("marlin", "flashinfer", "cutlass", "trtllm")


def cpp_launched(kernel: str) -> bool:
    """Whether a MoE table's ``kernel`` name says its experts' path launches C++ kernels alone:
    it names Marlin, FlashInfer, CUTLASS or TensorRT-LLM and not Triton. vLLM's Triton fused
    MoE, the OpenAI Triton MXFP4 kernels and the DeepGEMM path (whose token count, scatter and
    gather steps are Triton kernels) launch Triton kernels from Python, the paths the fitted
    ``per_moe_layer_s`` was fitted on; an unnamed kernel is taken to be such a path. The split
    is empirical: each rate is fitted on rows of its kind of path (docs/fidelity.md)."""
    name = kernel.lower()
    return "triton" not in name and any(word in name for word in CPP_MOE_WORDS)


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


def written_key(dtype: str | None, key: dict[str, int]) -> dict[str, int]:
    """A table's key as its file writes it: an MLA module's at DeepSeek-V3's shapes without
    its :data:`MLA_KEYS`, which it is read back with (:func:`_with_module_default`), so that a
    profile saved again or imported again is the file it was."""
    at_default = all(key.get(n) == v for n, v in MLA_DEFAULT_KEY.items())
    if module_dtype(dtype or "")[1] == "mla" and at_default:
        return {k: v for k, v in key.items() if k not in MLA_KEYS}
    return key


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def _round_nested(value: Any) -> Any:
    if isinstance(value, list):
        return [_round_nested(v) for v in value]
    return float(f"{value:.6g}")
