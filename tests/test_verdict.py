"""The 'memory, not time' verdict of lower-precision tiers against BF16."""

from __future__ import annotations

from tiersim.perf.verdict import speed_verdict


def test_bf16_against_itself_is_neutral():
    v = speed_verdict("Llama-3.1-8B", "bf16", "H200")
    assert (v.weights, v.decode_batch) == (1.0, 1.0)
    assert "saves neither" in v.line


def test_w4a16_on_hopper_roofline_saves_memory_and_small_batch_time():
    v = speed_verdict("Llama-3.1-8B", "w4a16", "H200")
    assert v.weights < 0.4 and v.decode_small < 0.6  # memory-bound at batch 1
    assert v.prefill > 1.0  # compute-bound: BF16 math plus dequantisation
    assert "W4A16 on 1x H200" in v.line


def test_measured_int4_marlin_moe_saves_decode_time_and_costs_prefill_time():
    # NVIDIA's vLLM 0.19 INT4 Marlin MoE at this shape was slower than BF16's; carried to the
    # 0.24 kernel (the one Kimi-K2.5's serving rows match) it decodes faster, and a weight-only
    # kernel still prefills slower than BF16 (it dequantises to BF16 tensor cores).
    v = speed_verdict("Qwen3-Coder-30B-A3B", "w4a16", "H200", profile="h200_aiconfigurator_vllm",
                      batch=256)
    assert v.weights < 0.35
    assert v.saves_time and v.decode_batch < 0.8 and v.prefill > 1.2
    assert "saves memory and time at batch 256" in v.line
