"""A weight-only table read for weights of another width: an FP8 W8A16 checkpoint (8-bit
weights, 16-bit activations) is timed as ``w4a16`` and read NVIDIA's 4-bit W4A16 tables. Where
its shape was in a table it ran at 4-bit speed, labelled measured; a small-batch weight-only
GEMM or MoE is bound by reading its weights, and 8-bit weights are twice the bytes. The table
is now rescaled by the roofline from the bits it was timed at to the checkpoint's, and says so."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf import resolve_profile
from tiersim.perf.profile import Profile, ProfileOps, Table
from tiersim.perf.roofline import RooflineOps
from tiersim.summary import source_kind

#: Qwen3-30B-A3B's shape: the shipped H200 profile holds its INT4 Marlin MoE at moe TP 1.
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
             "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
             "num_experts_per_tok": 8, "vocab_size": 151936}
FP8_WEIGHTS = {"num_bits": 8, "type": "float", "strategy": "channel"}
INT4_G32 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}
MOE = "moe w4a16 hidden=2048 inter=768 num_experts=128 top_k=8 ep=1 tp=1"
RESCALED = "rescaled from W4A16 tables (4.125 bits a weight) by the roofline"


def _checkpoint(tmp_path: Path, weights: dict) -> object:
    """A config.json whose linear layers store ``weights`` with no input activations."""
    group = {"targets": ["Linear"], "weights": weights, "input_activations": None}
    quant = {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
             "config_groups": {"group_0": group}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3_MOE, "quantization_config": quant}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_hf_config(path)


def _ops(model, profile) -> ProfileOps:
    fallback = RooflineOps(model, "checkpoint", "h200")
    return ProfileOps(profile, model, "checkpoint", "h200", fallback=fallback)


def test_an_fp8_w8a16_moe_reads_the_w4a16_table_rescaled_to_its_8_bits(tmp_path):
    model = _checkpoint(tmp_path, FP8_WEIGHTS)
    profile = resolve_profile("h200_aiconfigurator_vllm")
    ops = _ops(model, profile)
    tokens = np.array([1.0, 8.0, 64.0, 1024.0])
    table = profile.find("moe", "w4a16", {"hidden": 2048, "inter": 768, "num_experts": 128,
                                          "top_k": 8, "ep": 1, "tp": 1})
    as_timed = np.asarray(table.lookup(tokens))
    eight = RooflineOps(model, "checkpoint", "h200").moe(tokens)
    four = RooflineOps(model, "w4a16", "h200").moe(tokens)
    got = ops.moe(tokens)
    # memory-bound at 8 tokens: slower than the 4-bit table, by the roofline's ratio there
    assert got[1] == pytest.approx(as_timed[1] * eight[1] / four[1], rel=0.05)
    assert got[1] > 1.5 * as_timed[1]
    assert (got >= as_timed * (1 - 1e-9)).all()
    label = ops.sources()[MOE]
    assert label.startswith("rescaled:measured:aiconfigurator vllm")
    assert label.endswith(f"(FP8 W8A16 at 8 bits a weight, {RESCALED})")
    assert source_kind(label) == "public measured, rescaled to the weights' bits"


def test_a_w4a16_checkpoint_at_another_group_size_reads_the_table_as_timed(tmp_path):
    """Same 4-bit weights, another scale overhead (the tables do not record the group they
    were timed at; NVFP4 reads the INT4 rows as timed too): no rescaling."""
    model = _checkpoint(tmp_path, INT4_G32)
    profile = resolve_profile("h200_aiconfigurator_vllm")
    ops = _ops(model, profile)
    tokens = np.array([1.0, 8.0, 64.0])
    table = profile.find("moe", "w4a16", {"hidden": 2048, "inter": 768, "num_experts": 128,
                                          "top_k": 8, "ep": 1, "tp": 1})
    np.testing.assert_allclose(ops.moe(tokens), table.lookup(tokens), rtol=1e-12)
    assert ops.sources()[MOE].startswith("measured:aiconfigurator vllm")


def test_a_w4a16_checkpoint_at_another_group_size_reads_an_anchored_table_alike(tmp_path):
    """At a shape the tables lack (96 experts: anchored on the 128-expert table), groups of 32
    read as groups of 128 do, as at the exact shape: the anchor's roofline was built at the
    tables' nominal 4.125 bits and the target's at the checkpoint's 4.5, so g32 read 9% slower
    at 64 tokens only where anchored."""
    shape = {**QWEN3_MOE, "num_experts": 96}
    times = []
    for name, weights in (("g128", {**INT4_G32, "group_size": 128}), ("g32", INT4_G32)):
        folder = tmp_path / name
        folder.mkdir()
        group = {"targets": ["Linear"], "weights": weights, "input_activations": None}
        quant = {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
                 "config_groups": {"group_0": group}}
        (folder / "config.json").write_text(json.dumps({**shape, "quantization_config": quant}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_hf_config(folder / "config.json")
        ops = _ops(model, resolve_profile("h200_aiconfigurator_vllm"))
        times.append(ops.moe(np.array([1.0, 8.0, 64.0])))
        assert next(iter(v for k, v in ops.sources().items() if k.startswith("moe"))).startswith(
            "anchored:measured:")
    np.testing.assert_allclose(times[1], times[0], rtol=0.005)


def _gemm_profile(n: int, k: int) -> tuple[Profile, Table]:
    """A harness profile with one W4A16 GEMM table, 1.5 x the 4-bit roofline at each point."""
    roof = RooflineOps("llama-3.1-8b", "w4a16", "h200")  # a GEMM's roofline: its shape only
    m = np.array([1.0, 16.0, 256.0, 4096.0])
    table = Table("gemm", "w4a16", "harness", {"n": n, "k": k}, {"m": m},
                  1.5 * roof.gemm(m, n, k, "w4a16"))
    return Profile("p", "H200", {"source": "harness"}, 1e-3, "harness", [table]), table


@pytest.mark.parametrize(("n", "k", "prefix"), [(8192, 8192, "rescaled:harness"),
                                                (14336, 8192, "rescaled:anchored:harness")])
def test_an_fp8_w8a16_gemm_is_rescaled_on_an_exact_and_an_anchored_table(tmp_path, n, k,
                                                                         prefix):
    """At the table's shape, and at another (anchoring rescaled the shape but kept 4-bit
    bytes: its roofline on both sides was the checkpoint's 8 bits)."""
    model = _checkpoint(tmp_path, FP8_WEIGHTS)
    profile, _ = _gemm_profile(8192, 8192)
    ops = _ops(model, profile)
    m = np.array([1.0, 16.0])
    eight = RooflineOps(model, "checkpoint", "h200").gemm(m, n, k, "w4a16")
    np.testing.assert_allclose(ops.gemm(m, n, k, "w4a16"), 1.5 * eight, rtol=1e-9)
    assert eight[0] > 1.8 * RooflineOps(model, "w4a16", "h200").gemm(m, n, k, "w4a16")[0]
    label = ops.sources()[f"gemm w4a16 n={n} k={k}"]
    assert label.startswith(prefix) and RESCALED in label
