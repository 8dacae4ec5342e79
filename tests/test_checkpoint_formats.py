"""Checkpoint weight formats read from config.json / hf_quant_config.json, and their memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note, TiersimError
from tiersim.hardware import get_model
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.precisions import weight_formats
from tiersim.perf.memory import checkpoint_bytes, kv_bytes_per_token, weight_bytes

BASE = {
    "model_type": "qwen3_moe", "hidden_size": 1024, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 1000,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256,
    "max_position_embeddings": 4096,
}
MLA = {
    "model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 1000,
    "intermediate_size": 2048, "moe_intermediate_size": 256, "n_routed_experts": 8,
    "max_position_embeddings": 4096,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
    "q_lora_rank": 384, "kv_lora_rank": 128, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
    "v_head_dim": 32,
}


def _write(tmp_path: Path, data: dict, name: str = "config.json", side: dict | None = None):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    if side is not None:
        stem = "hf_quant_config.json" if name == "config.json" else name.replace(
            "config.json", "hf_quant_config.json")
        (tmp_path / stem).write_text(json.dumps(side))
    return path


def _formats(model) -> dict[str, str]:
    return {g: f for g, f, _ in model.checkpoint}


def test_block_fp8_with_skip_list(tmp_path):
    quant = {"quant_method": "fp8", "weight_block_size": [128, 128],
             "modules_to_not_convert": ["lm_head", "gate"]}
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    assert _formats(model) == {"attention": "fp8_block", "experts": "fp8_block"}
    fmts = weight_formats(model, "checkpoint")
    assert fmts.lm_head.name == "bf16" and fmts.of("router").name == "bf16"
    # Per-tensor FP8 when no block size is given.
    quant.pop("weight_block_size")
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    assert set(_formats(model).values()) == {"fp8"}


def test_compressed_tensors_int4_with_ignore_regexes(tmp_path):
    quant = {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "group_size": 32, "strategy": "group"}}},
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                   "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
    }
    model = load_hf_config(_write(tmp_path, {**MLA, "quantization_config": quant}))
    assert _formats(model) == {"experts": "w4a16"}
    experts = weight_formats(model, "checkpoint").experts
    assert experts.weight_bits == 4.5  # 4 bits + a 16-bit scale per 32 weights


def test_mxfp4_quantises_only_the_experts(tmp_path):
    data = {"model_type": "gpt_oss", "hidden_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "vocab_size": 1000, "num_local_experts": 4, "experts_per_token": 2,
            "num_experts_per_tok": 2,
            "intermediate_size": 512, "quantization_config": {"quant_method": "mxfp4"}}
    model = load_hf_config(_write(tmp_path, data))
    assert _formats(model) == {"experts": "mxfp4"}
    assert weight_formats(model, "checkpoint").experts.weight_bits == 4.25


def test_modelopt_side_file_beside_a_stem_config(tmp_path):
    side = {"quantization": {"quant_algo": "NVFP4", "group_size": 16,
                             "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}}
    model = load_hf_config(_write(tmp_path, BASE, "org--m_config.json", side))
    assert _formats(model) == {"experts": "nvfp4"}


def test_unrepresentable_scheme_is_one_line(tmp_path):
    quant = {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "int"}}}}
    with pytest.raises(TiersimError) as info:
        load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    assert "\n" not in str(info.value) and "8-bit int" in str(info.value)
    with pytest.raises(TiersimError, match="Mamba"):
        load_hf_config(_write(tmp_path, {**BASE, "model_type": "nemotron_h"}))


def test_checkpoint_bytes_counts_each_group_in_its_format(tmp_path):
    quant = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    bf16 = load_hf_config(_write(tmp_path, BASE))
    fp8 = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    groups = bf16.param_groups()
    linear = groups["attention"] + groups["experts"]
    assert checkpoint_bytes(bf16) == pytest.approx(bf16.total_params * 2)
    saved = checkpoint_bytes(bf16) - checkpoint_bytes(fp8)
    assert saved == pytest.approx(linear * (2 - (8 + 32 / 16384) / 8))


def test_mla_kv_cache_is_the_latent_on_every_tp_gpu(tmp_path):
    model = load_hf_config(_write(tmp_path, MLA))
    assert model.is_mla and model.dense_layers == 1 and model.moe_layers == 3
    per_token = 4 * (128 + 16) * 2
    assert kv_bytes_per_token(model, "bf16", tp=1) == per_token
    assert kv_bytes_per_token(model, "bf16", tp=4) == per_token


def test_tier_precision_overrides_the_checkpoint(tmp_path):
    quant = {"quant_method": "mxfp4"}
    data = {**BASE, "quantization_config": quant}
    model = load_hf_config(_write(tmp_path, data))
    assert weight_bytes(model, "bf16") > weight_bytes(model, "checkpoint") > weight_bytes(
        model, "nvfp4")


def test_catalogue_model_checkpoint_is_bf16():
    qwen = get_model("Qwen3-Coder-30B-A3B")
    assert weight_bytes(qwen, "checkpoint") == weight_bytes(qwen, "bf16")


def test_mtp_layers_count_in_the_checkpoint_not_in_serving(tmp_path):
    plain = load_hf_config(_write(tmp_path, MLA))
    mtp = load_hf_config(_write(tmp_path, {**MLA, "num_nextn_predict_layers": 1}))
    assert mtp.mtp_layers == 1
    layer = plain.attention_params_per_layer() + plain.expert_params_per_layer()
    assert checkpoint_bytes(mtp) - checkpoint_bytes(plain) > 2 * layer  # BF16: 2 bytes each
    assert weight_bytes(mtp, "bf16") == weight_bytes(plain, "bf16")


def _aic_configs() -> list[Path]:
    try:
        import aiconfigurator_core
    except ImportError:
        return []
    folder = Path(aiconfigurator_core.__file__).parent / "model_configs"
    return sorted(p for p in folder.glob("*_config.json")
                  if not p.name.endswith("hf_quant_config.json"))


@pytest.mark.parametrize("path", _aic_configs(), ids=lambda p: p.name[:40])
def test_every_shipped_aiconfigurator_config_loads_or_says_what_it_lacks(path):
    try:
        model = load_hf_config(path)
    except TiersimError as exc:
        text = str(exc)
        assert "\n" not in text and str(path) in text and "model_type" in text
        assert "tiersim does not model " in text  # one line says what it lacks
        return
    assert checkpoint_bytes(model) > 0
    assert weight_bytes(model, "checkpoint") <= weight_bytes(model, "bf16")


def test_vision_language_wrapper_reads_its_text_model(tmp_path):
    text = {**BASE, "model_type": "qwen3_vl_moe_text"}
    model = load_hf_config(_write(tmp_path, {"model_type": "qwen3_vl_moe", "text_config": text}))
    plain = load_hf_config(_write(tmp_path, BASE))
    assert model.param_groups() == plain.param_groups() and model.qk_norm


def test_a_wrappers_own_quantization_config_wins_over_its_text_configs(tmp_path):
    # as vLLM's ModelConfig reads them: the top level, then text_config only where it has none
    block = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    text = {**BASE, "model_type": "qwen3_vl_moe_text",
            "quantization_config": {"quant_method": "mxfp4"}}
    both = load_hf_config(_write(tmp_path, {"model_type": "qwen3_vl_moe", "text_config": text,
                                            "quantization_config": block}))
    assert set(_formats(both).values()) == set(_formats(load_hf_config(_write(
        tmp_path, {**BASE, "quantization_config": block}, "plain.json"))).values())
    inner = load_hf_config(_write(tmp_path, {"model_type": "qwen3_vl_moe", "text_config": text},
                                  "inner.json"))
    assert _formats(inner) != _formats(both)


@pytest.mark.parametrize(("quant", "expected"), [
    ({"quant_method": "compressed-tensors", "config_groups": [1, 2]},
     "key 'quantization_config.config_groups': must be an object of named groups (got "
     "list)"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"targets": 3, "weights": {
        "num_bits": 4, "type": "int", "group_size": 128}}}},
     "key 'quantization_config.config_groups.g.targets': must be a list of module names "
     "(got 3)"),
    ({"quant_method": "fp8", "ignored_layers": ["re:(("]},  # round 52: the entry named
     "key 'quantization_config.ignored_layers[0]': \"re:((\" is not a regular expression "
     "(missing ), unterminated subpattern at position 1)"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
        "num_bits": 4, "type": "int", "group_size": -2}}}},
     "key 'quantization_config.config_groups.g.weights.group_size': must be a whole number of "
     "weights from 1 to 65536 (got -2)"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 1e-300},
     "key 'quantization_config.group_size': must be 16 (got 1e-300)"),
])
def test_a_malformed_quantization_block_is_one_line_naming_the_file(tmp_path, quant, expected):
    path = _write(tmp_path, {**BASE, "quantization_config": quant})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_a_malformed_hf_quant_config_beside_it_is_named_too(tmp_path):
    path = _write(tmp_path, BASE, side={"quantization": [1, 2]})
    with pytest.raises(TiersimError, match=r"hf_quant_config.json: key 'quantization': must be "
                       r"an object with a quant_algo \(got \[1, 2\]\)"):
        load_hf_config(path)


@pytest.mark.parametrize(("change", "expected"), [
    ({"first_k_dense_replace": 1000}, "key 'first_k_dense_replace': must be at most 3 (got 1000)"),
    ({"num_nextn_predict_layers": -5},
     "key 'num_nextn_predict_layers': must be a whole number >= 0 (got -5)"),
    ({"num_nextn_predict_layers": "two"},
     "key 'num_nextn_predict_layers': must be a whole number >= 0 (got \"two\")"),
])
def test_counts_that_cannot_be_are_refused(tmp_path, change, expected):
    path = _write(tmp_path, {**MLA, **change})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == f"{path}: {expected}"


def test_per_channel_int4_and_a_bare_ignore_name_read_as_meant(tmp_path):
    """``group_size: -1`` is one scale per channel (about 4 bits a weight); an ignore list
    written as one string is that one module, not its letters."""
    quant = {"quant_method": "compressed-tensors", "ignore": "lm_head",
             "config_groups": {"g": {"targets": ["Linear"],
                                     "weights": {"num_bits": 4, "type": "int",
                                                 "group_size": -1}}}}
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    bits = {g: b for g, _, b in model.checkpoint}
    assert bits["experts"] == pytest.approx(4.0, abs=0.001)
    fp8 = {"quant_method": "fp8", "ignored_layers": "mlp.gate"}  # a string: the router only
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": fp8}))
    assert set(_formats(model)) == {"attention", "experts"}


def test_a_channel_strategy_int4_checkpoint_is_per_channel(tmp_path):
    """compressed-tensors says per channel as ``strategy: channel`` with no group size (as
    llm-compressor writes it); it was read as the default 128-wide groups (4.125 bits)."""
    quant = {"quant_method": "compressed-tensors",
             "config_groups": {"g": {"targets": ["Linear"], "weights": {
                 "num_bits": 4, "type": "int", "strategy": "channel", "group_size": None}}}}
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    assert {g: b for g, _, b in model.checkpoint}["experts"] == pytest.approx(4.0, abs=0.001)


def test_the_context_is_read_from_max_position_embeddings(tmp_path):
    from tiersim.fleet import limits

    model = load_hf_config(_write(tmp_path, {**BASE, "max_position_embeddings": 32768}))
    assert model.max_context == 32768
    unset = {**BASE, "max_position_embeddings": None}  # none given: vLLM's assumed 2,048
    with pytest.warns(Note, match="no context-length key"):
        assert load_hf_config(_write(tmp_path, unset)).max_context == 2048
    assert get_model("Llama-3.1-8B").max_context == 131072
    from tiersim.scenario import TierConfig

    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0)
    assert limits(tier, "llama-3.1-8b").max_model_len == 131072
    capped = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0,
                        scheduler={"max_model_len": 8192})
    assert limits(capped, "llama-3.1-8b").max_model_len == 8192  # vLLM's --max-model-len
    above = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0,
                       scheduler={"max_model_len": 10**6})
    with pytest.raises(ValueError, match="is above Llama-3.1-8B's context"):  # vLLM refuses it
        limits(above, "llama-3.1-8b")
    with pytest.warns(Note, match="no context-length key"):  # vLLM takes the one asked for
        assert limits(above, str(_write(tmp_path, unset))).max_model_len == 10**6


FLAT_FP8 = {"quant_algo": "FP8", "ignore": ["lm_head"], "producer": {"name": "modelopt"}}


def test_config_quantization_wins_over_a_side_file_that_disagrees(tmp_path):
    """vLLM reads ``hf_quant_config.json`` only when config.json has no quantization_config;
    a side file naming another format is not read, and a note says so naming both files."""
    import warnings

    from tiersim.errors import Note

    path = _write(tmp_path, {**BASE, "quantization_config": FLAT_FP8},
                  side={"quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                         "kv_cache_quant_algo": "FP8"}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_hf_config(path)
    assert set(_formats(model).values()) == {"fp8"} and model.kv_cache == ""
    side = tmp_path / "hf_quant_config.json"
    assert [str(w.message) for w in caught if w.category is Note] == [
        f"{side}: not read: it names nvfp4, KV cache fp8; {path}'s quantization_config (fp8) "
        "decides the formats, as vLLM reads it"]


def test_a_side_file_that_agrees_with_the_config_says_nothing(tmp_path):
    import warnings

    path = _write(tmp_path, {**BASE, "quantization_config": FLAT_FP8},
                  side={"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_hf_config(path)
    assert set(_formats(model).values()) == {"fp8"}


@pytest.mark.parametrize("where", ["side", "config"])
def test_nan_in_a_quantization_block_is_refused(tmp_path, where):
    """Python's JSON reader takes ``NaN``; a group size of NaN is no number JSON allows."""
    text = '{"quant_algo": "NVFP4", "group_size": NaN}'
    if where == "side":
        (tmp_path / "config.json").write_text(json.dumps(BASE))
        (tmp_path / "hf_quant_config.json").write_text('{"quantization": ' + text + "}")
        bad, key = tmp_path / "hf_quant_config.json", "quantization.group_size"
    else:
        (tmp_path / "config.json").write_text(
            json.dumps(BASE)[:-1] + ', "quantization_config": ' + text + "}")
        bad, key = tmp_path / "config.json", "quantization_config.group_size"
    with pytest.raises(TiersimError) as err:
        load_hf_config(tmp_path / "config.json")
    assert str(err.value) == (f"{bad}: key {key!r}: NaN is not a number JSON allows; give a "
                              "finite number or remove the key")


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize(("rope", "expected"), [
    ({"rope_scaling": YARN}, 131072),  # Qwen3's documented YaRN: 32,768 x 4
    ({"rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 32768}},
     131072),  # the legacy key
    ({"rope_parameters": {**YARN, "rope_theta": 1e6}}, 131072),  # transformers v5
    ({"rope_scaling": {"rope_type": "yarn", "factor": 2}, "original_max_position_embeddings":
      20480}, 40960),  # no original in the block: the config's own (test_round22_models2)
    ({"rope_scaling": {"type": "linear", "factor": 2.0}}, 81920),
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 1.5}}, 61440),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                       "original_max_position_embeddings": 8192}}, 40960),  # already scaled
    ({"rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20]}}, 40960),
])
def test_rope_scaling_stretches_the_context_as_vllm_derives_it(tmp_path, rope, expected):
    data = {**BASE, "max_position_embeddings": 40960, **rope}
    assert load_hf_config(_write(tmp_path, data)).max_context == expected


