"""Weight-only checkpoints (16-bit activations) read from config.json: NVFP4 and FP8 weights
without input activations, ModelOpt W4A16_NVFP4, AWQ and GPTQ; and a quantisation method
that applies to no layer of the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware.gpus import get_gpu
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.precisions import weight_formats

LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
         "max_position_embeddings": 32768,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2048,
         "vocab_size": 1000}
NVFP4 = {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"}
FP8 = {"num_bits": 8, "type": "float", "strategy": "channel"}


def _write(tmp_path: Path, quant: dict, fields: dict = LLAMA) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**fields, "quantization_config": quant}))
    return path


def _ct(weights: dict, activations: dict | None) -> dict:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": activations}
    return {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
            "config_groups": {"group_0": group}}


def _load(path: Path) -> tuple:
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    return model, [str(n.message) for n in notes]


@pytest.mark.parametrize(("quant", "key", "said", "label", "bits", "prior"), [
    (_ct(NVFP4, None), "config_groups.group_0.input_activations", "is null: NVFP4",
     "NVFP4A16", 4.5, "W4A16"),
    (_ct(FP8, None), "config_groups.group_0.input_activations", "is null: FP8",
     "FP8 W8A16", 8.0, "W8A16"),
    ({"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4", "exclude_modules": ["lm_head"]},
     "quant_algo", "is W4A16_NVFP4: NVFP4", "NVFP4A16", 4.5, "W4A16"),
])
def test_weights_without_quantised_activations_are_timed_weight_only(tmp_path, quant, key, said,
                                                                     label, bits, prior):
    """They were read as W4A4 NVFP4 / W8A8 FP8 (FP4 or FP8 math on a B200, NVFP4's accuracy
    prior); vLLM serves them weight-only. Their own bits a weight are kept, and 8-bit weights
    take the 8-bit weight-only prior (it was W4A16's)."""
    path = _write(tmp_path, quant)
    model, notes = _load(path)
    formats = weight_formats(model, "checkpoint")
    assert formats.label == f"checkpoint (attention {label}, mlp {label}, lm_head BF16)"
    for group in ("attention", "mlp"):
        fmt = formats.of(group)
        assert (fmt.name, fmt.weight_bits, fmt.compute_dtype_on(get_gpu("B200"))) == (
            "w4a16", bits, "bf16")
    assert notes == [
        f"{path}: key 'quantization_config.{key}' {said} weights with 16-bit activations "
        f"({label}), which vLLM serves weight-only; precision: checkpoint times them as W4A16 "
        f"(weight-only kernels, BF16 math) at their own {bits:g} bits a weight, with {prior}'s "
        "accuracy prior"]


@pytest.mark.parametrize(("weights", "name"), [(NVFP4, "nvfp4"), (FP8, "fp8")])
def test_weights_with_quantised_activations_keep_their_format(tmp_path, weights, name):
    model = load_hf_config(_write(tmp_path, _ct(weights, weights)))
    assert {g: f for g, f, _ in model.checkpoint} == {"attention": name, "mlp": name}


def test_mxfp4_on_a_dense_model_quantises_no_layer_and_says_so(tmp_path):
    """vLLM's MXFP4 method quantises MoE experts only; a dense model's weights were read as
    BF16 without a word."""
    path = _write(tmp_path, {"quant_method": "mxfp4"})
    model, notes = _load(path)
    assert model.checkpoint == ()
    assert notes == [
        f"{path}: key 'quantization_config': its mxfp4 format applies to the MoE experts only "
        "(as vLLM loads it), and this model has none: no layer is quantised, so its weights are "
        "read as BF16; remove the quantisation block if they are BF16, or set the tier's "
        "precision to serve another format"]


AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm", "modules_to_not_convert": None}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


@pytest.mark.parametrize("quant", [AWQ, GPTQ])
def test_awq_and_gptq_are_read_as_w4a16(tmp_path, quant):
    """They were refused ("'awq' is not supported"), even under a tier precision."""
    model = load_hf_config(_write(tmp_path, quant))
    assert model.checkpoint == (("attention", "w4a16", 4.125), ("mlp", "w4a16", 4.125))
    assert weight_formats(model, "bf16").label == "BF16"


def test_awq_group_size_and_modules_to_not_convert_are_honoured(tmp_path):
    quant = {**AWQ, "group_size": 32, "modules_to_not_convert": ["self_attn"]}
    model = load_hf_config(_write(tmp_path, quant))
    assert model.checkpoint == (("mlp", "w4a16", 4.5),)
    assert weight_formats(model, "checkpoint").label == (  # a dense model: no experts named
        "checkpoint (attention BF16, mlp W4A16 g32, lm_head BF16)")


@pytest.mark.parametrize(("quant", "key", "got"), [
    ({**GPTQ, "bits": 2}, "bits", "must be 4 or 8 (got 2)"),
    ({"quant_method": "awq", "w_bit": 3}, "w_bit", "must be 4 (got 3)"),
    ({"quant_method": "awq"}, "bits", "missing"),
])
def test_awq_and_gptq_of_other_bit_widths_are_one_line(tmp_path, quant, key, got):
    """8-bit GPTQ is read as W8A16 (tests/test_checkpoint_int8_weight_only.py)."""
    path = _write(tmp_path, quant)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    why = ("tiersim reads 4- and 8-bit GPTQ checkpoints (as w4a16 / w8a16), the widths vLLM's "
           "Marlin kernel serves (2 and 3 bits run its older GPTQ kernel, which tiersim does "
           "not time): use a 4- or 8-bit one" if quant["quant_method"] == "gptq" else
           "tiersim reads 4-bit AWQ checkpoints (as w4a16), the only width vLLM serves AWQ in "
           "(its AWQ-Marlin zero-point kernel and its AWQ kernel are 4-bit): use a 4-bit one")
    assert str(err.value) == (
        f"{path}: key 'quantization_config.{key}': {got}; {why}, or remove quantization_config "
        "from a copy of config.json and set the tier's precision")


def test_a_per_layer_map_of_weight_only_formats_is_one_note_not_one_per_key(tmp_path):
    """ModelOpt's MIXED_PRECISION names each module of each layer; the weight-only note names
    the first key and counts the rest, and the side file the config overrides adds none."""
    layers = {f"model.layers.{i}.mlp.{p}": {"quant_algo": "W4A16_NVFP4", "group_size": 16}
              for i in range(4) for p in ("gate_proj", "up_proj", "down_proj")}
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
             "quantized_layers": layers}
    path = _write(tmp_path, quant)
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"quantization": {
        "quant_algo": "MIXED_PRECISION", "quantized_layers": layers,
        "kv_cache_quant_algo": "FP8"}}))
    model, notes = _load(path)
    assert {g: f for g, f, _ in model.checkpoint} == {"mlp": "nvfp4a16"}
    weight_only = [n for n in notes if "16-bit activations" in n]
    assert weight_only == [
        f"{path}: key 'quantization_config.quantized_layers.model.layers.0.mlp.gate_proj."
        "quant_algo' (and 11 more keys like it) is W4A16_NVFP4: NVFP4 weights with 16-bit "
        "activations (NVFP4A16), which vLLM serves weight-only; "
        "precision: checkpoint times them as W4A16 (weight-only kernels, BF16 math) at their "
        "own 4.5 bits a weight, with W4A16's accuracy prior"]
    assert len(notes) == 2  # and the side file's "not read" note


