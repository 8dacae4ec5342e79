"""Tests of the hardware catalogue: GPUs, precisions, model shapes and config.json loading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware import get_gpu, get_model, get_precision
from tiersim.hardware.precisions import kv_dtype_bytes

QWEN3_MOE_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

GPT_OSS_20B_CONFIG = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "num_hidden_layers": 24,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 2880,
    "num_local_experts": 32,
    "experts_per_token": 4,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "vocab_size": 201088,
    "tie_word_embeddings": False,
}

LLAMA_8B_CONFIG = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}


def write_config(folder: Path, data: dict, name: str = "config.json") -> Path:
    """Write ``data`` as JSON under ``folder`` and return the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


# ----------------------------------------------------------------------------- GPUs


def test_h200_matches_data_sheet():
    h200 = get_gpu("H200")
    assert h200.hbm_bytes == 143_771 * 2**20  # as the device reports it
    assert h200.hbm_bw_bytes_s == 4.8e12
    assert h200.peak("bf16") == pytest.approx(989e12)
    assert h200.peak("fp8") == pytest.approx(2 * 989e12, rel=1e-3)
    assert "fp4" not in h200.peak_flops
    assert h200.native == {"bf16", "fp8"}


def test_gpu_lookup_is_case_insensitive_and_b200_has_fp4():
    assert get_gpu("h100").name == get_gpu("H100 SXM").name == "H100"
    assert get_gpu("h100").hbm_bytes == 81_559 * 2**20
    b200 = get_gpu("b200")
    assert get_gpu("B200 SXM") is get_gpu("b200_sxm") is b200  # the sample's system names too
    assert b200.hbm_bytes == 183_359 * 2**20 and "nvfp4" in b200.native
    assert b200.peak("fp4") == 2 * b200.peak("fp8") == 4 * b200.peak("bf16")


def test_unknown_gpu_lists_known():
    with pytest.raises(TiersimError, match="unknown GPU 'A100'.*H200, H100, B200, B300"):
        get_gpu("A100")


# ----------------------------------------------------------------------------- precisions


def test_bits_per_weight_include_scales():
    assert get_precision("bf16").weight_bits == 16
    assert get_precision("FP8").weight_bits == 8
    assert get_precision("w4a16").weight_bits == pytest.approx(4.125)
    assert get_precision("nvfp4").weight_bits == pytest.approx(4.5)


def test_embeddings_lm_head_norms_router_stay_bf16():
    nvfp4 = get_precision("nvfp4")
    for group in ("embedding", "lm_head", "norms", "router"):
        assert nvfp4.bits_for(group) == 16
    for group in ("attention", "mlp", "experts"):
        assert nvfp4.bits_for(group) == 4.5


@pytest.mark.parametrize(
    "precision, gpu, dtype, native",
    [
        ("bf16", "h200", "bf16", True),
        ("fp8", "h200", "fp8", True),
        ("w4a16", "h200", "bf16", False),
        ("nvfp4", "h200", "bf16", False),
        ("nvfp4", "h100", "bf16", False),
        ("nvfp4", "b200", "fp4", True),
        ("w4a16", "b200", "bf16", False),
        ("fp8", "b200", "fp8", True),
    ],
)
def test_compute_dtype_per_gpu(precision, gpu, dtype, native):
    prec, device = get_precision(precision), get_gpu(gpu)
    assert prec.compute_dtype_on(device) == dtype
    assert prec.is_native_on(device) is native


def test_unknown_precision_and_kv_dtype():
    with pytest.raises(TiersimError, match="unknown precision 'int3'.*bf16, fp8, w4a16, nvfp4"):
        get_precision("int3")
    assert kv_dtype_bytes("fp8") == 1 and kv_dtype_bytes("BF16") == 2
    with pytest.raises(TiersimError, match="KV-cache dtype 'int4'"):
        kv_dtype_bytes("int4")


# ----------------------------------------------------------------------------- models


@pytest.mark.parametrize(
    "name, total_b, active_b",
    [
        ("Qwen3-Coder-30B-A3B", 30.5, 3.3),  # Qwen's model card: 30.5B total, 3.3B activated
        ("Llama-3.1-8B", 8.03, 8.03),
        ("Llama-3.1-70B", 70.6, 70.6),
    ],
)
def test_parameter_counts_match_model_cards(name, total_b, active_b):
    model = get_model(name)
    assert model.total_params / 1e9 == pytest.approx(total_b, rel=0.01)
    assert model.active_params / 1e9 == pytest.approx(active_b, rel=0.02)


