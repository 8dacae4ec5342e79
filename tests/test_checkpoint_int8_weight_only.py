"""INT8 weight-only checkpoints (W8A16: 8-bit integer weights, 16-bit activations): GPTQ with
``bits: 8`` (and GPTQModel's ``dynamic`` overrides to 8 bits) and compressed-tensors INT8
weights with no input activations. They were refused in one line; vLLM serves both with its
Marlin kernel (``gptq_marlin``'s uint8b128, compressed-tensors' WNA16 scheme for 4 and 8 bits),
so they are now read as the weight-only ``w8a16`` checkpoint format: timed as W4A16 on its
tables rescaled to 8 bits, stored at 8 + 16 / group bits a weight, with the W8 accuracy
prior. AWQ of 8 bits stays refused (vLLM serves AWQ at 4 bits only: AWQ-Marlin's zero-point
kernel is 4-bit, and the AWQ kernel refuses other widths), as do GPTQ's 2 and 3 bits (vLLM's
older GPTQ kernel, not Marlin, which tiersim does not time)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware.gpus import get_gpu
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.precisions import PER_CHANNEL, prior_name, weight_formats
from tiersim.perf.memory import checkpoint_bytes

LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
         "max_position_embeddings": 32768,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2048,
         "vocab_size": 1000}
GPTQ8 = {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True}
INT8 = {"num_bits": 8, "type": "int", "strategy": "group", "group_size": 128}


def _write(tmp_path: Path, quant: dict, fields: dict = LLAMA) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**fields, "quantization_config": quant}))
    return path


def _ct(weights: dict, activations: dict | None = None) -> dict:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": activations}
    return {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
            "config_groups": {"group_0": group}}


def _load(path: Path) -> tuple:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, Note)]


def _note(path: Path, key: str, said: str, label: str, bits: str) -> str:
    return (f"{path}: key 'quantization_config.{key}' {said}: INT8 weights with 16-bit "
            f"activations ({label}), which vLLM serves weight-only; precision: checkpoint times "
            f"them as W4A16 (weight-only kernels, BF16 math) at their own {bits} bits a weight, "
            "with W8A16's accuracy prior")


@pytest.mark.parametrize(("quant", "key", "said", "label", "bits"), [
    (GPTQ8, "bits", "is 8", "W8A16", 8.125),
    ({**GPTQ8, "group_size": 32}, "bits", "is 8", "W8A16 g32", 8.5),
    ({**GPTQ8, "group_size": -1}, "bits", "is 8", "W8A16 per channel", 8 + 16 / PER_CHANNEL),
    (_ct(INT8), "config_groups.group_0.input_activations", "is null", "W8A16", 8.125),
    (_ct({**INT8, "group_size": 64}), "config_groups.group_0.input_activations", "is null",
     "W8A16 g64", 8.25),
    (_ct({"num_bits": 8, "type": "int", "strategy": "channel"}),
     "config_groups.group_0.input_activations", "is null", "W8A16 per channel",
     8 + 16 / PER_CHANNEL),
])
def test_int8_weight_only_is_read_as_w8a16(tmp_path, quant, key, said, label, bits):
    """Both were refused ("must be 4 (got 8)", "8-bit int weights ... are not a format
    tiersim models")."""
    path = _write(tmp_path, quant)
    model, notes = _load(path)
    assert model.checkpoint == (("attention", "w8a16", bits), ("mlp", "w8a16", bits))
    formats = weight_formats(model, "checkpoint")
    assert formats.label == f"checkpoint (attention {label}, mlp {label}, lm_head BF16)"
    fmt = formats.of("mlp")
    assert (fmt.name, fmt.weight_bits, fmt.value_bits) == ("w4a16", bits, 8)
    assert fmt.compute_dtype_on(get_gpu("B200")) == "bf16" and prior_name(fmt) == "w8a16"
    shown = {8.125: "8.125", 8.5: "8.5", 8.25: "8.25"}.get(bits, "8")
    assert notes == [_note(path, key, said, label, shown)]


def test_gptq_dynamic_overrides_to_8_bits_are_read(tmp_path):
    """A 4-bit GPTQ checkpoint whose ``dynamic`` rules store some modules in 8 bits (the
    layout GPTQModel's own example writes): they were refused ("must be 4 (got 8)")."""
    quant = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
             "sym": True, "dynamic": {r"+:.*self_attn.*": {"bits": 8, "group_size": 64}}}
    path = _write(tmp_path, quant)
    model, notes = _load(path)
    assert model.checkpoint == (("attention", "w8a16", 8.25), ("mlp", "w4a16", 4.125))
    assert weight_formats(model, "checkpoint").label == (
        "checkpoint (attention W8A16 g64, mlp W4A16, lm_head BF16)")
    assert notes == [_note(path, "dynamic.+:.*self_attn.*.bits", "is 8", "W8A16 g64", "8.25")]


