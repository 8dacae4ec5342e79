"""Round 21 (models2) of hostile input, each a failure found from outside and fixed: the exact
line a user sees, or the number that was wrong. Hugging Face config.json reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_round19 import _config, error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def _scenario(tmp_path, model: Path, precision: str = "w4a16") -> Path:
    """tiny.yaml serving the config.json at ``model``, its first tier at ``precision``."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("model: Qwen3-Coder-30B-A3B", f"model: {model.parent}")
                    .replace("precision: w4a16", f"precision: {precision}", 1))
    return path


def _refused(tmp_path, capsys, path: Path, message: str, precision: str = "w4a16") -> None:
    """``path`` is refused with ``message`` by the reader and, as one line naming the scenario's
    line, by ``tiersim run`` (which leaves no output folder)."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{path}: {message}"
    scenario = _scenario(tmp_path, path, precision)
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "-o",
                               tmp_path / "o")) == (
        f"Error: {scenario}: line 5: model: {path}: {message}")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ sizes past a float


@pytest.mark.parametrize(("key", "value", "got"), [
    ("intermediate_size", 10**400, "1" + "0" * 36 + "..."),
    ("hidden_size", 2**53 + 1, "9007199254740993"),
], ids=["10**400", "2**53+1"])
def test_a_size_past_any_model_is_one_line_not_an_overflow(tmp_path, capsys, key, value, got):
    """intermediate_size 10**400 was read, and sizing the tier divided it into a float:
    OverflowError and a traceback."""

    path = _config(tmp_path, **{key: value})
    message = (f"key {key!r}: must be a positive integer of at most 9,007,199,254,740,992 "
               f"(got {got}); give the value the model card states")
    _refused(tmp_path, capsys, path, message)


def test_a_huge_but_finite_size_still_reads_and_does_not_fit(tmp_path, capsys):
    """Up to the bound a size reads, and a model that large is refused as not fitting."""
    path = _config(tmp_path, num_hidden_layers=10**12)
    scenario = _scenario(tmp_path, path)
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "-o", tmp_path / "o"))
    assert "does not fit on 1x H200" in line


# ------------------------------------------------------------------ Marlin's group sizes

_MARLIN_WHY = (
    "must be 32, 64, 128 or -1 (per channel) (got {got}); tiersim times {what} at the group "
    "sizes vLLM's Marlin kernel serves (at another vLLM runs a kernel tiersim does not time, "
    "or refuses a layer whose input width the groups do not divide): use such a checkpoint, or "
    "remove quantization_config from a copy of config.json and set the tier's precision")


@pytest.mark.parametrize(("quant", "key", "got", "what"), [
    ({"quant_method": "gptq", "bits": 4, "group_size": 7, "sym": True,
      "desc_act": False}, "group_size", "7", "GPTQ weights"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 256, "sym": True,
      "desc_act": False}, "group_size", "256",
     "GPTQ weights"),
    ({"quant_method": "awq", "bits": 4, "group_size": 100}, "group_size", "100", "AWQ weights"),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 16}, "q_group_size", "16",
     "AWQ weights"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
     "desc_act": False,
      "dynamic": {r"+:.*mlp.*": {"group_size": 96}}}, "dynamic.+:.*mlp.*.group_size", "96",
     "GPTQ weights"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                           "group_size": 256}}}},
     "config_groups.group_0.weights.group_size", "256", "int weight-only weights"),
], ids=["gptq-7", "gptq-256", "awq-100", "awq-q_group_size-16", "gptq-dynamic-96",
        "compressed-tensors-256"])
def test_a_group_size_marlin_does_not_serve_is_one_line(tmp_path, capsys, quant, key, got,
                                                         what):
    """A GPTQ or AWQ group size other than Marlin's (-1, 32, 64, 128) was timed as Marlin's
    W4A16 at its bits a weight (group 7: 6.3 bits). vLLM serves it with its older GPTQ / AWQ
    kernel (or, for compressed-tensors, another mixed-precision kernel), and refuses a layer
    whose input width the groups do not divide (4,096 / 7): "The input size is not aligned with
    the quantized weight shape"."""

    path = _config(tmp_path, quantization_config=quant)
    message = (f"key 'quantization_config.{key}': "
               + _MARLIN_WHY.format(got=got, what=what))
    _refused(tmp_path, capsys, path, message, "checkpoint\n    accuracy: 0.9")


@pytest.mark.parametrize("size", [32, 64, 128, -1])
def test_marlins_group_sizes_still_read(tmp_path, size):
    import warnings

    from tiersim.hardware.hf_config import load_hf_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("gptq", "awq"):
            model = load_hf_config(_config(tmp_path, quantization_config={
                "quant_method": method, "bits": 4, "group_size": size, "sym": True,
                "desc_act": False, "zero_point": True}))
            assert dict((g, f) for g, f, _ in model.checkpoint)["attention"] == "w4a16"


def test_a_dynamic_rule_keeps_a_per_channel_blocks_group(tmp_path):
    """A rule without its own group_size keeps the block's, per channel too."""
    from tiersim.hardware.hf_config import load_hf_config

    with pytest.warns(UserWarning):
        model = load_hf_config(_config(tmp_path, quantization_config={
            "quant_method": "gptq", "bits": 4, "group_size": -1, "sym": True,
     "desc_act": False,
            "dynamic": {r"+:.*mlp.*": {"bits": 8}}}))
    assert dict((g, f) for g, f, _ in model.checkpoint) == {"attention": "w4a16",
                                                            "mlp": "w8a16"}


