"""Round 24 (defaults): a config.json's left-out keys read as transformers' class defaults,
and notes the calibration import prints only about what the user asked for."""

from __future__ import annotations

from test_round24_configs import _notes, _write

from tiersim.calibrate import shapes
from tiersim.perf.memory import kv_bytes_per_token

#: Mixtral-8x7B's sizes with num_key_value_heads left out (a hand-written or trimmed config):
#: MixtralConfig's default is 8 KV heads, not the 32 query heads.
MIXTRAL_NO_KV = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
                 "num_hidden_layers": 32, "num_attention_heads": 32, "num_local_experts": 8,
                 "num_experts_per_tok": 2, "vocab_size": 32000,
                 "max_position_embeddings": 32768}


def test_a_top_level_config_without_kv_heads_reads_its_types_default(tmp_path):
    """A Mixtral config without num_key_value_heads was read with 32 KV heads (4x the KV cache
    transformers and vLLM build: MixtralConfig defaults it to 8), silently."""
    path = _write(tmp_path, MIXTRAL_NO_KV, "mixtral")
    arch, notes = _notes(path)
    assert arch.kv_heads == 8
    assert kv_bytes_per_token(arch, "bf16") == 2 * 32 * 8 * 128 * 2  # 131,072 B, not 524,288
    assert (f"{path}: leaves out num_key_value_heads: read as transformers' mixtral defaults "
            "(8), as transformers and vLLM build the model") in notes
    assert shapes.from_config(path).kv_heads == 8  # the harness reads it alike
    assert shapes.from_config(path).notes == (
        "leaves out num_key_value_heads: read as transformers' mixtral defaults (8)",)


def test_types_whose_default_is_the_query_heads_read_as_before(tmp_path):
    """LlamaConfig (and Phi-3's) default num_key_value_heads to the query heads: no note."""
    doc = {**MIXTRAL_NO_KV, "model_type": "llama"}
    del doc["num_local_experts"], doc["num_experts_per_tok"]
    arch, notes = _notes(_write(tmp_path, doc))
    assert arch.kv_heads == 32 and not [n for n in notes if "num_key_value_heads" in n]
    assert shapes.from_config(_write(tmp_path, doc, "h")).notes == ()


def test_qwen3_moe_and_qwen3_read_their_own_fixed_defaults(tmp_path):
    """Qwen3MoeConfig defaults to 4 KV heads, Qwen3Config to 32 (a number, not the heads)."""
    moe = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
           "num_attention_heads": 32, "head_dim": 128, "num_experts": 8,
           "num_experts_per_tok": 2, "moe_intermediate_size": 768, "vocab_size": 1000,
           "max_position_embeddings": 4096}
    assert _notes(_write(tmp_path, moe))[0].kv_heads == 4
    dense = {"model_type": "qwen3", "hidden_size": 8192, "num_hidden_layers": 4,
             "num_attention_heads": 64, "head_dim": 128, "intermediate_size": 1024,
             "vocab_size": 1000, "max_position_embeddings": 4096}
    assert _notes(_write(tmp_path, dense, "d"))[0].kv_heads == 32
    assert shapes.from_config(tmp_path / "d" / "config.json").kv_heads == 32


def test_a_wrappers_text_config_without_kv_heads_reads_its_types_default(tmp_path):
    """A Qwen3-VL-MoE text_config without num_key_value_heads: Qwen3VLMoeTextConfig's 16."""
    doc = {"model_type": "qwen3_vl_moe", "vision_config": {"depth": 2},
           "text_config": {"model_type": "qwen3_vl_moe_text", "hidden_size": 2048,
                           "num_hidden_layers": 4, "num_attention_heads": 32, "head_dim": 128,
                           "num_experts": 8, "num_experts_per_tok": 2,
                           "moe_intermediate_size": 768, "vocab_size": 1000,
                           "max_position_embeddings": 4096}}
    path = _write(tmp_path, doc)
    arch, notes = _notes(path)
    assert arch.kv_heads == 16
    assert any("key 'text_config' leaves out num_key_value_heads: read as transformers' "
               "qwen3_vl_moe_text defaults (16)" in n for n in notes)
    assert shapes.from_config(path).kv_heads == 16


def test_the_aiconfigurator_import_notes_no_bundled_config_by_name(tmp_path):
    """``tiersim calibrate --from aiconfigurator --out P.json`` printed six notes about
    aiconfigurator-core's own multimodal configs (Kimi-K2.5, the Qwen3.5 family: 'the vision
    tower's weights are not counted ...'), which the user never named: their language models'
    tables are what the profile covers. They are one line now, saying how many and why."""
    import pytest
    from conftest import run_cli

    pytest.importorskip("aiconfigurator_core")
    out = tmp_path / "p.json"
    done = run_cli("calibrate", "--from", "aiconfigurator", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert not [line for line in lines if "model_configs" in line or "tower's weights" in line]
    assert ("note: 6 of aiconfigurator-core's bundled model configs are multimodal: the "
            "profile covers their language models (a vision tower is not timed)") in lines
    assert out.is_file()
