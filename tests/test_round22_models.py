"""Round 22 (models) of hostile input, each a failure found from outside and fixed: the exact
line a user sees, or the number that was wrong. Hugging Face config.json reading, checked
against vLLM's own reading of each block (awq_marlin.py, awq.py, modelopt.py)."""

from __future__ import annotations

import json

import pytest
from test_round19 import _config
from test_round21_models2 import _refused

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import load_hf_config

# ------------------------------------------------------------------ AWQ: AWQ-Marlin's keys

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm"}
_AUTOAWQ = ("vLLM's AWQ-Marlin kernel reads {key!r} only, so a block that spells it {other!r} "
            "(AutoAWQ's spelling) runs its older AWQ kernel, which tiersim does not time: "
            "write it as {key!r}")
_AWQ_NEEDS = ("vLLM does not load an AWQ block without it (both its AWQ configs need bits, "
              "group_size and zero_point): write it as the checkpoint was made")


@pytest.mark.parametrize(("quant", "key", "message"), [
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "zero_point": True}, "bits",
     "missing; " + _AUTOAWQ.format(key="bits", other="w_bit")),
    ({"quant_method": "awq", "bits": 4, "q_group_size": 128, "zero_point": True},
     "group_size", "missing; " + _AUTOAWQ.format(key="group_size", other="q_group_size")),
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, "zero_point",
     "missing; " + _AWQ_NEEDS),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": None}, "zero_point",
     "null; " + _AWQ_NEEDS),
    ({"quant_method": "awq", "bits": 4, "zero_point": True}, "group_size",
     "missing; " + _AWQ_NEEDS),
    ({**AWQ, "zero_point": False}, "zero_point",
     "must be true (got false); vLLM's AWQ-Marlin kernel serves 4-bit AWQ with zero points "
     "only (without them it runs its older AWQ kernel, which tiersim does not time): use a "
     "checkpoint with zero points, or remove quantization_config from a copy of config.json "
     "and set the tier's precision"),
], ids=["w_bit", "q_group_size", "no-zero_point", "null-zero_point", "no-group_size",
        "zero_point-false"])
def test_an_awq_block_awq_marlin_does_not_serve_is_one_line(tmp_path, capsys, quant, key,
                                                             message):
    """vLLM serves AWQ with AWQ-Marlin only where ``is_awq_marlin_compatible`` finds ``bits``,
    ``group_size`` and ``zero_point`` under those names and Marlin has the type (zero points:
    uint4); AutoAWQ's ``w_bit`` / ``q_group_size`` and ``zero_point: false`` run its older AWQ
    kernel, and a block without ``zero_point`` or a group size is refused by
    ``AWQConfig.from_config``. tiersim read all of them as Marlin's W4A16 (group 128)."""
    path = _config(tmp_path, quantization_config=quant)
    _refused(tmp_path, capsys, path, f"key 'quantization_config.{key}': {message}")


def test_an_awq_block_with_both_spellings_reads_vllms(tmp_path):
    """``bits`` / ``group_size`` beside AutoAWQ's keys: AWQ-Marlin reads its own."""
    model = load_hf_config(_config(tmp_path, quantization_config={
        **AWQ, "group_size": 32, "w_bit": 4, "q_group_size": 128}))
    assert model.checkpoint == (("attention", "w4a16", 4.5), ("mlp", "w4a16", 4.5))


# ------------------------------------------------------------------ a side file vLLM never reads


@pytest.mark.parametrize(("side", "why"), [
    ({"quantization": {"quant_algo": "BOGUS"}},
     """key 'quantization.quant_algo': "BOGUS" is not a format tiersim models; supported: FP8, """
     "NVFP4, W4A16_NVFP4, MIXED_PRECISION (the ModelOpt formats vLLM loads that tiersim "
     "times)"),
    ({"quantization": [1]}, "key 'quantization': must be an object with a quant_algo (got [1])"),
    ({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {"re:(": {}}}},
     "not in a layout tiersim reads (error: missing ), unterminated subpattern at position 0)"),
], ids=["unknown-algo", "list", "bad-regex"])
def test_a_side_file_the_config_overrides_is_a_note_not_an_error(tmp_path, capsys, side, why):
    """vLLM opens hf_quant_config.json only where config.json has no quantization_config; one
    tiersim could not read was refused though the config's own block (FP8) decides the
    formats, so a checkpoint vLLM serves could not be simulated."""
    path = _config(tmp_path, quantization_config={"quant_method": "fp8"})
    (tmp_path / "model" / "hf_quant_config.json").write_text(json.dumps(side))
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert model.checkpoint == (("attention", "fp8", 8.0), ("mlp", "fp8", 8.0))
    assert [str(n.message) for n in notes] == [
        f"{tmp_path / 'model' / 'hf_quant_config.json'}: {why}; the file is not read: {path}'s "
        "quantization_config decides the formats, as vLLM reads it"]


