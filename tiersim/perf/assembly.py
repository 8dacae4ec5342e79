"""Assemble one iteration's time from per-layer operator times: the single place that does it.

Every step-time model (the roofline, calibrated profiles) answers the same small set of
operator questions, the :class:`OpTimes` protocol, and :class:`AssembledStepModel` turns the
answers into an iteration time, so all models share one definition of what an iteration runs.

One iteration of ``T`` tokens (new prompt tokens of the prefill chunks plus one per decoding
sequence) on one data-parallel rank of ``tp`` GPUs costs, with every shape per GPU:

    layers x attention projections(T)           q/k/v and o (MLA: inside the attention ops)
  + dense layers x dense MLP(T)                  gate/up and down GEMMs
  + MoE layers x [ router(T, BF16) + MoE(T x dp) + shared experts(T) ]
  + collectives: a TP all-reduce of T x hidden BF16 after attention and after each dense MLP
    (tp > 1); after each MoE layer the TP all-reduce (dp = 1), or with dp > 1 vLLM's
    all-gather + reduce-scatter of all ranks' T x dp tokens over the tp x dp GPUs, counted as
    one all-reduce of that size over those GPUs (the same traffic)
  + attention: each prefill chunk (new, cached) on its own, less the fixed part (a 1-token
    chunk's time) of all but one where the tables time the attention kernel alone (an engine
    runs a step's chunks as one variable-length launch), plus decode attention over the decode
    batch at its mean context (sum of contexts / sequences); for MLA these ops are the whole
    attention block (down- and up-projections, attention, o projection), as NVIDIA measured the
    MLA modules one request at a time, and each chunk pays its module's whole time: the data
    cannot say which part of a module's fixed time a step's requests share (SGLang's measured
    DeepSeek TTFT agrees with a whole module per chunk, -8% / -16%, and reads 40% too fast
    when the fixed part is shared)
  + lm_head GEMM for the rows that produce logits: decode sequences + prefill chunks
  + the fixed per-iteration overhead
  + for an iteration larger than the engine's CUDA graphs, the host time of running it eagerly
    (the profile's ``eager_s``; :class:`tiersim.perf.profile.EagerCost`)

Every GEMM runs in its group's weight format (:class:`~tiersim.hardware.precisions.WeightFormats`:
one format for a named tier precision, the checkpoint's per-group formats for ``checkpoint``);
the router stays BF16. The MoE layer is asked for ``T x dp`` tokens: attention data-parallel
ranks run in lockstep and every rank's tokens pass through every MoE layer, assuming the ranks
carry equal batches (balanced load; vLLM pads idle ranks with dummy batches, so the slowest rank
sets the pace and this is optimistic when ranks are uneven). The experts are split over all
``tp x dp`` GPUs, ``ep`` of them by whole experts (:func:`tiersim.perf.memory.moe_split`).
Layers with a sliding window (gpt-oss) see at most ``window`` tokens of context; in prefill
each new token also attends to at most ``window`` keys (:func:`sliding_work_fraction`).
Gated delta-net layers (Qwen3-Next, Qwen3.5) replace attention with their own projections
(``in_proj`` to queries, keys, values, gate and the two per-head scalars; ``out_proj``) and
kernels that do not read a KV cache: per decoding sequence a state update
(``ops.gdn_decode``), per prefill chunk the chunked delta rule (``ops.gdn_prefill``).
Norms, rotary embeddings and activations are small memory-bound kernels that the ops fold into
their overhead.

Decode-only iterations are evaluated vectorised over many contexts (:meth:`decode_times`);
``step_time`` of a pure-decode shape calls it, so the two agree exactly.
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Protocol

import numpy as np

from tiersim.hardware.arch import ModelArch
from tiersim.hardware.models import get_model
from tiersim.hardware.precisions import CHECKPOINT, Precision, weight_formats
from tiersim.perf.base import StepShape
from tiersim.perf.memory import check_moe_backend, heads_per_gpu, moe_split

#: Rows of one DeepGEMM contiguous block (its ``BLOCK_M`` for grouped contiguous layouts).
DEEPGEMM_BLOCK_M = 128

#: Tokens of one pass of vLLM's modular MoE kernel (``VLLM_FUSED_MOE_CHUNK_SIZE``'s default);
#: each pass sizes its own grouped GEMM.
MOE_CHUNK_TOKENS = 16 * 1024

#: Caches of per-token-count times are cleared when they grow past this many entries.
_CACHE_LIMIT = 1 << 16
_MIXED_LIMIT = 1 << 12
"""Most mixed-step prefill parts kept (:meth:`AssembledStepModel.step_time`): a workload of
few prompt lengths repeats them, one of many rarely does, and a key is a tuple of tuples."""


def expected_experts(tokens: np.ndarray | float, num_experts: int, top_k: int) -> np.ndarray:
    """Expected distinct experts ``T`` tokens touch, each picking ``top_k`` of ``num_experts``.

    ``E (1 - (1 - k/E)^T)``: an expert is missed by one token with probability ``1 - k/E``,
    treating tokens' choices as independent and uniform.
    """
    t = np.asarray(tokens, dtype=np.float64)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** t)


def deepgemm_rows(tokens: np.ndarray | float, local_experts: int, top_k: int) -> np.ndarray:
    """Rows the DeepGEMM contiguous grouped GEMM computes for ``tokens`` tokens in vLLM 0.12.

    Without per-expert token counts (no DeepEP or pplx dispatch) vLLM sizes the GEMM for the
    worst case, every local expert padded to a block: ``round_up(T x top_k + E x (128 - 1),
    128)`` (``deep_gemm_utils.compute_aligned_M``) for each pass of at most
    :data:`MOE_CHUNK_TOKENS` tokens; the padding blocks carry expert 0, not -1, so DeepGEMM
    computes every one of them (the -1 fill came with vLLM 0.13). At decode sizes that is about
    one 128-row block per expert, whatever the batch."""
    t = np.asarray(tokens, dtype=np.float64)
    full, rest = np.floor(t / MOE_CHUNK_TOKENS), np.mod(t, MOE_CHUNK_TOKENS)

    def one_pass(n):
        rows = n * top_k + local_experts * (DEEPGEMM_BLOCK_M - 1)
        return np.ceil(rows / DEEPGEMM_BLOCK_M) * DEEPGEMM_BLOCK_M

    return full * one_pass(float(MOE_CHUNK_TOKENS)) + np.where(rest > 0, one_pass(rest), 0.0)


def expert_gemm_shapes(model: ModelArch, moe_tp: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(n, k)`` of one expert's two GEMMs on each of ``moe_tp`` GPUs splitting its width:
    gate-up (twice the per-GPU width by the hidden size) and down (back to the hidden size);
    what DeepGEMM's grouped GEMMs read (``moe_backend: deepgemm``)."""
    width = model.expert_intermediate // moe_tp  # one expert's share per GPU
    return (2 * width, model.hidden), (model.hidden, width)


