"""Real Hugging Face configs tiersim's benchmarks do not cover (session 33's generalisation
check): GLM-4.5's ``glm4_moe`` read as vLLM's glm4_moe.py builds it, and an AutoGPTQ / AutoAWQ
quantisation file beside a config without ``quantization_config`` named in a note."""

from __future__ import annotations

import json
import warnings
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


#: Qwen/Qwen2.5-7B-Instruct's config.json, the keys that shape the model (its safetensors
#: index: total_size 15,231,233,024 bytes).
QWEN25_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
             "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "max_position_embeddings": 32768, "sliding_window": None,
             "use_sliding_window": False, "tie_word_embeddings": False, "vocab_size": 152064}
#: AutoGPTQ's quantize_config.json as older exports write it beside config.json (no
#: quant_method; vLLM reads it only under --quantization gptq).
AUTOGPTQ_SIDE = {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False,
                 "sym": True, "true_sequential": True, "model_name_or_path": None,
                 "model_file_base_name": "model"}


@pytest.mark.parametrize(("name", "side", "method"), [
    ("quantize_config.json", AUTOGPTQ_SIDE, "gptq or awq"),
    ("quantize_config.json", {**AUTOGPTQ_SIDE, "quant_method": "gptq"}, "gptq"),
    ("quant_config.json", {"zero_point": True, "q_group_size": 128, "w_bit": 4,
                           "version": "GEMM"}, "gptq or awq"),
])
def test_a_quant_file_beside_a_config_without_one_is_a_note(tmp_path: Path, name: str,
                                                            side: dict, method: str) -> None:
    """An AutoGPTQ / AutoAWQ folder whose config.json has no quantization_config (the block
    in quantize_config.json / quant_config.json beside it) was sized as BF16 without a word:
    15.23 GB for a 4-bit checkpoint of about 5.5 GB. vLLM detects formats from config.json
    too (the side file only under --quantization), so tiersim keeps BF16, but says so."""
    path = _write(tmp_path, QWEN25_7B)
    (tmp_path / name).write_text(json.dumps(side))
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert checkpoint_bytes(model) == pytest.approx(15.231e9, rel=1e-3)
    said = [str(n.message) for n in notes if name in str(n.message)]
    assert len(said) == 1 and said[0].startswith(f"{tmp_path / name}: a quantisation block")
    assert f"--quantization {method}" in said[0] and "as BF16" in said[0]


def test_a_quant_file_beside_a_config_with_one_is_not_a_note(tmp_path: Path) -> None:
    """Where config.json has its quantization_config (as transformers-era exports write it
    beside the old file), that block is read, and the old file is no news."""
    quant = {**AUTOGPTQ_SIDE, "quant_method": "gptq"}
    path = _write(tmp_path, {**QWEN25_7B, "quantization_config": quant})
    (tmp_path / "quantize_config.json").write_text(json.dumps(AUTOGPTQ_SIDE))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_hf_config(path)
    assert not [w for w in caught if "quantize_config.json" in str(w.message)]
    assert checkpoint_bytes(model) < 6e9