@pytest.mark.parametrize(("factor", "shown"), [(0, "0"), (-2.0, "-2.0"), ("4", '"4"'),
                                               (True, "true")])  # round 52: as JSON writes them
def test_a_rope_factor_that_is_no_positive_number_is_one_line(tmp_path, factor, shown):
    path = _write(tmp_path, {**BASE, "max_position_embeddings": 40960,
                             "rope_scaling": {**YARN, "factor": factor}})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (f"{path}: key 'rope_scaling.factor': must be a finite number "
                              f"above 0 (got {shown})")


@pytest.mark.parametrize("factor", [1e308, 1e300, 4000.0])
def test_a_rope_factor_stretching_past_any_context_is_one_line(tmp_path, factor):
    """1e308 x 32,768 overflowed to infinity and raised a traceback; 1e300 gave a 300-digit
    context."""
    path = _write(tmp_path, {**BASE, "max_position_embeddings": 40960,
                             "rope_scaling": {**YARN, "factor": factor}})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (f"{path}: key 'rope_scaling.factor': {factor!r} stretches the "
                              "context to more than 100,000,000 tokens; give the factor the "
                              "model card states")


FP8_LINEAR = {"weights": {"num_bits": 8, "type": "float"}, "targets": ["Linear"]}
W4_LINEAR = {"weights": {"num_bits": 4, "type": "int", "group_size": 128}, "targets": ["Linear"]}


