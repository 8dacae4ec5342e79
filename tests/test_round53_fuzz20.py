"""Round 53 fuzzing (helper fuzz20): results and profile files read back, a model config's
quantisation names, JSON-lines traces' non-finite numbers, and plans near the largest seed."""

from __future__ import annotations

import json

import pytest
from test_round52_fuzz18 import QWEN3_MOE, _config_error

SUPPORTED = ("supported: fp8, mxfp4, compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no "
             "quantization_config at all: BF16)")


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_quant_method_that_is_no_number_json_allows_is_told_it_is_a_name(tmp_path, written):
    """``"quant_method": NaN`` was told "NaN is not a number JSON allows; give a finite number
    or remove the key": the key takes a name, not a number (and ``1e400`` was told
    "Infinity"). Told as any other value that is no name is."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', written)) == (
        f"key 'quantization_config.quant_method': must be a name such as 'fp8' (got {written}); "
        + SUPPORTED)


def test_a_quant_algo_that_is_no_number_json_allows_is_told_it_is_a_name(tmp_path):
    """The same for ModelOpt's ``quant_algo``, in the config or in hf_quant_config.json."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "modelopt",
                                                            "quant_algo": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', "NaN")) == (
        "key 'quantization_config.quant_algo': must be a name such as 'FP8' (got NaN); say "
        "which format (FP8, NVFP4, W4A16_NVFP4)")


@pytest.mark.parametrize(("written", "said"), [
    ("NaN", "NaN is not a number JSON allows"),
    ("1e400", "1e400 is beyond the range of numbers"),  # was "Infinity", which it is not
])
def test_a_number_key_that_is_not_finite_is_quoted_as_written(tmp_path, written, said):
    """A number key's NaN keeps its line; ``1e400`` (read as infinite) is quoted as written."""
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "fp8",
                                                            "weight_block_size": "@"}})
    assert _config_error(tmp_path, text.replace('"@"', written)) == (
        f"key 'quantization_config.weight_block_size': {said}; give a finite number or remove "
        "the key")
