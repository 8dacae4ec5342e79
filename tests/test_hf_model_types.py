"""Model types read from a Hugging Face config.json: multimodal wrappers, DeepSeek-V2, and the
line naming what tiersim lacks for the types it does not serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import SUPPORTED_TYPES, load_hf_config
from tiersim.perf.memory import kv_bytes_per_token

QWEN3_TEXT = {"model_type": "qwen3_vl_text", "hidden_size": 2048, "intermediate_size": 6144,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "num_hidden_layers": 28, "vocab_size": 151936}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("outer", "inner", "tied"), [
    (True, None, True),  # the wrapper's key, where text_config has none
    (None, True, True),
    (True, False, False),  # the language model's own key first
    (None, None, False),
])
def test_a_wrapper_ties_lm_head_as_its_text_config_or_else_itself_says(tmp_path, outer, inner,
                                                                       tied):
    """A wrapper saying ``tie_word_embeddings: true`` outside its text_config was counted
    with a separate lm_head (311 M parameters too many here)."""
    text = QWEN3_TEXT if inner is None else {**QWEN3_TEXT, "tie_word_embeddings": inner}
    wrapper = {"model_type": "qwen3_vl", "text_config": text}
    if outer is not None:
        wrapper["tie_word_embeddings"] = outer
    model = load_hf_config(_write(tmp_path, wrapper))
    assert model.tie_embeddings is tied
    assert model.total_params == (1_720_574_976 if tied else 2_031_739_904)


QWEN2 = {"hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
         "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064,
         "max_position_embeddings": 128000,
         "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
V2_LITE = {"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
           "moe_intermediate_size": 1408, "num_attention_heads": 16, "num_key_value_heads": 16,
           "num_hidden_layers": 27, "n_routed_experts": 64, "n_shared_experts": 2,
           "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
           "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400}
PHIMOE = {"model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400,
          "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
          "num_local_experts": 16, "num_experts_per_tok": 2, "vocab_size": 32064,
          "max_position_embeddings": 131072}


def test_deepseek_v2_lite_is_mla_without_a_query_lora(tmp_path):
    """It was refused ("'deepseek_v2' is not supported"); 15.7 B parameters on its card,
    27 layers x (512 + 64) latent x 2 bytes of KV per token."""
    model = load_hf_config(_write(tmp_path, V2_LITE))
    assert (model.total_params, model.q_lora_rank, kv_bytes_per_token(model)) == (
        15_706_470_400, 0, 31_104.0)


def test_phimoe_reads_as_mixtral(tmp_path):
    """Phi-3.5-MoE was refused; 41.9 B parameters on its card."""
    assert load_hf_config(_write(tmp_path, PHIMOE)).total_params == 41_872_527_360


@pytest.mark.parametrize("data", [
    {"model_type": "qwen2_5_vl", **QWEN2, "vision_config": {"depth": 32}},  # flat
    {"model_type": "qwen2_5_vl", "vision_config": {"depth": 32},
     "text_config": {**QWEN2, "model_type": "qwen2_5_vl_text"}},
])
def test_qwen2_5_vl_serves_its_qwen2_language_model_with_a_note(tmp_path, data):
    path = _write(tmp_path, data)
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert model.total_params == 7_615_487_488  # Qwen2.5-7B's language model
    assert [str(n.message) for n in notes] == [
        f"{path}: a qwen2_5_vl model: tiersim serves its language model (qwen2); the vision "
        "tower's weights are not counted and image inputs are not modelled"]


def test_gemma2_says_what_tiersim_lacks(tmp_path):
    path = _write(tmp_path, {**QWEN2, "model_type": "gemma2", "sliding_window": 4096,
                             "attn_logit_softcapping": 50.0})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'model_type': 'gemma2': tiersim does not model alternating "
        "sliding-window/global attention with attention-logit soft-capping; supported: "
        + ", ".join(SUPPORTED_TYPES))



@pytest.mark.parametrize(("data", "text"), [
    ({**QWEN2, "model_type": ["qwen2"]},
     "key 'model_type': must be a name such as 'llama' (got [\"qwen2\"])"),
    ({"model_type": "qwen2_vl", "text_config": {**QWEN2, "model_type": {"name": "qwen2"}}},
     "key 'text_config.model_type': must be a name such as 'llama' (got {\"name\": \"qwen2\"})"),
])
def test_a_model_type_that_is_no_name_is_one_line(tmp_path, data, text):
    path = _write(tmp_path, data)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == f"{path}: {text}"


@pytest.mark.parametrize(("data", "given"), [
    # MiniMax-M3's NVFP4 wrapper: its text_config names no model_type
    ({"model_type": "minimax_m3_vl", "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
      "text_config": {**QWEN2}, "vision_config": {}},
     "key 'text_config.model_type': missing; its wrapper 'minimax_m3_vl': tiersim does not "
     "model lightning (linear) attention layers"),
    # sgl-project's DeepSeek-V4 configs name a type of their own, and the V4 class
    ({**QWEN2, "model_type": "deepseek_ref", "architectures": ["DeepseekV4ForCausalLM"]},
     "key 'model_type': 'deepseek_ref': tiersim does not model DeepSeek-V4 compressed sparse "
     "attention"),
    ({**QWEN2, "model_type": "step3p7"},
     "key 'model_type': 'step3p7': tiersim does not model Step-3.7's MoE layout (routed experts "
     "after leading dense layers, beside interleaved sliding-window attention)"),
])
def test_an_unsupported_type_says_what_tiersim_lacks(tmp_path, data, given):
    path = _write(tmp_path, data)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == f"{path}: {given}; supported: {', '.join(SUPPORTED_TYPES)}"
