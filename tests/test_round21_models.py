"""Hostile and odd model configs, round 21 (models): each a failure found from outside and
fixed, with the exact line a user sees or the number that was wrong."""

from __future__ import annotations

import json
import time

import pytest

from tiersim.errors import TiersimError
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


LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256, "max_position_embeddings": 131072}


@pytest.mark.parametrize(("quant", "key", "message"), [
    ({"quant_method": "fp8", "weight_block_size": "128"}, "weight_block_size",
     "must be a list of whole numbers from 1 to 1048576 (e.g. [128, 128]), got \"128\""),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
      "lm_head": "yes"}, "lm_head",
     'must be true or false (got "yes"); vLLM quantises lm_head for any value but false, 0, '
     "null or an empty one, so say which"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
     "desc_act": False, "dynamic": [1]}, "dynamic",
     "must be an object of module regexes (got [1])"),
    ({"quant_method": "fp8", "ignored_layers": {"a": 1}}, "ignored_layers",
     'must be a list of module names (got {"a": 1})'),
    ({"quant_method": "bitsandbytes"}, "quant_method",
     '"bitsandbytes" is not supported; supported: fp8, mxfp4, compressed-tensors, modelopt, '
     "awq, gptq, fbgemm_fp8 (or no quantization_config at all: BF16)"),
])
def test_an_error_in_a_text_configs_quantisation_block_names_its_key(tmp_path, quant, key,
                                                                      message):
    """A multimodal wrapper whose quantisation block sits in its text_config (read there, as
    vLLM reads it, where the wrapper has none): an error in it named
    'quantization_config.<key>', a key the file does not have at that place."""
    path = _write(tmp_path, {"model_type": "llava", "vision_config": {},
                             "text_config": {**LLAMA, "quantization_config": quant}})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{path}: key 'text_config.quantization_config.{key}': {message}"


FP8_CT = {"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"group_0": {
              "targets": ["Linear"],
              "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
              "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor"}}},
          "ignore": ["lm_head"], "kv_cache_scheme": {"num_bits": 8, "type": "float"}}


def test_a_compression_config_is_read_as_vllm_reads_it(tmp_path):
    """Early compressed-tensors checkpoints keep their block under ``compression_config``,
    which vLLM reads where ``quantization_config`` is absent; tiersim read the model as BF16
    (its FP8 weights at twice their bytes, its FP8 KV cache at BF16)."""
    from tiersim.hardware.precisions import weight_formats

    model = load_hf_config(_write(tmp_path, {**LLAMA, "compression_config": FP8_CT}))
    formats = weight_formats(model, "checkpoint")
    assert (formats.attention.name, formats.mlp.name, formats.lm_head.name) == (
        "fp8", "fp8", "bf16")
    assert model.kv_cache == "fp8"


def test_an_error_in_a_compression_config_names_its_key(tmp_path):
    path = _write(tmp_path, {**LLAMA, "compression_config": {**FP8_CT, "config_groups": [1]}})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (f"{path}: key 'compression_config.config_groups': must be an "
                               "object of named groups (got list)")


def test_a_quantization_config_is_read_before_a_compression_config(tmp_path):
    """vLLM reads ``compression_config`` only where ``quantization_config`` is absent."""
    from tiersim.hardware.precisions import weight_formats

    model = load_hf_config(_write(tmp_path, {
        **LLAMA, "compression_config": FP8_CT,
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                "zero_point": True}}))
    assert weight_formats(model, "checkpoint").mlp.name == "w4a16"


@pytest.mark.parametrize("value", [False, 0, "", []])
def test_a_quantization_config_that_is_no_object_is_one_line_even_when_empty(tmp_path, value):
    """vLLM reads any quantization_config that is not null as a block (``.get`` on it fails
    to start the engine); tiersim read an empty one (false, 0, "" or []) as no block: BF16."""
    path = _write(tmp_path, {**LLAMA, "quantization_config": value})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (f"{path}: key 'quantization_config': must be an object with a "
                               f"quant_method (got {json.dumps(value)}); remove the key if the "
                               "weights are BF16")
