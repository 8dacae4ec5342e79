"""Hostile and odd model configs, round 21 (models): each a failure found from outside and
fixed, with the exact line a user sees or the number that was wrong."""

from __future__ import annotations

import json
import time

from tiersim.hardware.hf_config import load_hf_config

QWEN3_NEXT = {
    "model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 48,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 151936, "num_experts": 512, "num_experts_per_tok": 10,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 262144}


def _write(tmp_path, doc: dict):
    """``doc`` as ``tmp_path/model/config.json``."""
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(doc))
    return folder / "config.json"


def test_a_hybrid_of_any_depth_reads_at_once(tmp_path):
    """A Qwen3-Next config of a hundred million layers built a tuple, then a frozenset, of
    every delta-net layer's index: over a minute and gigabytes, then a MemoryError traceback.
    Other model types read a config of any depth at once (test_round9)."""
    path = _write(tmp_path, {**QWEN3_NEXT, "num_hidden_layers": 10**8})
    started = time.monotonic()
    model = load_hf_config(path)
    assert time.monotonic() - started < 5
    assert model.linear_layers == 10**8 - 10**8 // 4