def sliding_work_fraction(new: int, cached: int, window: int) -> float:
    """Share of a causal chunk's attention work left under a sliding window.

    A chunk of ``new`` tokens after ``cached`` ones: causally, new token ``i`` (1-based)
    attends to ``cached + i`` keys; under a window, to ``min(cached + i, window)``. Returns
    the ratio of the two sums (1 when no token reaches the window).
    """
    if new <= 0:
        return 1.0
    causal = new * cached + new * (new + 1) / 2
    inside = min(new, max(0, window - cached))  # tokens whose keys all fit the window
    windowed = inside * cached + inside * (inside + 1) / 2 + (new - inside) * window
    return windowed / causal


class OpTimes(Protocol):
    """Per-layer operator latencies on one GPU of a replica, for one model, precision and tp.

    Shapes are per GPU (already divided by tensor parallelism). Array arguments are numpy
    arrays of any shape; results have the same shape.
    """

    #: Fixed seconds per iteration (scheduling, sampling, launch gaps, small kernels).
    overhead_s: float

    def gemm(self, m: np.ndarray, n: int, k: int, precision: str, *, tokens=None,
             group: int = 1) -> np.ndarray:
        """Seconds of one ``(m x k) @ (k x n)`` GEMM with weights in ``precision``, in a step of
        ``tokens`` batched tokens (default ``m``; they, not ``m``, decide whether the step
        replays a CUDA graph); ``group``: it is one of that many alike GEMMs run as one grouped
        kernel (DeepGEMM's experts), ``m`` their rows together."""
        ...

    def moe(self, tokens: np.ndarray) -> np.ndarray:
        """Seconds of one layer's routed-expert GEMMs for ``tokens`` tokens (router excluded).

        Includes reading the weights of the :func:`expected_experts` distinct experts touched.
        """
        ...

    def attn_prefill(self, tokens: int, context: int) -> float:
        """Seconds of one layer's attention for one sequence's chunk of ``tokens`` new tokens
        over ``context`` tokens already in its KV cache."""
        ...

    def attn_decode(self, batch: int, context_per_seq: np.ndarray) -> np.ndarray:
        """Seconds of one layer's decode attention over ``batch`` sequences of that context."""
        ...

    def allreduce(self, nbytes: np.ndarray) -> np.ndarray:
        """Seconds of one all-reduce of ``nbytes`` across the replica's GPUs (0 when tp = 1)."""
        ...

    def gdn_decode(self, seqs: np.ndarray) -> np.ndarray:
        """Seconds of one gated delta-net layer's kernels for ``seqs`` decoding sequences
        (asked only of hybrid models)."""
        ...

    def gdn_prefill(self, tokens: np.ndarray) -> np.ndarray:
        """Seconds of one gated delta-net layer's kernels for a chunk of ``tokens`` tokens."""
        ...

    def sources(self) -> dict[str, str]:
        """Which source each operator table came from: ``{table_name: source}``."""
        ...


