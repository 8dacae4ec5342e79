"""Which layers of a Llama-style config slide, as vLLM decides it: ``layer_types`` names them
(a list of only ``full_attention`` layers: no window); without it ``sliding_window`` covers
every layer (Mistral 7B v0.1) unless ``use_sliding_window`` is false (vLLM's
``get_sliding_window``); a Qwen config's window is dropped unless ``use_sliding_window`` is
true (transformers' Qwen2/Qwen3 configs set it to None then, whatever ``layer_types`` says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.hardware.hf_config import load_hf_config

BASE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
        "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 1000}
HALF = ["full_attention", "sliding_attention"] * 2


def _window(tmp_path: Path, **fields) -> tuple[int, int]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, **fields}))
    model = load_hf_config(path)
    return model.sliding_window, model.sliding_layers


@pytest.mark.parametrize(("fields", "expected"), [
    ({"model_type": "llama", "sliding_window": 4096, "layer_types": ["full_attention"] * 4},
     (0, 0)),
    ({"model_type": "mistral", "sliding_window": 4096}, (4096, 4)),
    ({"model_type": "llama", "sliding_window": 4096, "layer_types": HALF}, (4096, 2)),
    ({"model_type": "mistral", "sliding_window": 4096, "use_sliding_window": True}, (4096, 4)),
    ({"model_type": "qwen2", "sliding_window": 32768, "use_sliding_window": False}, (0, 0)),
])
def test_windows_read_as_before(tmp_path, fields, expected):
    assert _window(tmp_path, **fields) == expected


@pytest.mark.parametrize("fields", [
    {"model_type": "qwen2", "sliding_window": 32768, "use_sliding_window": False,
     "layer_types": HALF},
    {"model_type": "qwen3", "sliding_window": 4096, "layer_types": HALF},
    {"model_type": "mistral", "sliding_window": 4096, "use_sliding_window": False},
    {"model_type": "llama", "sliding_window": 4096, "use_sliding_window": None},
])
def test_a_window_switched_off_is_no_window(tmp_path, fields):
    """They were read with a window (32768 on 2 layers, 4096 on 2, 4096 on all 4 twice)."""
    assert _window(tmp_path, **fields) == (0, 0)
