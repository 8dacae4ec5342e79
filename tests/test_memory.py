"""Tests of the memory model: weights per precision and GPU, KV bytes, capacity, fit errors."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.errors import FitError
from tiersim.hardware import get_gpu, get_model
from tiersim.perf.memory import (
    default_activation_reserve,
    heads_per_gpu,
    kv_bytes_per_token,
    kv_capacity_blocks,
    params_per_gpu,
    weight_bytes,
)

QWEN = get_model("Qwen3-Coder-30B-A3B")
LLAMA8 = get_model("Llama-3.1-8B")
LLAMA70 = get_model("Llama-3.1-70B")
H200 = get_gpu("H200")


def test_qwen3_coder_bf16_weights_about_61_gb():
    assert weight_bytes(QWEN, "bf16") == pytest.approx(61e9, rel=0.05)


def test_qwen3_coder_kv_is_96_kib_per_token():
    assert kv_bytes_per_token(QWEN, "bf16") == 2 * 48 * 4 * 128 * 2 == 96 * 1024
    assert kv_bytes_per_token(QWEN, "fp8") == 48 * 1024


def test_w4a16_is_about_a_quarter_of_bf16():
    # DESIGN.md quotes 16.9 GB measured for a pruned Qwen3-Coder-30B-A3B at W4A16; the unpruned
    # model with BF16 embeddings, lm_head and router lands close to it.
    w4 = weight_bytes(QWEN, "w4a16")
    assert 15e9 < w4 < 18.5e9
    assert w4 < 0.3 * weight_bytes(QWEN, "bf16")


def test_precisions_order_weights():
    sizes = [weight_bytes(LLAMA70, p) for p in ("bf16", "fp8", "nvfp4", "w4a16")]
    assert sizes == sorted(sizes, reverse=True)
    # Only the quantised groups shrink: BF16 embeddings + lm_head (2.1 GB) are a floor.
    assert weight_bytes(LLAMA70, "nvfp4") > 2 * LLAMA70.vocab * LLAMA70.hidden * 2


def test_70b_bf16_on_one_h200_fit_error_text():
    with pytest.raises(FitError) as info:
        kv_capacity_blocks(LLAMA70, "bf16", H200, tp=1)
    assert str(info.value) == (
        "Llama-3.1-70B at BF16 does not fit on 1x H200: weights 141.1 GB + reserve 3.6 GB > "
        "usable 135.7 GB (short by 9.0 GB); use gpus_per_replica 2, a smaller precision or a "
        "GPU with more memory"
    )


def test_a_fit_error_under_a_lowered_utilization_says_how_far_to_raise_it():
    """Llama-3.1-8B fits one H200 at vLLM's default 0.9; at gpu_memory_utilization 0.01 it said
    "use a smaller precision or a GPU with more memory", though no precision fits 1.5 GB (the
    fixed reserve alone is 1.5 GB) and the fix is the utilization the scenario lowered."""
    with pytest.raises(FitError) as info:
        kv_capacity_blocks(LLAMA8, "bf16", H200, gpu_memory_utilization=0.01)
    assert str(info.value) == (
        "Llama-3.1-8B at BF16 does not fit on 1x H200: weights 16.1 GB + reserve 2.6 GB > usable "
        "1.5 GB (short by 17.1 GB); set gpu_memory_utilization to at least 0.124 (it is 0.01), "
        "or use a smaller precision or a GPU with more memory")
    assert kv_capacity_blocks(LLAMA8, "bf16", H200, gpu_memory_utilization=0.124) >= 1
    with pytest.raises(FitError, match="set gpu_memory_utilization to at least 0.124 "
                       r"\(it is 0.1236\), or use gpus_per_replica 2"):
        kv_capacity_blocks(LLAMA8, "bf16", H200, gpu_memory_utilization=0.1236)


def test_a_fit_error_short_by_less_than_a_tenth_of_a_gb_says_it_in_mb():
    """It said "(short by 0.0 GB)" for a replica a megabyte short."""
    with pytest.raises(FitError) as info:
        kv_capacity_blocks(LLAMA8, "bf16", H200, gpu_memory_utilization=0.1236)
    assert "usable 18.6 GB (short by 1.0 MB); set" in str(info.value)


def test_a_fit_error_on_a_full_node_names_the_fewest_gpus_that_fit():
    """It said "use a smaller precision or a GPU with more memory" only, though a replica may
    span nodes (gpus_per_replica 16 ran)."""
    big = dataclasses.replace(LLAMA70, name="Llama-400L", layers=400)
    with pytest.raises(FitError) as info:
        kv_capacity_blocks(big, "bf16", get_gpu("H100"), tp=8)
    assert str(info.value) == (
        "Llama-400L at BF16 does not fit on 8x H100: weights 86.1 GB + reserve 2.2 GB > usable "
        "77.0 GB per GPU (short by 11.4 GB); use gpus_per_replica 16 (2 nodes of 8), a smaller "
        "precision or a GPU with more memory")
    assert kv_capacity_blocks(big, "bf16", get_gpu("H100"), tp=16) > 0


def test_70b_fits_with_fp8_or_tensor_parallel():
    assert kv_capacity_blocks(LLAMA70, "fp8", H200, tp=1) > 0
    assert kv_capacity_blocks(LLAMA70, "bf16", H200, tp=2) > 0


def test_tp2_halves_weights_and_kv():
    for model in (QWEN, LLAMA8, LLAMA70):
        for precision in ("bf16", "w4a16"):
            one, two = weight_bytes(model, precision, 1), weight_bytes(model, precision, 2)
            # Everything splits but the replicated router and norms (0.3% of Qwen at W4A16).
            assert one / 2 < two < one / 2 * 1.004
        assert kv_bytes_per_token(model, "bf16", 2) == kv_bytes_per_token(model, "bf16") / 2


def test_kv_heads_replicate_beyond_kv_head_count():
    assert heads_per_gpu(QWEN, 8) == (4, 1)
    # 4 KV heads over 8 GPUs: each holds one, so per-GPU KV is a quarter, not an eighth.
    assert kv_bytes_per_token(QWEN, "bf16", 8) == kv_bytes_per_token(QWEN, "bf16") / 4


def test_invalid_tensor_parallel_degree():
    with pytest.raises(FitError, match="64 attention heads are not divisible by 3.*1, 2, 4, 8"):
        kv_capacity_blocks(LLAMA70, "fp8", H200, tp=3)
    odd_experts = dataclasses.replace(QWEN, expert_intermediate=100)
    with pytest.raises(FitError, match="expert width 100 is not divisible by the experts' "
                       "tensor parallelism 8"):
        weight_bytes(odd_experts, "bf16", 8)
    odd_kv = dataclasses.replace(LLAMA8, kv_heads=6)
    with pytest.raises(FitError, match="6 KV heads cannot be split or replicated evenly over 4"):
        kv_bytes_per_token(odd_kv, "bf16", 4)


def test_expert_parallel_keeps_experts_whole_whatever_their_width():
    """With expert_parallel each GPU holds whole experts (vLLM's --enable-expert-parallel), so
    an expert width the GPUs do not divide is no obstacle; tensor parallelism 16 with expert
    parallelism was refused ("MLP width 1000 is not divisible by 16") while data_parallel 2 of
    tensor parallelism 8 on the same 16 GPUs was served."""
    odd = dataclasses.replace(QWEN, name="odd", expert_intermediate=1000)
    per_gpu = params_per_gpu(odd, tp=16, ep=16)
    assert per_gpu["experts"] == odd.param_groups()["experts"] / 16
    assert kv_capacity_blocks(odd, "bf16", H200, tp=16, ep=16) > 0
    with pytest.raises(FitError, match="odd: expert width 1000 is not divisible by the experts' "
                       "tensor parallelism 16"):
        weight_bytes(odd, "bf16", tp=16)


def test_a_draft_that_cannot_split_names_gpu_counts_with_the_data_parallel_ranks():
    """A draft of 12 heads on data_parallel 2 of tensor parallelism 8 was told "use
    gpus_per_replica in {1, 2, 4}": its tensor-parallel sizes, not GPU counts of 2 ranks."""
    draft = dataclasses.replace(LLAMA8, name="draft", layers=4, heads=12, kv_heads=2)
    with pytest.raises(FitError) as info:
        kv_capacity_blocks(LLAMA8, "bf16", H200, tp=8, dp=2, draft=draft)
    assert str(info.value) == (
        "draft cannot be split over 8 GPUs (gpus_per_replica 16 over data_parallel 2): 12 "
        "attention heads are not divisible by 8; use gpus_per_replica in {2, 4, 8}")


def test_capacity_is_usable_memory_over_block_bytes():
    reserve = 3e9
    blocks = kv_capacity_blocks(
        QWEN,
        "bf16",
        H200,
        block_size=16,
        gpu_memory_utilization=0.9,
        activation_reserve_bytes=reserve,
    )
    usable = H200.hbm_bytes * 0.9 - weight_bytes(QWEN, "bf16") - reserve
    assert blocks == math.floor(usable / (98304 * 16))
    # Llama-3.1-8B BF16 on one H200: about 0.8 M tokens of KV (vLLM logs ~0.7-0.8 M at 0.9).
    tokens = kv_capacity_blocks(LLAMA8, "bf16", H200) * 16
    assert 7.0e5 < tokens < 9.5e5


def test_default_reserve_grows_with_token_budget():
    small = default_activation_reserve(LLAMA8, 1, 2048)
    large = default_activation_reserve(LLAMA8, 1, 16384)
    assert 1.5e9 < small < large < 4e9


def test_less_than_one_block_left_is_a_fit_error():
    budget = H200.hbm_bytes * 0.9
    reserve = budget - weight_bytes(LLAMA8, "bf16") - 1000.0  # 1 kB left, a block is 2 MB
    with pytest.raises(FitError, match="less than one KV block"):
        kv_capacity_blocks(LLAMA8, "bf16", H200, activation_reserve_bytes=reserve)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from([QWEN, LLAMA8, LLAMA70]),
    precision=st.sampled_from(["fp8", "w4a16", "nvfp4"]),
    tp=st.sampled_from([2, 4, 8]),
    util=st.floats(0.7, 0.95),
    block=st.sampled_from([16, 32]),
)
def test_capacity_monotone(model, precision, tp, util, block):
    """More utilisation, more GPUs, smaller KV dtype: never fewer tokens of KV capacity."""
    base = kv_capacity_blocks(model, precision, H200, tp, block, util)
    assert kv_capacity_blocks(model, precision, H200, tp, block, min(util + 0.04, 0.99)) >= base
    assert kv_capacity_blocks(model, precision, H200, tp, block, util, kv_dtype="fp8") >= base
    assert kv_capacity_blocks(model, "bf16", H200, tp, block, util) <= base
    assert kv_capacity_blocks(model, precision, get_gpu("b200"), tp, block, util) >= base