@pytest.mark.parametrize(("quant", "expected"), [
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"model.layers.x.mlp": {"quant_algo": "FP8"}}},
     "key 'quantization_config.quantized_layers': no entry names a module of this model "
     "(first: 'model.layers.x.mlp'), so every weight would read as BF16; name modules as the "
     "checkpoint does (e.g. 'model.layers.0.self_attn.q_proj')"),
    ({"quant_method": "compressed-tensors", "config_groups": {"a": FP8_LINEAR, "b": W4_LINEAR}},
     "key 'quantization_config.config_groups.b.targets': 'Linear' is targeted by group 'a' "
     "too, so which format the linear layers hold is not said; keep 'Linear' in one group "
     "(name the other group's modules instead)"),
    ({"quant_method": "modelopt", "quant_algo": None},
     "key 'quantization_config.quant_algo': missing; say which format"),
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.experts": {"quant_algo": "FP9"}}},
     "key 'quantization_config.quantized_layers.model.layers.0.mlp.experts.quant_algo': "
     '"FP9" is not a format tiersim models'),  # round 52: as JSON writes it
])
def test_a_quantisation_block_read_as_all_bf16_or_as_one_of_two_is_refused(tmp_path, quant,
                                                                           expected):
    """They loaded silently as BF16 (or as the first Linear group); ModelOpt's keys were
    named without their `quantization_config.` prefix."""
    path = _write(tmp_path, {**BASE, "quantization_config": quant})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value).startswith(f"{path}: {expected}")


