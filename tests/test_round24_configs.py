"""Round 24 of real-world ``config.json`` shapes (configs): each a failure found from outside
and fixed (the exact line or figure a user sees)."""

from __future__ import annotations

import json
import warnings

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware.hf_config import load_hf_config

#: llava-hf/llava-1.5-7b-hf's config.json as published: transformers wrote the language model's
#: keys only where they differ from LlamaConfig's defaults (hidden_size 4096, 32 layers ...).
LLAVA_15 = {
    "architectures": ["LlavaForConditionalGeneration"], "ignore_index": -100,
    "image_token_index": 32000, "model_type": "llava", "pad_token_id": 32001,
    "projector_hidden_act": "gelu",
    "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
                    "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
                    "torch_dtype": "float16", "vocab_size": 32064},
    "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.36.0.dev0",
    "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                      "model_type": "clip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 24, "patch_size": 14, "projection_dim": 768,
                      "vocab_size": 32000},
    "vision_feature_layer": -2, "vision_feature_select_strategy": "default", "vocab_size": 32064,
}


def _write(tmp_path, doc: dict, name: str = "m", side: dict | None = None):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc))
    if side is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(side))
    return folder / "config.json"


def _notes(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arch = load_hf_config(path)
    return arch, [str(w.message) for w in caught]


def test_a_wrappers_text_config_written_as_a_diff_reads_its_types_defaults(tmp_path):
    """llava-1.5-7b-hf was refused ("key 'text_config.hidden_size': missing; needed to build
    the model"): transformers writes a sub-config's keys only where they differ from its
    class's defaults, and fills them back from LlamaConfig on load, as vLLM builds it. Its
    language model is Vicuna-7B: 6.74 B parameters (32,064-token vocabulary)."""
    path = _write(tmp_path, LLAVA_15, "llava-1.5-7b-hf")
    arch, notes = _notes(path)
    assert (arch.hidden, arch.layers, arch.heads, arch.kv_heads, arch.intermediate) == (
        4096, 32, 32, 32, 11008)
    assert arch.total_params == 6_738_939_904 and arch.max_context == 4096
    assert (f"{path}: key 'text_config' leaves out hidden_size, intermediate_size, "
            "num_hidden_layers, num_attention_heads: read as transformers' llama defaults "
            "(4096, 11008, 32, 32), as transformers (which writes a sub-config's keys only where "
            "they differ from its class's defaults) and vLLM build the model") in notes


def test_a_mistral_text_config_without_a_window_slides_as_transformers_fills_it(tmp_path):
    """A mistral text_config that leaves sliding_window out has MistralConfig's 4,096-token
    window, as transformers loads it (llava-v1.6-mistral writes null where it has none)."""
    doc = {**LLAVA_15, "text_config": {"model_type": "mistral", "intermediate_size": 14336,
                                       "max_position_embeddings": 32768, "vocab_size": 32064}}
    arch, _ = _notes(_write(tmp_path, doc))
    assert (arch.kv_heads, arch.sliding_window, arch.sliding_layers) == (8, 4096, 32)
    doc["text_config"]["sliding_window"] = None
    arch, _ = _notes(_write(tmp_path, doc, "n"))
    assert arch.sliding_window == 0


def test_a_top_level_config_missing_a_size_is_still_refused(tmp_path):
    """transformers writes a top-level config's own keys in full: one without hidden_size was
    edited by hand, and is refused as before."""
    doc = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 128}
    with pytest.raises(TiersimError, match="key 'hidden_size': missing; needed to build"):
        load_hf_config(_write(tmp_path, doc))


#: DeepSeek-OCR's language_config as published (DeepSeek-VL2-Tiny's is alike): a DeepSeek-V2
#: MoE without MLA (use_mla false, kv_lora_rank null, its MLA head sizes 0), which vLLM's
#: deepseek_vl2.py serves as DeepseekForCausalLM, multi-head attention of 10 heads.
DEEPSEEK_OCR_TEXT = {
    "architectures": ["DeepseekV2ForCausalLM"], "first_k_dense_replace": 1, "hidden_size": 1280,
    "intermediate_size": 6848, "kv_lora_rank": None, "lm_head": True,
    "max_position_embeddings": 8192, "model_type": "deepseek_v2", "moe_intermediate_size": 896,
    "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 10,
    "num_experts_per_tok": 6, "num_hidden_layers": 12, "num_key_value_heads": 10,
    "q_lora_rank": None, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "topk_method": "greedy",
    "use_mla": False, "v_head_dim": 0, "vocab_size": 129280,
}