def test_data_parallel_replicates_attention_and_splits_experts():
    # 2 DP ranks of tp 1: attention, embeddings and lm_head are whole on each GPU, the routed
    # experts are split over both GPUs (the same bytes per GPU with or without EP).
    one = weight_bytes(QWEN, "bf16", tp=1)
    dp2 = weight_bytes(QWEN, "bf16", tp=1, dp=2)
    ep2 = weight_bytes(QWEN, "bf16", tp=1, dp=2, ep=2)
    experts = QWEN.param_groups()["experts"] * 2.0
    assert dp2 == pytest.approx(one - experts / 2)
    assert ep2 == pytest.approx(dp2)
    # A DP rank's KV cache is its own: each rank has more room than the whole model at tp 1.
    assert kv_capacity_blocks(QWEN, "bf16", H200, dp=2) > kv_capacity_blocks(QWEN, "bf16", H200)


def test_expert_parallel_needs_experts_and_a_divisor():
    with pytest.raises(FitError, match="no experts"):
        weight_bytes(LLAMA8, "bf16", tp=2, ep=2)
    with pytest.raises(FitError, match="must divide"):
        weight_bytes(QWEN, "bf16", tp=2, ep=4)


W4A16_NOTE = ("its W4A16 expert width 768 over 8 GPUs is 96 per GPU, not whole 128-wide "
              "quantisation groups: vLLM's Marlin MoE kernel refuses that split (vLLM then runs "
              "a slower kernel than the one tiersim times, or fails to load); set "
              "expert_parallel, or split it over 1 or 2 GPUs")


