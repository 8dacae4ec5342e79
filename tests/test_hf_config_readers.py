"""Config readers found wanting by a hostile pass over real Hugging Face configs: GPTQ's
per-module ``dynamic`` overrides, Qwen2-MoE, Phi-3 and the one line an unknown architecture
gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import load_hf_config

LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2048,
         "vocab_size": 1000}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def _write(tmp_path: Path, fields: dict, quant: dict | None = None) -> Path:
    path = tmp_path / "config.json"
    body = {**fields, **({"quantization_config": quant} if quant else {})}
    path.write_text(json.dumps(body))
    return path


# --------------------------------------------------------------------------- GPTQ dynamic


def test_gptq_dynamic_negative_match_leaves_modules_bf16(tmp_path):
    """GPTQModel's ``dynamic`` ``-:`` regex leaves the modules it matches unquantised, as vLLM
    loads them; they were read as W4A16 (the MLPs' weights a quarter of their real bytes)."""
    quant = {**GPTQ, "dynamic": {r"-:.*\.mlp\..*": {}}}
    model = load_hf_config(_write(tmp_path, LLAMA, quant))
    assert model.checkpoint == (("attention", "w4a16", 4.125),)


def test_gptq_dynamic_positive_match_overrides_the_group_size(tmp_path):
    """A ``+:`` regex (or one with no sign) quantises its modules with its own group size."""
    quant = {**GPTQ, "dynamic": {r"+:.*self_attn.*": {"group_size": 32},
                                 r"model\.layers\.[01]\.mlp\..*": {"group_size": 32}}}
    model = load_hf_config(_write(tmp_path, LLAMA, quant))
    assert model.checkpoint == (("attention", "w4a16", 4.5), ("mlp", "w4a16", 4.3125))


def test_gptq_dynamic_first_matching_rule_decides(tmp_path):
    """As vLLM reads it: the first pattern matching a module decides, negative or not (here
    layer 0 is W4A16 and the other three BF16, so each group is mostly BF16)."""
    quant = {**GPTQ, "dynamic": {r"+:.*layers\.0\..*": {}, r"-:.*": {}}}
    model = load_hf_config(_write(tmp_path, LLAMA, quant))
    assert model.checkpoint == (("attention", "bf16", 13.03125), ("mlp", "bf16", 13.03125))


@pytest.mark.parametrize(("dynamic", "message"), [
    ({r".*mlp.*": {"bits": 3}}, "key 'quantization_config.dynamic..*mlp.*.bits': must be 4 "
     "or 8 (got 3); tiersim reads 4- and 8-bit GPTQ modules (as w4a16 / w8a16), the widths "
     "vLLM's Marlin kernel serves (2 and 3 bits run its older GPTQ kernel, which tiersim does "
     "not time): use a 4- or 8-bit checkpoint, or remove quantization_config from a copy of "
     "config.json and set the tier's precision"),
    ({"-:(": {}}, "key 'quantization_config.dynamic': '-:(' is not a regular expression "
     "(missing ), unterminated subpattern at position 0)"),
    ({".*": 4}, "key 'quantization_config.dynamic..*': must be an object of overrides "
     "(bits, group_size ...) (got 4)"),
    ([".*"], "key 'quantization_config.dynamic': must be an object of module regexes (got "
     '[".*"])'),
])
def test_gptq_dynamic_it_cannot_read_is_one_line(tmp_path, dynamic, message):
    path = _write(tmp_path, LLAMA, {**GPTQ, "dynamic": dynamic})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == f"{path}: {message}"


# --------------------------------------------------------------------------- Qwen2-MoE

QWEN2_57B = {"model_type": "qwen2_moe", "hidden_size": 3584, "intermediate_size": 18944,
             "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
             "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 28,
             "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 151936,
             "max_position_embeddings": 32768, "decoder_sparse_step": 1, "mlp_only_layers": [],
             "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 28,
             "tie_word_embeddings": False}


def test_qwen2_moe_is_read_with_its_shared_expert(tmp_path):
    """Qwen2-57B-A14B (57.4 B parameters on its model card) was refused ("'qwen2_moe' is not
    supported"), though its layout is Qwen3-MoE's without q/k norms plus a shared expert."""
    model = load_hf_config(_write(tmp_path, QWEN2_57B))
    assert round(model.total_params / 1e9, 1) == 57.4
    assert model.shared_intermediate == 20480 and not model.qk_norm
    assert model.num_experts == 64 and model.top_k == 8


def test_qwen1_5_moe_matches_its_card(tmp_path):
    """Qwen1.5-MoE-A2.7B: 14.3 B parameters on its card."""
    fields = {**QWEN2_57B, "hidden_size": 2048, "intermediate_size": 5632,
              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
              "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
              "num_attention_heads": 16, "num_key_value_heads": 16}
    model = load_hf_config(_write(tmp_path, fields))
    assert round(model.total_params / 1e9, 1) == 14.3


# --------------------------------------------------------------------------- Phi-3

PHI3_MINI = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
             "vocab_size": 32064, "max_position_embeddings": 4096, "sliding_window": 2047,
             "tie_word_embeddings": False}


