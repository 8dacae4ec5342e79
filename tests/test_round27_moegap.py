"""BF16 MoE at the shapes NVIDIA measured: the shipped H200 profile carries a BF16 table at every
expert shape of NVIDIA's vLLM BF16 rows (``SHIPPED_MOE_SHAPES``), so a BF16 Mixtral or
Llama-4-Maverick reads its own measured table instead of another shape's rescaled by the
roofline (0.22-2.28x its own: ``docs/fidelity.md``)."""

from __future__ import annotations

import pytest
from test_round27_w4a16shapes import (
    test_the_shipped_h200_profile_reads_moe_from_its_own_measured_table as reads_own,  # noqa: E501
)

from tiersim.perf import aiconfigurator as aic


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
