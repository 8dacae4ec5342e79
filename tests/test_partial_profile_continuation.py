"""A table cut short by the harness's time budget can hold one point along an axis (a decode
table with its batch-1 row only): beyond that point no slope can be taken, and reading it flat
made 64 sequences decode as fast as one. Such an axis is continued along the roofline's own
shape through its last point (:meth:`~tiersim.perf.profile.ProfileOps._continued`)."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.hardware import get_model
from tiersim.perf.profile import Profile, ProfileOps, Table
from tiersim.perf.roofline import RooflineOps

LLAMA = get_model("llama-3.1-8b")
CONTINUED = " (continued along the roofline past its last point)"


def _ops(*tables: Table) -> ProfileOps:
    profile = Profile("partial", "H200", {"source": "harness"}, 1e-3, "harness", list(tables))
    return ProfileOps(profile, LLAMA, "bf16", "h200", fallback=RooflineOps(LLAMA, "bf16", "h200"))


def _decode_table(batches: list[float]) -> Table:
    """A decode table at LLaMA's per-GPU shape, 1.5 x the roofline at each point."""
    roof = RooflineOps(LLAMA, "bf16", "h200")
    context = np.array([1024.0, 4096.0])
    grid = np.array([roof.attn_decode(int(b), context) for b in batches]) * 1.5
    return Table("attn_decode", "bf16", "harness", {"heads": 32, "kv_heads": 8, "head_dim": 128},
                 {"batch": np.array(batches), "context": context}, grid)


def test_a_one_point_gemm_table_follows_the_roofline_past_its_point():
    roof = RooflineOps(LLAMA, "bf16", "h200")
    at_64 = float(roof.gemm(np.array([64.0]), 4096, 4096, "bf16")[0])
    table = Table("gemm", "bf16", "harness", {"n": 4096, "k": 4096}, {"m": np.array([64.0])},
                  np.array([2.0 * at_64]))
    ops = _ops(table)
    m = np.array([16.0, 64.0, 8192.0])
    expected = [2.0 * at_64, 2.0 * at_64, 2.0 * float(roof.gemm(np.array([8192.0]), 4096,
                                                                 4096, "bf16")[0])]
    np.testing.assert_allclose(ops.gemm(m, 4096, 4096), expected, rtol=1e-12)
    assert ops.sources()["gemm bf16 n=4096 k=4096"] == "harness" + CONTINUED


def test_a_decode_table_with_one_batch_row_grows_with_the_batch_as_the_roofline_does():
    roof = RooflineOps(LLAMA, "bf16", "h200")
    ops = _ops(_decode_table([1.0]))
    one = float(ops.attn_decode(1, np.array([2048.0]))[0])
    many = float(ops.attn_decode(64, np.array([2048.0]))[0])
    ratio = roof.attn_decode(64, np.array([2048.0]))[0] / roof.attn_decode(1, np.array([2048.0]))[0]
    assert many == pytest.approx(one * ratio, rel=1e-12)
    assert many > 10 * one
    assert ops.sources()["attn_decode bf16 heads=32 kv_heads=8 head_dim=128"] == (
        "harness" + CONTINUED)


def test_the_engine_s_fast_paths_read_a_one_row_table_as_the_op_does():
    ops = _ops(_decode_table([1.0]))
    assert ops.attn_decode_curve(64) is None  # the flat row is no shortcut past the batch
    point = ops.attn_point("attn_decode")
    assert point(64.0, 2048.0) == float(ops.attn_decode(64, 2048.0))
    assert point(1.0, 2048.0) == float(ops.attn_decode(1, 2048.0))


def test_a_table_of_two_points_where_the_roofline_is_affine_reads_as_before():
    """Past batch 16 and context 4,096 the roofline grows on a straight line: the table's last
    segment's slope is taken, as the module's rule says."""
    table = _decode_table([8.0, 16.0])
    ops = _ops(table)
    grid = table._grid()
    for batch, context in [(12, 2048.0), (64, 2048.0), (64, 65536.0)]:
        assert float(ops.attn_decode(batch, context)) == float(
            np.maximum(grid.at(float(batch), context),
                       ops._limit_ops().attn_decode(batch, context)))
    assert ops.sources()["attn_decode bf16 heads=32 kv_heads=8 head_dim=128"] == "harness"