def test_phi3_is_read_as_llama(tmp_path):
    """Phi-3-mini (3.8 B parameters on its card) was refused ("'phi3' is not supported"),
    though it is Llama's layout with fused qkv and gate/up projections."""
    model = load_hf_config(_write(tmp_path, PHI3_MINI))
    assert round(model.total_params / 1e9, 2) == 3.82
    assert (model.sliding_window, model.sliding_layers) == (2047, 32)


def test_phi3_128k_longrope_keeps_its_context(tmp_path):
    rope = {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}
    fields = {**PHI3_MINI, "max_position_embeddings": 131072, "rope_scaling": rope,
              "original_max_position_embeddings": 4096, "sliding_window": 262144}
    model = load_hf_config(_write(tmp_path, fields))  # not stretched by a factor; vLLM serves
    assert (model.max_context, model.context_limit) == (4096, 131072)  # 4,096 unless asked


def test_fused_projection_names_in_an_ignore_list_are_matched(tmp_path):
    """Phi-3's checkpoints fuse q/k/v into ``qkv_proj`` and gate/up into ``gate_up_proj``:
    an ignore list naming them leaves those weights BF16."""
    quant = {"quant_method": "fp8", "modules_to_not_convert": ["qkv_proj", "gate_up_proj"]}
    model = load_hf_config(_write(tmp_path, PHI3_MINI, quant))
    # q, k, v (three quarters of attention: 32 KV heads) and gate, up (two thirds) in BF16
    assert model.checkpoint == (("attention", "bf16", 16 * 3 / 4 + 8 / 4),
                                ("mlp", "bf16", pytest.approx((16 * 2 + 8) / 3)))


# --------------------------------------------------------------------------- unknown types


@pytest.mark.parametrize(("fields", "lacks"), [
    ({"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
      "multi_query": True, "parallel_attn": True},
     "'falcon': tiersim does not model a two-matrix (non-gated) MLP beside attention in "
     "parallel blocks"),
    ({"model_type": "gpt_neox", "hidden_size": 6144, "use_parallel_residual": True},
     "'gpt_neox': tiersim does not model a two-matrix (non-gated) MLP beside attention in "
     "parallel blocks"),
    ({"model_type": "gpt2", "n_embd": 768}, "'gpt2': tiersim does not model a two-matrix "
     "(non-gated) MLP"),
    ({"model_type": "bloom", "hidden_size": 1024}, "'bloom': tiersim does not model ALiBi "
     "attention with a two-matrix (non-gated) MLP"),
])
def test_well_known_architectures_say_what_tiersim_lacks(tmp_path, fields, lacks):
    """Falcon, GPT-NeoX, GPT-2 and BLOOM were 'not supported' with no word of why; each now
    says what its layout has that tiersim's transformer (gated three-matrix MLP) lacks."""
    from tiersim.hardware.hf_config import SUPPORTED_TYPES

    path = _write(tmp_path, fields)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (f"{path}: key 'model_type': {lacks}; supported: "
                              f"{', '.join(SUPPORTED_TYPES)}")


# --------------------------------------------------------------------------- llm_config


QWEN2_7B = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
            "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
            "vocab_size": 152064, "tie_word_embeddings": False}


@pytest.mark.parametrize("key", ["llm_config", "language_config"])
def test_a_wrapper_naming_its_language_model_otherwise_is_read_through_it(tmp_path, key):
    """InternVL names its language model ``llm_config`` and DeepSeek-VL2 ``language_config``
    (vLLM reads both); they were refused ("'internvl_chat' is not supported")."""
    fields = {"model_type": "internvl_chat", key: QWEN2_7B, "vision_config": {"hidden_size": 1}}
    with pytest.warns(Note, match="tiersim serves its language model"):
        model = load_hf_config(_write(tmp_path, fields))
    assert round(model.total_params / 1e9, 2) == 7.62


@pytest.mark.parametrize(("wrapper", "key", "inner", "said"), [
    ("internvl_chat", "llm_config", "bloom", "'bloom': tiersim does not model ALiBi"),
    ("llava", "text_config", "foo", "'foo' is not supported; supported: llama, "),
])
def test_a_wrapped_language_model_of_an_unread_type_names_its_key(tmp_path, wrapper, key,
                                                                  inner, said):
    fields = {"model_type": wrapper, key: {**QWEN2_7B, "model_type": inner}}
    path = _write(tmp_path, fields)
    with pytest.raises(TiersimError, match=f"key '{key}.model_type': {said}"):
        load_hf_config(path)


