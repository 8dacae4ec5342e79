"""BF16 MoE at the shapes NVIDIA measured: the shipped H200 profile carries a BF16 table at every
expert shape of NVIDIA's vLLM BF16 rows (``SHIPPED_MOE_SHAPES``), so a BF16 Mixtral or
Llama-4-Maverick reads its own measured table instead of another shape's rescaled by the
roofline (0.22-2.28x its own: ``docs/fidelity.md``); likewise MXFP4 MoE, the MLA modules at
every head count per GPU a DeepSeek-V3- or Kimi-K2-shaped model splits to, and the gated
delta-net kernels at every shape NVIDIA measured."""

from __future__ import annotations

import pytest
from conftest import BUNDLED_H200_PROFILE
from test_round27_w4a16shapes import (
    test_the_shipped_h200_profile_reads_moe_from_its_own_measured_table as reads_own,  # noqa: E501
)

from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps


def test_bf16_is_shipped_at_every_measured_moe_shape():
    assert aic.SHIPPED_MOE_SHAPES["bf16"] == aic.SHIPPED_MOE_SPLITS


@pytest.mark.parametrize("shape, tp, ep", [
    ((4096, 14336, 8, 2), 8, 1),     # Mixtral-8x7B on 8 GPUs
    ((5120, 8192, 128, 1), 1, 8),    # Llama-4-Maverick, experts over 8 GPUs
    ((7168, 2048, 256, 8), 8, 1),    # DeepSeek-V3
    ((4096, 2688, 512, 22), 1, 1),   # only vLLM 0.19.0 timed it (bridged)
])
def test_the_shipped_h200_profile_reads_bf16_moe_from_its_own_measured_table(shape, tp, ep):
    reads_own("bf16", shape, tp, ep)


@pytest.mark.parametrize("shape, tp, ep", [
    ((3584, 3072, 896, 16), 1, 1),   # Kimi-K3's shape, NVIDIA's Marlin MXFP4 rows
    ((2880, 2880, 128, 4), 1, 8),    # gpt-oss-120b, experts over 8 GPUs
    ((2880, 2880, 32, 4), 8, 1),     # gpt-oss-20b on 8 GPUs
])
def test_the_shipped_h200_profile_reads_mxfp4_moe_from_its_own_measured_table(shape, tp, ep):
    assert "mxfp4" in aic.SHIPPED_MOE_SHAPES
    reads_own("mxfp4", shape, tp, ep)


def _ops(model, precision, tp, kv_dtype="bf16"):
    """The shipped H200 profile's operators for ``model`` on ``tp`` GPUs."""
    return ProfileOps(load_profile(BUNDLED_H200_PROFILE), model, precision, "h200", tp=tp,
                      kv_dtype=kv_dtype, fallback=RooflineOps(model, precision, "h200", tp=tp,
                                                              kv_dtype=kv_dtype))


def _label(ops, prefix):
    (label,) = [v for k, v in ops.sources().items() if k.startswith(prefix)]
    return label


@pytest.mark.parametrize("attn_format, kv_dtype, tp", [
    ("bf16", "bf16", 1), ("bf16", "fp8", 2), ("fp8_block", "bf16", 4), ("fp8_block", "fp8", 1),
    ("bf16", "bf16", 8),
])
def test_the_shipped_h200_profile_reads_mla_from_its_own_module_at_every_head_count(
        attn_format, kv_dtype, tp):
    from tiersim.hardware import get_model

    deepseek = get_model(aic.aic_model_path("aic:deepseek-ai--DeepSeek-V3"))
    ops = _ops(deepseek, attn_format, tp, kv_dtype)
    ops.attn_prefill(2048.0, 0.0)
    ops.attn_decode(16.0, 4096.0)
    labels = {k: v for k, v in ops.sources().items() if k.startswith("attn")}
    assert len(labels) == 2 and all(v.startswith("measured:") for v in labels.values()), labels


@pytest.mark.parametrize("shape", [(1024, 16, 16, 128, 128), (2560, 2, 4, 128, 128),
                                   (4096, 1, 4, 128, 128)])
def test_the_shipped_h200_profile_reads_gdn_from_its_own_measured_shape(shape):
    import dataclasses

    from tiersim.hardware import get_model

    hidden, k_heads, v_heads, k_dim, v_dim = shape
    qwen = get_model(aic.aic_model_path("aic:Qwen--Qwen3.5-27B"))
    model = dataclasses.replace(qwen, hidden=hidden, linear_k_heads=k_heads,
                                linear_v_heads=v_heads, linear_k_dim=k_dim, linear_v_dim=v_dim)
    ops = _ops(model, "bf16", 1)
    ops.gdn_decode([1.0, 16.0])
    ops.gdn_prefill([256.0])
    assert _label(ops, "gdn_decode").startswith("measured:")
    assert _label(ops, "gdn_prefill").startswith("measured:")
