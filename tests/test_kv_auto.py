"""``kv_dtype="auto"``: the KV-cache format a checkpoint declares, else BF16 (vLLM's default)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tiersim.errors import TiersimError
from tiersim.hardware import get_gpu, get_model
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.precisions import resolve_kv_dtype
from tiersim.perf import build_step_model, default_profile_name
from tiersim.perf.memory import kv_capacity_blocks

BASE = {
    "model_type": "qwen3_moe", "hidden_size": 1024, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 1000,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256,
}
FP8_WEIGHTS = {"num_bits": 8, "type": "float", "strategy": "channel"}


def _write(folder: Path, data: dict, side: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    if side is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(side))
    return folder / "config.json"


def _ct(kv_scheme) -> dict:
    return {"quant_method": "compressed-tensors", "kv_cache_scheme": kv_scheme,
            "config_groups": {"g": {"targets": ["Linear"], "weights": FP8_WEIGHTS}}}


@pytest.mark.parametrize(
    ("quant", "side", "expected"),
    [
        (None, None, ""),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, None, ""),
        (_ct(None), None, ""),
        (_ct({"num_bits": 8, "type": "float", "strategy": "tensor"}), None, "fp8"),
        (_ct({"num_bits": 8, "type": "int"}), None, ""),
        (None, {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}, "fp8"),
        (None, {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None}}, ""),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "fp8"},
         None, "fp8"),
    ],
)
def test_declared_kv_cache_format(tmp_path, quant, side, expected):
    data = dict(BASE) if quant is None else {**BASE, "quantization_config": quant}
    model = load_hf_config(_write(tmp_path / "m", data, side))
    assert model.kv_cache == expected
    assert resolve_kv_dtype(model, "auto") == (expected or "bf16")
    # An explicit dtype always wins over the checkpoint's.
    assert resolve_kv_dtype(model, "BF16") == "bf16"
    assert resolve_kv_dtype(model, "fp8") == "fp8"


def test_unknown_kv_dtype_is_refused():
    with pytest.raises(TiersimError, match="KV-cache dtype"):
        resolve_kv_dtype(get_model("llama-3.1-8b"), "int3")


def test_auto_times_and_sizes_as_the_declared_format(tmp_path):
    """A checkpoint declaring an FP8 KV cache: ``auto`` equals ``fp8`` (step times on the
    shipped profile and KV blocks), and differs from ``bf16``; without the declaration
    ``auto`` equals ``bf16``."""
    declared = get_model(_write(tmp_path / "fp8kv", BASE, {"quantization": {
        "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}).parent)
    plain = get_model(_write(tmp_path / "plain", BASE).parent)
    h200 = get_gpu("h200")
    ctx = np.array([64 * 4096.0])
    for model, same, other in ((declared, "fp8", "bf16"), (plain, "bf16", "fp8")):
        steps = {kv: build_step_model(model, "fp8", "h200", kv_dtype=kv,
                                      profile=default_profile_name())
                 for kv in ("auto", same, other)}
        times = {kv: float(s.decode_times(64, ctx)[0]) for kv, s in steps.items()}
        assert times["auto"] == times[same] != times[other]
        blocks = {kv: kv_capacity_blocks(model, "fp8", h200, kv_dtype=kv)
                  for kv in ("auto", same, other)}
        assert blocks["auto"] == blocks[same] != blocks[other]


def test_a_tier_that_names_no_kv_dtype_runs_the_checkpoints_declared_format(tmp_path):
    """vLLM's default is ``--kv-cache-dtype auto``: a tier without ``kv_dtype`` sizes its KV
    cache in the format the checkpoint declares (FP8 here), as ``kv_dtype: fp8`` does."""
    from tiersim.fleet import kv_blocks
    from tiersim.scenario import TierConfig

    path = str(_write(tmp_path / "m", {**BASE, "quantization_config": _ct(
        {"num_bits": 8, "type": "float", "strategy": "tensor"})}))
    tier = TierConfig(name="t", precision="checkpoint", replicas=1, cost_per_gpu_hour=1.0)
    assert tier.kv_dtype == "auto"
    fp8 = tier.model_copy(update={"kv_dtype": "fp8"})
    bf16 = tier.model_copy(update={"kv_dtype": "bf16"})
    assert kv_blocks(path, "H200", tier) == kv_blocks(path, "H200", fp8)
    assert kv_blocks(path, "H200", tier) > kv_blocks(path, "H200", bf16)


def test_auto_follows_the_declared_format_only_where_the_tier_serves_the_checkpoints_own():
    """A BF16 tier of an FP8 checkpoint stands for a BF16 release, which declares no FP8 cache:
    it runs BF16; the checkpoint itself, or its own FP8 format named, runs the declared FP8."""
    from tiersim.hardware.precisions import tier_kv_dtype

    class Arch:
        checkpoint = (("attention", "fp8", 8.0), ("mlp", "fp8", 8.0))
        kv_cache = "fp8"

    assert tier_kv_dtype(Arch, "bf16", "auto") == "bf16"
    assert tier_kv_dtype(Arch, "w4a16", "auto") == "bf16"
    for served in ("checkpoint", "fp8"):
        assert resolve_kv_dtype(Arch, tier_kv_dtype(Arch, served, "auto")) == "fp8"
    assert tier_kv_dtype(Arch, "bf16", "fp8") == "fp8"  # named: the tier's


@pytest.mark.parametrize(
    ("quant", "said"),
    [
        (_ct({"num_bits": 4, "type": "float", "strategy": "tensor"}),
         "key 'quantization_config.kv_cache_scheme' is 4-bit float"),
        (_ct({"num_bits": 8, "type": "int"}),
         "key 'quantization_config.kv_cache_scheme' is 8-bit int"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"},
         "key 'quantization_config.kv_cache_quant_algo' is 'NVFP4'"),
    ],
)
def test_a_kv_format_tiersim_does_not_model_is_a_note(tmp_path, quant, said):
    # a 4-bit float KV cache was read silently as the model's dtype (BF16)
    from tiersim.errors import Note

    path = _write(tmp_path / "m", {**BASE, "quantization_config": quant})
    with pytest.warns(Note) as caught:
        model = load_hf_config(path)
    assert model.kv_cache == ""
    assert f"{path}: {said}: a KV-cache format tiersim does not model; its cache is read in " \
        "the model's dtype" in " ".join(str(w.message) for w in caught)


def test_a_declared_fp8_or_absent_kv_format_gives_no_note(tmp_path):
    import warnings

    from tiersim.errors import Note

    for i, quant in enumerate((None, _ct({"num_bits": 8, "type": "float"}),
                               {"quant_method": "modelopt", "quant_algo": "NVFP4",
                                "kv_cache_quant_algo": "FP8"})):
        data = dict(BASE) if quant is None else {**BASE, "quantization_config": quant}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load_hf_config(_write(tmp_path / str(i), data))
        assert not [w for w in caught if issubclass(w.category, Note) and "KV-cache" in
                    str(w.message)]


@pytest.mark.parametrize("written", ["FP8", " fp8", "Checkpoint", "CHECKPOINT "])
def test_auto_follows_the_declared_format_whatever_the_precision_is_spelled(tmp_path, written):
    """A precision is read without case or surrounding blanks everywhere else, so ``FP8`` or
    ``Checkpoint`` serves the checkpoint's own format as ``fp8`` does; its KV cache followed
    the declared FP8 only when spelled in lower case, and was sized in BF16 (half the blocks)
    otherwise."""
    from tiersim.fleet import kv_blocks
    from tiersim.hardware.precisions import tier_kv_dtype
    from tiersim.scenario import TierConfig

    path = str(_write(tmp_path / "m", {**BASE, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}))
    tier = TierConfig(name="t", precision=written, replicas=1, cost_per_gpu_hour=1.0)
    plain = tier.model_copy(update={"precision": written.strip().lower()})
    assert kv_blocks(path, "H200", tier) == kv_blocks(path, "H200", plain)
    assert resolve_kv_dtype(get_model(path), tier_kv_dtype(get_model(path), written,
                                                           "auto")) == "fp8"


def test_a_format_name_is_kept_in_one_spelling(tmp_path):
    # " W4A16" ran as w4a16 but was echoed as written in summary.json and the report
    from conftest import tiny_doc, write_yaml

    from tiersim.scenario import load_scenario

    doc = tiny_doc()
    doc["tiers"][0].update(precision=" W4A16", kv_dtype="FP8 ")
    tier = load_scenario(write_yaml(tmp_path / "s.yaml", doc)).tiers[0]
    assert (tier.precision, tier.kv_dtype) == ("w4a16", "fp8")