# ------------------------------------------------------------------ compressed-tensors marlin-24

_W4 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}


@pytest.mark.parametrize(("where", "quant"), [
    ("format", {"format": "marlin-24", "sparsity_config": {"format": "dense"},
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": _W4}}}),
    ("config_groups.group_0.format", {"format": "mixed-precision", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": _W4, "format": "marlin-24"}}}),
], ids=["block", "group"])
def test_a_marlin_24_checkpoint_is_refused_not_read_dense(tmp_path, capsys, where, quant):
    """compressed-tensors' ``marlin-24`` format stores 2:4-sparse INT4 weights (llm-compressor's
    2of4 W4A16 export, its sparsity_config 'dense' since the format holds the sparsity), which
    vLLM serves with CompressedTensorsW4A16Sparse24; tiersim read it as dense W4A16, twice the
    weights."""

    path = _config(tmp_path, quantization_config={"quant_method": "compressed-tensors",
                                                  "ignore": ["lm_head"], **quant})
    message = (f"key 'quantization_config.{where}': 'marlin-24' stores 2:4-sparse weights: "
               "tiersim does not model sparse weights (it sizes and times them dense); use the "
               "dense checkpoint")
    _refused(tmp_path, capsys, path, message, "checkpoint\n    accuracy: 0.9")


def test_a_pack_quantized_checkpoint_still_reads(tmp_path):
    from tiersim.hardware.hf_config import load_hf_config

    model = load_hf_config(_config(tmp_path, quantization_config={
        "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": _W4,
                                      "format": "pack-quantized"}}}))
    assert dict((g, f) for g, f, _ in model.checkpoint)["mlp"] == "w4a16"


# ------------------------------------------------------------------ Qwen MoE shared expert


@pytest.mark.parametrize(("model_type", "extra"), [
    ("qwen2_moe", {}),
    ("qwen3_next", {"full_attention_interval": 4, "linear_conv_kernel_dim": 4,
                    "linear_key_head_dim": 128, "linear_num_key_heads": 16,
                    "linear_num_value_heads": 32, "linear_value_head_dim": 128}),
])
@pytest.mark.parametrize("value", ["missing", None])
def test_a_qwen_shared_expert_width_left_out_is_one_line_not_none(tmp_path, capsys, model_type,
                                                                   extra, value):
    """A Qwen2-MoE / Qwen3-Next config without shared_expert_intermediate_size was read as
    having no shared expert; transformers (and so vLLM) builds one of its default width
    (5,632 for qwen2_moe, 512 for qwen3_next) in every layer, and fails on null."""

    fields = {"model_type": model_type, "num_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 1024, "head_dim": 128, **extra}
    if value is None:
        fields["shared_expert_intermediate_size"] = None
    path = _config(tmp_path, **fields)
    state = "missing" if value == "missing" else "null"
    message = f"key 'shared_expert_intermediate_size': {state}; needed to build the model"
    _refused(tmp_path, capsys, path, message)


def test_a_qwen_shared_expert_width_of_0_is_none(tmp_path):
    """0 is no shared expert, as vLLM builds none for it."""
    from tiersim.hardware.hf_config import load_hf_config

    model = load_hf_config(_config(tmp_path, model_type="qwen2_moe", num_experts=8,
                                   num_experts_per_tok=2, moe_intermediate_size=1024,
                                   shared_expert_intermediate_size=0))
    assert model.shared_intermediate == 0


# ------------------------------------------------------------------ DeepSeek keys left out

_DSV3 = {"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
         "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 2048,
         "moe_intermediate_size": 256, "n_routed_experts": 8, "num_experts_per_tok": 2,
         "n_shared_experts": 1, "first_k_dense_replace": 1, "q_lora_rank": 384,
         "kv_lora_rank": 128, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
         "v_head_dim": 32}


@pytest.mark.parametrize("key", ["q_lora_rank", "n_shared_experts", "first_k_dense_replace"])
def test_a_deepseek_key_left_out_is_one_line_not_none(tmp_path, capsys, key):
    """An MLA config without q_lora_rank, n_shared_experts or first_k_dense_replace was read as
    none (no query LoRA, no shared expert, no dense layer); transformers' DeepseekV3Config, which
    vLLM builds the model from, takes 1536, 1 and 3 instead."""

    path = _config(tmp_path, **_DSV3)
    doc = json.loads(path.read_text())
    del doc[key]
    path.write_text(json.dumps(doc))
    none = "0" if key == "first_k_dense_replace" else "null"
    message = (f"key {key!r}: missing; transformers would take deepseek_v3's default, not "
               f"none: write it out ({none} for none)")
    _refused(tmp_path, capsys, path, message)


def test_deepseek_keys_null_are_none(tmp_path):
    from tiersim.hardware.hf_config import load_hf_config

    model = load_hf_config(_config(tmp_path, **{**_DSV3, "q_lora_rank": None,
                                                "n_shared_experts": None,
                                                "first_k_dense_replace": 0}))
    assert (model.q_lora_rank, model.shared_intermediate, model.dense_layers) == (0, 0, 0)