def test_a_two_point_axis_past_a_kink_of_the_roofline_follows_the_roofline():
    """Batch 1 to 8 crosses the roofline's launch floor: that slope continued to batch 64 read
    the table 22% below the 1.5 x roofline it holds at every point."""
    roof = RooflineOps(LLAMA, "bf16", "h200")
    ops = _ops(_decode_table([1.0, 8.0]))
    got = float(ops.attn_decode(64, np.array([4096.0]))[0])
    assert got == pytest.approx(1.5 * roof.attn_decode(64, np.array([4096.0]))[0], rel=1e-12)
    assert ops.sources()["attn_decode bf16 heads=32 kv_heads=8 head_dim=128"] == (
        "harness" + CONTINUED)


def _gemm_table(points: list[float], scale: float) -> Table:
    """A GEMM table at n = k = 4096, ``scale`` x the roofline at each of ``points``."""
    roof = RooflineOps(LLAMA, "bf16", "h200")
    m = np.array(points)
    return Table("gemm", "bf16", "harness", {"n": 4096, "k": 4096}, {"m": m},
                 roof.gemm(m, 4096, 4096, "bf16") * scale)


def test_a_gemm_table_of_one_and_two_tokens_is_not_read_at_the_physical_limit_beyond():
    """Its flat last segment continued on its slope read 2,048 tokens as fast as the tensor
    cores' data-sheet peak allows, faster than the measured full table and the roofline."""
    roof = RooflineOps(LLAMA, "bf16", "h200")
    ops = _ops(_gemm_table([1.0, 2.0], 1.5))
    got = float(ops.gemm(np.array([2048.0]), 4096, 4096)[0])
    assert got == pytest.approx(1.5 * roof.gemm(np.array([2048.0]), 4096, 4096, "bf16")[0],
                                rel=1e-12)
    assert ops.sources()["gemm bf16 n=4096 k=4096"] == "harness" + CONTINUED


def test_a_moe_table_of_one_and_two_tokens_does_not_grow_by_its_expert_loading_slope():
    """From 1 to 2 tokens a MoE layer loads twice the experts: that slope continued read a
    8,192-token step 100x the measured table (4 s TPOT on Qwen3-Coder-30B-A3B)."""
    model = get_model("qwen3-coder-30b-a3b")
    roof = RooflineOps(model, "bf16", "h200")
    tokens = np.array([1.0, 2.0])
    key = {"hidden": model.hidden, "inter": model.expert_intermediate,
           "num_experts": model.num_experts, "top_k": model.top_k, "ep": 1, "tp": 1}
    table = Table("moe", "bf16", "harness", key, {"tokens": tokens}, roof.moe(tokens) * 1.5)
    profile = Profile("partial", "H200", {"source": "harness"}, 1e-3, "harness", [table])
    ops = ProfileOps(profile, model, "bf16", "h200", fallback=roof)
    got = ops.moe(np.array([1.0, 2.0, 8192.0]))
    np.testing.assert_allclose(got, 1.5 * roof.moe(np.array([1.0, 2.0, 8192.0])), rtol=1e-12)
    assert ops.sources()[table.name] == "harness" + CONTINUED


def test_a_one_point_all_reduce_table_follows_the_roofline_never_below_the_limit():
    roof = RooflineOps(LLAMA, "bf16", "h200", tp=2)
    table = Table("allreduce", None, "harness", {"tp": 2}, {"bytes": np.array([65536.0])},
                  roof.allreduce(np.array([65536.0]), 2) * 1.2)
    profile = Profile("partial", "H200", {"source": "harness"}, 1e-3, "harness", [table])
    ops = ProfileOps(profile, LLAMA, "bf16", "h200", tp=2, fallback=roof)
    nbytes = np.array([1024.0, 65536.0, 1 << 28])
    np.testing.assert_allclose(ops.allreduce(nbytes),
                               [table.latency[0], table.latency[0],
                                1.2 * roof.allreduce(np.array([1 << 28]), 2)[0]], rtol=1e-12)
    assert ops.allreduce(np.array([1 << 28]))[0] >= ops._limit_ops().allreduce(
        np.array([1 << 28]), 2)[0]
    assert ops.sources()["allreduce tp=2"] == "harness" + CONTINUED


def test_the_step_times_source_says_a_table_was_continued():
    """The summary's and console's "step times from" words named such a table "measured
    profile" alone: the continuation was in the per-table label only."""
    from tiersim.perf import build_step_model
    from tiersim.summary import source_label

    profile = Profile("partial", "H200", {"source": "harness"}, 1e-3, "harness",
                      [_gemm_table([64.0], 2.0)])
    model = build_step_model(LLAMA, "bf16", "h200", profile=profile)
    continued = "continued along the roofline past its last point"
    assert source_label(model) == (
        f"measured profile (1 op) + measured profile, {continued} (1 op) + measured profile, "
        f"rescaled to the shape, {continued} (4 ops) + roofline (2 ops)")
