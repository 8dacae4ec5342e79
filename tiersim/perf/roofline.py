"""The roofline step-time model: operator times from bytes moved and FLOPs, labelled "roofline".

Each operator takes ``max(bytes / (bandwidth x bw_eff), flops / (peak x compute_eff), floor)``:
the slower of streaming its data through HBM and doing its math, derated by an achievable
fraction of the data-sheet peak, and never below a kernel's minimum time. Bytes count weights
at the tier's bits per weight (scales included), activations at the compute dtype's width and
KV-cache reads at the KV dtype. FLOPs run at the GPU's peak for the dtype the format computes
in there (:meth:`Precision.compute_dtype_on`): FP8 natively on Hopper and Blackwell; NVFP4
natively (FP4) only on Blackwell; W4A16 everywhere, and NVFP4 on Hopper, are dequantised and
computed at the BF16 peak with a further derating for the dequantisation work.

Constants (:class:`RooflineConstants`) and why. Efficiencies are public rules of thumb; the
kernel floors and the attention efficiency were then checked against NVIDIA's measured H200
operator tables (aiconfigurator-core 0.12.0, vLLM kernels, as imported into
``profiles/h200_aiconfigurator_vllm.json``) and set to the measured orders of magnitude.
Ratios quoted are roofline / measured over the tables' grid points (median, 10th-90th
percentile); ``tests/test_roofline_vs_measured.py`` keeps them in band.

- ``bw_eff = 0.8``: large weight-streaming kernels (GEMV, Marlin, fused MoE) reach 80-90% of
  HBM peak on H100/H200 (BF16 GEMMs at m < 1024: 0.90, 0.62-1.07).
- ``gemm_eff = 0.7``: cuBLAS/CUTLASS reach about 700 of 989 dense BF16 TFLOP/s at large shapes
  (BF16 GEMMs at m >= 1024: 1.09, 0.96-1.18).
- ``moe_eff = 0.55``: grouped expert GEMMs at small per-expert batches and uneven routing run
  well below dense GEMMs (BF16 Qwen3-30B-A3B MoE at tp 1-4: 0.76, 0.51-1.00).
- ``attn_eff = 0.7``: FlashAttention-3 on H200 measured 600 TFLOP/s for an 8k causal prefill and
  880 for 32k.
- ``dequant_factor = 0.8``: weight-only kernels (Marlin/Machete) spend issue slots unpacking
  4-bit weights, so their compute-bound throughput is taken as 80% of the native BF16 GEMM's.
- Floors: ``gemm_floor_s = 5 us`` (measured small GEMMs 5-8 us), ``attn_floor_s = 12 us``
  (decode attention at batch 1: 13-16 us; a 16-token prefill chunk: 14 us), ``moe_floor_s =
  30 us`` (one MoE layer for one token: 35-55 us; routing alignment, two grouped GEMMs, the
  activation and the weighted sum are four to five kernels).
- ``attn_per_seq_head_s = 0.028 us``: decode attention costs something per (sequence, KV head)
  however short the context (page-table walk, one tile each): 2,048 sequences of 2-128 tokens
  measured 74, 117, 231 and 442 us with 1, 2, 4 and 8 KV heads per GPU, so the floor is
  ``attn_floor_s + batch x kv_heads x attn_per_seq_head_s``.
- ``quant_floor_s = 2 us``: natively low-precision GEMMs (FP8 W8A8, NVFP4 on Blackwell) first
  quantise their BF16 activations per token, one more pass reading 2 and writing 1 (or 0.56)
  bytes per element, at least one small kernel.
- All-reduce: ring ``latency + 2 (tp-1)/tp x bytes / (NVLink one-way bandwidth x 0.8)`` with
  5 us latency (vLLM's custom all-reduce: 5 us measured for small messages at tp 2-8; within
  0.75-1.2x of the measured tables from 4 MB up).
- Overhead per iteration: 1.0 ms (vLLM V1 with CUDA graphs: scheduling, input preparation and
  sampling that does not overlap the GPU) plus 10 us per layer for the small kernels the ops do
  not model (two RMS norms, rotary embedding, activation, residual adds, top-k routing), i.e.
  about 1.5 ms for a 48-layer model. This is the bare roofline's, what a profile's fallback and
  a profile without an ``overhead_s`` read; a run with no profile pays vLLM's fitted host time
  instead (``calibration``, below).

Known gaps against the measured tables (the roofline is optimistic there; figures from when the
constants were set, the current ones by ``python benchmarks/roofline_ratios.py``): FP8 GEMMs 0.70
(0.41-0.96) and FP8 MoE 0.61 (0.31-0.89), as vLLM's CUTLASS FP8 kernels gain less over BF16 at
these mid-sized shapes than the 2x peak suggests; FP8-KV decode attention 0.80 (0.53-0.99),
saving about 30% of BF16's time rather than 50%; prefill attention for chunks under 1k tokens
0.4-0.8; vLLM 0.19's int4 Marlin MoE is 4-8x slower than the W4A16 MoE roofline (0.16). BF16
decode attention 1.03 (0.71-1.12) and all-reduce 1.0 (0.7-1.2) track well.

Formats: every GEMM runs in its group's format (``precision: checkpoint`` gives per-group
formats). On Hopper, W4A16, NVFP4 and MXFP4 are weight-only: their bytes are 4.125-4.5 bits per
weight but their FLOPs run at the BF16 peak times ``dequant_factor``, so they save time only
where a kernel is memory-bound (small batches) and can lose it where compute-bound; no roofline
here assumes FP4 math on a GPU without FP4 tensor cores. MoE under data / expert parallelism:
the layer is timed for the tokens of all DP ranks, widths split ``moe_tp`` ways and experts
``moe_ep`` ways (balanced routing). MLA: decode is absorbed multi-query attention over the
cached latent (read once per token, replicated on every TP GPU); prefill expands the latent
(q, kv and o projections of the chunk, ``qk_nope + rope``-wide keys and ``v``-wide values).

These are assumptions, not measurements; a calibrated profile (:mod:`tiersim.perf.profile`)
replaces them table by table. A run with no profile reads the roofline with ``calibration``
(:mod:`tiersim.perf.roofline_calibration`): the known gaps above divided out by format, by their
median over NVIDIA's H200 tables, and vLLM's host time fitted on H200's measured serving runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tiersim.hardware.arch import ModelArch
from tiersim.hardware.gpus import GPU, get_gpu
from tiersim.hardware.models import get_model
from tiersim.hardware.precisions import (
    DTYPE_BYTES,
    FORMAT_GROUPS,
    Precision,
    get_precision,
    kv_dtype_bytes,
    resolve_kv_dtype,
    weight_formats,
)
from tiersim.perf.assembly import AssembledStepModel, expected_experts
from tiersim.perf.memory import heads_per_gpu, moe_split

if TYPE_CHECKING:
    from tiersim.perf.roofline_calibration import Calibration


@dataclass(frozen=True)
class RooflineConstants:
    """Efficiencies, kernel floors and overheads of the roofline (module docstring: why)."""

    bw_eff: float = 0.8
    gemm_eff: float = 0.7
    moe_eff: float = 0.55
    attn_eff: float = 0.7
    dequant_factor: float = 0.8
    gemm_floor_s: float = 5e-6
    moe_floor_s: float = 30e-6
    attn_floor_s: float = 12e-6
    attn_per_seq_head_s: float = 0.028e-6
    quant_floor_s: float = 2e-6
    allreduce_latency_s: float = 5e-6
    allreduce_eff: float = 0.8
    base_overhead_s: float = 1.0e-3
    per_layer_overhead_s: float = 10e-6


@dataclass(frozen=True)
class _Format:
    """How one weight format runs on the GPU: bits, activation bytes, FLOP rate, and whether
    activations are quantised on the fly (a separate pass over them) before the GEMM."""

    weight_bytes: float
    act_bytes: float
    flops_per_s: float
    quantises_activations: bool


class RooflineOps:
    """:class:`~tiersim.perf.assembly.OpTimes` from the roofline, for one replica's GPUs."""

    def __init__(
        self,
        model: ModelArch | str,
        precision: Precision | str,
        gpu: GPU | str,
        tp: int = 1,
        kv_dtype: str = "bf16",
        constants: RooflineConstants | None = None,
        dp: int = 1,
        ep: int = 1,
        calibration: Calibration | None = None,
    ):
        self.model = get_model(model)
        self.weights = weight_formats(self.model, precision)
        self.precision = self.weights.headline
        self.gpu = gpu if isinstance(gpu, GPU) else get_gpu(gpu)
        self.tp, self.dp, self.ep = int(tp), int(dp), int(ep)
        self.moe_tp, self.moe_ep = moe_split(self.tp, self.dp, self.ep)
        self.kv_dtype = resolve_kv_dtype(self.model, kv_dtype)
        self.c = constants or RooflineConstants()
        self._bw = self.gpu.hbm_bw_bytes_s * self.c.bw_eff
        self._formats: dict[str, _Format] = {}
        self._named = {self.weights.of(g).name: self.weights.of(g) for g in FORMAT_GROUPS}
        self._init_attention()
        self.cal = calibration
        self._sources_host: dict[str, str] = {}
        if calibration is None:
            self.overhead_s = (self.c.base_overhead_s
                               + self.model.layers * self.c.per_layer_overhead_s)
        else:
            host = calibration.host
            self.overhead_s = host.overhead_s + host.overhead_per_layer_s * self.model.layers
            self._sources_host["overhead"] = self._on_roofline(host.overhead_source)

    def _on_roofline(self, source: str) -> str:
        """A fitted host-time ``source`` labelled as applied to this GPU's roofline; on another
        GPU than the one it was fitted on, "applied unchanged", as a shipped profile's copy of
        the same fit reads (:data:`tiersim.summary.SOURCE_ORIGINS`: another GPU's rows)."""
        if self.gpu.name == self.cal.source_gpu:
            return f"{source}; applied to tiersim's roofline"
        return (f"{source}; fitted on the {self.cal.source_gpu}, applied unchanged to "
                f"tiersim's roofline of the {self.gpu.name}")

    def eager_s(self, tokens: np.ndarray, triton_moe: bool = False) -> np.ndarray | float:
        """Host seconds beyond the kernels of iterations of ``tokens`` tokens run outside
        CUDA graphs: the calibration's fitted eager cost (0 for a bare roofline). A MoE layer
        pays the C++ rate where its experts' format usually runs a kernel launched from C++
        alone on this GPU (:meth:`Calibration.cpp_moe_on`) and ``triton_moe`` is not set."""
        if self.cal is None:
            return 0.0
        eager = self.cal.host.eager
        graph_max = eager.replica_graph_tokens(self.model, self.tp, self.dp)
        cpp = (not triton_moe and bool(self.model.moe_layers)
               and self.cal.cpp_moe_on(self.weights.experts, self.gpu, self.moe_ep))
        cost = eager.seconds(self.model.layers, self.model.moe_layers, cpp)
        if not graph_max or not cost:
            return 0.0
        self._sources_host["eager"] = self._on_roofline(eager.moe_source(cpp))
        return np.where(np.asarray(tokens, dtype=np.float64) > graph_max, cost, 0.0)

    def _init_attention(self) -> None:
        """Per-GPU attention constants: bytes and FLOPs per token of context.

        MLA decode runs absorbed (vLLM): every query head attends over the one cached latent
        (``kv_lora_rank + rope`` wide) as multi-query attention, so it reads the latent once
        and does ``2 x heads x (latent + kv_lora_rank)`` FLOPs per (query, context token).
        MLA prefill is timed as :meth:`_mla_prefill` (expanded keys and values). DSA (MLA
        with an indexer) attends over at most ``index_topk`` tokens per query, decode and
        prefill alike (:meth:`_dsa_prefill`), and adds the indexer scoring every cached token.
        """
        m = self.model
        q_heads, kv_heads = heads_per_gpu(m, self.tp)
        if m.is_mla:
            kv_bytes = kv_dtype_bytes(self.kv_dtype)
            self._kv_bytes_per_token = m.kv_latent_dim * kv_bytes
            self._q_io_bytes_per_token = q_heads * (m.kv_latent_dim + m.kv_lora_rank) * 2.0
            self._attn_flops_per_pair = 2.0 * q_heads * (m.kv_latent_dim + m.kv_lora_rank)
            self._attn_flops_s = self.gpu.peak("bf16") * self.c.attn_eff
            self._attn_per_seq_s = self.c.attn_per_seq_head_s
            return
        self._kv_bytes_per_token = 2.0 * kv_heads * m.head_dim * kv_dtype_bytes(self.kv_dtype)
        self._q_io_bytes_per_token = 2.0 * q_heads * m.head_dim * 2.0  # query in, output out
        self._attn_flops_per_pair = 4.0 * q_heads * m.head_dim  # QK^T and PV, 2 FLOPs each
        self._attn_flops_s = self.gpu.peak("bf16") * self.c.attn_eff
        self._attn_per_seq_s = kv_heads * self.c.attn_per_seq_head_s

    def _format(self, precision: str) -> _Format:
        """Weight bytes, activation bytes and derated FLOP/s of GEMMs in ``precision`` (a
        format name; this tier's own format of that name, e.g. W4A16 with 32-wide groups)."""
        fmt = self._formats.get(precision)
        if fmt is None:
            prec = self._named.get(precision) or get_precision(precision)
            dtype = prec.compute_dtype_on(self.gpu)
            dequantised = prec.name != "bf16" and not prec.is_native_on(self.gpu)
            factor = self.c.dequant_factor if dequantised else 1.0
            fmt = _Format(
                weight_bytes=prec.weight_bits / 8.0,
                act_bytes=DTYPE_BYTES[dtype],
                flops_per_s=self.gpu.peak(dtype) * factor,
                quantises_activations=dtype != "bf16",
            )
            self._formats[precision] = fmt
        return fmt

    def _roof(self, nbytes, flops, flops_per_s: float, floor: float) -> np.ndarray:
        """``max(bytes / bandwidth, flops / rate, floor)``, elementwise."""
        return np.maximum(np.maximum(nbytes / self._bw, flops / flops_per_s), floor)

    def gemm(self, m: np.ndarray, n: int, k: int, precision: str, *, tokens=None,
             group: int = 1) -> np.ndarray:
        """One GEMM: weights ``n x k`` in ``precision``, ``m`` rows of activations, BF16 out
        (``tokens``, the step's, change nothing: a roofline has no CUDA-graph reading).
        ``group``: it is one of that many alike GEMMs run as one grouped kernel (DeepGEMM's
        experts); the calibration bins it by their weights together, ``group x n x k``."""
        fmt = self._format(str(getattr(precision, "name", precision)))
        rows = np.asarray(m, dtype=np.float64)
        nbytes = n * k * fmt.weight_bytes + rows * (k * fmt.act_bytes + n * 2.0)
        flops = 2.0 * rows * n * k
        t = self._roof(nbytes, flops, fmt.flops_per_s * self.c.gemm_eff, self.c.gemm_floor_s)
        if fmt.quantises_activations:
            t = t + self._quantise(rows * k, fmt.act_bytes)
        if self.cal is not None:
            t = t / self.cal.gemm_factor(self._precision(precision), self.gpu, rows,
                                         group * n * k)
        return t

    def _precision(self, precision) -> Precision:
        """This tier's :class:`Precision` of a format name (or the object itself)."""
        if isinstance(precision, Precision):
            return precision
        return self._named.get(str(precision)) or get_precision(str(precision))

    def _quantise(self, elements: np.ndarray, act_bytes: float) -> np.ndarray:
        """The pass that quantises BF16 activations (read 2 bytes, write ``act_bytes``)."""
        return np.maximum(elements * (2.0 + act_bytes) / self._bw, self.c.quant_floor_s)

    def moe(self, tokens: np.ndarray) -> np.ndarray:
        """One MoE layer on one GPU for ``tokens`` tokens entering the layer (all DP ranks'):
        weights of the distinct local experts touched, top-k GEMM work of the (token, expert)
        pairs routed to this GPU's ``num_experts / moe_ep`` experts, widths split ``moe_tp``
        ways. Balanced routing: each GPU gets ``1 / moe_ep`` of the pairs."""
        m, fmt = self.model, self._format(self.weights.experts.name)
        t = np.asarray(tokens, dtype=np.float64)
        inter = m.expert_intermediate / self.moe_tp
        expert_bytes = 3.0 * m.hidden * inter * fmt.weight_bytes
        touched = self._experts_touched(t)
        pairs = t * m.top_k / self.moe_ep
        per_pair = m.hidden * fmt.act_bytes + 3.0 * inter * 2.0 + m.hidden * 2.0
        nbytes = touched * expert_bytes + pairs * per_pair
        flops = 2.0 * pairs * 3.0 * m.hidden * inter
        time = self._roof(nbytes, flops, fmt.flops_per_s * self.c.moe_eff, self.c.moe_floor_s)
        if fmt.quantises_activations:
            time = time + self._quantise(t * m.hidden, fmt.act_bytes)
        if self.cal is not None:
            time = time / self.cal.moe_factor(self.weights.experts, self.gpu)
        return time

    def _experts_touched(self, tokens: np.ndarray) -> np.ndarray:
        """Distinct experts the busiest GPU reads for ``tokens`` tokens: the expected number
        under uniform random routing (:func:`expected_experts`), split ``moe_ep`` ways, and at
        least one whole expert (a GPU holding a chosen expert reads all of it, and the layer
        waits for that GPU)."""
        m = self.model
        return np.maximum(expected_experts(tokens, m.num_experts, m.top_k) / self.moe_ep, 1.0)

    def attn_prefill(self, tokens: int, context: int) -> float:
        """One layer's causal attention for a chunk of ``tokens`` after ``context`` cached."""
        if self.model.is_dsa:
            return self._dsa_prefill(tokens, context)
        if self.model.is_mla:
            return self._mla_prefill(tokens, context)
        kv_read = (context + tokens) * self._kv_bytes_per_token
        nbytes = kv_read + tokens * (self._q_io_bytes_per_token + self._kv_bytes_per_token)
        flops = self._attn_flops_per_pair * tokens * (context + (tokens + 1) / 2.0)
        return max(nbytes / self._bw, flops / self._attn_flops_s, self.c.attn_floor_s)

    def attn_decode(self, batch: int, context_per_seq: np.ndarray) -> np.ndarray:
        """One layer's decode attention: each of ``batch`` queries reads its whole KV (MLA:
        plus the block's projections, :meth:`_mla_decode_projections`)."""
        ctx = np.asarray(context_per_seq, dtype=np.float64)
        attended = np.minimum(ctx, self.model.index_topk) if self.model.is_dsa else ctx
        nbytes = batch * (attended * self._kv_bytes_per_token + self._q_io_bytes_per_token)
        flops = self._attn_flops_per_pair * batch * attended
        floor = self.c.attn_floor_s + batch * self._attn_per_seq_s
        t = self._roof(nbytes, flops, self._attn_flops_s, floor)
        if self.model.is_dsa:
            t = t + self._indexer(batch * ctx, batch * ctx)
        if self.model.is_mla:
            t = t + self._mla_decode_projections(batch)
        return t

    def gdn_decode(self, seqs: np.ndarray) -> np.ndarray:
        """One gated delta-net layer's kernels for ``seqs`` decoding sequences (projections
        excluded): the convolution update and the recurrent update, each sequence reading and
        writing its state (:meth:`ModelArch.state_bytes_per_seq` of one layer) and its new
        token's queries, keys, values and gate."""
        m, n = self.model, np.asarray(seqs, dtype=np.float64)
        state = m.state_bytes_per_seq(self.tp) / m.linear_layers
        io = (2 * m.linear_qk_dim + 2 * m.linear_value_dim) / self.tp * 2.0 * 2.0
        flops = 6.0 * (m.linear_v_heads / self.tp) * m.linear_k_dim * m.linear_v_dim * n
        return self._roof(n * (2.0 * state + io), flops, self._attn_flops_s,
                          2 * self.c.attn_floor_s)

    def gdn_prefill(self, tokens: np.ndarray) -> np.ndarray:
        """One gated delta-net layer's kernels for a prefill chunk of ``tokens`` tokens: the
        causal convolution and the chunked delta rule (64-token chunks: per token and value
        head, the state's read, update and output, ``6 x k_dim x v_dim`` FLOPs, and the
        within-chunk products, ``4 x 64 x (k_dim + v_dim)``)."""
        m, t = self.model, np.asarray(tokens, dtype=np.float64)
        heads = m.linear_v_heads / self.tp
        per_token = heads * (6.0 * m.linear_k_dim * m.linear_v_dim
                             + 4.0 * 64 * (m.linear_k_dim + m.linear_v_dim))
        io = (2 * m.linear_qk_dim + 2 * m.linear_value_dim) / self.tp * 2.0 * 2.0
        state = m.state_bytes_per_seq(self.tp) / m.linear_layers
        return self._roof(t * io + 2.0 * state, t * per_token, self._attn_flops_s,
                          2 * self.c.attn_floor_s)

    def _mla_down(self, rows: np.ndarray, fmt: str) -> np.ndarray:
        """MLA's fused down-projection (q_a and kv_a with the rotary key), replicated per GPU."""
        m = self.model
        return self.gemm(rows, m.q_lora_rank + m.kv_latent_dim, m.hidden, fmt)

    def _mla_decode_projections(self, batch: int) -> float:
        """MLA decode block besides attention, for ``batch`` tokens: the down-projection, the
        q up-projection, the absorbed per-head BMMs (q_nope into the latent, the latent out to
        ``v``: BF16, reading ``W_UK`` and ``W_UV`` once) and the o projection."""
        m = self.model
        q_heads, _ = heads_per_gpu(m, self.tp)
        fmt, rows = self.weights.attention.name, np.array([float(batch)])
        q_in = m.q_lora_rank or m.hidden
        t = self._mla_down(rows, fmt)
        t = t + self.gemm(rows, q_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), q_in, fmt)
        t = t + self.gemm(rows, m.hidden, q_heads * m.v_head_dim, fmt)
        width = q_heads * (m.qk_nope_head_dim + m.v_head_dim)
        bmm_bytes = width * m.kv_lora_rank * 2.0 + batch * width * 2.0 * 2.0
        bmm_flops = 2.0 * batch * width * m.kv_lora_rank
        bmm = self._roof(np.array([bmm_bytes]), bmm_flops, self.gpu.peak("bf16") * self.c.gemm_eff,
                         2 * self.c.gemm_floor_s)
        return float((t + bmm + self._indexer_projections(rows))[0])

    def _indexer_projections(self, rows: np.ndarray) -> np.ndarray:
        """A DSA indexer's projections for ``rows`` tokens (replicated per GPU: its query from
        the query latent, its key and head weights from the hidden state); 0 without one."""
        m = self.model
        if not m.is_dsa:
            return np.zeros_like(rows)
        fmt = self.weights.attention.name
        q_in = m.q_lora_rank or m.hidden
        return (self.gemm(rows, m.index_heads * m.index_head_dim, q_in, fmt)
                + self.gemm(rows, m.index_head_dim + m.index_heads, m.hidden, "bf16"))

    def _indexer(self, pairs, keys) -> np.ndarray:
        """A DSA indexer scoring ``pairs`` (query, cached token) pairs in FP8 over ``keys``
        cached keys read once (FP8 with an FP32 scale), and keeping the top-k of each query."""
        m = self.model
        flops = 2.0 * m.index_heads * m.index_head_dim * np.asarray(pairs, dtype=np.float64)
        nbytes = np.asarray(keys, dtype=np.float64) * (m.index_head_dim + 4.0)
        rate = self.gpu.peak("fp8") * self.c.attn_eff
        return self._roof(nbytes, flops, rate, self.c.attn_floor_s)

    def _dsa_prefill(self, tokens: int, context: int) -> float:
        """DSA prefill of one chunk: the MLA block's projections and the indexer's, the indexer
        scoring every (new, earlier) token pair, and absorbed sparse MLA over at most
        ``index_topk`` tokens per query (vLLM's FlashMLA sparse kernel)."""
        return self._absorbed_prefill(tokens, context, self.model.index_topk)

    def _absorbed_prefill(self, tokens: int, context: int, topk: float) -> float:
        """An MLA chunk's prefill run absorbed: the block's projections (and a DSA indexer's,
        with its scoring of every (new, earlier) token pair), the latent BMMs, and attention
        over the cached latent with at most ``topk`` tokens per query."""
        m = self.model
        q_heads, _ = heads_per_gpu(m, self.tp)
        rows = np.array([float(tokens)])
        fmt = self.weights.attention.name
        q_in = m.q_lora_rank or m.hidden
        proj = (self._mla_down(rows, fmt) + self._indexer_projections(rows)
                + self.gemm(rows, q_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), q_in, fmt)
                + self.gemm(rows, m.hidden, q_heads * m.v_head_dim, fmt))
        width = q_heads * (m.qk_nope_head_dim + m.v_head_dim)
        bmm = self.gemm(rows, width, m.kv_lora_rank, "bf16")  # absorbed q in, latent out
        pairs = tokens * (context + (tokens + 1) / 2.0)
        index = (self._indexer(np.array([pairs]), np.array([float(tokens + context)]))
                 if m.is_dsa else 0.0)
        kept = sparse_pairs(tokens, context, topk)
        nbytes = (tokens + context) * self._kv_bytes_per_token + tokens * self._q_io_bytes_per_token
        attn = max(nbytes / self._bw, self._attn_flops_per_pair * kept / self._attn_flops_s,
                   self.c.attn_floor_s)
        return float((proj + bmm + index)[0]) + attn

    def _mla_prefill(self, tokens: int, context: int) -> float:
        """MLA prefill of one chunk, as the measured module covers it: the down-projection, q
        up-projection and o projection of the new tokens, the kv up-projection of the whole
        context (new and cached latents expanded to keys and values), and causal attention with
        ``qk_nope + rope``-wide keys and ``v_head_dim``-wide values."""
        m = self.model
        q_heads, _ = heads_per_gpu(m, self.tp)
        fmt = self.weights.attention.name
        rows = np.array([float(tokens)])
        q_in = m.q_lora_rank or m.hidden
        q = self.gemm(rows, q_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), q_in, fmt)
        o = self.gemm(rows, m.hidden, q_heads * m.v_head_dim, fmt)
        kv_b = self.gemm(np.array([float(tokens + context)]),
                         q_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, fmt)
        kv_b = kv_b + self._mla_down(rows, fmt)
        qk, v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
        pairs = tokens * (context + (tokens + 1) / 2.0)
        flops = 2.0 * q_heads * (qk + v) * pairs
        kv_bytes = (tokens + context) * q_heads * (qk + v) * 2.0
        attn = max(kv_bytes / self._bw, flops / self._attn_flops_s, self.c.attn_floor_s)
        return float((q + o + kv_b)[0]) + attn

    def allreduce(self, nbytes: np.ndarray, gpus: int | None = None) -> np.ndarray:
        """Ring all-reduce of ``nbytes`` over ``gpus`` (default ``tp``) GPUs on NVLink (0 on
        one GPU); over more GPUs than a node holds, hierarchical: within each node on NVLink,
        plus :meth:`internode_allreduce`."""
        size = np.asarray(nbytes, dtype=np.float64)
        n = self.tp if gpus is None else int(gpus)
        if n == 1:
            return np.zeros_like(size)
        if n > self.gpu.gpus_per_node:
            return self.allreduce(size, self.gpu.gpus_per_node) + self.internode_allreduce(size, n)
        one_way = self.gpu.nvlink_bw_bytes_s / 2.0 * self.c.allreduce_eff
        traffic = 2.0 * (n - 1) / n * size
        return self.c.allreduce_latency_s + traffic / one_way

    def internode_allreduce(self, nbytes: np.ndarray, gpus: int) -> np.ndarray:
        """The part of an all-reduce over ``gpus`` GPUs that crosses nodes (0 within one).

        A hierarchical all-reduce: reduce-scatter within each node, then every GPU all-reduces
        its share with its peers on the other nodes over its own NIC, then all-gather within the
        node (the NVLink part, :meth:`allreduce`). Between nodes, the faster of a ring
        (``2 (nodes - 1)`` steps, each paying the network's latency, ``2 (nodes - 1) / nodes``
        of the share on the wire) and a tree (``2 ceil(log2 nodes)`` steps, twice the share), as
        NCCL picks by message size. The share is set by the least-filled node (12 GPUs: 8 + 4,
        each of the 4 carries a quarter). Adding the NVLink part in series is conservative for
        large messages: NCCL pipelines the two stages (up to about 1.4x too slow at 2 nodes);
        decode-sized messages are latency-bound, where it is not.
        """
        size = np.asarray(nbytes, dtype=np.float64)
        per_node = self.gpu.gpus_per_node
        nodes = -(-int(gpus) // per_node)
        if nodes <= 1:
            return np.zeros_like(size)
        share = size / min(per_node, int(gpus) - (nodes - 1) * per_node)
        one_way = self.gpu.internode_bw_bytes_s * self.c.allreduce_eff
        lat = self.gpu.internode_latency_s
        ring = 2.0 * (nodes - 1) * lat + 2.0 * (nodes - 1) / nodes * share / one_way
        tree = 2.0 * math.ceil(math.log2(nodes)) * lat + 2.0 * share / one_way
        return np.minimum(ring, tree)

    def _limit_ops(self) -> PhysicalLimitOps:
        """:class:`PhysicalLimitOps` of this replica (the floor
        :meth:`~tiersim.perf.assembly.AssembledStepModel._shared_launch` keeps a chunk above)."""
        return PhysicalLimitOps(self.model, self.weights, self.gpu, self.tp, self.kv_dtype,
                                self.dp, self.ep)

    def sources(self) -> dict[str, str]:
        """Every operator family this model uses: ``roofline``, and for a GEMM or MoE family
        the calibration divides, what by (:meth:`gemm_source`, :meth:`moe_source`)."""
        kv, w, m = self.kv_dtype, self.weights, self.model
        groups = ["attention", "lm_head"] + (["mlp"] if m.dense_mlp_layers else [])
        groups += ["shared_experts"] if m.shared_intermediate and m.is_moe else []
        formats = [w.of(g) for g in groups] + ([get_precision("bf16")] if m.is_moe else [])
        out = {f"gemm {f.name}": self.gemm_source(f) for f in formats}
        attn = "dsa " if m.is_dsa else "mla " if m.is_mla else ""
        out |= dict.fromkeys([f"attn_prefill {attn}{kv}", f"attn_decode {attn}{kv}"], "roofline")
        if m.is_hybrid:
            out |= dict.fromkeys(["gdn_prefill", "gdn_decode"], "roofline")
        if m.is_moe:
            out[f"moe {w.experts.name}"] = self.moe_source()
        if self.tp > 1:
            out[f"allreduce tp={self.tp}"] = "roofline"
        if m.is_moe and self.dp > 1:
            out[f"allreduce tp={self.tp * self.dp}"] = "roofline"
        return {**out, "overhead": "roofline", **self._sources_host}

    def gemm_source(self, precision) -> str:
        """The source label of GEMMs in ``precision`` (a format name or object)."""
        if self.cal is None:
            return "roofline"
        return self.cal.gemm_source(self._precision(precision), self.gpu)

    def moe_source(self) -> str:
        """The source label of this model's MoE layers."""
        if self.cal is None:
            return "roofline"
        return self.cal.moe_source(self.weights.experts, self.gpu)


class RooflineModel(AssembledStepModel):
    """The roofline :class:`~tiersim.perf.base.StepTimeModel` (``source == "roofline"``)."""

    def __init__(
        self,
        model: ModelArch | str,
        precision: Precision | str,
        gpu: GPU | str,
        tp: int = 1,
        kv_dtype: str = "bf16",
        constants: RooflineConstants | None = None,
        dp: int = 1,
        ep: int = 1,
        moe_backend: str = "auto",
        calibration: Calibration | None = None,
    ):
        ops = RooflineOps(model, precision, gpu, tp, kv_dtype, constants, dp=dp, ep=ep,
                          calibration=calibration)
        super().__init__(ops.model, ops.weights, tp, ops, source="roofline", dp=dp, ep=ep,
                         moe_backend=moe_backend)
        self.gpu = ops.gpu
        self.kv_dtype = ops.kv_dtype


#: The roofline at the data sheet's peaks, underated and without kernel floors or overheads.
LIMIT_CONSTANTS = RooflineConstants(
    bw_eff=1.0, gemm_eff=1.0, moe_eff=1.0, attn_eff=1.0, dequant_factor=1.0, gemm_floor_s=0.0,
    moe_floor_s=0.0, attn_floor_s=0.0, attn_per_seq_head_s=0.0, quant_floor_s=0.0,
    allreduce_latency_s=0.0, allreduce_eff=1.0, base_overhead_s=0.0, per_layer_overhead_s=0.0)


class PhysicalLimitOps(RooflineOps):
    """The least time any kernel can take for each operator: a floor for measured tables.

    The roofline at the data sheet's HBM bandwidth and tensor-core peaks with no derating and
    no kernel floors (:data:`LIMIT_CONSTANTS`), and wherever a kernel has a cheaper way to do
    the work, the cheaper one: attention math at the KV dtype's peak (FP8 attention with an FP8
    cache), no separate activation-quantising pass (it can be fused into the previous kernel),
    a MoE layer's tokens all routed to the same ``top_k`` experts (the fewest weights read),
    MLA prefill the cheaper of expanded and absorbed attention, and an all-reduce moving only
    ``(n - 1) / n`` of the message over NVLink once (as an in-switch reduction can). A measured
    point below this is a measurement error (an L2-resident benchmark, a mislabelled row), not a
    kernel a server can run: every weight a serving step reads comes from HBM.
    """

    def __init__(self, model, precision, gpu, tp: int = 1, kv_dtype: str = "bf16",
                 dp: int = 1, ep: int = 1):
        super().__init__(model, precision, gpu, tp, kv_dtype, LIMIT_CONSTANTS, dp=dp, ep=ep)
        native_kv = self.kv_dtype in self.gpu.peak_flops and self.kv_dtype != "bf16"
        self._attn_flops_s = self.gpu.peak(self.kv_dtype if native_kv else "bf16")

    def _quantise(self, elements: np.ndarray, act_bytes: float) -> np.ndarray:
        """No separate pass: a kernel can quantise activations in the previous one's epilogue."""
        return np.zeros_like(np.asarray(elements, dtype=np.float64))

    def _experts_touched(self, tokens: np.ndarray) -> np.ndarray:
        """The fewest distinct experts one GPU can read: every token routed to the same
        ``top_k`` experts, spread over ``moe_ep`` GPUs (at least one)."""
        local = self.model.num_experts / self.moe_ep
        least = min(local, max(1.0, self.model.top_k / self.moe_ep))
        return np.full(np.shape(tokens), least)

    def _mla_prefill(self, tokens: int, context: int) -> float:
        """The cheaper of the expanded prefill and the absorbed one (latent attention)."""
        expanded = super()._mla_prefill(tokens, context)
        return min(expanded, self._absorbed_prefill(tokens, context, math.inf))

    def allreduce(self, nbytes: np.ndarray, gpus: int | None = None) -> np.ndarray:
        """``(n - 1) / n`` of the message over one direction of NVLink, once."""
        size = np.asarray(nbytes, dtype=np.float64)
        n = self.tp if gpus is None else int(gpus)
        return (n - 1) / n * size / (self.gpu.nvlink_bw_bytes_s / 2.0)


def sparse_pairs(tokens: int, context: int, topk: int) -> float:
    """(query, attended token) pairs of a causal chunk of ``tokens`` after ``context`` cached
    when each query attends to at most ``topk`` tokens: the sum of ``min(p, topk)`` over the
    chunk's positions ``p = context + 1 .. context + tokens``."""
    first, last = context + 1, context + tokens
    if last <= topk:
        return (first + last) * tokens / 2.0
    if first >= topk:
        return float(topk * tokens)
    return (first + topk) * (topk - first + 1) / 2.0 + topk * (last - topk)

