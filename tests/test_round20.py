"""Round 20 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the number that was wrong. Hugging Face config.json quantisation blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import _config, error_line, run_cli

W4_WEIGHTS = {"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group",
              "symmetric": True}


ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()

W4A8_MESSAGE = (
    "key 'quantization_config.config_groups.group_0.input_activations': {said} activations "
    "beside 4-bit int weights (W4A8): tiersim times 4-bit int weights weight-only (W4A16, "
    "16-bit activations) and does not model W4A8; use a W4A16 checkpoint (input_activations "
    "null), or remove quantization_config from a copy of config.json and set the tier's "
    "precision")


@pytest.mark.parametrize(("activations", "said"), [
    ({"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True},
     "8-bit int"),
    ({"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True,
      "symmetric": True}, "8-bit float"),
])
def test_int4_weights_with_8_bit_activations_are_refused_not_read_as_w4a16(
        tmp_path, capsys, activations, said):
    """compressed-tensors W4A8 (int4 weights, int8 or fp8 input activations, which vLLM serves
    with its CompressedTensorsW4A8Int / W4A8Fp8 kernels) was read as W4A16: the activations'
    num_bits were never looked at."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": W4_WEIGHTS,
                                           "input_activations": activations}}}
    path = _config(tmp_path, quantization_config=quant)
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{path}: " + W4A8_MESSAGE.format(said=said)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("model: Qwen3-Coder-30B-A3B", f"model: {path.parent}"))
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: line 5: model: {path}: " + W4A8_MESSAGE.format(said=said))


def test_int4_weights_with_null_activations_are_still_w4a16(tmp_path):
    """The W4A16 checkpoint the refusal points to still reads as W4A16."""
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": W4_WEIGHTS,
                                           "input_activations": None}}}
    model = load_hf_config(_config(tmp_path, quantization_config=quant))
    assert weight_formats(model, "checkpoint").of("mlp").name == "w4a16"


FP8_LINEAR = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
                                                 "strategy": "channel"},
              "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                    "dynamic": True}}
EMPTY_NOTE = (
    "key 'quantization_config.config_groups.{name}.targets' is empty: the group quantises no "
    "module (vLLM and compressed-tensors match a group's modules by its targets), so it is "
    "not read; name its modules (or 'Linear') if it should quantise them")


def test_a_group_with_no_targets_quantises_nothing(tmp_path):
    """`targets: []` was read as `["Linear"]`: its group covered every linear layer. vLLM's
    CompressedTensorsConfig registers a group under each of its targets (none here) and
    compressed-tensors' match_named_modules matches no module with no target."""
    from tiersim.errors import Note
    from tiersim.hardware.hf_config import load_hf_config

    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized",
             "config_groups": {"w4": {"targets": [], "weights": W4_WEIGHTS}}}
    path = _config(tmp_path, quantization_config=quant)
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert all(fmt == "bf16" for _, fmt, _ in model.checkpoint), model.checkpoint
    assert f"{path}: " + EMPTY_NOTE.format(name="w4") in [str(n.message) for n in notes]


def test_a_group_with_no_targets_beside_a_linear_group_leaves_that_groups_format(tmp_path):
    """The empty group was read as a second group targeting Linear, and the checkpoint was
    refused for a clash it does not have."""
    from tiersim.errors import Note
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    quant = {"quant_method": "compressed-tensors", "format": "float-quantized",
             "config_groups": {"fp8": FP8_LINEAR,
                               "w4": {"targets": [], "weights": W4_WEIGHTS}}}
    path = _config(tmp_path, quantization_config=quant)
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert weight_formats(model, "checkpoint").of("mlp").name == "fp8"
    assert [str(n.message) for n in notes] == [f"{path}: " + EMPTY_NOTE.format(name="w4")]


GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}


@pytest.mark.parametrize(("value", "got"), [("true", '"true"'), ("false", '"false"'), (1, "1"),
                                            ([], "[]")])
def test_a_gptq_lm_head_that_is_not_a_bool_is_one_line(tmp_path, capsys, value, got):
    """`lm_head: "true"` was read as an lm_head left BF16; vLLM's GPTQ configs read the key
    with get_from_keys_or and quantise lm_head for any truthy value (the string "false"
    too)."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config={**GPTQ, "lm_head": value})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.lm_head': must be true or false (got {got}); vLLM "
        "quantises lm_head for any value but false, 0, null or an empty one, so say which")


@pytest.mark.parametrize(("value", "lm_head"), [(True, "w4a16"), (False, "bf16"),
                                                (None, "bf16")])
def test_a_gptq_lm_head_bool_or_null_still_reads(tmp_path, value, lm_head):
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    model = load_hf_config(_config(tmp_path, quantization_config={**GPTQ, "lm_head": value}))
    assert weight_formats(model, "checkpoint").lm_head.name == lm_head