# ------------------------------------------------------------------ ModelOpt NVFP4's group size

_NVFP4_16 = ("must be 16 (got {got}); {algo} scales each 16 weights with one FP8 scale, the "
             "block vLLM's NVFP4 kernels read (at another size its FP4 GEMM refuses the scales' "
             "shape): write 16 if the checkpoint was made so, or remove its quantisation block "
             "from a copy and set the tier's precision")
_PROJ = ("gate_proj", "up_proj", "down_proj")


def _mixed(entry: dict, **block) -> dict:
    """A MIXED_PRECISION block giving every MLP projection of 32 layers ``entry``."""
    return {"quant_algo": "MIXED_PRECISION", **block, "quantized_layers": {
        f"model.layers.{i}.mlp.{p}": entry for i in range(32) for p in _PROJ}}


@pytest.mark.parametrize(("quant", "key", "got", "algo"), [
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 32}, "group_size",
     "32", "NVFP4"),
    ({"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4", "group_size": 8}, "group_size",
     "8", "W4A16_NVFP4"),
    ({"quant_method": "modelopt", **_mixed({"quant_algo": "NVFP4", "group_size": 32})},
     "quantized_layers.model.layers.0.mlp.gate_proj.group_size", "32", "NVFP4"),
    ({"quant_method": "modelopt", **_mixed({"quant_algo": "NVFP4"}, group_size=128)},
     "group_size", "128", "NVFP4"),
], ids=["nvfp4-32", "w4a16_nvfp4-8", "mixed-entry-32", "mixed-block-128"])
def test_a_modelopt_nvfp4_group_size_other_than_16_is_one_line(tmp_path, capsys, quant, key,
                                                                got, algo):
    """ModelOpt NVFP4 with group_size 32 was read as NVFP4 (16-weight blocks, 4.5 bits a
    weight); vLLM sizes the scales by it and its FP4 GEMM refuses them (k / 16 wide). A
    MIXED_PRECISION block's own group_size is the one vLLM gives every NVFP4 layer."""
    path = _config(tmp_path, quantization_config=quant)
    _refused(tmp_path, capsys, path, f"key 'quantization_config.{key}': "
             + _NVFP4_16.format(got=got, algo=algo))


def test_a_modelopt_nvfp4_group_size_in_hf_quant_config_is_named_there(tmp_path):
    path = _config(tmp_path)
    side = tmp_path / "model" / "hf_quant_config.json"
    side.write_text(json.dumps({"quantization": {"quant_algo": "NVFP4", "group_size": 32,
                                                 "kv_cache_quant_algo": None,
                                                 "exclude_modules": ["lm_head"]}}))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{side}: key 'quantization.group_size': " + _NVFP4_16.format(
        got="32", algo="NVFP4")