@pytest.mark.parametrize(("quant", "said"), [
    ({"quant_method": "compressed-tensors", "config_groups": {}}, "is empty"),
    ({"quant_method": "compressed-tensors", "ignore": ["lm_head"]}, "is missing"),
])
def test_a_compressed_tensors_block_without_groups_is_bf16_with_a_note(tmp_path, quant, said):
    from tiersim.errors import Note

    path = _write(tmp_path, {**BASE, "quantization_config": quant})
    with pytest.warns(Note) as notes:
        model = load_hf_config(path)
    assert model.checkpoint == ()
    assert [str(n.message) for n in notes] == [
        f"{path}: key 'quantization_config.config_groups' {said}: no module is quantised, so "
        "the weights are read as BF16; if they are stored quantised, add the groups that say how"]


def test_a_config_declaring_millions_of_experts_reads_at_once(tmp_path):
    """The experts' module names are spelled as they are looked at, not all up front: ten
    million experts (a typo, or a hostile config) read in well under a second, and their
    weights are then a fit error, not a hang."""
    import time

    data = {**BASE, "num_experts": 10**7, "quantization_config": {"quant_method": "fp8"}}
    start = time.perf_counter()
    model = load_hf_config(_write(tmp_path, data))
    assert time.perf_counter() - start < 5
    assert _formats(model)["experts"] == "fp8"
    assert model.param_groups()["experts"] == 4 * 10**7 * 3 * 1024 * 256


def test_a_per_channel_int4_checkpoint_is_labelled_per_channel(tmp_path):
    """GPTQ's ``group_size: -1`` (one scale per output channel) was labelled ``W4A16 g65536``,
    the internal stand-in for it, in the model line and summary.json."""
    quant = {"quant_method": "gptq", "bits": 4, "group_size": -1, "sym": True,
     "desc_act": False}
    model = load_hf_config(_write(tmp_path, {**BASE, "quantization_config": quant}))
    assert weight_formats(model, "checkpoint").of("experts").label == "W4A16 per channel"
