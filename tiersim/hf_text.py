"""Where a Hugging Face ``config.json`` keeps its language model, read one way by both readers.

The simulator (:mod:`tiersim.hardware.hf_config`) and the calibration harness
(:mod:`tiersim.calibrate.shapes`) read the same config; if they found its language model in
different places, a GPU run would time other shapes than the model the profile is used for.
Both take from here which sub-config holds the language model, and the transformers class
defaults a sub-config written as a diff leaves out. Standard library only: the harness runs
with torch and numpy alone (it must not import pydantic, simpy or pandas).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DENSE_TYPES = ("llama", "mistral", "qwen2", "qwen3")
MOE_LOCAL_TYPES = ("mixtral", "minimax_m2")
MLA_TYPES = ("deepseek_v3", "kimi_k2", "deepseek_v2", "deepseek_v32", "glm_moe_dsa")
#: MLA with DeepSeek sparse attention's indexer.
DSA_TYPES = ("deepseek_v32", "glm_moe_dsa")
#: MoE after leading dense layers, with shared experts, under grouped-query attention
#: (GLM-4.5, GLM-4.6, GLM-4.5-Air).
GQA_MOE_TYPES = ("glm4_moe",)
#: Gated delta-net hybrids (Qwen3-Next; Qwen3.5's language model, dense or MoE).
HYBRID_TYPES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
#: Every ``model_type`` the simulator reads (after :data:`ALIASES`).
SUPPORTED_TYPES = (*DENSE_TYPES, "qwen3_moe", "qwen2_moe", "gpt_oss", *MOE_LOCAL_TYPES, *MLA_TYPES,
                   *GQA_MOE_TYPES, *HYBRID_TYPES)

#: transformers' ``GptOssConfig`` default for ``num_experts_per_tok`` (vLLM's gpt_oss.py reads
#: that key; OpenAI's own ``experts_per_token`` is kept beside it, unread).
GPT_OSS_TOP_K = 4

#: Where a multimodal wrapper keeps its language model's config, first found first: most
#: under ``text_config``, InternVL under ``llm_config``, DeepSeek-VL2 under ``language_config``.
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")

#: Model types read as another type with the same text architecture (the vision tower of a
#: ``*_vl`` model is not modelled; MiMo is Qwen2 with a multi-token-prediction layer; PhiMoE is
#: Mixtral's layout, its attention and lm_head biases, LayerNorms and SparseMixer routing under
#: 0.01% of weights and time; Phi-3 / Phi-4 are Llama's with q/k/v and gate/up fused, the same
#: weights; Ministral 3 and Devstral 2's ``ministral3`` is Mistral's, its YaRN block's
#: ``llama_4_scaling_beta`` a query temperature with no weights of its own).
ALIASES = {"qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "mimo": "qwen2",
           "qwen2_vl_text": "qwen2", "qwen2_5_vl_text": "qwen2", "phimoe": "mixtral",
           "phi3": "llama", "ministral3": "mistral"}

#: Multimodal wrappers whose language model's keys may sit at the top level, with no
#: ``text_config`` (older transformers wrote Qwen2-VL / Qwen2.5-VL configs so): read as this type.
FLAT_WRAPPERS = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2"}

#: transformers' class defaults (4.46 and since) of the keys tiersim reads, for the language
#: models a wrapper's sub-config may hold written as a diff (:func:`class_defaults_left_out`).
#: Llama's ``num_key_value_heads`` (None: the query heads) is tiersim's own default already;
#: ``tie_word_embeddings`` keeps the simulator's own rule.
TEXT_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
              "num_hidden_layers": 32, "num_attention_heads": 32,
              "max_position_embeddings": 2048},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "max_position_embeddings": 131072, "sliding_window": 4096},
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "max_position_embeddings": 32768},
}

#: transformers' class default of ``num_key_value_heads`` (4.46 and since) by the
#: ``model_type`` a config names, where it is a number: Llama's and Phi-3's (None) are the
#: query heads, tiersim's own default. A config that leaves the key out, at the top level or in
#: a wrapper's sub-config, is built by transformers and vLLM with this many KV heads
#: (:func:`kv_heads_left_out`). MLA types cache a latent, not KV heads: not listed.
KV_HEADS_DEFAULTS: dict[str, int] = {
    "mistral": 8, "mixtral": 8, "phimoe": 8, "gpt_oss": 8, "minimax_m2": 8,
    "qwen2": 32, "qwen3": 32, "qwen2_moe": 16, "qwen3_moe": 4, "qwen3_next": 2,
    "qwen3_5_text": 4, "qwen3_5_moe_text": 2, "qwen3_vl_text": 32, "qwen3_vl_moe_text": 16,
    "qwen2_vl_text": 8, "qwen2_5_vl_text": 8, "qwen2_vl": 8, "qwen2_5_vl": 8, "glm4_moe": 8,
}


def text_key(data: dict[str, Any]) -> str | None:
    """The first key of :data:`TEXT_CONFIG_KEYS` holding an object in ``data``, else None."""
    return next((k for k in TEXT_CONFIG_KEYS if isinstance(data.get(k), dict)), None)


def type_not_a_name(data: dict[str, Any]) -> tuple[str, Any] | None:
    """The key path and value of a ``model_type`` that is there but not a name (a number, a
    list), at the top level or in the language-model sub-config (:func:`text_key`), which
    transformers' AutoConfig cannot load; None where there is none."""
    key = text_key(data)
    for where, sub in (("", data), (f"{key}.", data.get(key) if key else None)):
        value = sub.get("model_type") if isinstance(sub, dict) else None
        if value is not None and not isinstance(value, str):
            return f"{where}model_type", value
    return None


