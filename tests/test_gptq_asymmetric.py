"""Asymmetric GPTQ (``sym: false``, a zero point per group) is not what vLLM's Marlin kernel
serves: ``GPTQMarlinConfig.TYPE_MAP`` holds only (4, sym) and (8, sym), so vLLM runs such a
checkpoint with its older GPTQ kernel, and refuses an asymmetric ``dynamic`` override of a
Marlin checkpoint. tiersim times Marlin only: both are refused in one line (they were read as
w4a16 / w8a16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware.hf_config import load_hf_config

LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
         "max_position_embeddings": 32768,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2048,
         "vocab_size": 1000}
GPTQ8 = {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True}
TAIL = ", or remove quantization_config from a copy of config.json and set the tier's precision"


def _write(tmp_path: Path, quant: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": quant}))
    return path


@pytest.mark.parametrize(("bits", "sym", "got"), [(8, False, "false"), (4, False, "false"),
                                                  (8, "no", '"no"'), (4, 1, "1")])
def test_an_asymmetric_gptq_checkpoint_is_one_line(tmp_path, bits, sym, got):
    path = _write(tmp_path, {**GPTQ8, "bits": bits, "sym": sym})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'quantization_config.sym': must be true (got {got}); tiersim reads "
        "symmetric GPTQ checkpoints (as w4a16 / w8a16), the ones vLLM's Marlin kernel serves "
        "(an asymmetric one runs its older GPTQ kernel, which tiersim does not time): use a "
        f"symmetric one{TAIL}")


def test_an_asymmetric_dynamic_override_is_one_line(tmp_path):
    path = _write(tmp_path, {**GPTQ8, "dynamic": {r"+:.*mlp.*": {"sym": False}}})
    with pytest.raises(TiersimError) as err:
        load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'quantization_config.dynamic.+:.*mlp.*.sym': must be true (got false); "
        "tiersim reads symmetric GPTQ modules (as w4a16 / w8a16), the ones vLLM's Marlin "
        "kernel serves (vLLM refuses an asymmetric override of a symmetric checkpoint): use a "
        f"symmetric checkpoint{TAIL}")


@pytest.mark.parametrize("quant", [GPTQ8, {**GPTQ8, "dynamic": {r"+:.*mlp.*": {"sym": True}}}])
def test_symmetric_gptq_is_still_read(tmp_path, quant):
    model = load_hf_config(_write(tmp_path, quant))
    assert model.checkpoint == (("attention", "w8a16", 8.125), ("mlp", "w8a16", 8.125))
