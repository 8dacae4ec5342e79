"""Config readers found wanting by a hostile pass over real Hugging Face configs: GPTQ's
per-module ``dynamic`` overrides, Qwen2-MoE, Phi-3 and the one line an unknown architecture
gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import TiersimError
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
    ({r".*mlp.*": {"bits": 8}}, "key 'quantization_config.dynamic..*mlp.*.bits': must be 4 "
     "(got 8); tiersim reads 4-bit GPTQ modules (as w4a16): use a 4-bit checkpoint, or remove "
     "quantization_config from a copy of config.json and set the tier's precision"),
    ({"-:(": {}}, "key 'quantization_config.dynamic': '-:(' is not a regular expression "
     "(missing ), unterminated subpattern at position 0)"),
    ({".*": 4}, "key 'quantization_config.dynamic..*': must be an object of overrides "
     "(bits, group_size ...) (got 4)"),
    ([".*"], "key 'quantization_config.dynamic': must be an object of module regexes (got "
     "['.*'])"),
])
def test_gptq_dynamic_it_cannot_read_is_one_line(tmp_path, dynamic, message):
    path = _write(tmp_path, LLAMA, {**GPTQ, "dynamic": dynamic})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == f"{path}: {message}"