def test_gptq_8_bit_lm_head_is_8_bit_too(tmp_path):
    model, _ = _load(_write(tmp_path, {**GPTQ8, "lm_head": True}))
    assert model.checkpoint[-1] == ("lm_head", "w8a16", 8.125)


def test_a_llama_3_1_8b_gptq_int8_checkpoint_weighs_about_9_2_gb(tmp_path):
    """By hand: per layer attention 4096 x (4096 + 2 x 1024 + 4096) and MLP 3 x 4096 x 14336
    weights, 32 layers, at 8 + 16/128 bits; embeddings and lm_head (128,256 x 4096 each) and
    the norms in BF16: 9.19 GB (vLLM loads such a checkpoint in about 8.6 GiB)."""
    llama8b = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
               "max_position_embeddings": 32768,
               "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
               "vocab_size": 128256, "tie_word_embeddings": False}
    model, _ = _load(_write(tmp_path, GPTQ8, llama8b))
    linear = 32 * (4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336)
    bf16 = 2 * 128256 * 4096 + (2 * 32 + 1) * 4096
    by_hand = linear * 8.125 / 8 + bf16 * 2
    assert checkpoint_bytes(model) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(9.19e9, rel=0.001)


@pytest.mark.parametrize(("quant", "key", "message"), [
    ({"quant_method": "awq", "bits": 8, "group_size": 128, "zero_point": True}, "bits",
     "must be 4 (got 8); tiersim reads 4-bit AWQ checkpoints (as w4a16), the only width vLLM "
     "serves AWQ in (its AWQ-Marlin zero-point kernel and its AWQ kernel are 4-bit): use a "
     "4-bit one"),
    ({"quant_method": "awq", "w_bit": 3}, "w_bit", "must be 4 (got 3); tiersim reads 4-bit AWQ "
     "checkpoints (as w4a16), the only width vLLM serves AWQ in (its AWQ-Marlin zero-point "
     "kernel and its AWQ kernel are 4-bit): use a 4-bit one"),
    ({**GPTQ8, "bits": 3}, "bits", "must be 4 or 8 (got 3); tiersim reads 4- and 8-bit GPTQ "
     "checkpoints (as w4a16 / w8a16), the widths vLLM's Marlin kernel serves (2 and 3 bits run "
     "its older GPTQ kernel, which tiersim does not time): use a 4- or 8-bit one"),
    ({"quant_method": "gptq"}, "bits", "missing; tiersim reads 4- and 8-bit GPTQ checkpoints "
     "(as w4a16 / w8a16), the widths vLLM's Marlin kernel serves (2 and 3 bits run its older "
     "GPTQ kernel, which tiersim does not time): use a 4- or 8-bit one"),
    ({**GPTQ8, "dynamic": {".*mlp.*": {"bits": 2}}}, "dynamic..*mlp.*.bits", "must be 4 or 8 "
     "(got 2); tiersim reads 4- and 8-bit GPTQ modules (as w4a16 / w8a16), the widths vLLM's "
     "Marlin kernel serves (2 and 3 bits run its older GPTQ kernel, which tiersim does not "
     "time): use a 4- or 8-bit checkpoint"),
])
def test_widths_vllm_does_not_serve_with_marlin_stay_refused_saying_why(tmp_path, quant, key,
                                                                         message):
    path = _write(tmp_path, quant)
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (f"{path}: key 'quantization_config.{key}': {message}, or remove "
                              "quantization_config from a copy of config.json and set the "
                              "tier's precision")