def test_a_wrapped_language_model_without_a_type_asks_for_it(tmp_path):
    """It said "its wrapper 'llava' is not supported", though llava is read through its
    text_config when that names a type."""
    fields = {"model_type": "llava", "text_config": {k: v for k, v in QWEN2_7B.items()
                                                      if k != "model_type"}}
    path = _write(tmp_path, fields)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value).startswith(
        f"{path}: key 'text_config.model_type': missing; its wrapper 'llava' does not say which "
        "language model it holds; name its type (e.g. 'llama'); supported: llama, ")


# --------------------------------------------------------------------------- fbgemm_fp8


def test_fbgemm_fp8_is_read_as_fp8_but_its_modules_to_not_convert(tmp_path):
    """Meta's own FP8 checkpoints (Llama-3.1-405B-Instruct-FP8) say ``fbgemm_fp8``: FP8
    weights with a scale per channel, which vLLM serves; they were refused."""
    skip = [f"model.layers.{i}.self_attn.{p}" for i in range(4)
            for p in ("q_proj", "k_proj", "v_proj", "o_proj")] + [
        f"model.layers.0.mlp.{p}" for p in ("gate_proj", "up_proj", "down_proj")] + ["lm_head"]
    quant = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": skip,
             "activation_scale_ub": 1200.0}
    model = load_hf_config(_write(tmp_path, LLAMA, quant))
    assert model.checkpoint == (("mlp", "fp8", 10.0),)


# --------------------------------------------------------------------------- sparsity


def _sparse(fmt: str) -> dict:
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token"}}},
        "ignore": ["lm_head"],
        "sparsity_config": {"format": fmt, "sparsity_structure": "2:4", "targets": ["Linear"],
                            "global_sparsity": 0.45, "ignore": ["lm_head"]}}


def test_sparse_weights_are_one_line_not_sized_as_dense(tmp_path):
    """A compressed-tensors checkpoint whose sparsity_config stores 2:4 sparse weights (half
    the values and a bitmask; vLLM serves them with sparse kernels) was read as dense FP8,
    its weights near twice their size with nothing said."""
    path = _write(tmp_path, LLAMA, _sparse("sparse-24-bitmask"))
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'quantization_config.sparsity_config.format': 'sparse-24-bitmask' (2:4 "
        "sparsity): tiersim does not model sparse weights (it sizes and times them dense); "
        "use the dense checkpoint")


def test_a_dense_sparsity_config_is_read_as_dense(tmp_path):
    model = load_hf_config(_write(tmp_path, LLAMA, _sparse("dense")))
    assert model.checkpoint == (("attention", "fp8", 8.0), ("mlp", "fp8", 8.0))


# --------------------------------------------------------------------------- GPTQ lm_head


def test_gptq_quantised_lm_head_is_read(tmp_path):
    """GPTQModel's ``lm_head: true`` stores lm_head in 4 bits too (vLLM loads it so); it was
    read as BF16, overstating a small model's weights by most of lm_head's bytes."""
    model = load_hf_config(_write(tmp_path, LLAMA, {**GPTQ, "lm_head": True}))
    assert model.checkpoint == (("attention", "w4a16", 4.125), ("mlp", "w4a16", 4.125),
                                ("lm_head", "w4a16", 4.125))


def test_gptq_lm_head_of_a_tied_model_stays_with_the_embeddings(tmp_path):
    fields = {**LLAMA, "tie_word_embeddings": True}
    model = load_hf_config(_write(tmp_path, fields, {**GPTQ, "lm_head": True}))
    assert [g for g, _, _ in model.checkpoint] == ["attention", "mlp"]


def test_llama_3_2_vision_says_what_tiersim_lacks(tmp_path):
    """Llama-3.2-Vision's language model interleaves cross-attention layers to the image."""
    fields = {"model_type": "mllama", "text_config": {"model_type": "mllama_text_model",
                                                      "cross_attention_layers": [3, 8]}}
    path = _write(tmp_path, fields)
    with pytest.raises(TiersimError, match="key 'text_config.model_type': 'mllama_text_model': "
                       "tiersim does not model cross-attention layers to image features; "):
        load_hf_config(path)


def test_a_regex_naming_v_proj_leaves_q_and_k_of_an_unfused_checkpoint_alone(tmp_path):
    """Only a checkpoint that fuses (Phi-3) answers to ``qkv_proj``: in a Llama checkpoint a
    regex ending in ``v_proj`` must not reach q and k through the fused name."""
    quant = {"quant_method": "fp8", "modules_to_not_convert": ["re:.*v_proj"]}
    model = load_hf_config(_write(tmp_path, LLAMA, quant))
    assert model.checkpoint == (("attention", "fp8", pytest.approx(0.9 * 8 + 0.1 * 16)),
                                ("mlp", "fp8", 8.0))