@pytest.mark.parametrize("quant", [
    {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    {"quant_method": "modelopt", "quant_algo": "NVFP4"},
    {"quant_method": "modelopt", **_mixed({"quant_algo": "NVFP4", "group_size": 16})},
    {"quant_method": "modelopt", **_mixed({"quant_algo": "FP8"}, group_size=128)},
], ids=["16", "absent", "mixed-16", "mixed-fp8-only"])
def test_nvfp4_of_16_weight_blocks_still_reads(tmp_path, quant):
    model = load_hf_config(_config(tmp_path, quantization_config=quant))
    assert dict((g, f) for g, f, _ in model.checkpoint)["mlp"] in ("nvfp4", "fp8")


# ------------------------------------------------------------------ ModelOpt names vLLM refuses

_NOT_MODELOPT = ('"{algo}" is not a format tiersim models; supported: FP8, NVFP4, W4A16_NVFP4, '
                 "{last} (the ModelOpt formats vLLM loads that tiersim times)")


@pytest.mark.parametrize("algo", ["W4A16_AWQ", "INT4_AWQ", "MXFP4", "FP8_BLOCK"])
def test_a_modelopt_algo_vllm_does_not_load_is_one_line(tmp_path, capsys, algo):
    """These were read as W4A16 (Marlin), MXFP4 and block FP8; vLLM's ModelOpt config loads
    FP8, NVFP4, W4A16_NVFP4 and MIXED_PRECISION (and FP8 variants tiersim does not time) and
    refuses any other name: "ModelOpt currently only supports: [...]"."""
    path = _config(tmp_path, quantization_config={"quant_method": "modelopt",
                                                  "quant_algo": algo, "group_size": 128})
    _refused(tmp_path, capsys, path, "key 'quantization_config.quant_algo': "
             + _NOT_MODELOPT.format(algo=algo, last="MIXED_PRECISION"))


def test_a_mixed_precision_entry_vllm_does_not_load_is_one_line(tmp_path, capsys):
    """vLLM's MIXED_PRECISION config gives a layer of another quant_algo its unquantised
    method, whose BF16 weight the checkpoint does not hold; tiersim read it as W4A16."""
    path = _config(tmp_path, quantization_config={"quant_method": "modelopt", **_mixed(
        {"quant_algo": "W4A16_AWQ", "group_size": 128})})
    _refused(tmp_path, capsys, path, "key 'quantization_config.quantized_layers.model.layers.0."
             "mlp.gate_proj.quant_algo': " + _NOT_MODELOPT.format(algo="W4A16_AWQ",
                                                                   last="UNQUANTIZED"))


# ------------------------------------------------------------------ gpt-oss's experts per token

GPT_OSS = {"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
           "intermediate_size": 2880, "num_local_experts": 32, "sliding_window": 128,
           "layer_types": ["sliding_attention", "full_attention"] * 12, "vocab_size": 201088,
           "max_position_embeddings": 131072}


def test_gpt_oss_experts_per_token_is_read_from_vllms_key(tmp_path):
    """vLLM's gpt_oss.py routes each token to ``config.num_experts_per_tok`` experts
    (transformers' GptOssConfig does not read OpenAI's ``experts_per_token``); tiersim read
    ``experts_per_token`` first, so a config saying 8 there and 2 in vLLM's key ran 8."""
    model = load_hf_config(_config(tmp_path, **GPT_OSS, experts_per_token=8,
                                   num_experts_per_tok=2))
    assert model.top_k == 2


def test_gpt_oss_experts_per_token_alone_is_one_line_unless_it_is_the_default(tmp_path,
                                                                              capsys):
    """Without ``num_experts_per_tok`` vLLM routes to transformers' default, 4."""
    assert load_hf_config(_config(tmp_path, **GPT_OSS, experts_per_token=4)).top_k == 4
    path = _config(tmp_path, **GPT_OSS, experts_per_token=8)
    _refused(tmp_path, capsys, path, "key 'num_experts_per_tok': missing; vLLM reads the "
             "experts per token from it (transformers' default 4 where absent), not from "
             "experts_per_token (8): add it")


def test_gpt_oss_experts_per_token_past_the_experts_names_the_key_read(tmp_path):
    path = _config(tmp_path, **GPT_OSS, num_experts_per_tok=40)
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (f"{path}: key 'num_experts_per_tok': must not exceed the number "
                               "of experts (32)")


def test_gpt_oss_without_layer_types_slides_its_even_layers(tmp_path):
    """transformers' GptOssConfig types layers 0, 2, 4 ... sliding (vLLM's gpt_oss.py: layer
    index % 2 == 0); tiersim counted half the layers, one short for an odd count."""
    config = {**GPT_OSS, "num_experts_per_tok": 4, "layer_types": None}
    odd = {**config, "num_hidden_layers": 25}
    assert load_hf_config(_config(tmp_path, **odd)).sliding_layers == 13
    assert load_hf_config(_config(tmp_path, **config)).sliding_layers == 12


# ------------------------------------------------------------------ the context's other keys


@pytest.mark.parametrize(("fields", "context"), [
    ({"seq_length": 4096}, 4096),
    ({"max_sequence_length": 8192, "n_positions": 16384}, 8192),
    ({"model_max_length": 200000}, 200000),
    ({"max_seq_len": 8192, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, 16384),
], ids=["seq_length", "smallest", "model_max_length-wins", "rope-stretches-it"])
def test_the_context_is_the_smallest_length_key_as_vllm_derives_it(tmp_path, fields, context):
    """vLLM's max_model_len is the smallest of max_position_embeddings, n_positions,
    max_seq_len, seq_length, max_sequence_length ... (model_max_length, where given, over
    them), then the rope factor; tiersim read max_position_embeddings alone (131,072), so a
    config saying seq_length 4096 admitted requests 32 times longer than vLLM serves."""
    assert load_hf_config(_config(tmp_path, **fields)).max_context == context


def test_a_length_key_that_is_no_count_is_one_line(tmp_path, capsys):
    path = _config(tmp_path, seq_len="4k")
    _refused(tmp_path, capsys, path, "key 'seq_len': must be a positive integer (got \"4k\")")


@pytest.mark.parametrize("kind", ["folder", "dangling-link"])
def test_a_broken_side_file_beside_a_config_with_its_own_block_is_not_looked_at(tmp_path,
                                                                                kind):
    """vLLM looks for hf_quant_config.json only where config.json has no quantization_config;
    a folder or a link to nothing of that name was refused even beside the config's FP8."""
    path = _config(tmp_path, quantization_config={"quant_method": "fp8"})
    side = tmp_path / "model" / "hf_quant_config.json"
    if kind == "folder":
        side.mkdir()
    else:
        side.symlink_to(tmp_path / "no-such-blob")
    model = load_hf_config(path)
    assert model.checkpoint == (("attention", "fp8", 8.0), ("mlp", "fp8", 8.0))
    assert model.kv_cache == ""