@pytest.mark.parametrize(("weights", "activations", "said"), [
    ({"num_bits": 8, "type": "int"}, None, "per tensor"),
    ({"num_bits": 8, "type": "int", "strategy": "tensor"}, None, "per tensor"),
])
def test_int8_weight_only_per_tensor_stays_refused(tmp_path, weights, activations, said):
    """compressed-tensors reads INT8 weights with neither a strategy nor a group size as one
    scale per tensor, which vLLM's weight-only (WNA16) scheme does not serve."""
    path = _write(tmp_path, _ct(weights, activations))
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'quantization_config.config_groups.group_0.weights': 8-bit int weights "
        f"{said} with 16-bit activations are not served by vLLM (its weight-only Marlin kernel "
        "takes a scale per group or per output channel: strategy 'group' with a group_size, or "
        "'channel')")


def test_int8_weights_with_int8_activations_stay_refused(tmp_path):
    """W8A8 INT8 (INT8 tensor cores) is not a format tiersim models."""
    act = {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}
    with pytest.raises(TiersimError, match="8-bit int weights"):
        load_hf_config(_write(tmp_path, _ct(INT8, act)))


def test_an_int8_w8a16_gemm_reads_the_w4a16_table_rescaled_to_its_bits(tmp_path):
    """As FP8 W8A16 does: the 4-bit tables rescaled by the roofline, labelled so."""
    from tiersim.perf.profile import Profile, ProfileOps, Table
    from tiersim.perf.roofline import RooflineOps

    model, _ = _load(_write(tmp_path, GPTQ8))
    roof = RooflineOps("llama-3.1-8b", "w4a16", "h200")
    m = np.array([1.0, 16.0, 256.0, 4096.0])
    table = Table("gemm", "w4a16", "harness", {"n": 8192, "k": 8192}, {"m": m},
                  1.5 * roof.gemm(m, 8192, 8192, "w4a16"))
    profile = Profile("p", "H200", {"source": "harness"}, 1e-3, "harness", [table])
    ops = ProfileOps(profile, model, "checkpoint", "h200",
                     fallback=RooflineOps(model, "checkpoint", "h200"))
    eight = RooflineOps(model, "checkpoint", "h200").gemm(m[:2], 8192, 8192, "w4a16")
    np.testing.assert_allclose(ops.gemm(m[:2], 8192, 8192, "w4a16"), 1.5 * eight, rtol=1e-9)
    assert ops.sources()["gemm w4a16 n=8192 k=8192"] == (
        "rescaled:harness (W8A16 at 8.125 bits a weight, rescaled from W4A16 tables (4.125 "
        "bits a weight) by the roofline)")


def test_a_w8a16_expert_split_into_partial_groups_names_its_own_format(tmp_path):
    """Marlin needs each GPU's share in whole groups at 8 bits too; the note said W4A16."""
    from tiersim.perf.memory import block_split_problem

    qwen3_moe = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
                 "max_position_embeddings": 32768,
                 "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                 "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
                 "moe_intermediate_size": 768}
    model, _ = _load(_write(tmp_path, GPTQ8, qwen3_moe))
    assert block_split_problem(model, "checkpoint", 8).startswith(
        "its W8A16 expert width 768 over 8 GPUs is 96 per GPU, not whole 128-wide quantisation "
        "groups")