def test_a_dense_models_fit_error_names_only_the_groups_it_has(tmp_path):
    """The checkpoint label listed shared_experts and experts for a dense model too."""
    from tiersim.errors import FitError
    from tiersim.perf.memory import kv_capacity_blocks

    path = _write(tmp_path, {"quant_method": "fp8"}, {**LLAMA, "vocab_size": 10**8})
    model = load_hf_config(path)
    with pytest.raises(FitError) as err:
        kv_capacity_blocks(model, "checkpoint", get_gpu("H200"))
    assert "at checkpoint (attention FP8, mlp FP8, lm_head BF16) does not fit" in str(err.value)


def test_an_fp8_w8a16_checkpoint_takes_the_8_bit_weight_only_accuracy_prior(tmp_path):
    """A ``checkpoint`` tier's prior follows the format holding most of its weights; FP8
    W8A16 is timed as ``w4a16`` but its weights keep 8 bits, so it takes qllm-eval's W8 ratio,
    not W4's."""
    from tiersim.hardware.precisions import WEIGHT_ONLY, prior_name
    from tiersim.routing.priors import relative_accuracy

    assert [prior_name(WEIGHT_ONLY[k]) for k in ("fp8a16", "nvfp4a16")] == ["w8a16", "w4a16"]
    assert relative_accuracy("w8a16") > relative_accuracy("w4a16")
