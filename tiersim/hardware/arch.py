"""The architecture record of a decoder-only transformer and its parameter counts by group.

Groups (each can carry its own weight format, :mod:`tiersim.hardware.precisions`): ``embedding``,
``lm_head``, ``attention`` (q/k/v/o, or the MLA projections), ``mlp`` (dense MLPs: every layer of
a dense model, the first ``dense_layers`` of a MoE model), ``shared_experts`` (always-active
experts of each MoE layer), ``experts`` (routed), ``router`` and ``norms``.

Multi-head latent attention (MLA: DeepSeek-V3, Kimi-K2): ``kv_lora_rank > 0``. Queries go through
a rank-``q_lora_rank`` bottleneck (0: a plain projection), keys and values through one shared
latent of ``kv_lora_rank`` plus a ``qk_rope_head_dim`` rotary key; the KV cache holds only that
latent and rotary key, one copy per token per layer, on every tensor-parallel GPU.

DeepSeek sparse attention (DSA: DeepSeek-V3.2, GLM-5): MLA plus a lightning indexer,
``index_topk > 0``. The indexer projects each token to ``index_heads`` FP8 queries of
``index_head_dim`` (from the query's low-rank latent) and one key of ``index_head_dim`` (from the
hidden state, cached per token and layer beside the latent), scores every cached token with
them and keeps the best ``index_topk``; MLA then attends over those tokens only. Its weights
(``wq_b``, ``wk``, ``weights_proj``) are replicated on every tensor-parallel GPU, as vLLM
loads them.

Hybrid linear attention (Qwen3-Next, Qwen3.5): ``linear_layers > 0`` of the layers are gated
delta-net (GDN) layers instead of softmax attention. A GDN layer projects the hidden state to
queries and keys (``linear_k_heads x linear_k_dim`` each), values and an output gate
(``linear_v_heads x linear_v_dim`` each) and two per-head scalars (``in_proj_ba``), runs a short
causal convolution (``linear_conv`` taps) and the delta-rule recurrence, and projects back
(``out_proj``). It keeps no per-token KV: each sequence holds a fixed state per layer, a
``linear_v_heads x linear_k_dim x linear_v_dim`` matrix and the convolution's last
``linear_conv - 1`` inputs (:meth:`ModelArch.state_bytes_per_seq`). The other layers are softmax
attention whose query projection also produces an output gate when ``attn_gate`` (twice the
query width).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer, dense or mixture-of-experts (every layer MoE).

    intermediate: dense MLP width (0 for an all-MoE model).
    num_experts / expert_intermediate / top_k: routed experts (0 for a dense model).
    tie_embeddings: ``lm_head`` shares the embedding matrix (stored once).
    qk_norm: per-head RMS norms on queries and keys (Qwen3).
    dense_layers: leading layers of a MoE model with a dense MLP of width ``intermediate``.
    shared_intermediate: summed width of the shared experts of each MoE layer (0: none).
    q_lora_rank ... v_head_dim: MLA shapes (module docstring); ``kv_lora_rank`` 0 means GQA.
    index_heads, index_head_dim, index_topk: the DSA indexer (module docstring); 0: dense MLA.
    checkpoint: ``(group, format, bits per weight)`` for each group the checkpoint quantises
        (see :func:`tiersim.hardware.precisions.weight_formats`); empty for a BF16 checkpoint.
    mtp_layers: multi-token-prediction layers the checkpoint ships for speculative decoding
        (DeepSeek-V3 ``num_nextn_predict_layers``; MiniMax-M2's config names MTP modules but
        its published 230 B parameters hold none); counted in the checkpoint's size only,
        since tiersim serves without speculative decoding.
    mtp_checkpoint: ``checkpoint`` of the multi-token-prediction layers where their format
        differs from the model's (ModelOpt's NVFP4 exports leave them BF16 by name in the
        ignore list); ``None``: the same as ``checkpoint``.
    static_fp8_activations: the checkpoint's per-tensor FP8 layers carry calibrated (static)
        activation scales (:func:`tiersim.hardware.hf_quant.checkpoint_static_fp8`), so an
        engine quantises their inputs without first computing a scale; ``False``: dynamic, as
        an engine quantising a BF16 checkpoint at load time runs them.
    kv_cache: the KV-cache format the checkpoint declares (``"fp8"``: ModelOpt's
        ``kv_cache_quant_algo`` or a compressed-tensors ``kv_cache_scheme`` of 8-bit floats);
        ``""`` when it declares none. vLLM's ``--kv-cache-dtype auto`` (its default) serves
        that format, else the model dtype (BF16); see
        :func:`tiersim.hardware.precisions.resolve_kv_dtype`.
    sliding_window / sliding_layers: how many layers attend only to the last
        ``sliding_window`` tokens (gpt-oss alternates them); 0 when all attention is full.
    source: "catalogue" or the config.json path it was read from.
    max_context: the longest sequence (prompt + output) the model serves, vLLM's default
        ``max_model_len``: its config's ``max_position_embeddings`` (the smallest of the
        length keys vLLM reads, :data:`~tiersim.hardware.hf_fields.CONTEXT_KEYS`), stretched
        by a YaRN / linear / dynamic ``rope_scaling`` factor as vLLM derives it; 0: not known,
        no limit. ``context_assumed``: the config gives no length key, so ``max_context`` is
        the 2,048 tokens vLLM assumes, and a ``max_model_len`` asked for is taken unchecked.
        ``context_limit``: the most a ``max_model_len`` asked for may be where that is more than
        ``max_context`` (a LongRoPE model's default is its pretraining length); 0: the same.
    linear_layers ... linear_conv: gated delta-net layers and their shapes (module docstring);
        0 for a model of softmax attention only. ``state_bytes``: bytes per element of the
        recurrent state (vLLM's ``--mamba-ssm-cache-dtype auto``: the model's BF16, unless the
        config names ``mamba_ssm_dtype``). attn_gate: the softmax layers' gated query.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int = 0
    num_experts: int = 0
    expert_intermediate: int = 0
    top_k: int = 0
    tie_embeddings: bool = False
    qk_norm: bool = False
    sliding_window: int = 0
    sliding_layers: int = 0
    source: str = "catalogue"
    dense_layers: int = 0
    shared_intermediate: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    checkpoint: tuple[tuple[str, str, float], ...] = ()
    mtp_layers: int = 0
    mtp_checkpoint: tuple[tuple[str, str, float], ...] | None = None
    kv_cache: str = ""
    static_fp8_activations: bool = False
    max_context: int = 0
    context_assumed: bool = False
    context_limit: int = 0
    linear_layers: int = 0
    linear_k_heads: int = 0
    linear_v_heads: int = 0
    linear_k_dim: int = 0
    linear_v_dim: int = 0
    linear_conv: int = 0
    state_bytes: int = 2
    attn_gate: bool = False
    index_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0

    @property
    def is_moe(self) -> bool:
        """True when the MLPs are routed experts."""
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (DeepSeek-V3 / Kimi-K2)."""
        return self.kv_lora_rank > 0

    @property
    def is_dsa(self) -> bool:
        """True for DeepSeek sparse attention (MLA over the indexer's top-k tokens)."""
        return self.is_mla and self.index_topk > 0

    def indexer_params_per_layer(self) -> int:
        """DSA: the indexer's ``wq_b`` (query latent to its heads), ``wk`` (hidden to its key)
        and ``weights_proj`` (hidden to a weight per head) of one layer; 0 without one."""
        if not self.is_dsa:
            return 0
        q_in = self.q_lora_rank or self.hidden
        return (q_in * self.index_heads * self.index_head_dim
                + self.hidden * self.index_head_dim + self.hidden * self.index_heads)

    @property
    def is_hybrid(self) -> bool:
        """True when some layers are gated delta-net (linear attention) layers."""
        return self.linear_layers > 0

    @property
    def attention_layers(self) -> int:
        """Layers of softmax attention (the ones holding KV per token)."""
        return self.layers - self.linear_layers

    @property
    def moe_layers(self) -> int:
        """Layers with routed experts."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def dense_mlp_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.dense_layers if self.is_moe else self.layers

    @property
    def kv_latent_dim(self) -> int:
        """MLA: width of the cached latent per token and layer (``kv_lora_rank + rope``)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def q_dim(self) -> int:
        """Width of the query projection (heads x head_dim)."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the key (or value) projection (kv_heads x head_dim)."""
        return self.kv_heads * self.head_dim

    def attention_params_per_layer(self) -> int:
        """q, k, v and o projection weights of one layer (MLA: its five projections)."""
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = self.hidden * self.q_lora_rank + self.q_lora_rank * self.heads * qk
            else:
                q = self.hidden * self.heads * qk
            kv_a = self.hidden * self.kv_latent_dim
            kv_b = self.kv_lora_rank * self.heads * (self.qk_nope_head_dim + self.v_head_dim)
            o = self.heads * self.v_head_dim * self.hidden
            return q + kv_a + kv_b + o + self.indexer_params_per_layer()
        q_out = 2 * self.q_dim if self.attn_gate else self.q_dim
        return self.hidden * (q_out + 2 * self.kv_dim) + self.q_dim * self.hidden

    @property
    def linear_qk_dim(self) -> int:
        """GDN: width of the query (or key) projection of one layer."""
        return self.linear_k_heads * self.linear_k_dim

    @property
    def linear_value_dim(self) -> int:
        """GDN: width of the value (or output-gate) projection of one layer."""
        return self.linear_v_heads * self.linear_v_dim

    def linear_params_per_layer(self) -> int:
        """GDN: ``in_proj_qkvz``, ``in_proj_ba``, ``out_proj``, the convolution's taps and the
        per-head decay and bias of one layer (its norm is with :meth:`norm_params_per_layer`)."""
        qk, v = self.linear_qk_dim, self.linear_value_dim
        projections = self.hidden * (2 * qk + 2 * v) + self.hidden * 2 * self.linear_v_heads
        return projections + v * self.hidden + (2 * qk + v) * self.linear_conv + (
            2 * self.linear_v_heads)

    def attention_params(self) -> int:
        """Attention weights of every layer: softmax layers and gated delta-net layers."""
        return (self.attention_layers * self.attention_params_per_layer()
                + self.linear_layers * self.linear_params_per_layer())

    def state_bytes_per_seq(self, tp: int = 1) -> float:
        """GDN: bytes of one sequence's fixed state on each of ``tp`` GPUs, every linear layer
        (the recurrent matrix per value head, and the convolution's window in BF16)."""
        if not self.is_hybrid:
            return 0.0
        ssm = self.linear_v_heads * self.linear_k_dim * self.linear_v_dim * self.state_bytes
        conv = (2 * self.linear_qk_dim + self.linear_value_dim) * (self.linear_conv - 1) * 2
        return self.linear_layers * (ssm + conv) / tp

    def mlp_params_per_layer(self) -> int:
        """Dense gate, up and down projections of one dense layer."""
        return 3 * self.hidden * self.intermediate

    def expert_params_per_layer(self) -> int:
        """All routed experts of one layer (gate, up, down each)."""
        return self.num_experts * 3 * self.hidden * self.expert_intermediate

    def norm_params_per_layer(self) -> int:
        """The two RMS norms of a block, plus q/k norms where the model has them."""
        return 2 * self.hidden + (2 * self.head_dim if self.qk_norm else 0)

    def param_groups(self) -> dict[str, int]:
        """Parameter counts of the whole model by group (the groups precisions quantise)."""
        return {
            "embedding": self.vocab * self.hidden,
            "lm_head": 0 if self.tie_embeddings else self.vocab * self.hidden,
            "attention": self.attention_params(),
            "mlp": self.dense_mlp_layers * self.mlp_params_per_layer(),
            "shared_experts": self.moe_layers * 3 * self.hidden * self.shared_intermediate,
            "experts": self.moe_layers * self.expert_params_per_layer(),
            "router": self.moe_layers * self.hidden * self.num_experts,
            "norms": self.layers * self.norm_params_per_layer() + self.hidden,
        }

    def mtp_param_groups(self) -> dict[str, int]:
        """Parameters of the multi-token-prediction layers by group (each a full block like
        the last layer, plus its ``2 x hidden -> hidden`` input projection and two norms)."""
        n, last = self.mtp_layers, "experts" if self.is_moe else "mlp"
        if n == 0:
            return {}
        groups = {
            "attention": n * self.attention_params_per_layer(),
            "norms": n * (self.norm_params_per_layer() + 2 * self.hidden),
            "mlp": n * 2 * self.hidden * self.hidden,
        }
        if last == "experts":
            groups["experts"] = n * self.expert_params_per_layer()
            groups["shared_experts"] = n * 3 * self.hidden * self.shared_intermediate
            groups["router"] = n * self.hidden * self.num_experts
        else:
            groups["mlp"] += n * self.mlp_params_per_layer()
        return groups

    @property
    def total_params(self) -> int:
        """All stored parameters."""
        return sum(self.param_groups().values())

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (top-k experts only; embeddings counted once)."""
        groups = self.param_groups()
        experts = self.moe_layers * self.top_k * 3 * self.hidden * self.expert_intermediate
        return self.total_params - groups["experts"] + experts
