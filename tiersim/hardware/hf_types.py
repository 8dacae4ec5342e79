"""Which language model a Hugging Face config describes: its ``model_type``, the
``text_config`` of a multimodal wrapper (with the transformers class defaults a sub-config
leaves out), and the one line for a type tiersim does not model (:data:`LACKS`: what it
lacks to model a known one).

Part of :func:`tiersim.hardware.hf_config.load_hf_config`.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.hf_file import _Config
from tiersim.hf_text import (
    SUPPORTED_TYPES,
    TEXT_CONFIG_KEYS,
    class_defaults_left_out,
    defaults_note,
    kv_heads_left_out,
    language_model_key,
    served_type,
    type_not_a_name,
)

_TWO_MATRIX = "a two-matrix (non-gated) MLP"
_PARALLEL_TWO_MATRIX = _TWO_MATRIX + " beside attention in parallel blocks"
#: What tiersim lacks to model a known architecture it does not support (one line each).
LACKS = {
    "deepseek_v4": "DeepSeek-V4 compressed sparse attention",
    "nemotron_h": "Mamba-2 (state-space) layers",
    "kimi_linear": "Kimi delta attention (linear attention) layers",
    "llama4_text": "chunked local attention and interleaved dense/MoE layers",
    "gemma4_text": "interleaved local/global attention with per-layer head shapes",
    "nemotron-nas": "per-layer heterogeneous block shapes (NAS)",
    "mimo_v2_flash": "hybrid sliding-window attention with per-layer head shapes",
    "minimax_m3": "lightning (linear) attention layers",
    "step3p7": "Step-3.7's MoE layout (routed experts after leading dense layers, beside "
               "interleaved sliding-window attention)",
    "gemma3_text": "interleaved local/global attention with its own norms and soft-capping",
    "gemma3": "interleaved local/global attention with its own norms and soft-capping",
    "gemma2": "alternating sliding-window/global attention with attention-logit soft-capping",
    "jamba": "Mamba (state-space) layers interleaved with attention",
    "mamba": "Mamba (state-space) layers instead of attention",
    "mamba2": "Mamba-2 (state-space) layers instead of attention",
    "falcon_h1": "parallel Mamba-2 (state-space) and attention heads",
    "granitemoehybrid": "Mamba-2 (state-space) layers interleaved with attention",
    "bamba": "Mamba-2 (state-space) layers interleaved with attention",
    "zamba2": "Mamba-2 (state-space) layers beside shared attention blocks",
    "falcon_mamba": "Mamba (state-space) layers instead of attention",
    "lfm2": "short-convolution layers interleaved with attention",
    "minimax": "lightning (linear) attention layers",
    "recurrent_gemma": "recurrent (RG-LRU) layers interleaved with local attention",
    "t5": "an encoder-decoder stack (tiersim serves decoder-only models)",
    "bart": "an encoder-decoder stack (tiersim serves decoder-only models)",
    "whisper": "an encoder-decoder stack (tiersim serves decoder-only models)",
    "mllama_text_model": "cross-attention layers to image features",
    # tiersim's MLP is the gated three-matrix one (gate, up, down) of Llama and its successors
    "falcon": _PARALLEL_TWO_MATRIX,
    "gpt_neox": _PARALLEL_TWO_MATRIX,
    "gptj": _PARALLEL_TWO_MATRIX,
    "gpt2": _TWO_MATRIX,
    "nemotron": _TWO_MATRIX,
    "gpt_bigcode": _TWO_MATRIX,
    "opt": _TWO_MATRIX,
    "phi": _PARALLEL_TWO_MATRIX,
    "starcoder2": _TWO_MATRIX,
    "bloom": "ALiBi attention with " + _TWO_MATRIX,
    "mpt": "ALiBi attention with " + _TWO_MATRIX,
}


def _text_config(cfg: _Config) -> tuple[_Config, dict[str, Any] | None]:
    """The language model's config of a multimodal wrapper (and the wrapper's own quant
    config), or the config itself (:func:`tiersim.hf_text.language_model_key`, which the
    calibration harness reads a config by too)."""
    key = language_model_key(cfg.data)
    if key is None:
        _with_kv_heads_default(cfg)
        return cfg, None
    text = _Config(cfg.path, _with_class_defaults(cfg.path, cfg.data[key], key),
                   f"{key}.")
    return text, cfg.data.get("quantization_config")


def _with_class_defaults(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    """A wrapper's language-model sub-config (under ``key``) with the keys it leaves out
    filled from its type's transformers class defaults (:data:`TEXT_CLASS_DEFAULTS`,
    :func:`tiersim.hf_text.class_defaults_left_out`), with a note naming them."""
    missing = class_defaults_left_out(data)
    if not missing:
        return data
    warnings.warn(Note(
        f"{path}: {defaults_note(key, data['model_type'], missing)}, as "
        "transformers (which writes a sub-config's keys only where they differ from its "
        "class's defaults) and vLLM build the model"), stacklevel=5)
    return {**data, **missing}


def _with_kv_heads_default(cfg: _Config) -> None:
    """Fill a config's left-out ``num_key_value_heads`` with its type's transformers class
    default where that is a number, not the query heads (:func:`tiersim.hf_text.
    kv_heads_left_out`: MixtralConfig's 8), with a note: a config of the type without the key
    was otherwise read with a KV cache several times too large."""
    missing = kv_heads_left_out(cfg.data)
    if missing:
        warnings.warn(Note(f"{cfg.path}: {defaults_note(None, cfg.data['model_type'], missing)}"
                           ", as transformers and vLLM build the model"), stacklevel=5)
        cfg.data = {**cfg.data, **missing}


def _tied(cfg: _Config, outer: _Config) -> bool:
    """Whether ``lm_head`` shares the embedding matrix: the language model's
    ``tie_word_embeddings``, else (a multimodal wrapper's ``text_config`` without the key) the
    wrapper's, which ties the wrapper model's weights in transformers (default false)."""
    if cfg is outer or "tie_word_embeddings" in cfg.data:
        return cfg.flag("tie_word_embeddings")
    return outer.flag("tie_word_embeddings")


def _vision_note(outer: _Config, text_type: str) -> None:
    """A note that a multimodal wrapper is served as its language model ``text_type``."""
    if not isinstance(outer.data.get("vision_config"), dict):
        return
    import warnings

    from tiersim.errors import VisionNote

    warnings.warn(VisionNote(f"{outer.path}: a {outer.data.get('model_type')} model: tiersim "
                             f"serves its language model ({text_type}); the vision tower's "
                             "weights are not counted and image inputs are not modelled"),
                  stacklevel=4)


def _served_type(cfg: _Config, outer: _Config) -> Any:
    """The model type ``cfg`` is read as (:func:`tiersim.hf_text.served_type`)."""
    return served_type(cfg.data, cfg is outer)


def _type_name(cfg: _Config) -> None:
    """One line when ``model_type`` (here or in a ``text_config``) is there but no name
    (:func:`tiersim.hf_text.type_not_a_name`)."""
    bad = type_not_a_name(cfg.data)
    if bad is not None:
        raise TiersimError(f"{cfg.path}: key '{bad[0]}': must be a name such as 'llama' "
                           f"(got {shown_json(bad[1])})")


def _lacks(*names: Any) -> str:
    """What tiersim lacks to model the first of ``names`` (model types, or the
    ``architectures`` class names) that :data:`LACKS` knows, compared without case,
    underscores or a ``_vl`` / ``ForCausalLM`` / ``ForConditionalGeneration`` ending; ""."""
    known = {_plain(key): why for key, why in LACKS.items()}
    return next((known[_plain(n)] for n in names if _plain(n) in known), "")


def _plain(name: Any) -> str:
    """A model type or class name reduced for :func:`_lacks`: ``DeepseekV4ForCausalLM`` and
    ``deepseek_v4`` both read ``deepseekv4``."""
    text = re.sub(r"(ForCausalLM|ForConditionalGeneration|_vl)$", "", str(name))
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _unsupported(cfg: _Config, outer: _Config, model_type: Any) -> TiersimError:
    """The one line for a model type tiersim does not read: what it lacks to model it, found
    by its type, its wrapper's, or the classes ``architectures`` names."""
    classes = outer.data.get("architectures")
    classes = classes if isinstance(classes, list) else []
    lacks = _lacks(model_type, outer.data.get("model_type"), *classes)
    held = next(((k, outer.data[k]) for k in TEXT_CONFIG_KEYS if k in outer.data and not (
        isinstance(outer.data[k], dict) or (outer.data[k] is None and lacks))), None)
    if cfg is outer and held is not None:  # it read "'llava' is not supported", of a wrapper
        return TiersimError(  # tiersim reads when its language model's config is an object
            f"{outer.path}: key '{held[0]}': must be an object, the config of the language "
            f"model the wrapper holds (got {shown_json(held[1])})")  # null too (read "'qwen3_vl'
        # is not supported"), unless what tiersim lacks to model the type is known
    why = f": tiersim does not model {lacks}" if lacks else " is not supported"
    wrapper = outer.data.get("model_type")
    if not lacks and cfg is not outer and model_type is None:
        why = " does not say which language model it holds; name its type (e.g. 'llama')"
    given = f"{model_type!r}{why}" if model_type is not None else (
        f"missing; its wrapper {wrapper!r}{why}" if cfg is not outer
        else "missing (it names the architecture)")
    return cfg.error("model_type", f"{given}; supported: {', '.join(SUPPORTED_TYPES)}")