@pytest.mark.parametrize("drop, key, said", [
    ((), "use_mla", "is false"),
    (("use_mla",), "kv_lora_rank", "is null"),
])
def test_a_deepseek_config_without_mla_says_what_tiersim_lacks(tmp_path, drop, key, said):
    """DeepSeek-OCR's language model was refused as "key 'language_config.qk_nope_head_dim':
    must be a positive integer (got 0)", as if the config were broken: it is a DeepSeek MoE
    with multi-head attention, not MLA, which tiersim does not model. The line now says so."""
    text = {k: v for k, v in DEEPSEEK_OCR_TEXT.items() if k not in drop}
    doc = {"model_type": "deepseek_vl_v2", "language_config": text,
           "vision_config": {"model_type": "vision"}}
    path = _write(tmp_path, doc)
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value) == (
        f"{path}: key 'language_config.{key}' {said}: its attention is multi-head attention, "
        "not DeepSeek's multi-head latent attention (MLA; vLLM serves such a model as "
        "DeepseekForCausalLM): tiersim models DeepSeek MoE models with MLA only")


#: RedHatAI's ...-quantized.w8a8 checkpoints' block (INT8 weights per channel, INT8 activations
#: per token), which vLLM serves with its CompressedTensorsW8A8Int8 kernels.
W8A8_INT8 = {
    "quant_method": "compressed-tensors", "format": "int-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True,
                    "dynamic": False, "group_size": None},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                              "symmetric": True, "dynamic": True}}},
}
TINY_LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
              "vocab_size": 1000, "max_position_embeddings": 4096}


def test_int8_weights_with_int8_activations_say_what_tiersim_lacks(tmp_path):
    """A W8A8-INT8 checkpoint was refused as "8-bit int weights (group size None) are not a
    format tiersim models (bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4)": tiersim does model
    8-bit int weights (W8A16); what it lacks is their 8-bit activations. The line says so, as
    W4A8's does."""
    path = _write(tmp_path, {**TINY_LLAMA, "quantization_config": W8A8_INT8})
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value) == (
        f"{path}: key 'quantization_config.config_groups.group_0.input_activations': 8-bit int "
        "activations beside 8-bit int weights (W8A8): tiersim times 8-bit int weights "
        "weight-only (W8A16, 16-bit activations) and does not model W8A8; use a W8A16 "
        "checkpoint (input_activations null), or remove quantization_config from a copy of "
        "config.json and set the tier's precision")