def test_qwen3_coder_shapes():
    m = get_model("qwen3-coder-30b-a3b")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) == (48, 2048, 32, 4, 128)
    assert (m.num_experts, m.expert_intermediate, m.top_k, m.vocab) == (128, 768, 8, 151936)
    assert m.is_moe and not m.tie_embeddings
    groups = m.param_groups()
    assert groups["experts"] == 48 * 128 * 3 * 2048 * 768
    assert groups["lm_head"] == groups["embedding"] == 151936 * 2048


def test_hub_names_resolve_to_catalogue():
    assert get_model("Qwen/Qwen3-Coder-30B-A3B-Instruct").name == "Qwen3-Coder-30B-A3B"
    assert get_model("meta-llama/Llama-3.1-70B-Instruct").name == "Llama-3.1-70B"
    assert get_model("meta-llama/Meta-Llama-3.1-8B").name == "Llama-3.1-8B"


def test_unknown_model_lists_catalogue():
    with pytest.raises(TiersimError, match="unknown model 'gpt-5'.*Llama-3.1-8B.*config.json"):
        get_model("gpt-5")


# ----------------------------------------------------------------------------- config.json


def test_qwen3_moe_config_matches_catalogue(tmp_path):
    path = write_config(tmp_path / "Qwen3-Coder-30B-A3B-Instruct", QWEN3_MOE_CONFIG)
    loaded = get_model(str(path))
    expected = get_model("Qwen3-Coder-30B-A3B")
    assert loaded.name == "Qwen3-Coder-30B-A3B-Instruct"
    assert loaded.source == str(path)
    for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "num_experts"):
        assert getattr(loaded, field) == getattr(expected, field)
    assert loaded.total_params == expected.total_params


def test_gpt_oss_config(tmp_path):
    path = write_config(tmp_path / "gpt-oss-20b", GPT_OSS_20B_CONFIG)
    m = get_model(path.parent)  # a folder holding config.json works too
    assert (m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) == (
        "gpt-oss-20b",
        24,
        2880,
        64,
        8,
        64,
    )
    assert (m.num_experts, m.top_k, m.expert_intermediate) == (32, 4, 2880)
    assert (m.sliding_window, m.sliding_layers) == (128, 12)
    # OpenAI's model card: 20.9B total parameters, 3.6B active (its count leaves out the input
    # embedding, a lookup; Qwen's 3.3B for Qwen3-30B-A3B keeps it, as active_params does).
    embedding = m.param_groups()["embedding"]
    assert m.total_params / 1e9 == pytest.approx(20.9, rel=0.01)
    assert (m.active_params - embedding) / 1e9 == pytest.approx(3.6, rel=0.02)


def test_dense_llama_config_defaults_head_dim(tmp_path):
    m = get_model(write_config(tmp_path, LLAMA_8B_CONFIG, "llama8b.json"))
    assert m.name == "llama8b" and m.head_dim == 128 and not m.is_moe
    assert m.total_params == get_model("Llama-3.1-8B").total_params


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "mamba"}, "key 'model_type': 'mamba': tiersim does not model Mamba "
         "(state-space) layers instead of attention"),
        ({"num_experts": None}, "key 'num_experts': null; needed to build the model"),
        ({"hidden_size": "big"}, "key 'hidden_size': must be a positive integer"),
        ({"mlp_only_layers": [0, 1]}, "key 'mlp_only_layers'"),
        ({"num_experts_per_tok": 200}, "key 'num_experts_per_tok': must not exceed"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path, change, message):
    path = write_config(tmp_path, {**QWEN3_MOE_CONFIG, **change})
    with pytest.raises(TiersimError) as info:
        get_model(path)
    text = str(info.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_missing_key_and_bad_json(tmp_path):
    data = dict(QWEN3_MOE_CONFIG)
    del data["moe_intermediate_size"]
    with pytest.raises(TiersimError, match="key 'moe_intermediate_size': missing"):
        get_model(write_config(tmp_path, data))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(TiersimError, match="broken.json: line 1: not valid JSON"):
        get_model(broken)
    with pytest.raises(TiersimError, match="absent.json: model config not found"):
        get_model(tmp_path / "absent.json")
