"""The architecture fields a Hugging Face config's keys give, per model type: the shared
sizes (layers, hidden, heads, head width, vocabulary), the context vLLM serves (its length
keys and RoPE scaling), MoE experts (Qwen, Mixtral, gpt-oss), DeepSeek's MLA and sparse
attention, GLM-4.5's layout, gated delta-net hybrids (Qwen3-Next, Qwen3.5) and sliding-window
attention.

Each reader returns the :class:`~tiersim.hardware.arch.ModelArch` fields it reads, for
:func:`tiersim.hardware.hf_config.load_hf_config` to build the model from.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.hf_file import _Config
from tiersim.hf_text import (
    DSA_TYPES,
    GPT_OSS_TOP_K,
)


def _common(cfg: _Config, name: str) -> dict[str, Any]:
    """Fields every supported type shares."""
    hidden, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise cfg.error("num_key_value_heads", f"must divide num_attention_heads ({heads})")
    return {
        "name": name,
        "layers": cfg.int("num_hidden_layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": (cfg.int("head_dim") if cfg.data.get("head_dim") is not None
                     else _default_head_dim(cfg, hidden, heads)),
        "vocab": cfg.int("vocab_size"),
        **_contexts(cfg),
        "context_assumed": not any(cfg.data.get(key) is not None for key in CONTEXT_KEYS),
        "tie_embeddings": cfg.flag("tie_word_embeddings"),
        "source": str(cfg.path),
    }


#: RoPE types whose context vLLM does not scale by their ``factor`` (their own
#: ``max_position_embeddings`` already covers it); every other type, ``yarn``, ``linear``,
#: ``dynamic`` and ``default`` / ``mrope`` (no factor: 1) among them, multiplies it.
UNSCALED_ROPE = ("su", "longrope", "llama3")
#: The longest context a rope factor may stretch a model to (a scheduler's ``max_model_len``
#: bound): beyond it the factor is a typo, not a context.
MAX_STRETCHED_CONTEXT = 100_000_000


#: The keys vLLM derives a model's longest sequence from (``derive_max_model_len_and_key``):
#: the smallest of those given, but ``model_max_length``, where given, over the others.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len")
#: The context vLLM assumes for a config that gives none of the :data:`CONTEXT_KEYS`
#: (``_get_and_verify_max_len``'s ``default_max_len``, with a warning; a ``max_model_len``
#: asked for is then taken unchecked).
ASSUMED_CONTEXT = 2048


def _max_context(cfg: _Config) -> int:
    """The longest sequence vLLM serves by default: the smallest of the :data:`CONTEXT_KEYS`
    given (``model_max_length`` over the others; :data:`ASSUMED_CONTEXT`, with a note, when
    none is, as vLLM assumes) times the
    ``factor`` of a ``rope_parameters`` / ``rope_scaling`` block whose type (``rope_type``, or
    the legacy ``type``) is not in :data:`UNSCALED_ROPE`; for ``yarn``, its pretraining
    context (:func:`_yarn_original`) times the factor."""
    given = {key: _context_within_bound(cfg, key) for key in CONTEXT_KEYS
             if cfg.data.get(key) is not None}
    context = given.get("model_max_length") or min(given.values(), default=0)
    if not context:
        warnings.warn(Note(
            f"{cfg.path}: no context-length key ({', '.join(CONTEXT_KEYS[:4])}, ...): tiersim "
            f"serves {ASSUMED_CONTEXT:,} tokens, as vLLM assumes; write "
            "max_position_embeddings, or set the tier's scheduler.max_model_len"),
            stacklevel=4)
        context = ASSUMED_CONTEXT
    key = "rope_parameters" if cfg.data.get("rope_parameters") is not None else "rope_scaling"
    rope = cfg.data.get(key)
    if rope is None:
        return context
    if not isinstance(rope, dict):
        raise cfg.error(key, f"must be an object with a rope_type (got {shown_json(rope)})")
    if rope and all(isinstance(v, dict) for v in rope.values()):  # per layer type (Gemma)
        rope = next(iter(rope.values()))
        key = f"{key}.{next(iter(cfg.data[key]))}"
    kind = rope.get("rope_type") or rope.get("type") or "default"
    if kind in UNSCALED_ROPE:
        return context
    factor = rope.get("factor", 1.0)
    # any int is finite: one past a double's range stretches past the bound below
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not (
            (isinstance(factor, int) or math.isfinite(factor)) and factor > 0):
        raise cfg.error(f"{key}.factor", f"must be a finite number above 0 (got "
                        f"{shown_json(factor)})")
    if kind == "yarn":
        context = _yarn_original(cfg, key, rope, nested=key not in ("rope_parameters",
                                                                    "rope_scaling"))
    stretched = context * factor
    if stretched > MAX_STRETCHED_CONTEXT:
        raise cfg.error(f"{key}.factor", f"{shown_json(factor)} stretches the context to more than "
                        f"{MAX_STRETCHED_CONTEXT:,} tokens; give the factor the model card "
                        "states")
    return int(stretched)


def _contexts(cfg: _Config) -> dict[str, int]:
    """``max_context``, the ``max_model_len`` vLLM serves by default, and ``context_limit``, the
    most it accepts when asked where that is more (else 0): the :func:`_max_context` it derives,
    but for a LongRoPE model (``longrope``, or the legacy ``su``) with a top-level
    ``original_max_position_embeddings``, whose default is that pretraining length (vLLM's
    ``_get_and_verify_max_len``, "to avoid performance degradation for shorter sequences";
    Phi-3-mini-128k: 4,096 of 131,072)."""
    derived = _max_context(cfg)
    key = "rope_parameters" if cfg.data.get("rope_parameters") is not None else "rope_scaling"
    rope = cfg.data.get(key)
    original = cfg.data.get("original_max_position_embeddings")
    if not (isinstance(rope, dict) and (rope.get("rope_type") or rope.get("type")) in (
            "longrope", "su") and original is not None):
        return {"max_context": derived}
    if isinstance(original, bool) or not isinstance(original, int) or original <= 0:
        raise cfg.error("original_max_position_embeddings",
                        f"must be a positive integer (got {shown_json(original)})")
    default = _context_within_bound(cfg, "original_max_position_embeddings", original)
    return {"max_context": default, "context_limit": derived if derived > default else 0}


def _yarn_original(cfg: _Config, key: str, rope: dict, nested: bool) -> int:
    """The pretraining context a YaRN block (under ``key``) stretches: a top-level
    ``original_max_position_embeddings`` over the block's own (vLLM's
    transformers_utils/config.py ``patch_rope_parameters`` copies it in with transformers 4;
    transformers 5's ``standardize_rope_params`` does the same, for a block not per layer
    type), else the block's. Neither is one line: vLLM's ``_get_and_verify_max_len`` reads
    ``rope["original_max_position_embeddings"]`` (a KeyError with transformers 4, where
    transformers 5 puts max_position_embeddings), so the context it serves depends on the
    version."""
    where, original = f"{key}.original_max_position_embeddings", rope.get(
        "original_max_position_embeddings")
    if not nested and cfg.data.get("original_max_position_embeddings") is not None:
        where, original = "original_max_position_embeddings", cfg.data[
            "original_max_position_embeddings"]
    if original is None:
        state = "null" if "original_max_position_embeddings" in rope else "missing"
        raise cfg.error(where, f"{state}; vLLM stretches a YaRN block's pretraining context, "
                        "which it reads there (with transformers 4 it stops on a KeyError; "
                        "transformers 5 puts max_position_embeddings there): write the context "
                        "the model was trained at")
    if isinstance(original, bool) or not isinstance(original, int) or original <= 0:
        raise cfg.error(where, f"must be a positive integer (got {shown_json(original)})")
    return _context_within_bound(cfg, where, original)


def _context_within_bound(cfg: _Config, key: str, value: int | None = None) -> int:
    """A context length under ``key`` (``value``: one already read), at most
    :data:`MAX_STRETCHED_CONTEXT` tokens (a scheduler's ``max_model_len`` bound): beyond it the
    number is a typo, and it would be read as the context of every tier serving the model."""
    value = cfg.int(key, bounded=False) if value is None else value
    if value > MAX_STRETCHED_CONTEXT:
        given = f"{value:,}" if value < 10**31 else shown_json(value)  # a 400-digit one cut
        raise cfg.error(key, f"{given} tokens is more than the {MAX_STRETCHED_CONTEXT:,} a "
                        "context may hold; give the value the model card states")
    return value


def _qwen3_moe(cfg: _Config) -> dict[str, Any]:
    """MoE fields of a Qwen3-MoE config."""
    if _names_a_layer(cfg, "mlp_only_layers"):
        raise cfg.error("mlp_only_layers", "dense layers inside a MoE model are not supported")
    if cfg.data.get("decoder_sparse_step", 1) != 1:
        raise cfg.error("decoder_sparse_step", "only 1 (every layer MoE) is supported")
    return {
        "num_experts": cfg.int("num_experts"),
        "top_k": cfg.int("num_experts_per_tok"),
        "expert_intermediate": cfg.int("moe_intermediate_size"),
        "qk_norm": True,
    }


def _names_a_layer(cfg: _Config, key: str) -> bool:
    """Whether the list under ``key`` (Qwen MoE's ``mlp_only_layers``; null or absent: empty)
    holds the index of one of the model's layers, as vLLM's qwen3_moe.py / qwen2_moe.py test
    ``layer_idx in mlp_only_layers``: an index past the layers, negative or not a number names
    none. Anything but a list is one line (vLLM's test fails on a number or a string)."""
    value = cfg.data.get(key)
    if value is None:
        return False
    if not isinstance(value, list):
        raise cfg.error(key, f"must be a list of layer indices (got {shown_json(value)})")
    layers = cfg.int("num_hidden_layers")
    return any(isinstance(i, (int, float)) and 0 <= i < layers and float(i).is_integer()
               for i in value)  # the range first: an int past a double's is no float


def _qwen2_moe(cfg: _Config) -> dict[str, Any]:
    """MoE fields of a Qwen2-MoE config (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen3-MoE's without
    q/k norms, plus a shared expert of ``shared_expert_intermediate_size`` in every layer (its
    sigmoid gate, one weight per hidden unit, is not counted: under 0.001% of the weights)."""
    return {**_qwen3_moe(cfg), "qk_norm": False, "shared_intermediate": _qwen_shared(cfg)}


def _qwen_shared(cfg: _Config) -> int:
    """The shared expert's width of a Qwen MoE config (``shared_expert_intermediate_size``; 0:
    none, as vLLM builds none). Missing or null is one line: transformers would build one of
    its type's default width (5,632 for ``qwen2_moe``, 512 for ``qwen3_next``), and fails on
    null, so reading none would drop a matrix from every layer."""
    key = "shared_expert_intermediate_size"
    if cfg.data.get(key) is None:
        state = "null" if key in cfg.data else "missing"
        raise cfg.error(key, f"{state}; needed to build the model")
    return cfg.count(key)


def _gpt_oss(cfg: _Config, layers: int) -> dict[str, Any]:
    """MoE and sliding-window fields of a gpt-oss config."""
    window = cfg.int("sliding_window") if cfg.data.get("sliding_window") is not None else 0
    types = _layer_types(cfg, layers)
    # without layer_types, transformers' GptOssConfig slides layers 0, 2, 4 ... (vLLM's
    # gpt_oss.py, layer_idx % 2 == 0): the even ones, one more than half of an odd count
    sliding = sum(t == "sliding_attention" for t in types) if types else (layers + 1) // 2
    return {
        "num_experts": cfg.int("num_local_experts"),
        "top_k": _gpt_oss_top_k(cfg),
        "expert_intermediate": cfg.int("intermediate_size"),
        "head_dim": cfg.int("head_dim"),
        "sliding_window": window,
        "sliding_layers": sliding if window else 0,
    }




def _gpt_oss_top_k(cfg: _Config) -> int:
    """A gpt-oss config's experts per token as vLLM reads it: ``num_experts_per_tok``; where
    it is absent, transformers' default (4), so OpenAI's ``experts_per_token`` alone is read
    only where it says the same, else one line."""
    if cfg.data.get("num_experts_per_tok") is not None:
        return cfg.int("num_experts_per_tok")
    said = cfg.int("experts_per_token")
    if said != GPT_OSS_TOP_K:
        raise cfg.error("num_experts_per_tok", f"missing; vLLM reads the experts per token from "
                        f"it (transformers' default {GPT_OSS_TOP_K} where absent), not from "
                        f"experts_per_token ({said}): add it")
    return said


def _moe_local(cfg: _Config) -> dict[str, Any]:
    """MoE fields of a Mixtral / MiniMax-M2 config (every layer MoE, routed experts only: vLLM's
    mixtral.py MixtralMoE and minimax_m2.py MiniMaxM2MoE build no shared expert, so a
    ``shared_intermediate_size`` other than 0 is a note, not counted)."""
    if cfg.data.get("shared_intermediate_size"):
        shared = cfg.int("shared_intermediate_size")
        warnings.warn(Note(f"{cfg.path}: key {cfg.prefix + 'shared_intermediate_size'!r} is "
                           f"{shared}: vLLM's {cfg.data.get('model_type')} model builds no "
                           "shared expert (routed experts only), so none is counted"),
                      stacklevel=4)
    return {
        "num_experts": cfg.int("num_local_experts"),
        "top_k": cfg.int("num_experts_per_tok"),
        "expert_intermediate": cfg.int("intermediate_size"),
        "shared_intermediate": 0,
        "qk_norm": cfg.flag("use_qk_norm"),
    }


#: Keys an MLA config must write out, null for none (``first_k_dense_replace``: 0): left out,
#: transformers' DeepSeek configs (which vLLM builds the model from) take a default that is
#: not none (DeepseekV3Config: a query LoRA of 1,536, 1 shared expert, 3 dense layers).
MLA_WRITTEN_OUT = ("q_lora_rank", "n_shared_experts", "first_k_dense_replace")


def _mla(cfg: _Config) -> dict[str, Any]:
    """MLA and MoE fields of a DeepSeek-V3 / Kimi-K2 config."""
    _refuse_without_mla(cfg)
    if cfg.data.get("moe_layer_freq", 1) != 1:
        raise cfg.error("moe_layer_freq", "only 1 (every layer after the dense ones MoE)")
    _written_out(cfg, MLA_WRITTEN_OUT, "DeepSeek")
    nope, rope = cfg.int("qk_nope_head_dim"), cfg.int("qk_rope_head_dim")
    heads = cfg.int("num_attention_heads")
    q_lora = cfg.data.get("q_lora_rank")
    if q_lora is not None and (isinstance(q_lora, bool) or not isinstance(q_lora, int)
                               or q_lora <= 0):  # 0 and false were read as null: no LoRA
        raise cfg.error("q_lora_rank", "must be a positive integer, or null for a query "
                        f"projection without a low-rank bottleneck (got {shown_json(q_lora)})")
    return {
        **_dense_lead_moe(cfg),
        "kv_heads": heads,
        "head_dim": nope + rope,
        "q_lora_rank": cfg.int("q_lora_rank", 0) if q_lora is not None else 0,
        "kv_lora_rank": cfg.int("kv_lora_rank"),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": cfg.int("v_head_dim"),
        **(_dsa(cfg) if cfg.data.get("model_type") in DSA_TYPES else {}),
    }


def _written_out(cfg: _Config, keys: tuple[str, ...], family: str) -> None:
    """One line for a key of ``keys`` the config leaves out (transformers' DeepSeek and GLM
    configs, which vLLM builds the model from, default it to a layout that is not none), or a
    null ``first_k_dense_replace`` (which vLLM's ``family`` decoder layers fail on)."""
    for key in keys:
        if key not in cfg.data:
            raise cfg.error(key, f"missing; transformers would take "
                            f"{cfg.data.get('model_type')}'s default, not none: write it out "
                            f"({'0' if key == 'first_k_dense_replace' else 'null'} for none)")
    if cfg.data["first_k_dense_replace"] is None:
        raise cfg.error("first_k_dense_replace", f"null; vLLM's {family} decoder layers compare "
                        "each layer's index with it (layer_idx >= first_k_dense_replace), which "
                        "fails on null: write 0 for no dense layer")


def _dense_lead_moe(cfg: _Config) -> dict[str, Any]:
    """The MoE fields DeepSeek's and GLM-4.5's layout share: ``first_k_dense_replace`` dense
    layers of ``intermediate_size``, then ``n_routed_experts`` experts of
    ``moe_intermediate_size`` and ``n_shared_experts`` shared ones of that width (null: none),
    and ``num_nextn_predict_layers`` multi-token-prediction layers (checkpoint size only)."""
    moe_inter = cfg.int("moe_intermediate_size")
    dense = cfg.count("first_k_dense_replace", cfg.int("num_hidden_layers") - 1)
    return {
        "intermediate": cfg.int("intermediate_size") if dense else 0,
        "num_experts": cfg.int("n_routed_experts"),
        "top_k": cfg.int("num_experts_per_tok"),
        "expert_intermediate": moe_inter,
        "shared_intermediate": cfg.count("n_shared_experts") * moe_inter,
        "dense_layers": dense,
        "mtp_layers": cfg.count("num_nextn_predict_layers"),
    }


#: Keys a GLM-4.5 config must write out, as :data:`MLA_WRITTEN_OUT` (transformers'
#: ``Glm4MoeConfig`` defaults each to 1).
GLM4_MOE_WRITTEN_OUT = ("n_shared_experts", "first_k_dense_replace")


def _glm4_moe(cfg: _Config) -> dict[str, Any]:
    """MoE fields of a GLM-4.5 config (vLLM's glm4_moe.py): the leading dense layers, shared
    and routed experts of :func:`_dense_lead_moe` under grouped-query attention (its q/k/v
    biases, under 0.01% of the weights, not counted), q/k norms where ``use_qk_norm`` says."""
    _written_out(cfg, GLM4_MOE_WRITTEN_OUT, "GLM-4.5")
    return {**_dense_lead_moe(cfg), "qk_norm": cfg.flag("use_qk_norm")}


def _refuse_without_mla(cfg: _Config) -> None:
    """One line for a DeepSeek-family config whose attention is not MLA: ``use_mla: false``,
    or ``kv_lora_rank`` null (DeepSeek-VL2-Tiny's and DeepSeek-OCR's language models, their
    MLA head sizes 0), which vLLM's deepseek_vl2.py serves as ``DeepseekForCausalLM``, plain
    multi-head attention; tiersim reads DeepSeek configs as MLA (their head sizes were refused
    as 0, as if the config were broken)."""
    if cfg.data.get("use_mla") is False:
        key, said = "use_mla", "is false"
    elif "kv_lora_rank" in cfg.data and cfg.data["kv_lora_rank"] is None:
        key, said = "kv_lora_rank", "is null"
    else:
        return
    raise TiersimError(f"{cfg.path}: key {cfg.prefix + key!r} {said}: its attention is "
                       "multi-head attention, not DeepSeek's multi-head latent attention (MLA; "
                       "vLLM serves such a model as DeepseekForCausalLM): tiersim models "
                       "DeepSeek MoE models with MLA only")


def _dsa(cfg: _Config) -> dict[str, Any]:
    """The DSA indexer's fields of a DeepSeek-V3.2 / GLM-5 config."""
    return {"index_heads": cfg.int("index_n_heads"), "index_head_dim": cfg.int("index_head_dim"),
            "index_topk": cfg.int("index_topk")}


def _hybrid(cfg: _Config, layers: int, model_type: str) -> dict[str, Any]:
    """Gated delta-net fields of a Qwen3-Next / Qwen3.5 config: which layers are linear
    (``layer_types``, else every layer but each ``full_attention_interval``-th), their head
    shapes, the gated query of the softmax layers, and the MLP (every layer MoE with a shared
    expert, or dense)."""
    fields: dict[str, Any] = {
        "linear_layers": len(hybrid_linear_layers(cfg, layers)),
        "linear_k_heads": cfg.int("linear_num_key_heads"),
        "linear_v_heads": cfg.int("linear_num_value_heads"),
        "linear_k_dim": cfg.int("linear_key_head_dim"),
        "linear_v_dim": cfg.int("linear_value_head_dim"),
        "linear_conv": cfg.int("linear_conv_kernel_dim"),
        "state_bytes": _state_bytes(cfg),
        "attn_gate": cfg.flag("attn_output_gate") if "attn_output_gate" in cfg.data else True,
        "qk_norm": True,
        "mtp_layers": cfg.count("mtp_num_hidden_layers", layers),
    }
    if fields["linear_v_heads"] % fields["linear_k_heads"]:
        raise cfg.error("linear_num_value_heads", "must be a multiple of linear_num_key_heads "
                        f"({fields['linear_k_heads']})")
    if model_type == "qwen3_5_text":
        fields["intermediate"] = cfg.int("intermediate_size")
        return fields
    fields.update(_qwen3_moe(cfg))
    return {**fields, "shared_intermediate": _qwen_shared(cfg)}


@dataclasses.dataclass(frozen=True)
class EveryButNth:
    """The layers ``0 .. layers - 1`` but each ``interval``-th (layer ``i`` with ``(i + 1) %
    interval == 0``), held as the two numbers: a config may declare any number of layers,
    and listing each would take memory and time in proportion."""

    layers: int
    interval: int

    def __contains__(self, layer: object) -> bool:
        return (isinstance(layer, int) and 0 <= layer < self.layers
                and (layer + 1) % self.interval != 0)

    def __len__(self) -> int:
        return self.layers - self.layers // self.interval

    def __iter__(self):
        return (i for i in range(self.layers) if (i + 1) % self.interval)


def hybrid_linear_layers(cfg: _Config, layers: int) -> frozenset[int] | EveryButNth:
    """Which of ``layers`` are gated delta-net layers (``layer_types``, else every layer but
    each ``full_attention_interval``-th, :class:`EveryButNth`); at least one must be softmax
    attention."""
    types = cfg.data.get("layer_types")
    if types is not None:
        known = ("linear_attention", "full_attention")
        if not isinstance(types, list) or len(types) != layers or any(t not in known
                                                                      for t in types):
            raise cfg.error("layer_types", f"must be a list of {layers} layer types, each "
                            "'linear_attention' or 'full_attention'")
        linear = frozenset(i for i, t in enumerate(types) if t == "linear_attention")
    else:
        interval = cfg.int("full_attention_interval")
        linear = EveryButNth(layers, interval)
    if len(linear) >= layers:
        raise cfg.error("layer_types" if types is not None else "full_attention_interval",
                        "leaves no full-attention layer; tiersim models hybrids with at least one")
    return linear


#: Bytes per element of a recurrent state dtype a config may name (``mamba_ssm_dtype``).
STATE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _state_bytes(cfg: _Config) -> int:
    """Bytes per element of the delta-net state: the config's ``mamba_ssm_dtype`` where it
    names one, else BF16 (vLLM's ``--mamba-ssm-cache-dtype auto``: the model's dtype)."""
    value = cfg.data.get("mamba_ssm_dtype")
    if value is None:
        return 2
    if not isinstance(value, str) or value not in STATE_DTYPES:
        raise cfg.error("mamba_ssm_dtype", f"must be one of {', '.join(STATE_DTYPES)} "
                        f"(got {shown_json(value)})")
    return STATE_DTYPES[value]


def _default_head_dim(cfg, hidden: int, heads: int) -> int:
    """``hidden_size / num_attention_heads``, the head width a config without ``head_dim``
    implies; refused when that is below 1 (more heads than hidden units)."""
    if hidden < heads:
        raise cfg.error("head_dim", f"missing, and hidden_size / num_attention_heads = {hidden} /"
                        f" {heads} is below 1; give head_dim")
    return hidden // heads


ATTENTION_LAYER_TYPES = ("full_attention", "sliding_attention")


def _layer_types(cfg: _Config, layers: int) -> list[str] | None:
    """``layer_types`` checked: one known attention type per layer (a ``linear_attention``
    layer, say, is one tiersim does not model), or None when absent."""
    types = cfg.data.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or len(types) != layers or not all(
            isinstance(t, str) for t in types):
        raise cfg.error("layer_types", f"must be a list of {layers} layer type names "
                        "('sliding_attention', 'full_attention')")
    other = next((t for t in types if t not in ATTENTION_LAYER_TYPES), None)
    if other is not None:
        raise cfg.error("layer_types", f"{other[:40]!r} layers are not modelled (tiersim models "
                        "'full_attention' and 'sliding_attention' layers)")
    return types


def _window(cfg: _Config, model_type: str, layers: int) -> dict[str, int]:
    """Sliding-window attention of a Llama-style config, as vLLM reads it: ``sliding_window``
    on the ``sliding_attention`` layers of ``layer_types``, or without it on every layer
    (Mistral 7B v0.1) unless ``use_sliding_window`` is false or null (vLLM's
    ``get_sliding_window``). Qwen configs carry a window they use only with
    ``use_sliding_window: true`` (transformers sets it to None otherwise, whatever
    ``layer_types`` says), whose per-layer split (``max_window_layers``) tiersim does not
    model."""
    types = _layer_types(cfg, layers)
    raw = cfg.data.get("sliding_window")
    switched_off = "use_sliding_window" in cfg.data and not cfg.flag("use_sliding_window")
    if model_type.startswith("qwen"):
        if cfg.flag("use_sliding_window"):
            raise cfg.error("use_sliding_window", "Qwen's sliding window over the first "
                            "max_window_layers layers is not modelled; set it to false")
        raw = None
    if raw is None or (switched_off and types is None):  # null or absent: no window (0 is
        return {}  # refused as a window of no tokens)
    window = cfg.int("sliding_window")
    sliding = sum(t == "sliding_attention" for t in types) if types else layers
    return {"sliding_window": window, "sliding_layers": sliding} if sliding else {}