def test_a_w4a16_expert_split_into_partial_groups_is_noted():
    """Marlin needs each GPU's expert width in whole quantisation groups: 768 / 8 = 96 is not."""
    from tiersim.perf.memory import block_split_problem

    assert block_split_problem(QWEN, "w4a16", 8) == W4A16_NOTE
    assert block_split_problem(QWEN, "w4a16", 2) == ""  # 384 = 3 groups
    assert block_split_problem(QWEN, "w4a16", 8, ep=8) == ""  # whole experts
    assert block_split_problem(QWEN, "bf16", 8) == ""


def _int4_checkpoint(tmp_path, group_size, **shape):
    import json

    from tiersim.hardware.hf_config import load_hf_config

    config = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
              "max_position_embeddings": 32768,
              "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
              "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 768, **shape,
              "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
                  "g": {"targets": ["Linear"], "weights": {
                      "num_bits": 4, "type": "int", "group_size": group_size}}}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load_hf_config(tmp_path / "config.json")


def test_the_checkpoint_group_size_decides_a_w4a16_split(tmp_path):
    from tiersim.perf.memory import block_split_problem

    assert block_split_problem(_int4_checkpoint(tmp_path, 32), "checkpoint", 8) == ""  # 96 = 3 x 32
    assert block_split_problem(_int4_checkpoint(tmp_path, 64), "checkpoint", 8).startswith(
        "its W4A16 expert width 768 over 8 GPUs is 96 per GPU, not whole 64-wide quantisation "
        "groups")
    assert block_split_problem(_int4_checkpoint(tmp_path, -1), "checkpoint", 8) == ""  # per channel
    dense = _int4_checkpoint(tmp_path, 128, model_type="qwen2", intermediate_size=8960)
    assert block_split_problem(dense, "checkpoint", 4) == (
        "its W4A16 MLP width 8,960 over 4 GPUs is 2,240 per GPU, not whole 128-wide "
        "quantisation groups: vLLM's Marlin kernel refuses to load that split; split it over 1 "
        "or 2 GPUs")


def test_a_w4a16_tier_split_into_partial_groups_prints_the_note(tmp_path, capsys):
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc(router={"policy": "uniform"})
    doc["tiers"] = [{**doc["tiers"][0], "gpus_per_replica": 8}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    assert f"note: tier w4a16: {W4A16_NOTE}" in err


def test_a_kv_cache_shorter_than_one_sequence_is_noted(tmp_path, capsys):
    """vLLM refuses to start when max_model_len exceeds the KV cache; the run says so."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc(model="Llama-3.1-70B", router={"policy": "uniform"})
    doc["tiers"] = [{"name": "big", "precision": "bf16", "replicas": 1, "gpus_per_replica": 2,
                     "gpu_memory_utilization": 0.55, "cost_per_gpu_hour": 3.5,
                     "accuracy": 0.9}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    note = " ".join(err.split())
    assert ("note: tier big: one sequence may hold at most 57,616 tokens of its KV cache per "
            "replica (3,637 blocks of 16 tokens, less 36 blocks for the watermark), less than "
            "max_model_len 131,072: a longer request is dropped here (vLLM refuses to start "
            "when max_model_len exceeds the cache's 58,192 tokens); set "
            "scheduler.max_model_len to at most 57,616, or give the tier more memory") in note