def language_model_key(data: dict[str, Any]) -> str | None:
    """The key of the sub-config that holds the language model of the config ``data``, or
    None where the config is read itself: its own ``model_type`` (or its alias's) is one the
    simulator reads, or it holds no sub-config object (:func:`text_key`)."""
    key = text_key(data)
    own = data.get("model_type")
    if ALIASES.get(str(own), own) in SUPPORTED_TYPES:
        return None
    return key


def class_defaults_left_out(data: dict[str, Any]) -> dict[str, Any]:
    """The keys of its type's transformers class defaults (:data:`TEXT_CLASS_DEFAULTS`) that
    a wrapper's language-model sub-config ``data`` leaves out, with their values: transformers
    writes a sub-config's keys only where they differ from its class's defaults
    (``recursive_diff_dict``; llava-1.5-7b-hf keeps 3 of Vicuna's) and fills them back on
    load, which is the model vLLM builds. A key given as null is not left out."""
    defaults = TEXT_CLASS_DEFAULTS.get(str(data.get("model_type")), {})
    return {**{k: v for k, v in defaults.items() if k not in data}, **kv_heads_left_out(data)}


def kv_heads_left_out(data: dict[str, Any]) -> dict[str, Any]:
    """``{"num_key_value_heads": N}`` where the config ``data`` leaves that key out and its
    type's transformers class default is a number N (:data:`KV_HEADS_DEFAULTS`: Mixtral's 8,
    Qwen3-MoE's 4), not the query heads; else empty. A key given as null is not left out."""
    default = KV_HEADS_DEFAULTS.get(str(data.get("model_type")))
    if default is None or "num_key_value_heads" in data:
        return {}
    return {"num_key_value_heads": default}


def served_type(data: dict[str, Any], outer: bool) -> Any:
    """The model type the (language-model) config ``data`` is read as: its own, an alias's
    (:data:`ALIASES`), or, for the ``outer`` config of a wrapper without a sub-config
    (:data:`FLAT_WRAPPERS`), its language model's."""
    model_type = data.get("model_type")
    if outer and str(model_type) in FLAT_WRAPPERS:
        return FLAT_WRAPPERS[str(model_type)]
    return ALIASES.get(str(model_type), model_type)


def defaults_note(key: str | None, model_type: Any, missing: dict[str, Any]) -> str:
    """The words of the note for sub-config ``key`` (None: the config itself) read with
    ``missing`` class defaults."""
    where = f"key {key!r} leaves" if key else "leaves"
    return (f"{where} out {', '.join(missing)}: read as transformers' "
            f"{model_type} defaults ({', '.join(map(str, missing.values()))})")


#: The file Mistral's own ("consolidated") format keeps a model's shapes in, which vLLM reads
#: in place of config.json only under ``--config-format mistral``
#: (vllm/transformers_utils/config.py ``load_params_config``): Magistral-Small-2506 ships no
#: config.json.
MISTRAL_PARAMS = "params.json"

#: How vLLM names params.json's keys in the config.json it builds from it
#: (vllm/transformers_utils/configs/mistral.py ``_remap_general_mistral_args``); head_dim and
#: vocab_size keep their names.
MISTRAL_KEYS = {"dim": "hidden_size", "n_layers": "num_hidden_layers",
                "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
                "hidden_dim": "intermediate_size"}


def mistral_params_words() -> str:
    """What a line refusing Mistral's ``params.json`` says: the format is not read, and the
    config.json to write in its place (the keys vLLM renames, and the two it adds)."""
    keys = ", ".join(f"{old} as {new}" for old, new in MISTRAL_KEYS.items())
    return (f"{MISTRAL_PARAMS} is Mistral's own format (vLLM reads it under --config-format "
            "mistral), which tiersim does not read; give the model's Hugging Face config.json "
            "(the repository's, where it ships one), or write one beside it as vLLM builds it "
            f"({keys}; model_type 'mistral', or 'mixtral' where it has a moe block; "
            "max_position_embeddings 128000 where it gives none)")


def holds_mistral_params(folder: Path) -> bool:
    """Whether ``folder`` holds Mistral's :data:`MISTRAL_PARAMS` (and so a model in that
    format, where it has no config.json)."""
    return (folder / MISTRAL_PARAMS).is_file()
