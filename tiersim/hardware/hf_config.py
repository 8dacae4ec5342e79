"""Build a :class:`ModelArch` from a Hugging Face ``config.json``.

Supported ``model_type`` values and the keys read:

- dense ``llama``, ``mistral``, ``qwen2``, ``qwen3``: hidden_size, num_hidden_layers,
  num_attention_heads, num_key_value_heads (default: the query heads), head_dim (default
  hidden_size / heads), intermediate_size, vocab_size, tie_word_embeddings (default false).
- ``qwen3_moe``: as above plus num_experts, num_experts_per_tok, moe_intermediate_size; every
  layer must be MoE (``decoder_sparse_step`` 1, ``mlp_only_layers`` empty).
- ``gpt_oss``: num_local_experts, experts_per_token (or num_experts_per_tok), intermediate_size
  (the expert width), head_dim, num_key_value_heads, sliding_window and layer_types (layers typed
  ``sliding_attention``; without layer_types, half the layers as gpt-oss alternates them).
  Attention sinks and biases are ignored (well under 0.1% of weights and time).

Anything else is one :class:`TiersimError` line naming the file and the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.hardware.arch import ModelArch

DENSE_TYPES = ("llama", "mistral", "qwen2", "qwen3")
SUPPORTED_TYPES = (*DENSE_TYPES, "qwen3_moe", "gpt_oss")


def _read(path: Path) -> dict[str, Any]:
    """The parsed JSON object of ``path``, or one error line."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise TiersimError(f"{path}: cannot read model config ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise TiersimError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise TiersimError(f"{path}: a model config must be a JSON object")
    return data


class _Config:
    """Typed access to a config's keys with errors that name the file and the key."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path, self.data = path, data

    def error(self, key: str, message: str) -> TiersimError:
        """An error naming this file and ``key``."""
        return TiersimError(f"{self.path}: key {key!r}: {message}")

    def int(self, key: str, default: int | None = None, *alternatives: str) -> int:
        """A positive integer under ``key`` (or the first alternative present)."""
        for name in (key, *alternatives):
            if name in self.data:
                key = name
                break
        else:
            if default is None:
                raise self.error(key, "missing; needed to build the model")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(key, f"must be a positive integer (got {value!r})")
        return value


def _model_name(path: Path) -> str:
    """The folder name for ``.../NAME/config.json``, else the file's stem."""
    if path.name == "config.json" and path.parent.name:
        return path.parent.name
    return path.stem


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
        "head_dim": cfg.int("head_dim", hidden // heads),
        "vocab": cfg.int("vocab_size"),
        "tie_embeddings": bool(cfg.data.get("tie_word_embeddings", False)),
        "source": str(cfg.path),
    }


def _qwen3_moe(cfg: _Config) -> dict[str, Any]:
    """MoE fields of a Qwen3-MoE config."""
    if cfg.data.get("mlp_only_layers"):
        raise cfg.error("mlp_only_layers", "dense layers inside a MoE model are not supported")
    if cfg.data.get("decoder_sparse_step", 1) != 1:
        raise cfg.error("decoder_sparse_step", "only 1 (every layer MoE) is supported")
    return {
        "num_experts": cfg.int("num_experts"),
        "top_k": cfg.int("num_experts_per_tok"),
        "expert_intermediate": cfg.int("moe_intermediate_size"),
        "qk_norm": True,
    }


def _gpt_oss(cfg: _Config, layers: int) -> dict[str, Any]:
    """MoE and sliding-window fields of a gpt-oss config."""
    window = cfg.int("sliding_window", 0) if cfg.data.get("sliding_window") else 0
    types = cfg.data.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != layers):
        raise cfg.error("layer_types", f"must be a list of {layers} layer types")
    sliding = sum(t == "sliding_attention" for t in types) if types else layers // 2
    return {
        "num_experts": cfg.int("num_local_experts"),
        "top_k": cfg.int("experts_per_token", None, "num_experts_per_tok"),
        "expert_intermediate": cfg.int("intermediate_size"),
        "head_dim": cfg.int("head_dim"),
        "sliding_window": window,
        "sliding_layers": sliding if window else 0,
    }


def load_hf_config(path: str | Path) -> ModelArch:
    """The architecture a Hugging Face ``config.json`` (or a folder holding one) describes."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    data = _read(path)
    cfg = _Config(path, data)
    model_type = data.get("model_type")
    if model_type not in SUPPORTED_TYPES:
        raise cfg.error(
            "model_type",
            f"{model_type!r} is not supported; supported: {', '.join(SUPPORTED_TYPES)}",
        )
    fields = _common(cfg, _model_name(path))
    if model_type in DENSE_TYPES:
        fields["intermediate"] = cfg.int("intermediate_size")
        fields["qk_norm"] = model_type == "qwen3"
    elif model_type == "qwen3_moe":
        fields.update(_qwen3_moe(cfg))
    else:
        fields.update(_gpt_oss(cfg, fields["layers"]))
    if fields.get("num_experts") and fields["top_k"] > fields["num_experts"]:
        key = "num_experts_per_tok" if model_type == "qwen3_moe" else "experts_per_token"
        raise cfg.error(key, f"must not exceed the number of experts ({fields['num_experts']})")
    return ModelArch(**fields)
