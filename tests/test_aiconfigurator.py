"""The aiconfigurator importer's table transforms, on small synthetic frames (no package needed),
and one check against the real package when it is installed."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from tiersim.perf import aiconfigurator as aic


def gemm_frame():
    """GEMM rows where latency (ms) = 1e-6 x m x n x k / 1000 + 0.005: grid n, k in {64, 256}."""
    rows = []
    for m in (1, 16, 256):
        for n in (64, 256):
            for k in (64, 256):
                rows.append(("bfloat16", "torch", m, n, k, 1e-9 * m * n * k + 0.005))
    return pd.DataFrame(rows, columns=["gemm_dtype", "kernel_source", "m", "n", "k", "latency"])


def test_gemm_exact_shape_is_copied_in_seconds():
    grid = aic.GemmGrid(gemm_frame(), "bfloat16")
    m, lat, note = grid.latency(64, 256)
    assert list(m) == [1, 16, 256]
    assert lat == pytest.approx((1e-9 * m * 64 * 256 + 0.005) / 1e3)
    assert note == "measured at this shape"


def test_gemm_between_grid_points_is_log_bilinear():
    grid = aic.GemmGrid(gemm_frame(), "bfloat16")
    _, lat, note = grid.latency(128, 64)
    lo, hi = grid.latency(64, 64)[1], grid.latency(256, 64)[1]
    assert lat == pytest.approx(np.sqrt(lo * hi))  # 128 is the log midpoint of 64 and 256
    assert "interpolated" in note


def test_gemm_beyond_grid_scales_linearly():
    grid = aic.GemmGrid(gemm_frame(), "bfloat16")
    _, lat, note = grid.latency(1024, 256)
    assert lat == pytest.approx(4 * grid.latency(256, 256)[1])
    assert "scaled x4.000" in note


def test_gemm_hole_uses_nearest_complete_shape_scaled():
    df = gemm_frame()
    df = df[~((df.n == 256) & (df.k == 256))]
    grid = aic.GemmGrid(df, "bfloat16")
    _, lat, note = grid.latency(256, 256)
    assert "nearest measured shape" in note
    assert lat == pytest.approx(4 * grid.latency(64, 256)[1]) or lat == pytest.approx(
        4 * grid.latency(256, 64)[1]
    )


def attn_frame(op_rows):
    cols = [
        "num_heads",
        "num_key_value_heads",
        "head_dim",
        "window_size",
        "kv_cache_dtype",
        "batch_size",
        "isl",
        "step",
        "latency",
        "kernel_source",
    ]
    return pd.DataFrame(op_rows, columns=cols)


def test_decode_triangle_filled_linearly_in_batch():
    rows = []
    for b in aic.DECODE_BATCH_AXIS:
        for step in (1023, 8191):
            if b * (step + 1) <= 1024 * 64:  # a measured triangle
                rows.append((32, 4, 128, 0, "bfloat16", b, 1, step, 0.01 + 1e-6 * b * step, "fa"))
    batch, ctx, grid, _ = aic.decode_table(attn_frame(rows), 32, 4, 128, "bfloat16")
    assert list(ctx) == [1024, 8192]
    last = list(batch).index(8)  # the largest batch measured at context 8192
    assert grid[last, 1] == pytest.approx((0.01 + 1e-6 * 8 * 8191) / 1e3)
    assert grid[-1, 1] == pytest.approx(grid[last, 1] * batch[-1] / 8)
    assert np.all(np.isfinite(grid))


def test_decode_batches_the_data_skipped_are_filled_not_left_nan():
    """A batch missing below the first measured one takes its time; one missing between two is
    log-log interpolated (B200 TensorRT-LLM MLA data lacks batch 1 at the shortest context)."""
    measured = {2: 0.02, 4: 0.02, 16: 0.08, 64: 0.32}  # ms; batch 8 and 32 skipped, 1 absent
    rows = [(32, 4, 128, 0, "bfloat16", b, 1, 1023, lat, "fa") for b, lat in measured.items()]
    batch, _, grid, _ = aic.decode_table(attn_frame(rows), 32, 4, 128, "bfloat16")
    col = dict(zip(batch, grid[:, 0] * 1e3, strict=True))
    assert np.all(np.isfinite(grid)) and np.all(grid > 0)
    assert col[1] == pytest.approx(0.02)  # below the first measured batch
    assert col[8] == pytest.approx(0.04)  # geometric mean of 0.02 and 0.08
    assert col[32] == pytest.approx(0.16)
    assert col[128] == pytest.approx(0.64)  # beyond the last: linear in batch


def test_prefill_context_by_equal_work_length():
    rows = [
        (32, 4, 128, 0, "bfloat16", 1, s, 0, 1e-6 * s * s, "fa") for s in (256, 1024, 4096, 16384)
    ]
    tokens, context, grid, _ = aic.prefill_table(attn_frame(rows), 32, 4, 128, "bfloat16")
    assert context[0] == 1
    i = list(tokens).index(1024)
    assert grid[i, 0] == pytest.approx(1e-6 * 1024**2 / 1e3)  # no cached context
    j = list(context).index(2048)
    s_eq = math.sqrt(1024 * (1024 + 2 * 2048))
    assert grid[i, j] == pytest.approx(1e-6 * s_eq**2 / 1e3, rel=1e-9)  # exact power law
    assert grid[-1, 0] == pytest.approx(1e-6 * 32768**2 / 1e3, rel=1e-9)  # extrapolated


def test_allreduce_bytes_are_two_per_element_and_graph_rows_win():
    df = pd.DataFrame(
        [
            (2, 1024, 0.004, "bfloat16", "x_graph", "k"),
            (2, 1024, 0.02, "bfloat16", "x_eager", "k"),
            (2, 4096, 0.006, "bfloat16", "x_graph", "k"),
        ],
        columns=[
            "num_gpus",
            "message_size",
            "latency",
            "allreduce_dtype",
            "backend",
            "kernel_source",
        ],
    )
    nbytes, lat, _ = aic.allreduce_latency(df, 2)
    assert list(nbytes) == [2048, 8192]
    assert lat == pytest.approx([4e-6, 6e-6])


def test_missing_package_is_one_line(monkeypatch):
    import sys

    # None in sys.modules: its import raises ModuleNotFoundError naming it, as Python does for
    # a package that is not installed
    monkeypatch.setitem(sys.modules, "aiconfigurator_core", None)
    from tiersim.errors import ProfileError

    with pytest.raises(ProfileError, match=r"aiconfigurator-core is not installed; pip install"):
        aic.data_root("h200")


def test_real_package_matches_its_parquet():
    pytest.importorskip("aiconfigurator_core")
    imp = aic.Importer("h200", "vllm")
    table = imp.gemm("bf16", 5120, 2048)
    df = pd.read_parquet(aic.find_sources(imp.root, "gemm", "vllm", "gemm_perf.parquet")[0].path)
    row = df[(df.gemm_dtype == "bfloat16") & (df.m == 1) & (df.n == 5120) & (df.k == 2048)]
    assert table.latency[0] == pytest.approx(row.latency.median() / 1e3)
    assert table.extra["origin"].endswith("h200_sxm/gemm/vllm/0.24.0/gemm_perf.parquet")


def test_gemm_fastest_kernel_per_point():
    rows = []
    for m in (1, 16):
        rows.append(("fp8_block", "slow", m, 64, 64, 0.05))
        rows.append(("fp8_block", "fast", m, 64, 64, 0.01 if m == 1 else 0.09))
    df = pd.DataFrame(rows, columns=["gemm_dtype", "kernel_source", "m", "n", "k", "latency"])
    grid = aic.GemmGrid(df, "fp8_block", aic.FASTEST)
    _, lat, _ = grid.latency(64, 64)
    assert lat == pytest.approx([1e-5, 5e-5])
    assert grid.kernel == "fastest of fast, slow"


def moe_frame(tps, hidden=256, inter=128):
    rows = []
    for tp in tps:
        for t in (1, 64, 4096):
            lat = 0.02 + 1e-4 * t / tp
            rows.append(("k", "fp8_block", t, hidden, inter, 2, 8, tp, 1, aic.MOE_DISTRIBUTION,
                         lat))
    cols = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
            "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"]
    return pd.DataFrame(rows, columns=cols)


class FakeImporter(aic.Importer):
    """An importer over one in-memory frame (no package), for ``gpu``."""

    def __init__(self, frame, gpu="h200", engine="vllm"):
        self.gpu, self.engine, self.aic, self.versions = gpu, engine, "test", {}
        self._frames, self._gemm = {}, {}
        self.frame = frame

    def _sources(self, family, filename, engine=None):
        from pathlib import Path

        return [aic.Source(family, "vllm", "0.24.0", Path("/x/moe/vllm/0.24.0") / filename)]

    def _frame(self, source):
        return self.frame


def _moe_model(hidden=256, inter=128):
    import dataclasses

    from tiersim.hardware import get_model

    return dataclasses.replace(get_model("Qwen3-30B-A3B"), hidden=hidden,
                               expert_intermediate=inter, num_experts=8, top_k=2)


def test_moe_missing_tp_is_scaled_from_a_smaller_measured_tp():
    model = _moe_model()
    imp = FakeImporter(moe_frame((1, 2)))
    exact = imp.moe("fp8_block", model, 2)
    assert exact.latency == pytest.approx((0.02 + 1e-4 * exact.axes["tokens"] / 2) / 1e3)
    scaled = imp.moe("fp8", model, 8)  # fp8 MoE reads the block-FP8 rows
    two = exact.latency
    assert scaled.latency == pytest.approx(np.maximum(two * 2 / 8, two.min()))
    assert "measured at moe tp=2, scaled by 2/8" in scaled.extra["notes"]
    # No EP rows and no smaller tp at ep 2: the nearest measured shape, roofline-scaled.
    assert "nearest measured" in imp.moe("fp8_block", model, 2, ep=2).extra["notes"]


def test_a_fitted_overhead_survives_a_rebuild(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"overhead_s": {"value": 0.002, "per_layer_s": 1e-5,
                                               "source": "fitted: benchmark X"}}))
    assert aic._kept_overhead(path) == (0.002, 1e-5, "fitted: benchmark X")
    path.write_text(json.dumps({"overhead_s": {"value": 0.002, "source": "roofline"}}))
    assert aic._kept_overhead(path) is None
    bom = {"overhead_s": {"value": 0.002, "per_layer_s": 1e-5, "source": "fitted: benchmark X"}}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(bom).encode())  # saved by an editor
    assert aic._kept_overhead(path) == (0.002, 1e-5, "fitted: benchmark X")


def test_a_fitted_eager_cost_survives_a_rebuild_and_an_assumed_one_does_not(tmp_path):
    from tiersim.perf.profile import EagerCost, profile_from_json, save_profile

    doc = {"schema": "tiersim.profile/1", "name": "p", "gpu": "H200",
           "provenance": {"source": "roofline"},
           "overhead_s": {"value": 0.001, "source": "roofline"}, "tables": [],
           "eager_s": {"graph_max_tokens": 512, "per_layer_s": 2e-4, "per_moe_layer_s": 8e-4,
                       "source": "fitted: benchmark X"}}
    path = save_profile(profile_from_json(doc), tmp_path / "p.json")
    assert aic._kept_eager(path) == EagerCost(512, 2e-4, 8e-4, "fitted: benchmark X")
    doc["eager_s"]["source"] = "roofline"
    path = save_profile(profile_from_json(doc), tmp_path / "p.json")
    assert aic._kept_eager(path) is None
    assert aic._kept_eager(tmp_path / "absent.json") is None


def test_real_package_block_fp8_gemms_are_marked_eagerly_timed():
    """aiconfigurator's vLLM collector times block-FP8 GEMMs outside CUDA graphs (only those):
    the importer says so on the table, and not for other formats or engines."""
    pytest.importorskip("aiconfigurator_core")
    imp = aic.Importer("h200", "vllm")
    assert imp.gemm("fp8_block", 3072, 2048).extra.get("timing") == "eager"
    assert "timing" not in imp.gemm("bf16", 5120, 2048).extra
    assert "timing" not in imp.gemm("fp8", 5120, 2048).extra
    assert aic.EAGER_GEMMS == {"vllm": ("fp8_block",)}


def test_real_package_covers_the_silicon_sample_checkpoints():
    pytest.importorskip("aiconfigurator_core")
    from tiersim.hardware import get_model

    kimi = get_model(aic.aic_model_path("aic:moonshotai--Kimi-K2.5"))
    imp = aic.Importer("h200", "vllm")
    for op in ("attn_prefill", "attn_decode"):
        table = imp.mla(op, "bf16", kimi.heads // 8, "bf16")
        assert table is not None and table.key == {"heads": 8, "kv_heads": 1, "head_dim": 576,
                                                   "hidden": 7168, "q_lora": 1536, "rope": 64,
                                                   "nope": 128, "v_dim": 128}
        assert table.dtype == "bf16 mla-bf16" and np.all(table.latency > 0)
    moe = imp.moe("w4a16", kimi, 8)
    assert moe is not None and "compressedtensorswna16marlin" in moe.extra["kernel"]
    gpt = get_model(aic.aic_model_path("aic:openai--gpt-oss-120b"))
    assert imp.moe("mxfp4", gpt, 2).extra["kernel"].startswith("vllm_gptossmxfp4moe")


def test_moe_unmeasured_shape_is_the_nearest_measured_one_scaled_by_the_roofline():
    import dataclasses

    imp = FakeImporter(moe_frame((1,), hidden=4096, inter=1536))
    near, wider = _moe_model(4096, 1536), _moe_model(4096, 6144)
    measured = imp.moe("fp8_block", near, 1).latency
    table = imp.moe("fp8_block", wider, 1)
    tokens = table.axes["tokens"]
    ratio = aic._moe_roofline(wider, "fp8_block", 1, 1, tokens, "h200") / aic._moe_roofline(
        dataclasses.replace(wider, expert_intermediate=1536), "fp8_block", 1, 1, tokens, "h200")
    assert table.latency == pytest.approx(measured * ratio)
    assert np.all(ratio >= 1.0) and ratio[-1] > 3.0  # 4x the expert width: ~4x the work
    assert "shape not measured: nearest measured" in table.extra["notes"]


def four_bit_frame():
    """MoE rows of one shape in two 4-bit kernels: INT4 Marlin (slow) and native NVFP4 (fast),
    the NVFP4 rows measured at tp 1 only; and GEMM rows of BF16 and NVFP4."""
    rows = []
    for dtype, kernel, base in (("int4_wo", "marlin", 0.2), ("nvfp4", "trtllm_fp4", 0.03)):
        for tp in ((1, 2) if dtype == "int4_wo" else (1,)):
            for t in (1, 64, 4096):
                rows.append((kernel, dtype, t, 256, 128, 2, 8, tp, 1, aic.MOE_DISTRIBUTION,
                             base + 1e-4 * t / tp))
    cols = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
            "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"]
    moe = pd.DataFrame(rows, columns=cols)
    gemm = [(dtype, kernel, m, n, k, 0.01 if dtype == "nvfp4" else 0.02)
            for dtype, kernel in (("bfloat16", "torch"), ("nvfp4", "cutedsl"))
            for m in (1, 16) for n in (64, 256) for k in (64, 256)]
    gemm = pd.DataFrame(gemm, columns=["gemm_dtype", "kernel_source", "m", "n", "k", "latency"])
    return pd.concat([moe, gemm], ignore_index=True)


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_nvfp4_on_hopper_reads_the_int4_marlin_proxy_and_no_fp4_gemm(gpu):
    """Hopper has no FP4 tensor cores: NVFP4 MoE is vLLM's weight-only Marlin kernel there, read
    through the INT4 rows and labelled so, on every path; NVFP4 GEMMs have no table."""
    imp = FakeImporter(four_bit_frame(), gpu)
    model = _moe_model()
    for tp in (1, 2, 4):  # exact, exact, scaled from tp 2
        table = imp.moe("nvfp4", model, tp)
        assert table.extra["kernel"] == "marlin" and "INT4 Marlin" in table.extra["notes"]
    anchored = imp.moe("nvfp4", _moe_model(256, 512), 1)  # nearest shape
    assert anchored.extra["kernel"] == "marlin" and "INT4 Marlin" in anchored.extra["notes"]
    assert imp.gemm("nvfp4", 64, 64) is None


def test_nvfp4_on_blackwell_reads_its_own_fp4_rows_on_every_path():
    """B200's tensor cores run NVFP4: its MoE reads the NVFP4 rows (exact, scaled from a smaller
    tp, nearest shape) with no proxy note, and NVFP4 GEMMs their own rows."""
    imp = FakeImporter(four_bit_frame(), "b200")
    model = _moe_model()
    exact = imp.moe("nvfp4", model, 1)
    assert exact.extra["kernel"] == "trtllm_fp4" and "Marlin" not in exact.extra["notes"]
    assert exact.latency[0] == pytest.approx((0.03 + 1e-4) / 1e3)
    scaled = imp.moe("nvfp4", model, 2)  # NVFP4 rows lack tp 2; the Marlin ones have it
    assert scaled.extra["kernel"] == "trtllm_fp4" and "scaled by 1/2" in scaled.extra["notes"]
    anchored = imp.moe("nvfp4", _moe_model(256, 512), 1)
    assert anchored.extra["kernel"] == "trtllm_fp4" and "Marlin" not in anchored.extra["notes"]
    assert imp.moe("w4a16", model, 1).extra["kernel"] == "marlin"  # INT4 stays INT4
    gemm = imp.gemm("nvfp4", 64, 64)
    assert gemm.extra["kernel"] == "cutedsl" and gemm.latency[0] == pytest.approx(1e-5)


def mxfp4_frame():
    """gpt-oss-like MoE rows in the two MXFP4 kernels (weight-only slow, MXFP8 activations fast)
    and an NVFP4 shape measured by a default kernel and an opt-in min-latency one."""
    rows = []
    for dtype, kernel, base in (("w4a16_mxfp4", "torch_flow", 0.3), ("w4a8_mxfp4_mxfp8",
                                                                      "torch_flow", 0.08),
                                ("nvfp4", "a_min_latency", 0.01), ("nvfp4", "cutlass", 0.05)):
        for t in (1, 64, 4096):
            rows.append((kernel, dtype, t, 256, 128, 2, 8, 1, 1, aic.MOE_DISTRIBUTION,
                         base + 1e-4 * t))
    cols = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk",
            "num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency"]
    return pd.DataFrame(rows, columns=cols)


@pytest.mark.parametrize(("gpu", "engine", "dtype"), [
    ("b200", "trtllm", "w4a8_mxfp4_mxfp8"),  # TensorRT-LLM's Blackwell default: MXFP8 activations
    ("b200", "vllm", "w4a16_mxfp4"),  # vLLM's: FlashInfer MXFP4 x BF16
    ("h200", "trtllm", "w4a16_mxfp4"),  # Hopper: weight-only
])
def test_mxfp4_moe_reads_what_each_engine_runs_on_each_gpu(gpu, engine, dtype):
    table = FakeImporter(mxfp4_frame(), gpu, engine).moe("mxfp4", _moe_model(), 1)
    assert table.extra["notes"].startswith(dtype + ",")


def test_an_opt_in_min_latency_moe_kernel_is_read_only_where_nothing_else_was_measured():
    frame = mxfp4_frame()
    table = FakeImporter(frame, "b200", "trtllm").moe("nvfp4", _moe_model(), 1)
    assert table.extra["kernel"] == "cutlass"  # the default, although slower and listed second
    only = frame[frame["kernel_source"] != "cutlass"]
    assert FakeImporter(only, "b200", "trtllm").moe("nvfp4", _moe_model(), 1).extra[
        "kernel"] == "a_min_latency"


def test_a_fitted_eager_cost_survives_a_rebuild_whose_old_tables_no_longer_parse(tmp_path):
    # the shipped profiles lost their fitted eager cost when the DSA key changed under them
    from tiersim.perf.profile import EagerCost

    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "eager_s": {"graph_max_tokens": 512, "per_layer_s": 2e-4, "per_moe_layer_s": 8e-4,
                    "source": "fitted: benchmark X"},
        "tables": [{"op": "attn_decode", "kv_dtype": "bf16", "key": {"hidden": 1}}]}))
    assert aic._kept_eager(path) == EagerCost(512, 2e-4, 8e-4, "fitted: benchmark X")