class AssembledStepModel:
    """A :class:`~tiersim.perf.base.StepTimeModel` built from an :class:`OpTimes`.

    ``model`` and ``precision`` may be names or objects (``precision`` also ``"checkpoint"`` or
    a :class:`~tiersim.hardware.precisions.WeightFormats`); ``source`` is the label shown to
    users. ``dp`` / ``ep``: attention data-parallel ranks and expert-parallel size of the
    replica (see :func:`tiersim.perf.build_step_model`); the model times one DP rank. Times of
    a given token count are cached, so repeated shapes cost a dict lookup.
    """

    def __init__(
        self,
        model: ModelArch | str,
        precision: Precision | str,
        tp: int,
        ops: OpTimes,
        source: str,
        dp: int = 1,
        ep: int = 1,
        moe_backend: str = "auto",
    ):
        self.model = get_model(model)
        self.formats = weight_formats(self.model, precision)
        self.precision = self.formats.headline
        self.tp, self.dp, self.ep = int(tp), int(dp), int(ep)
        self.ops = ops
        self.source = source
        self.moe_backend = check_moe_backend(self.model, self.formats, moe_backend, tp, dp, ep)
        # static FP8 input scales: the checkpoint's own, served in its formats
        self._static_scale = (self.model.static_fp8_activations
                              and self.precision.name == CHECKPOINT
                              and getattr(ops, "reads_static_scale", False))
        self._init_shapes()
        self._linear_table = np.zeros(0)
        self._decode_cache: dict[int, float] = {}
        self._lm_head_cache: dict[int, float] = {}
        # a mixed step's time before its decode attention, by (prefill chunks, decode seqs)
        self._mixed_cache: dict[tuple, float] = {}
        # a prefill chunk's attention (_attn_prefill), and what it saves in a shared launch
        # (_shared_launch), by its (new, cached) tokens
        self._chunk_cache: dict[tuple[int, int], float] = {}
        self._saving_cache: dict[tuple[int, int], float] = {}
        # Touch every operator once so sources() is complete and missing tables fail early.
        self.step_time(StepShape(prefill_chunks=((16, 16),), decode_seqs=1, decode_context=16))

    def _init_shapes(self) -> None:
        """Per-GPU GEMM shapes ``(n, k)`` and layer counts, computed once."""
        m, tp = self.model, self.tp
        q_heads, kv_heads = heads_per_gpu(m, tp)
        q_out = 2 * q_heads if m.attn_gate else q_heads  # a gated query is twice as wide
        self._qkv = ((q_out + 2 * kv_heads) * m.head_dim, m.hidden)
        in_proj = 2 * m.linear_qk_dim + 2 * m.linear_value_dim + 2 * m.linear_v_heads
        self._gdn_in = (in_proj // tp, m.hidden)
        self._gdn_out = (m.hidden, m.linear_value_dim // tp)
        self._o = (m.hidden, q_heads * m.head_dim)
        self._gate_up = (2 * m.intermediate // tp, m.hidden)
        self._down = (m.hidden, m.intermediate // tp)
        self._shared_gate_up = (2 * m.shared_intermediate // tp, m.hidden)
        self._shared_down = (m.hidden, m.shared_intermediate // tp)
        self._router = (m.num_experts, m.hidden)
        moe_tp, moe_ep = moe_split(tp, self.dp, self.ep)
        self._expert_up, self._expert_down = expert_gemm_shapes(m, moe_tp)
        self._expert_width = self._expert_down[1]  # one expert's share per GPU
        self._local_experts = m.num_experts // moe_ep
        self._lm_head = (math.ceil(m.vocab / tp), m.hidden)
        self._allreduce_bytes_per_token = 2.0 * m.hidden
        self._window = m.sliding_window
        self._sliding_layers = m.sliding_layers if m.sliding_window else 0
        self._full_layers = m.attention_layers - self._sliding_layers
        self._hybrid = m.is_hybrid  # gated delta-net layers (their kernels added per step)

    # ------------------------------------------------------------------ per-token-count parts

    def _fmt(self, group: str) -> str:
        """The table dtype (format name) of ``group``'s GEMMs."""
        return self.formats.of(group).name

    def _attention_linear(self, tokens: np.ndarray) -> np.ndarray:
        """One layer's attention projections for ``tokens`` (MLA: none here; the MLA
        attention ops time the whole block, projections included, as NVIDIA's modules do)."""
        if self.model.is_mla:
            return np.zeros_like(np.asarray(tokens, dtype=np.float64))
        return self._gemm(tokens, self._qkv, "attention") + self._gemm(tokens, self._o, "attention")

    def _gemm(self, tokens: np.ndarray, shape: tuple[int, int], group: str) -> np.ndarray:
        """One GEMM of parameter ``group``'s format at ``shape`` (``n, k``) for ``tokens``; a
        checkpoint with static FP8 input scales reads its per-tensor FP8 GEMMs without the
        scale computation the tables time (``ProfileOps.gemm``'s ``static_scale``)."""
        if self._static_scale:
            return self.ops.gemm(tokens, *shape, self._fmt(group), static_scale=True)
        return self.ops.gemm(tokens, *shape, self._fmt(group))

    def _gdn_linear(self, tokens: np.ndarray) -> np.ndarray:
        """One gated delta-net layer's projections for ``tokens``."""
        ops, fmt = self.ops, self._fmt("attention")
        return ops.gemm(tokens, *self._gdn_in, fmt) + ops.gemm(tokens, *self._gdn_out, fmt)

    def _gdn_decode(self, seqs: int) -> float:
        """All gated delta-net layers' kernels for ``seqs`` decoding sequences (0 without)."""
        m = self.model
        if not self._hybrid or seqs <= 0:
            return 0.0
        return m.linear_layers * float(self.ops.gdn_decode(np.array([float(seqs)]))[0])

    def _gdn_prefill(self, new: int) -> float:
        """All gated delta-net layers' kernels for one prefill chunk (0 without them)."""
        m = self.model
        if not self._hybrid:
            return 0.0
        return m.linear_layers * float(self.ops.gdn_prefill(np.array([float(new)]))[0])

    def _dense_mlp(self, tokens: np.ndarray) -> np.ndarray:
        return self._gemm(tokens, self._gate_up, "mlp") + self._gemm(tokens, self._down, "mlp")

    def _moe_layer(self, tokens: np.ndarray) -> np.ndarray:
        """Router, routed experts (over the tokens of all DP ranks) and shared experts.

        The experts see ``tokens x dp``: vLLM pads every DP rank's batch to the largest across
        the ranks before the experts' all-gather, so the rank with the most tokens, whose step
        the lockstep group waits for, feeds dp times its own. Charging the ranks' sum instead
        (one rank's long prefill beside decoding ranks) was tried on 2026-12-02 and moved the
        sample's DP rows further from measured (Qwen3-235B-FP8 vLLM TPOT 44.4% -> 47.8%, TTFT
        18.8% -> 22.2%; TensorRT-LLM DeepSeek-R1 TTFT 47.7% -> 51.4%)."""
        ops = self.ops
        router = ops.gemm(tokens, *self._router, "bf16")  # read first: an import records
        t = router + self._routed_experts(tokens * self.dp, step_tokens=tokens)  # reads in order
        if self.model.shared_intermediate:
            t = t + self._gemm(tokens, self._shared_gate_up, "shared_experts")
            t = t + self._gemm(tokens, self._shared_down, "shared_experts")
        return t

    def _routed_experts(self, tokens: np.ndarray,
                        step_tokens: np.ndarray | None = None) -> np.ndarray:
        """One layer's routed experts for ``tokens`` tokens: the profile's MoE table, or with
        ``moe_backend: deepgemm`` the kernel vLLM 0.12 ran instead, DeepGEMM's two grouped
        GEMMs over :func:`deepgemm_rows` rows (each 128-row block one expert's GEMM; read from
        the block-FP8 GEMM tables at the experts' per-GPU shapes and that row count: NVIDIA's
        tables time no DeepGEMM MoE; graph-read or eager by ``step_tokens``, one DP rank's step
        (default ``tokens``), as the step's eager host time is charged, not by the rows nor by
        every rank's ``tokens x dp``) plus the passes between and after them, bytes at HBM
        bandwidth: over every row, the gated activation reads the first GEMM's BF16 output and
        writes BF16, and the FP8 quantisation reads that and writes FP8 (``9 x width`` bytes a
        row); the gather reads each token's ``top_k`` BF16 rows of the second GEMM's output
        and writes the token's sum."""
        if self.moe_backend != "deepgemm":
            return self.ops.moe(tokens)
        m, ops, fmt = self.model, self.ops, self._fmt("experts")
        width = self._expert_width
        rows = deepgemm_rows(tokens, self._local_experts, m.top_k)
        step = tokens if step_tokens is None else step_tokens
        group = self._local_experts
        gemms = (ops.gemm(rows, *self._expert_up, fmt, tokens=step, group=group)
                 + ops.gemm(rows, *self._expert_down, fmt, tokens=step, group=group))
        passes = rows * 9.0 * width + tokens * (m.top_k + 1) * 2.0 * m.hidden
        return gemms + passes / ops.gpu.hbm_bw_bytes_s

    def _communication(self, tokens: np.ndarray) -> np.ndarray:
        """All layers' collectives: the TP all-reduce after attention and after each dense MLP;
        after each MoE layer, the TP all-reduce (dp = 1) or, across DP ranks, vLLM's
        all-gather + reduce-scatter of every rank's tokens over all ``tp x dp`` GPUs, counted
        as one all-reduce of that size (the same traffic)."""
        m, ops = self.model, self.ops
        size = tokens * self._allreduce_bytes_per_token
        total = np.zeros_like(np.asarray(tokens, dtype=np.float64))
        if self.tp > 1:
            total = total + (m.layers + m.dense_mlp_layers) * ops.allreduce(size)
        if m.moe_layers and self.dp > 1:
            total = total + m.moe_layers * ops.allreduce(size * self.dp, self.tp * self.dp)
        elif m.moe_layers and self.tp > 1:
            total = total + m.moe_layers * ops.allreduce(size)
        return total

    def _linear(self, tokens: np.ndarray) -> np.ndarray:
        """All layers' token-proportional work for each entry of ``tokens``."""
        m = self.model
        t = m.attention_layers * self._attention_linear(tokens)
        if m.is_hybrid:
            t = t + m.linear_layers * self._gdn_linear(tokens)
        if m.dense_mlp_layers:
            t = t + m.dense_mlp_layers * self._dense_mlp(tokens)
        if m.moe_layers:
            t = t + m.moe_layers * self._moe_layer(tokens)
        return t + self._communication(tokens) + self._eager(tokens)

    def _eager(self, tokens: np.ndarray) -> np.ndarray | float:
        """Host time of iterations the engine runs outside CUDA graphs (ops without the notion,
        such as the roofline, answer 0). DeepGEMM's experts read no MoE table and their path
        launches Triton kernels (token count, scatter, gather), so they pay the Triton rate."""
        eager_s = getattr(self.ops, "eager_s", None)
        if eager_s is None:
            return 0.0
        return eager_s(tokens, triton_moe=self.moe_backend == "deepgemm")

    def _linear_time(self, tokens: int) -> float:
        """All layers' token-proportional work for ``tokens`` tokens.

        NOTE (speed): tabulated at every token count up to a power of two covering ``tokens``
        with one vectorised evaluation, since mixed steps rarely repeat a token count; the
        table holds the same function at integer points, so nothing is approximated.
        """
        table = self._linear_table
        if tokens >= table.size:
            size = 1 << max(int(tokens).bit_length(), 10)
            counts = np.arange(size, dtype=np.float64)
            table = self._linear(np.maximum(counts, 1.0))
            table[0] = 0.0
            self._linear_table = table
        return float(table[tokens])

    def _lm_head_time(self, rows: int) -> float:
        """The BF16 ``lm_head`` GEMM for ``rows`` sequences producing logits (cached)."""
        cached = self._lm_head_cache.get(rows)
        if cached is None:
            fmt = self._fmt("lm_head")
            cached = float(self.ops.gemm(np.array([float(rows)]), *self._lm_head, fmt)[0])
            _store(self._lm_head_cache, rows, cached)
        return cached

    def _decode_constant(self, seqs: int) -> float:
        """Context-independent part of a decode iteration of ``seqs`` sequences (cached)."""
        cached = self._decode_cache.get(seqs)
        if cached is None:
            cached = self._linear_time(seqs) + self._lm_head_time(seqs) + self.ops.overhead_s
            cached += self._gdn_decode(seqs)
            _store(self._decode_cache, seqs, cached)
        return cached

    # ------------------------------------------------------------------ attention

    def _attn_decode(self, seqs: int, context_per_seq: np.ndarray) -> np.ndarray:
        """All layers' decode attention, sliding-window layers capped at the window."""
        t = self._full_layers * self.ops.attn_decode(seqs, context_per_seq)
        if self._sliding_layers:
            capped = np.minimum(context_per_seq, self._window)
            t = t + self._sliding_layers * self.ops.attn_decode(seqs, capped)
        return t

    def _attn_prefill(self, new: int, cached: int) -> float:
        """All layers' attention for one prefill chunk.

        A sliding-window layer sees at most ``window`` cached tokens, and each new token
        attends to at most ``window`` keys: the causal op of the chunk over the capped
        context is scaled by :func:`sliding_work_fraction` (its compute-bound part), never
        below the op of one window-sized chunk.
        """
        t = self._full_layers * self._prefill_op(new, cached)
        if self._hybrid:  # (adding the 0.0 of no such layers changes nothing)
            t += self._gdn_prefill(new)
        if self._sliding_layers:
            w = self._window
            capped = min(cached, w)
            causal = self._prefill_op(new, capped)
            if new > w - capped:  # some new tokens see a full window: less work than causal
                floor = self._prefill_op(min(new, w), capped)
                causal = max(causal * sliding_work_fraction(new, capped, w), floor)
            t += self._sliding_layers * causal
        return t

    def _shared_launch(self, shape_chunks, chunks: list[float]) -> float:
        """What a step's prefill chunks save by running as one launch: for every chunk but the
        longest, the fixed part (:meth:`_prefill_fixed`), never more than its time above its
        physical limit (the attention of a 1-token chunk over a long cached context is mostly
        its cache read, which a shared launch does not save)."""
        # NOTE (speed): a chunk's saving depends on the chunk alone (its time is its attention,
        # :meth:`_attn_prefill`), so it is remembered by ``(new, cached)`` as that is; the
        # default job's sizing runs, overloaded, admit several prompts a step
        memo = self._saving_cache
        saved = 0.0
        for chunk, time in sorted(zip(shape_chunks, chunks), key=itemgetter(1))[:-1]:
            saving = memo.get(chunk)
            if saving is None:
                limit = self._limit_ops()
                floor = (0.0 if limit is None
                         else self._full_layers * limit.attn_prefill(*chunk))
                saving = min(self._prefill_fixed(), max(time - floor, 0.0))
                if len(memo) >= _CACHE_LIMIT:
                    memo.clear()
                memo[chunk] = saving
            saved += saving
        return saved

    def _limit_ops(self):
        """:class:`~tiersim.perf.roofline.PhysicalLimitOps` of this replica, asked once of the
        ops (``ProfileOps._limit_ops``, ``RooflineOps._limit_ops``), else ``None``."""
        if "_limit" not in self.__dict__:
            own = getattr(self.ops, "_limit_ops", None)
            self.__dict__["_limit"] = None if own is None else own()
        return self.__dict__["_limit"]

    def _prefill_fixed(self) -> float:
        """All layers' attention for a 1-token chunk with nothing cached: the part of a chunk's
        time a step's other chunks share (no chunk costs less, as the tables are read
        non-decreasing, so a step's attention never falls below its largest chunk's)."""
        fixed = self.__dict__.get("_prefill_fixed_s")
        if fixed is None:
            fixed = self.__dict__["_prefill_fixed_s"] = self._attn_prefill(1, 0)
        return fixed

    def _attn_point(self, op: str):
        """The ops' one-point lookup for ``op`` (``ProfileOps.attn_point``), resolved once;
        ``None`` where the ops have none.

        NOTE (speed): a mixed step asks its attention one point at a time; the point lookup
        skips the op, table and argument checks around it and gives the same float.
        """
        points = self.__dict__.get("_attn_points")
        if points is None:
            point_of = getattr(self.ops, "attn_point", None)
            points = {op: point_of(op) if point_of is not None else None
                      for op in ("attn_prefill", "attn_decode")}
            self.__dict__["_attn_points"] = points
        return points[op]

    def _prefill_op(self, new: int, cached: int) -> float:
        """One layer's prefill attention op for a chunk (``float`` of the ops' answer)."""
        at = self._attn_point("attn_prefill")
        if at is None:
            return float(self.ops.attn_prefill(new, cached))
        return float(at(float(new), cached))

    def _attn_decode_one(self, seqs: int, context_per_seq: float) -> float:
        """:meth:`_attn_decode` at one context (``float`` of it, by the same operations)."""
        at = self._attn_point("attn_decode")
        if at is None:
            return float(self._attn_decode(seqs, context_per_seq))
        t = self._full_layers * float(at(float(seqs), context_per_seq))
        if self._sliding_layers:
            capped = float(min(context_per_seq, self._window))
            t = t + self._sliding_layers * float(at(float(seqs), capped))
        return t

    # ------------------------------------------------------------------ StepTimeModel

    def decode_times(self, decode_seqs: int, decode_context: np.ndarray) -> np.ndarray:
        """Seconds of pure-decode iterations of ``decode_seqs`` sequences, one per summed
        context in ``decode_context`` (vectorised; no Python loop over the array)."""
        ctx = np.asarray(decode_context, dtype=np.float64)
        if decode_seqs <= 0:
            return np.full(ctx.shape, float(self.ops.overhead_s))
        per_seq = ctx / decode_seqs
        curve = self._decode_curve(decode_seqs)
        if curve is not None:
            lax1, lrow, last1 = curve
            att = np.exp(np.interp(np.log(np.maximum(per_seq, 1e-300)), lax1, lrow))
            if not per_seq.size or per_seq.max() <= last1:
                return self._decode_constant(decode_seqs) + self._full_layers * att
        return self._decode_constant(decode_seqs) + self._attn_decode(decode_seqs, per_seq)

    def _decode_curve(self, seqs: int):
        """The ops' decode attention curve at ``seqs`` sequences (``None``: no shortcut).

        NOTE (speed): a decode stretch asks for k iterations at once; the curve lets them be
        evaluated with five numpy calls and no per-call dispatch through the ops and table,
        with the same arithmetic as the general path (the engine tests compare the two).
        """
        if self._sliding_layers:
            return None
        curve_of = getattr(self.ops, "attn_decode_curve", None)
        return None if curve_of is None else curve_of(seqs)

    def _mixed_prefill(self, shape_chunks, seqs: int) -> float:
        """A mixed step's time up to its decode attention: every token's linear work and the
        prefill chunks' attention (what :meth:`step_time` remembers by chunks and seqs)."""
        tokens = seqs  # shape.num_tokens
        for new, _ in shape_chunks:
            tokens += new
        t = self._linear_time(tokens)
        # NOTE (speed): each chunk's attention is remembered by its (new, cached) tokens: a
        # trace's prompt lengths recur beside decode batches that do not (the engine_speed
        # workload: 3,558 distinct chunks in 30,006, where 11% of the mixed steps repeated)
        memo = self._chunk_cache
        chunks = []
        for chunk in shape_chunks:
            attn = memo.get(chunk)
            if attn is None:
                attn = self._attn_prefill(*chunk)
                if len(memo) >= _CACHE_LIMIT:
                    memo.clear()
                memo[chunk] = attn
            chunks.append(attn)
        t += sum(chunks)
        if len(chunks) > 1 and not self.model.is_mla:  # MLA: a whole module each (docstring)
            t -= self._shared_launch(shape_chunks, chunks)
        return t

    def step_time(self, shape: StepShape) -> float:
        """Seconds of one iteration of ``shape`` (see the module docstring for the sum).

        NOTE (speed): the engine asks once per mixed step; the sum skips the terms a model
        does not have (a 0.0 added changes no float) and counts tokens without the shape's
        properties. The part before the decode attention is remembered by (chunks, decode
        seqs): a workload of few prompt lengths (every prefill the same chunk beside a few
        decoders) repeats it while the decoders' context does not; the same floats are added in
        the same order, so the sum is the same to the bit.
        """
        seqs, shape_chunks = shape.decode_seqs, shape.prefill_chunks
        if not shape_chunks:
            ctx = np.array([float(shape.decode_context)])
            return float(self.decode_times(seqs, ctx)[0])
        if len(shape_chunks) == 1:  # one chunk: two lookups, no memo (see _one_chunk)
            t = self._one_chunk(shape_chunks[0], seqs)
        else:
            t = self._several_chunks(shape_chunks, seqs)
        if seqs > 0:  # a float takes the ops' scalar path (pure decode never comes here)
            t += self._attn_decode_one(seqs, shape.decode_context / seqs)
            if self._hybrid:
                t += self._gdn_decode(seqs)
        t += self._lm_head_time(seqs + len(shape_chunks))
        return t + self.ops.overhead_s

    def _one_chunk(self, chunk: tuple[int, int], seqs: int) -> float:
        """:meth:`_mixed_prefill` of one prefill chunk beside ``seqs`` decoders, by the same
        operations: the linear work of its tokens plus the chunk's attention (remembered by
        ``(new, cached)``).

        NOTE (speed): most mixed steps hold one chunk (the default job's sizing runs: 80 %),
        and their ``(chunk, seqs)`` keys rarely repeat (a trace's prompt lengths beside
        decode batches of every size), so the mixed-step memo cleared itself every 4,096 keys
        while remembering them; read this way they cost two lookups, about a memo hit's time,
        and leave the memo to steps of several chunks. ``0 + attn`` is ``attn`` (the
        ``sum`` of one float), so the float is the same to the bit.
        """
        linear = self._linear_time(seqs + chunk[0])  # first, as _mixed_prefill asks: the
        # order a step model first reads its tables is the order a profile import writes them
        attn = self._chunk_cache.get(chunk)
        if attn is None:
            attn = self._attn_prefill(*chunk)
            if len(self._chunk_cache) >= _CACHE_LIMIT:
                self._chunk_cache.clear()
            self._chunk_cache[chunk] = attn
        return linear + attn

    def _several_chunks(self, shape_chunks, seqs: int) -> float:
        """:meth:`_mixed_prefill` of several chunks, remembered by ``(chunks, seqs)``."""
        key = (shape_chunks, seqs)
        t = self._mixed_cache.get(key)
        if t is None:
            t = self._mixed_prefill(shape_chunks, seqs)
            if len(self._mixed_cache) >= _MIXED_LIMIT:
                self._mixed_cache.clear()
            self._mixed_cache[key] = t
        return t

    def sources(self) -> dict[str, str]:
        """``{table_name: source}`` for every operator table the iteration uses; with
        ``moe_backend: deepgemm`` the routed experts too, labelled ``deepgemm:`` and the
        source of the GEMM table their first grouped GEMM reads."""
        out = dict(self.ops.sources())
        if self.moe_backend == "deepgemm":  # no MoE table is read
            out = {k: v for k, v in out.items() if not k.startswith("moe ")}
            n, k = self._expert_up
            gemm = f"gemm {self._fmt('experts')} n={n} k={k}"
            out["moe deepgemm"] = "deepgemm: " + (out.get(gemm) or self._family_source())
        return out

    def _family_source(self) -> str:
        """The label of the experts' GEMM format where no table of their shape was read: the
        ops' family label (a calibrated roofline says what it divides), else "roofline"."""
        of = getattr(self.ops, "gemm_source", None)
        return "roofline" if of is None else of(self._fmt("experts"))


def _store(cache: dict[int, float], key: int, value: float) -> None:
    """Insert into a bounded cache (cleared wholesale when full; entries are pure functions)."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
