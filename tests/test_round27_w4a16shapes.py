"""MoE at the shapes NVIDIA measured: the shipped H200 profile carries a W4A16, NVFP4, block-FP8
and FP8 table at every expert shape of NVIDIA's vLLM INT4 Marlin and block-FP8 rows
(``SHIPPED_MOE_SHAPES``), so a W4A16 Mixtral, Qwen3-235B or DeepSeek-V3 reads its own measured
table instead of Kimi-K2.5's rescaled by the roofline (0.26-2.16x its own: ``docs/fidelity.md``)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from conftest import BUNDLED_H200_PROFILE
from test_aiconfigurator import FakeImporter

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps

COLS = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
        "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"]


def _frame(rows):
    """MoE rows ``(dtype, hidden, inter, experts, top_k, tp, ep)`` at three token counts."""
    out = []
    for dtype, hidden, inter, experts, top_k, tp, ep in rows:
        for t in (1, 64, 4096):
            out.append(("marlin", dtype, t, hidden, inter, top_k, experts, tp, ep,
                        aic.MOE_DISTRIBUTION, 0.02 + 1e-4 * t / tp))
    return pd.DataFrame(out, columns=COLS)


def test_measured_moe_requests_ask_for_every_measured_shape_at_the_listed_splits():
    frame = _frame([("int4_wo", 4096, 14336, 8, 2, 1, 1), ("int4_wo", 4096, 14336, 8, 2, 2, 1),
                    ("int4_wo", 4096, 14336, 8, 2, 16, 1), ("int4_wo", 7168, 2048, 256, 8, 1, 8),
                    ("fp8_block", 2048, 768, 128, 8, 1, 1)])
    imp = FakeImporter(frame)
    requests = aic.measured_moe_requests(imp, {"w4a16": ((1, 1), (2, 1), (1, 8))})
    keys = [tuple(key.values()) for _, _, key, _, _ in requests]
    assert keys == [(4096, 14336, 8, 2, 1, 1), (4096, 14336, 8, 2, 1, 2),
                    (7168, 2048, 256, 8, 8, 1)]  # no tp 16 (not listed), no fp8_block shape
    for op, dtype, key, model, tp in requests:
        assert (op, dtype, tp) == ("moe", "w4a16", key["tp"])
        table = aic._import_one(imp, op, dtype, key, model, tp)
        assert table.key == key and "not measured" not in table.extra["notes"]


@pytest.mark.parametrize("precision, shape, tp, ep", [
    ("w4a16", (4096, 14336, 8, 2), 1, 1),     # Mixtral-8x7B
    ("w4a16", (4096, 1536, 128, 8), 4, 1),    # Qwen3-235B-A22B
    ("w4a16", (7168, 2048, 256, 8), 8, 1),    # DeepSeek-V3
    ("w4a16", (3072, 1536, 256, 8), 1, 8),    # MiniMax-M2.5, experts over 8 GPUs
    ("nvfp4", (4096, 14336, 8, 2), 2, 1),     # Mixtral-8x7B
    ("fp8", (5120, 8192, 128, 1), 4, 1),      # Llama-4-Maverick
    ("fp8_block", (7168, 3072, 384, 6), 1, 8),
])
def test_the_shipped_h200_profile_reads_moe_from_its_own_measured_table(precision, shape, tp,
                                                                         ep):
    hidden, inter, experts, top_k = shape
    model = dataclasses.replace(get_model("qwen3-coder-30b-a3b"), hidden=hidden,
                                expert_intermediate=inter, num_experts=experts, top_k=top_k)
    dp = ep  # tp 1 x dp ep GPUs with --enable-expert-parallel: moe split (1, ep); ep 1: (tp, 1)
    ops = ProfileOps(load_profile(BUNDLED_H200_PROFILE), model, precision, "h200", tp=tp,
                     dp=dp, ep=ep, fallback=RooflineOps(model, precision, "h200", tp=tp,
                                                        dp=dp, ep=ep))
    ops.moe([1.0, 256.0])
    (label,) = [v for k, v in ops.sources().items() if k.startswith("moe")]
    assert label.startswith("measured:aiconfigurator vllm"), label
