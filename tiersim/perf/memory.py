"""GPU memory of one replica: weights, activation reserve and the KV cache that is left.

Tensor parallelism (``tp`` GPUs per replica) is modelled as vLLM shards a model: query heads,
dense-MLP and expert widths, and the vocabulary (embeddings and ``lm_head``) are split ``tp``
ways; KV heads are split while ``tp <= kv_heads`` and replicated beyond that (each GPU then holds
one KV head); norms and the MoE router are replicated. All figures here are PER GPU, and ``GB``
is 1e9 bytes.

Usable KV memory per GPU = ``hbm x gpu_memory_utilization - weights - activation reserve``.
The default activation reserve (:func:`default_activation_reserve`) is what vLLM sets aside
before sizing its KV cache, i.e. the peak of its profiling forward pass plus memory outside
PyTorch's allocator:

- a fixed 1.5 GB: CUDA-graph memory pools (vLLM logs 0.3-1 GiB for graph capture), NCCL and
  cuBLAS workspaces and sampler buffers (vLLM's "non-torch memory", 0.2-0.5 GiB);
- plus ``max_num_batched_tokens x 2 bytes x (4 x hidden + qkv width + 3 x MLP width)`` per GPU:
  the BF16 activations live at the peak of one layer of a full-budget prefill (residual, normed
  input, attention output, hidden-state copy; the fused QKV output; the gate/up output and the
  activated product). For MoE the MLP width is ``top_k x expert_intermediate`` because the
  fused-MoE kernel keeps one intermediate row per (token, expert) pair.

Gated delta-net layers (Qwen3-Next, Qwen3.5) hold no KV per token; each running sequence holds
their fixed state instead (:meth:`ModelArch.state_bytes_per_seq`; ``1 + k`` copies with ``k``
speculative tokens), charged as whole KV blocks of the shared pool (:func:`state_blocks`; the
scheduler's ``state_blocks``). KV bytes per token count the softmax layers only. An
approximation: vLLM's hybrid allocator also enlarges the attention block so that one page
holds one layer's state (544 tokens for Qwen3-Next on one GPU), so a short request holds at
least one such block; tiersim keeps the scheduler's block size, so for many short requests
it fits up to about a quarter more sequences than vLLM does. The prefix cache and KV offload
levels do not model the recurrent state a cached prefix also needs (a note says so).

Sliding-window layers (gpt-oss, Mistral 7B v0.1) are sized per token as any softmax layer, but
the scheduler charges them as vLLM's hybrid allocator does (:func:`kv_groups`): the layers are
split into KV-cache groups of the same size, one page per group per block of tokens, and a
sliding-window group holds pages for at most its window and one block of a sequence's latest
tokens (:func:`tiersim.engine.request.seq_blocks`), so long sequences hold fewer blocks than
with full attention. With a speculative draft model beside the target (its KV in every block)
the window is not used: every layer is charged for every token (conservative); nor with a KV
connector (prefill/decode disaggregation, KV offload levels), for which vLLM turns its hybrid
KV cache manager off (:func:`tiersim.fleet.windowed`).

For Llama-3.1-8B at the default 8,192-token budget this is 1.5 + 1.07 = 2.6 GB, for
Qwen3-Coder-30B-A3B 2.0 GB and for Llama-3.1-70B (tp=1) 3.6 GB, in line with the 1-4 GiB of
"activation peak" plus graph memory that vLLM reports for such models.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from tiersim.errors import FitError
from tiersim.hardware.arch import ModelArch
from tiersim.hardware.gpus import GPU
from tiersim.hardware.precisions import (
    Precision,
    WeightFormats,
    kv_dtype_bytes,
    resolve_kv_dtype,
    w4a16_group_size,
    weight_formats,
)

GB = 1e9
MAX_NODE_GPUS = 8
"""GPUs of one node (an HGX board): a replica on more spans nodes (a fit error says how many)."""
#: Fixed part of the default activation reserve, bytes (see module docstring).
FIXED_RESERVE_BYTES = 1.5e9
#: Default scheduler token budget used to size the activation reserve.
DEFAULT_MAX_BATCHED_TOKENS = 8192
#: vLLM's default ``gpu_memory_utilization`` (a tier's default too).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: The tier keys a split refusal asks the user to change (:attr:`FitError.key`).
GPUS_KEY = ("gpus_per_replica",)
EXPERT_KEY = ("expert_parallel",)


#: The tensor-parallel sizes a refusal suggests (times the data-parallel ranks).
SUGGESTED_TPS = (1, 2, 4, 8, 16, 32, 64)

#: The MoE kernels a tier may name (``moe_backend``). ``auto``: the profile's MoE table, the
#: kernel today's vLLM picks (NVIDIA's tables come from vLLM 0.19-0.24). ``deepgemm``: the
#: DeepGEMM contiguous grouped GEMM that vLLM 0.12's image runs for block-FP8 experts on Hopper
#: below MoE TP 8 (:func:`tiersim.perf.assembly.deepgemm_rows`).
MOE_BACKENDS = ("auto", "deepgemm")


def _valid_tps(model: ModelArch) -> list[int]:
    """Powers of two up to 64 that can split ``model``, its routed experts tensor-parallel
    over them too (the split without expert parallelism)."""
    return [t for t in SUGGESTED_TPS if not _split_problem(model, t)
            and not (model.is_moe and model.expert_intermediate % t)]


def _gpu_counts(model: ModelArch, dp: int, splits) -> str:
    """The ``gpus_per_replica`` values of ``dp`` data-parallel ranks (``dp`` times a
    suggested tensor-parallel size that splits ``model``'s attention) on which
    ``splits(gpus)`` holds, as ``{2, 4, 8}``; "" when none does."""
    counts = [t * dp for t in SUGGESTED_TPS if not _split_problem(model, t) and splits(t * dp)]
    return "{" + ", ".join(map(str, counts)) + "}" if counts else ""


def _split_problem(model: ModelArch, tp: int) -> str:
    """Why ``model``'s attention and dense MLPs cannot be split ``tp`` ways ("" when they can;
    the routed experts' split, tensor- or expert-parallel, is :func:`check_parallel`'s). The
    dense MLPs are a dense model's, a MoE model's leading dense layers and its shared experts
    (one MLP of their summed width): vLLM's ``MergedColumnParallelLinear`` divides each width
    by ``tp`` and stops where it does not divide."""
    if model.heads % tp:
        return f"{model.heads} attention heads are not divisible by {tp}"
    kv = model.kv_heads
    if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
        return f"{kv} KV heads cannot be split or replicated evenly over {tp}"
    if model.is_hybrid and (model.linear_k_heads % tp or model.linear_v_heads % tp):
        return (f"{model.linear_k_heads} / {model.linear_v_heads} linear-attention key / value "
                f"heads are not divisible by {tp}")
    if model.dense_mlp_layers and model.intermediate % tp:  # a MoE model's dense layers too
        return f"MLP width {model.intermediate} is not divisible by {tp}"
    if model.is_moe and model.shared_intermediate % tp:  # one MLP of their summed width
        return f"shared-expert width {model.shared_intermediate} is not divisible by {tp}"
    return ""


def check_tp(model: ModelArch, tp: int, dp: int = 1) -> None:
    """Raise :class:`FitError` when ``model`` cannot be tensor-parallel over ``tp`` GPUs (the
    replica's ``tp x dp`` GPUs over ``dp`` data-parallel ranks: the values suggested are
    ``gpus_per_replica``'s, so ``dp`` times the splits that work)."""
    if tp < 1:
        raise FitError(f"gpus_per_replica must be >= 1 (got {tp})", key=GPUS_KEY)
    problem = _split_problem(model, tp)
    if problem:
        valid = ", ".join(str(t * dp) for t in _valid_tps(model))
        ranks = f" (gpus_per_replica {tp * dp} over data_parallel {dp})" if dp > 1 else ""
        raise FitError(
            f"{model.name} cannot be split over {tp} GPUs{ranks}: {problem}; "
            f"use gpus_per_replica in {{{valid}}}", key=GPUS_KEY
        )


def check_parallel(model: ModelArch, tp: int, dp: int = 1, ep: int = 1) -> None:
    """Raise :class:`FitError` unless ``tp`` x ``dp`` GPUs with expert parallelism ``ep`` can
    serve ``model``: attention splits ``tp`` ways, and ``ep`` must divide the replica's
    ``tp x dp`` GPUs (1: experts tensor-parallel over all of them; ``tp x dp``: vLLM's
    ``--enable-expert-parallel``) and the model's expert count. Each refusal's ``key`` is the
    tier key its fix names first, and a fix that asks for a GPU count lists those that work."""
    if dp < 1:
        raise FitError(f"data_parallel must be >= 1 (got {dp})", key=("data_parallel",))
    check_tp(model, tp, dp)
    gpus = tp * dp
    if ep < 1 or gpus % ep:
        raise FitError(f"expert parallel size {ep} must divide the replica's {gpus} GPUs",
                       key=EXPERT_KEY)
    if ep > 1 and not model.is_moe:
        raise FitError(f"{model.name} has no experts; expert_parallel needs a MoE model",
                       key=EXPERT_KEY)
    if ep > 1 and model.num_experts % ep:
        raise FitError(_experts_note(model, dp, ep), key=GPUS_KEY)
    moe_tp = moe_split(tp, dp, ep)[0]
    if model.is_moe and model.expert_intermediate % moe_tp:
        raise FitError(_expert_width_note(model, dp, moe_tp), key=EXPERT_KEY)


def _experts_note(model: ModelArch, dp: int, ep: int) -> str:
    """Why ``model``'s experts cannot be split whole and evenly over ``ep`` GPUs (fewer experts
    than GPUs; or an uneven split, which vLLM runs but tiersim does not model: it sizes and
    times each GPU for an even share), and the GPU counts of ``dp`` ranks that split them
    evenly."""
    counts = _gpu_counts(model, dp, lambda gpus: model.num_experts % gpus == 0)
    fix = f"use gpus_per_replica in {counts}, or drop" if counts else "drop"
    if model.num_experts < ep:  # some GPUs would hold no expert
        return (f"{model.name}: {model.num_experts} experts cannot be split over {ep} GPUs; "
                f"{fix} expert_parallel")
    # vLLM's determine_expert_map gives the first experts % ep GPUs one expert more
    few = model.num_experts // ep
    return (f"{model.name}: {model.num_experts} experts over {ep} GPUs are {few + 1} on some "
            f"and {few} on others (vLLM gives the first GPUs one more), and tiersim models an "
            f"even share only; {fix} expert_parallel")


def _expert_width_note(model: ModelArch, dp: int, moe_tp: int) -> str:
    """Why ``model``'s expert width cannot be split ``moe_tp`` ways, and the GPU counts of
    ``dp`` ranks that split it without expert parallelism."""
    counts = _gpu_counts(model, dp, lambda gpus: model.expert_intermediate % gpus == 0)
    fix = f", or use gpus_per_replica in {counts}" if counts else ""
    return (f"{model.name}: expert width {model.expert_intermediate} is not divisible by the "
            f"experts' tensor parallelism {moe_tp} (tp x data_parallel / expert_parallel); "
            f"set expert_parallel: true{fix}")


#: The output block of block-FP8 checkpoints (``weight_block_size`` [128, 128]).
FP8_BLOCK = 128


def block_split_problem(model: ModelArch, precision: str | Precision, tp: int, dp: int = 1,
                        ep: int = 1) -> str:
    """Why vLLM may refuse to load ``model``'s weights split this way ("" when nothing is in
    the way): each GPU's share of an expert or dense-MLP width must be whole 128-wide blocks in
    block FP8 (vLLM's ``Fp8LinearMethod`` / ``Fp8MoEMethod`` raise otherwise) and whole
    quantisation groups in W4A16 and W8A16 (the checkpoint's group size, else 128: Marlin's
    linear layers raise, and its MoE layers leave Marlin); expert parallelism keeps experts
    whole. Shared experts are a linear layer split ``tp`` ways, as a dense MLP is."""
    formats = weight_formats(model, precision)
    widths = []
    if model.is_moe:
        widths.append(("expert width", model.expert_intermediate, moe_split(tp, dp, ep)[0],
                       formats.of("experts")))
    if model.dense_mlp_layers and model.intermediate:
        widths.append(("MLP width", model.intermediate, tp, formats.of("mlp")))
    if model.is_moe and model.shared_intermediate:  # a linear layer of its own, tp-split
        widths.append(("shared-expert width", model.shared_intermediate, tp,
                       formats.of("shared_experts")))
    for what, width, split, fmt in widths:
        unit = _split_unit(fmt)
        if unit and split > 1 and (width // split) % unit:
            return _split_note(what, width, split, _split_format(fmt), unit)
    return ""


def _split_unit(fmt: Precision) -> int:
    """The width each GPU's share must be a multiple of in ``fmt`` (0: none): block FP8's
    128-wide blocks, W4A16's groups (none per channel)."""
    if fmt.name == "fp8_block":
        return FP8_BLOCK
    return w4a16_group_size(fmt) if fmt.name == "w4a16" else 0


def _split_format(fmt: Precision) -> str:
    """How the note of :func:`block_split_problem` names ``fmt``: its name, but an 8-bit
    weight-only format timed as ``w4a16`` (INT8 W8A16) as ``w8a16``."""
    return "w8a16" if fmt.name == "w4a16" and fmt.value_bits == 8 else fmt.name


def _split_note(what: str, width: int, split: int, fmt: str, unit: int) -> str:
    """The note of :func:`block_split_problem`: the split, why vLLM refuses it, the GPU
    counts that split ``width`` into whole units."""
    whole = [1] + [g for g in (2, 4, 8) if width % g == 0 and (width // g) % unit == 0]
    fix = "set expert_parallel, or " if what == "expert width" else ""
    if fmt == "fp8_block":
        kind = f"block-FP8 {what}"
        pieces, why = "blocks", "vLLM refuses to load that split in the versions that check it"
    else:
        kind = f"{fmt.upper()} {what}"
        pieces, why = "quantisation groups", (
            "vLLM's Marlin MoE kernel refuses that split (vLLM then runs a slower kernel than "
            "the one tiersim times, or fails to load)" if what == "expert width" else
            "vLLM's Marlin kernel refuses to load that split")
    return (f"its {kind} {width:,} over {split} GPUs is {width // split:,} per GPU, not whole "
            f"{unit}-wide {pieces}: {why}; {fix}split it over {' or '.join(map(str, whole))} "
            f"GPU{'s' if whole != [1] else ''}")


def moe_split(tp: int, dp: int = 1, ep: int = 1) -> tuple[int, int]:
    """``(moe_tp, moe_ep)``: how the experts of a ``tp x dp`` replica are split (vLLM: the
    expert layers span all ``tp x dp`` GPUs, ``ep`` of them by whole experts)."""
    return tp * dp // ep, ep


def heads_per_gpu(model: ModelArch, tp: int) -> tuple[int, int]:
    """(query heads, KV heads) held by each of ``tp`` GPUs; KV heads replicate past kv_heads."""
    check_tp(model, tp)
    return model.heads // tp, max(1, model.kv_heads // tp)


def params_per_gpu(model: ModelArch, tp: int = 1, dp: int = 1, ep: int = 1) -> dict[str, float]:
    """Parameter counts held by each GPU, by group (see module docstring for the sharding).

    Everything but the routed experts is split ``tp`` ways and replicated on each of the ``dp``
    attention data-parallel ranks; the routed experts are split over all ``tp x dp`` GPUs
    (tensor-parallel, or ``ep`` ways by whole experts: the bytes per GPU are the same).
    """
    check_parallel(model, tp, dp, ep)
    q_heads, kv_heads = heads_per_gpu(model, tp)
    if model.is_mla:  # the down-projections (q_a, kv_a) and a DSA indexer are replicated
        down = model.hidden * (model.q_lora_rank + model.kv_latent_dim)
        down += model.indexer_params_per_layer()
        attn = down + (model.attention_params_per_layer() - down) / tp
    else:
        q_out = 2 * q_heads if model.attn_gate else q_heads  # a gated query is twice as wide
        attn = model.hidden * (q_out + 2 * kv_heads) * model.head_dim
        attn += q_heads * model.head_dim * model.hidden
    attention = model.attention_layers * attn + model.linear_layers * (
        model.linear_params_per_layer() / tp)
    groups = model.param_groups()
    vocab_rows = math.ceil(model.vocab / tp)
    return {
        "embedding": vocab_rows * model.hidden,
        "lm_head": 0 if model.tie_embeddings else vocab_rows * model.hidden,
        "attention": attention,
        "mlp": groups["mlp"] / tp,
        "shared_experts": groups["shared_experts"] / tp,
        "experts": groups["experts"] / (tp * dp),
        "router": groups["router"],
        "norms": groups["norms"],
    }


def weight_bytes(
    model: ModelArch, precision: str | Precision, tp: int = 1, dp: int = 1, ep: int = 1
) -> float:
    """Bytes of weights on each GPU of a ``tp x dp`` replica at ``precision`` (a tier precision,
    ``"checkpoint"``, or :class:`~tiersim.hardware.precisions.WeightFormats`)."""
    formats = weight_formats(model, precision)
    params = params_per_gpu(model, tp, dp, ep)
    return sum(count * formats.bits_for(group) / 8 for group, count in params.items())


def checkpoint_bytes(model: ModelArch) -> float:
    """Bytes of the whole checkpoint as shipped (every parameter once, in the format its
    ``config.json`` declares for its group, scales included; BF16 where it declares none),
    multi-token-prediction layers included in their own format (:meth:`ModelArch.mtp_param_groups`
    in ``mtp_checkpoint``; tiersim does not serve them, so they are not in :func:`weight_bytes`).
    Vision towers are not counted."""
    from tiersim.hardware.precisions import checkpoint_bits

    mtp = model if model.mtp_checkpoint is None else dataclasses.replace(
        model, checkpoint=model.mtp_checkpoint)
    total = 0.0
    for of, groups in ((model, model.param_groups()), (mtp, model.mtp_param_groups())):
        total += sum(count * checkpoint_bits(of, g) / 8 for g, count in groups.items())
    return total


def kv_bytes_per_token(model: ModelArch, kv_dtype: str = "bf16", tp: int = 1) -> float:
    """KV-cache bytes one token occupies on each GPU: 2 x layers x KV heads x head_dim x bytes;
    MLA: layers x (kv_lora_rank + rope dim) x bytes, the same latent on every TP GPU; DSA: the
    latent in vLLM's sparse-MLA layout plus the indexer's key (:func:`dsa_bytes_per_layer`).
    ``kv_dtype="auto"`` is resolved as the server would (the checkpoint's declared KV format,
    else BF16), so every caller sizes blocks as :func:`kv_capacity_blocks` does."""
    kv_dtype = resolve_kv_dtype(model, kv_dtype)
    if model.is_dsa:
        return model.layers * dsa_bytes_per_layer(model, kv_dtype)
    if model.is_mla:
        return model.layers * model.kv_latent_dim * kv_dtype_bytes(kv_dtype)
    _, kv_heads = heads_per_gpu(model, tp)
    return 2 * model.attention_layers * kv_heads * model.head_dim * kv_dtype_bytes(kv_dtype)


def dsa_bytes_per_layer(model: ModelArch, kv_dtype: str) -> float:
    """Bytes one token takes in one DSA layer's caches, as vLLM lays them out: the latent (FP8:
    ``fp8_ds_mla``, the ``kv_lora_rank`` part in FP8 with an FP32 scale per 128 values and the
    rotary part in BF16; else the whole latent at ``kv_dtype``), plus the indexer's key, FP8 with
    an FP32 scale per 128 values whatever ``kv_dtype`` is."""
    if kv_dtype_bytes(kv_dtype) == 1:
        latent = model.kv_lora_rank + 4 * math.ceil(model.kv_lora_rank / 128) + (
            2 * model.qk_rope_head_dim)
    else:
        latent = model.kv_latent_dim * kv_dtype_bytes(kv_dtype)
    return latent + model.index_head_dim + 4 * math.ceil(model.index_head_dim / 128)


def state_blocks(model: ModelArch, tp: int = 1, block_size: int = 16, kv_dtype: str = "bf16",
                 draft: ModelArch | None = None, copies: int = 1) -> int:
    """KV blocks one running sequence's fixed state takes (gated delta-net layers: the
    recurrent state of :meth:`ModelArch.state_bytes_per_seq`, a hybrid draft model's too; 0
    for models without them): the state rounded up to whole blocks of
    :func:`kv_capacity_blocks`'s size, as vLLM's hybrid allocator gives each sequence whole
    pages of one shared pool for its state. ``copies``: states kept per sequence (vLLM keeps
    ``1 + k`` with ``k`` speculative tokens, one per position a verify step may stop at)."""
    state = copies * (model.state_bytes_per_seq(tp)
                      + (draft.state_bytes_per_seq(tp) if draft is not None else 0.0))
    if not state:
        return 0
    per_token = kv_bytes_per_token(model, kv_dtype, tp)
    if draft is not None:
        per_token += kv_bytes_per_token(draft, kv_dtype, tp)
    return math.ceil(state / (per_token * block_size))


def kv_groups(model: ModelArch) -> tuple[int, int, int]:
    """``(window, full_groups, window_groups)``: ``model``'s sliding window in tokens and its
    attention layers as vLLM's hybrid allocator groups them (groups of as many layers as the
    scarcer kind has, each kind's count rounded up to whole groups: gpt-oss's 18 + 18 layers
    are one full and one sliding group); ``(0, 1, 0)`` without a window, one group of all."""
    size = _group_size(model)
    if not size:
        return 0, 1, 0
    full = model.attention_layers - model.sliding_layers
    return model.sliding_window, -(-full // size), -(-model.sliding_layers // size)


def _group_size(model: ModelArch) -> int:
    """Layers in each of :func:`kv_groups`' groups (0: no sliding window to group)."""
    sliding = model.sliding_layers if model.sliding_window else 0
    if not sliding or model.is_mla or model.is_hybrid:
        return 0
    full = model.attention_layers - sliding
    return min(full, sliding) if full else sliding


def kv_pages(model: ModelArch, blocks: int) -> int:
    """The pages of :func:`kv_groups`' groups (each ``block_size`` tokens of one group's
    layers) that the memory of ``blocks`` blocks of every attention layer holds; ``blocks``
    itself without a window."""
    size = _group_size(model)
    return blocks * model.attention_layers // size if size else blocks


def vllm_longest_sequence(model: ModelArch, pages: int, block_size: int,
                          max_num_batched_tokens: int) -> int | None:
    """The largest ``max_model_len`` vLLM starts with on a cache of ``pages`` pages of
    :func:`kv_groups`' groups (:func:`kv_pages`), None where any length fits. vLLM's start-up
    check (``check_enough_kv_cache_memory``) sums every attention layer's most: a full layer
    ``ceil(n / block_size)`` pages, a sliding one ``ceil(min(window - 1 +
    max_num_batched_tokens, n) / block_size) + 1`` (one block more than it ever holds of a
    shorter sequence), against the pages of every layer the cache holds."""
    size = _group_size(model)
    if not size:
        return pages * block_size
    sliding = model.sliding_layers
    full, room = model.attention_layers - sliding, pages * size
    step = model.sliding_window - 1 + max_num_batched_tokens

    def needed(n: int) -> int:
        return full * -(-n // block_size) + sliding * (-(-min(step, n) // block_size) + 1)

    if not full and needed(step) <= room:
        return None
    lo, hi = 0, room * block_size  # needed(hi + 1) > room: a full layer alone outgrows it
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if needed(mid) <= room else (lo, mid - 1)
    return lo


def default_activation_reserve(
    model: ModelArch, tp: int = 1, max_num_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
) -> float:
    """Default per-GPU activation reserve (formula and justification in the module docstring)."""
    q_heads, kv_heads = heads_per_gpu(model, tp)
    qkv = (q_heads + 2 * kv_heads) * model.head_dim
    width = model.top_k * model.expert_intermediate if model.is_moe else model.intermediate
    mlp = width / tp
    per_token = 2.0 * (4 * model.hidden + qkv + 3 * mlp)
    return FIXED_RESERVE_BYTES + max_num_batched_tokens * per_token


def kv_capacity_blocks(
    model: ModelArch,
    precision: str | Precision,
    gpu: GPU,
    tp: int = 1,
    block_size: int = 16,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    activation_reserve_bytes: float | None = None,
    kv_dtype: str = "bf16",
    max_num_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
    dp: int = 1,
    ep: int = 1,
    draft: ModelArch | None = None,
    moe_backend: str = "auto",
) -> int:
    """KV-cache blocks of ``block_size`` tokens one replica holds; :class:`FitError` if none.

    ``draft``: a speculative draft model served beside the target on the same GPUs (BF16,
    ``tp``-sharded, as vLLM runs one): its weights come out of the budget and its KV for each
    token joins the target's in every block.

    With attention data parallelism (``dp`` > 1) each DP rank is its own scheduler with its own
    KV cache on its ``tp`` GPUs, and the answer is the blocks of ONE DP rank. ``ep``: expert
    parallel size (see :func:`check_parallel`). ``activation_reserve_bytes`` is per GPU;
    ``None`` uses the default of :func:`default_activation_reserve` sized for
    ``max_num_batched_tokens``. ``kv_dtype="auto"`` is the checkpoint's declared KV format, else
    BF16 (vLLM's default, :func:`~tiersim.hardware.precisions.resolve_kv_dtype`).
    ``moe_backend``: the tier's MoE kernel; a fit error offers only GPU counts that run it.

    A pure function of its arguments, kept for the :data:`KEPT_KV_CAPACITIES` arguments asked
    last (a sweep validates and builds the same tiers at every point); a :class:`FitError` is
    worked out each time.
    """
    args = (model, precision, gpu, tp, block_size, gpu_memory_utilization,
            activation_reserve_bytes, kv_dtype, max_num_batched_tokens, dp, ep, draft,
            moe_backend)
    try:
        hash(args)
    except TypeError:  # an argument that cannot be kept: worked out
        return _kv_capacity_blocks(*args)
    return _kept_kv_capacity_blocks(*args)


KEPT_KV_CAPACITIES = 1024
"""How many argument lists :func:`kv_capacity_blocks` keeps the answer of."""


def _kv_capacity_blocks(
    model: ModelArch, precision: str | Precision, gpu: GPU, tp: int, block_size: int,
    gpu_memory_utilization: float, activation_reserve_bytes: float | None, kv_dtype: str,
    max_num_batched_tokens: int, dp: int, ep: int, draft: ModelArch | None, moe_backend: str,
) -> int:
    """:func:`kv_capacity_blocks`, worked out."""
    prec = weight_formats(model, precision)
    budget = gpu.hbm_bytes * gpu_memory_utilization

    def need(t: int, e: int) -> tuple[float, float, float]:
        """Weights, activation reserve and one KV block, bytes per GPU, split ``t`` ways."""
        weights = weight_bytes(model, prec, t, dp, e)
        reserve = activation_reserve_bytes
        if reserve is None:
            reserve = default_activation_reserve(model, t, max_num_batched_tokens)
        per_token = kv_bytes_per_token(model, kv_dtype, t)
        if draft is not None:
            check_tp(draft, t, dp)  # its refusal names the replica's GPU counts
            weights += weight_bytes(draft, "bf16", t)
            per_token += kv_bytes_per_token(draft, kv_dtype, t)
        return weights, reserve, per_token * block_size

    weights, reserve, block_bytes = need(tp, ep)
    blocks = math.floor((budget - weights - reserve) / block_bytes)
    if blocks < 1:
        what = model if draft is None else dataclasses.replace(
            model, name=f"{model.name} with its draft {draft.name}")
        fits = _fewest_gpus(model, tp, dp, ep, lambda t, e: sum(need(t, e)) <= budget
                            and _runs_backend(model, prec, moe_backend, t, dp, e))
        auto = "" if fits or moe_backend == "auto" else "moe_backend: auto with "
        if auto:  # more GPUs hold it only where the tier's MoE kernel does not run
            fits = _fewest_gpus(model, tp, dp, ep, lambda t, e: sum(need(t, e)) <= budget)
        raise FitError(_fit_message(what, prec, gpu, tp, (weights, reserve, budget, block_bytes),
                                    fits, auto, dp))
    return blocks


_kept_kv_capacity_blocks = functools.lru_cache(maxsize=KEPT_KV_CAPACITIES, typed=True)(
    _kv_capacity_blocks)


def check_moe_backend(model: ModelArch, formats, backend: str, tp: int, dp: int,
                      ep: int) -> str:
    """``backend`` if the replica can run it, else ValueError with one line saying why:
    ``deepgemm`` is vLLM's block-FP8 MoE kernel, chosen (vLLM 0.12) unless the experts are
    tensor-parallel over 8 GPUs or more (with expert parallelism their TP is 1; vLLM 0.12's
    default all-gather dispatch across data-parallel ranks feeds the same kernel)."""
    if backend not in MOE_BACKENDS:
        raise ValueError(f"moe_backend must be one of {', '.join(MOE_BACKENDS)} (got {backend!r})")
    if backend == "auto":
        return backend
    fmt = formats.of("experts").name if model.is_moe else None
    moe_tp, _ = moe_split(tp, dp, ep)
    if fmt != "fp8_block" or moe_tp >= 8:
        what = (f"{model.name} has no MoE layers" if not model.is_moe else
                f"its experts are {fmt}" if fmt != "fp8_block" else
                f"its experts are tensor-parallel over {moe_tp} GPUs")
        raise ValueError(
            "moe_backend deepgemm is vLLM 0.12's kernel for block-FP8 (fp8_block) experts "
            "tensor-parallel over fewer than 8 GPUs, and " + what + "; use moe_backend: auto")
    return backend


def _runs_backend(model: ModelArch, formats: WeightFormats, backend: str, tp: int, dp: int,
                  ep: int) -> bool:
    """Whether a replica split ``tp x dp`` (``ep`` expert parallel) runs the MoE kernel
    ``backend`` (:func:`check_moe_backend`)."""
    try:
        check_moe_backend(model, formats, backend, tp, dp, ep)
    except ValueError:
        return False
    return True


def _fewest_gpus(model: ModelArch, tp: int, dp: int, ep: int, fits) -> int:
    """The fewest GPUs per replica (``dp`` times a power of two up to 64 that splits ``model``,
    :func:`check_parallel`) above ``tp x dp`` on which ``fits(tp, ep)`` holds (experts split
    over them all where ``ep`` splits them over all the replica's GPUs); 0 when none does."""
    for t in (t for t in _valid_tps(model) if t > tp):
        e = t * dp if ep == tp * dp > 1 else ep
        try:
            check_parallel(model, t, dp, e)
        except FitError:
            continue
        if fits(t, e):
            return t * dp
    return 0


def _fit_message(
    model: ModelArch,
    prec: WeightFormats,
    gpu: GPU,
    tp: int,
    sizes: tuple[float, float, float, float],
    fits: int = 0,
    switch: str = "",
    dp: int = 1,
) -> str:
    """The one-line FitError text: what is needed (``sizes``: weights, reserve, usable budget
    and one KV block, bytes per GPU), what there is, by how much it falls short, and the fewest
    GPUs per replica that hold it (``fits``; 0: none up to 64; ``switch``: what else to set
    there, e.g. another MoE kernel). With ``dp`` data-parallel ranks, the ``tp`` GPUs named are
    each rank's, which holds its own copy of all but the experts."""
    weights, reserve, budget, block_bytes = sizes
    short = weights + reserve - budget
    per = " per GPU" if tp > 1 else ""
    ranks = f" (each of data_parallel {dp} ranks)" if dp > 1 else ""
    head = f"{model.name} at {prec.label} does not fit on {tp}x {gpu.name}{ranks}: "
    need = f"weights {_gb(weights)} GB + reserve {_gb(reserve)} GB"
    nodes = f" ({math.ceil(fits / MAX_NODE_GPUS)} nodes of {MAX_NODE_GPUS})" \
        if fits > MAX_NODE_GPUS else ""
    fix = (f"use {switch}gpus_per_replica {fits}{nodes}, a smaller precision or a GPU with "
           "more memory" if fits else "use a smaller precision or a GPU with more memory")
    if reserve > weights:  # the activation reserve of a huge token budget is what is short
        lower = "lower scheduler.max_num_batched_tokens (it sets the activation reserve)"
        fix = lower if weights < budget else (  # lowering it alone cannot fit the weights
            f"{lower}, and use more gpus_per_replica, a smaller precision or a GPU with more "
            "memory (the weights alone do not fit)")
    fix = _utilization_fix(budget / gpu.hbm_bytes,
                           (weights + reserve + block_bytes) / gpu.hbm_bytes) + fix
    if short <= 0:
        return (
            f"{head}{need} leave {-short / 1e6:.1f} MB of usable {_gb(budget)} GB{per}, "
            f"less than one KV block ({block_bytes / 1e6:.1f} MB); {fix}"
        )
    return f"{head}{need} > usable {_gb(budget)} GB{per} (short by {_shortfall(short)}); {fix}"


def _utilization_fix(util: float, needed: float) -> str:
    """The first fix of a fit error where the scenario lowered ``gpu_memory_utilization``
    below what the replica needs (``needed``: weights, reserve and one KV block over the GPU's
    memory) and vLLM's default would hold it: the utilization that fits, rounded up to three
    decimals; "" otherwise (more memory than the default is not offered as a fix)."""
    least = math.floor(needed * 1000) / 1000 + 0.001
    if not util < least <= DEFAULT_GPU_MEMORY_UTILIZATION:
        return ""
    return f"set gpu_memory_utilization to at least {least:.3f} (it is {util:.6g}), or "


def _shortfall(n_bytes: float) -> str:
    """A fit error's shortfall: in GB (:func:`_gb`), in MB where that would read 0.0 GB."""
    return f"{n_bytes / 1e6:.1f} MB" if n_bytes < 0.05 * GB else f"{_gb(n_bytes)} GB"


def _gb(n_bytes: float) -> str:
    """Bytes as GB for a message: one decimal, thousands separated; 3 significant digits with
    an exponent beyond a million GB (a config with absurd sizes)."""
    gb = n_bytes / GB
    return f"{gb:,.1f}" if abs(gb) < 1e6 else f"{gb:.3g}"