#: Llama-3.1-8B's sizes, for figures a user can check by hand.
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "max_position_embeddings": 131072}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def test_gptq_modules_in_block_to_quantize_leaves_the_others_bf16(tmp_path):
    """A GPTQ block whose modules_in_block_to_quantize names attention's projections only (as
    AutoGPTQ / GPTQModel write it, in groups) was read as W4A16 in every linear layer:
    Llama-3.1-8B's weights 5.70 GB where vLLM, which quantises the modules that list names (a
    name within the layer's) and serves the others unquantised, holds 14.07 GB (its MLPs, 5.64
    B weights, in BF16)."""
    from tiersim.perf.memory import GB, weight_bytes

    quant = {**GPTQ, "modules_in_block_to_quantize": [
        ["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["self_attn.o_proj"]]}
    arch = load_hf_config(_write(tmp_path, {**LLAMA_8B, "quantization_config": quant}))
    assert arch.checkpoint == (("attention", "w4a16", 4.125),)
    assert round(weight_bytes(arch, "checkpoint") / GB, 2) == 14.07
    every = {**GPTQ, "modules_in_block_to_quantize": [["mlp.up_proj"], ["self_attn.q_proj"]]}
    arch = load_hf_config(_write(tmp_path, {**LLAMA_8B, "quantization_config": every}, "n"))
    assert [g for g, _, _ in arch.checkpoint] == ["attention", "mlp"]  # a third of each


def test_gptq_modules_in_block_to_quantize_of_no_list_is_one_line(tmp_path):
    """A modules_in_block_to_quantize that is not a list of module names is one line."""
    quant = {**GPTQ, "modules_in_block_to_quantize": "self_attn.q_proj"}
    path = _write(tmp_path, {**LLAMA_8B, "quantization_config": quant})
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value) == (
        f"{path}: key 'quantization_config.modules_in_block_to_quantize': must be a list of "
        'module names, or of lists of them (got "self_attn.q_proj")')


@pytest.mark.parametrize("weights, said", [
    ({"num_bits": 4, "type": "int", "strategy": "tensor"}, "per tensor"),
    ({"num_bits": 4, "type": "int"}, "per tensor"),
])
def test_int4_weights_per_tensor_are_refused_as_int8_ones_are(tmp_path, weights, said):
    """compressed-tensors INT4 weights with one scale per tensor (strategy 'tensor', or neither
    a strategy nor a group size, as compressed-tensors reads that) were read as W4A16 in groups
    of 128 (4.125 bits a weight): vLLM's weight-only scheme takes a scale per group or per
    output channel only, and finds none for them, as for INT8."""
    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                           "input_activations": None}}}
    path = _write(tmp_path, {**TINY_LLAMA, "quantization_config": quant})
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value) == (
        f"{path}: key 'quantization_config.config_groups.group_0.weights': 4-bit int weights "
        f"{said} with 16-bit activations are not served by vLLM (its weight-only Marlin kernel "
        "takes a scale per group or per output channel: strategy 'group' with a group_size, or "
        "'channel')")


@pytest.mark.parametrize("model_type, lacks", [
    ("granitemoehybrid", "Mamba-2 (state-space) layers interleaved with attention"),
    ("bamba", "Mamba-2 (state-space) layers interleaved with attention"),
    ("zamba2", "Mamba-2 (state-space) layers beside shared attention blocks"),
    ("falcon_mamba", "Mamba (state-space) layers instead of attention"),
    ("lfm2", "short-convolution layers interleaved with attention"),
    ("minimax", "lightning (linear) attention layers"),
    ("recurrent_gemma", "recurrent (RG-LRU) layers interleaved with local attention"),
    ("nemotron", "a two-matrix (non-gated) MLP"),
])
def test_a_known_hybrid_or_two_matrix_type_says_what_tiersim_lacks(tmp_path, model_type, lacks):
    """Granite-4.0-H (granitemoehybrid), Bamba, Zamba2, Falcon-Mamba, LFM2, MiniMax-Text-01,
    RecurrentGemma and Nemotron-4 / Minitron were "'<type>' is not supported", not saying what
    tiersim lacks to model them, as Jamba's and Nemotron-H's lines do."""
    path = _write(tmp_path, {**TINY_LLAMA, "model_type": model_type})
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value).startswith(
        f"{path}: key 'model_type': {model_type!r}: tiersim does not model {lacks}; supported: ")


def test_an_fp8_blocks_ignored_layers_are_read_before_modules_to_not_convert(tmp_path):
    """vLLM's Fp8Config reads ignored_layers, and modules_to_not_convert only where that is
    empty; tiersim read modules_to_not_convert first, so a block giving both (transformers
    writes modules_to_not_convert) lost the layers ignored_layers keeps BF16: layer 0's
    attention here, read FP8 (8.0 bits a weight on average, not 8.25)."""
    layer0 = [f"model.layers.0.self_attn.{p}_proj" for p in "qkvo"]
    quant = {"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": layer0,
             "modules_to_not_convert": ["lm_head"]}
    arch = load_hf_config(_write(tmp_path, {**LLAMA_8B, "quantization_config": quant}))
    assert arch.checkpoint[0] == ("attention", "fp8", 8.25)
    quant = {**quant, "ignored_layers": []}  # empty: modules_to_not_convert is read
    arch = load_hf_config(_write(tmp_path, {**LLAMA_8B, "quantization_config": quant}, "n"))
    assert arch.checkpoint[0] == ("attention", "fp8", 8.0)
