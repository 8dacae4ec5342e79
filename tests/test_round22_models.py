"""Round 22 (models) of hostile input, each a failure found from outside and fixed: the exact
line a user sees, or the number that was wrong. Hugging Face config.json reading, checked
against vLLM's own reading of each block (awq_marlin.py, awq.py, modelopt.py)."""

from __future__ import annotations

import json

import pytest
from test_round19 import _config
from test_round21_models2 import _refused

from tiersim.errors import Note
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
     "must be true (got False); vLLM's AWQ-Marlin kernel serves 4-bit AWQ with zero points "
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
     "key 'quantization.quant_algo': 'BOGUS' is not a format tiersim models; supported: FP8, "
     "NVFP4, W4A16_NVFP4, MXFP4, FP8_BLOCK, W4A16_AWQ, INT4_AWQ, MIXED_PRECISION"),
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
