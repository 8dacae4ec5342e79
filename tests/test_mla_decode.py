"""MLA decode as vLLM serves it: NVIDIA's uncompiled module timing less its unfused excess over
the block's served parts (:mod:`tiersim.perf.mla_decode`), on synthetic frames and, where the
package is installed, on NVIDIA's own tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.perf import aiconfigurator as aic
from tiersim.perf.mla_decode import (
    bmm_seconds,
    kernel_floor,
    projection_shapes,
    served_decode_grid,
)

DEEPSEEK = aic.MLA_SHAPE


def test_projection_shapes_are_the_blocks_per_gpu_gemms():
    # fused q_a + kv_a (1536 + 512 + 64 out of 7168, replicated), q_b (8 heads x 192 out of
    # 1536), o_proj (7168 out of 8 heads x 128)
    assert projection_shapes(DEEPSEEK, 8) == [(2112, 7168), (1536, 1536), (7168, 1024)]
    assert projection_shapes(DEEPSEEK, 16)[1:] == [(3072, 1536), (7168, 2048)]


def test_the_excess_is_removed_per_batch_and_the_context_growth_kept():
    grid = np.array([[90e-6, 95e-6, 130e-6],
                     [100e-6, 110e-6, 160e-6],
                     [20e-6, 30e-6, 50e-6]])
    parts = np.array([40e-6, 45e-6, 25e-6])  # the last batch's parts exceed its module
    served, removed = served_decode_grid(grid, parts)
    np.testing.assert_allclose(served[:, 0], [40e-6, 45e-6, 20e-6])
    np.testing.assert_allclose(served - served[:, :1], grid - grid[:, :1])
    assert removed == pytest.approx(55e-6)
    assert np.all(served <= grid) and np.all(served > 0)


def bmm_frame():
    rows = [(op, t, h, (2.0 if op == "mla_gen_pre" else 3.0) * (1 + t / 64) * 1e-3)
            for op in ("mla_gen_pre", "mla_gen_post") for t in (1, 4, 64) for h in (8, 16)]
    return pd.DataFrame(rows, columns=["op_name", "num_tokens", "num_heads", "latency"])


def test_bmm_seconds_sum_both_bmms_and_interpolate_in_tokens():
    got = bmm_seconds(bmm_frame(), 8, np.array([1.0, 4.0, 128.0]))
    # 5 us x (1 + t / 64) at measured points; linear in tokens beyond the last
    np.testing.assert_allclose(got, [5e-6 * (1 + 1 / 64), 5e-6 * (1 + 4 / 64), 10e-6 * 2])
    assert bmm_seconds(bmm_frame(), 32, np.array([1.0])) is None


def attn_frame():
    rows = []
    for heads in (4, 16):
        for b in (1, 8):
            for step in (1, 1023):
                lat = (10.0 + heads / 4 + b) * (1 if step == 1 else 3) * 1e-3
                rows.append((heads, 1, 128, 0, "bfloat16", b, step, lat))
    rows.append((16, 1, 64, 0, "bfloat16", 1, 1, 99e-3))  # another head dim: not read
    cols = ["num_heads", "num_key_value_heads", "head_dim", "window_size", "kv_cache_dtype",
            "batch_size", "step", "latency"]
    return pd.DataFrame(rows, columns=cols)


def test_kernel_floor_is_the_shortest_context_at_the_nearest_head_count():
    got = kernel_floor(attn_frame(), 12, "bfloat16", np.array([1.0, 8.0, 16.0]))
    # 12 heads: nearest measured in log distance is 16 (log 4/3 < log 3)
    np.testing.assert_allclose(got, [15e-6, 22e-6, 44e-6])
    assert kernel_floor(attn_frame(), 8, "fp8", np.array([1.0])) is None


def test_real_vllm_decode_table_is_its_served_parts_at_the_shortest_context():
    pytest.importorskip("aiconfigurator_core")
    imp = aic.Importer("h200", "vllm")
    served = imp.mla("attn_decode", "bf16", 8, "bf16")
    raw_rows = imp._frame(imp._sources("mla", "mla_generation_module_perf.parquet")[0])
    raw = aic._decode_grid(raw_rows[(raw_rows["num_heads"] == 8)
                                    & (raw_rows["kv_cache_dtype"] == "bfloat16")
                                    & (raw_rows["gemm_type"] == "bfloat16")
                                    & (raw_rows["kernel_source"] == "FLASH_ATTN_MLA")])[2]
    batch = served.axes["batch"]
    parts = imp._mla_served_parts(batch, 8, "bf16", "bf16")
    excess = raw[:, 0] - parts
    assert excess[0] > 20e-6  # the uncompiled module's elementwise kernels: tens of us
    np.testing.assert_allclose(served.latency[:, 0], np.minimum(raw[:, 0], parts), rtol=1e-12)
    np.testing.assert_allclose(served.latency - served.latency[:, :1], raw - raw[:, :1],
                               rtol=1e-9, atol=1e-15)
    assert "unfused excess" in served.extra["notes"]


def test_real_block_fp8_projections_keep_the_module_and_trtllm_is_unchanged():
    """vLLM's block-FP8 GEMM tables were timed eagerly, so the projections' time inside the
    module is unknown and the module is read as timed; TensorRT-LLM's modules are its own
    serving op."""
    pytest.importorskip("aiconfigurator_core")
    imp = aic.Importer("h200", "vllm")
    table = imp.mla("attn_decode", "fp8", 16, "fp8_block")
    assert "the module as timed" in table.extra["notes"]
    trt = aic.Importer("h200", "trtllm").mla("attn_decode", "fp8", 16, "fp8_block")
    assert "unfused" not in trt.extra["notes"] and "trtllm" not in aic.SERVED_MLA_DECODE
