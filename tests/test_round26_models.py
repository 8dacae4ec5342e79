"""Real Hugging Face configs tiersim's benchmarks do not cover (session 33's generalisation
check): GLM-4.5's ``glm4_moe`` read as vLLM's glm4_moe.py builds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf.memory import checkpoint_bytes, kv_bytes_per_token

#: zai-org/GLM-4.5-Air's config.json (as ms-swift printed it), the keys that shape the model.
GLM45_AIR = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
             "hidden_size": 4096, "intermediate_size": 10944, "num_hidden_layers": 46,
             "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
             "first_k_dense_replace": 1, "n_routed_experts": 128, "n_shared_experts": 1,
             "num_experts_per_tok": 8, "moe_intermediate_size": 1408,
             "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5, "use_qk_norm": False,
             "attention_bias": True, "max_position_embeddings": 131072, "vocab_size": 151552,
             "tie_word_embeddings": False}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_glm45_air_is_read_as_its_published_106b(tmp_path: Path) -> None:
    """GLM-4.5 / 4.6 / 4.5-Air (``glm4_moe``) was refused ("is not supported"). By hand:
    attention 46 x (4096 x (12,288 + 2 x 1,024) + 12,288 x 4096) = 5,016 M; one dense layer
    3 x 4096 x 10,944 = 134.5 M; 45 MoE layers of 128 experts and one shared expert of
    3 x 4096 x 1,408 each = 99,657 M + 778.6 M, routers 23.6 M; embeddings and lm_head
    2 x 151,552 x 4096 = 1,241.5 M; norms 0.4 M: 106.85 B (zai-org's card: 106 B total)."""
    model = load_hf_config(_write(tmp_path, GLM45_AIR))
    assert (model.dense_layers, model.moe_layers, model.num_experts, model.top_k) == (1, 45, 128, 8)
    assert model.shared_intermediate == 1408 and model.intermediate == 10944
    assert model.total_params == pytest.approx(106.852e9, rel=1e-5)
    # KV: 46 layers x 8 heads x 128 x (K + V) x 2 bytes
    assert kv_bytes_per_token(model, "bf16") == 46 * 8 * 128 * 2 * 2
    # the MTP layer ships in the checkpoint (attention, experts, shared, router, eh_proj, norms)
    mtp = 109.05e6 + 2214.6e6 + 17.3e6 + 0.52e6 + 2 * 4096 * 4096
    assert checkpoint_bytes(model) == pytest.approx(2 * (106.852e9 + mtp), rel=1e-4)


def test_glm45_without_kv_heads_takes_its_class_default(tmp_path: Path) -> None:
    """transformers' Glm4MoeConfig defaults num_key_value_heads to 8, not the 96 query heads
    (12 times the KV per token)."""
    path = _write(tmp_path, {k: v for k, v in GLM45_AIR.items() if k != "num_key_value_heads"})
    with pytest.warns(Note, match="num_key_value_heads"):
        model = load_hf_config(path)
    assert model.kv_heads == 8


@pytest.mark.parametrize("key", ["n_shared_experts", "first_k_dense_replace"])
def test_glm45_without_a_layout_key_says_so(tmp_path: Path, key: str) -> None:
    """transformers' Glm4MoeConfig defaults both to 1, not none: left out is one line."""
    path = _write(tmp_path, {k: v for k, v in GLM45_AIR.items() if k != key})
    with pytest.raises(TiersimError, match=rf"key '{key}': missing; transformers would take "
                       "glm4_moe's default"):
        load_hf_config(path)
