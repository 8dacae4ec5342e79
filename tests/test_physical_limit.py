"""Measured tables are read within physics: a point faster than the physical limit (the roofline at
the data sheet's peaks, :class:`~tiersim.perf.roofline.PhysicalLimitOps`) is read from the
roofline, as a missing one is, and no table is faster for more work along any axis
(:func:`~tiersim.perf.profile.monotone_grid`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tiersim.hardware import get_model
from tiersim.perf import build_step_model, resolve_profile
from tiersim.perf.aiconfigurator import aic_model_path
from tiersim.perf.base import StepShape
from tiersim.perf.profile import Profile, ProfileOps, Table, monotone_grid
from tiersim.perf.roofline import PhysicalLimitOps, RooflineOps

LLAMA = get_model("llama-3.1-8b")
QWEN = get_model("qwen3-coder-30b-a3b")
KIMI = "aic:moonshotai--Kimi-K2.5"
GLM5 = "aic:zai-org--GLM-5-FP8"


def _model(name):
    return get_model(aic_model_path(name))


@pytest.mark.parametrize("name, precision, tp, kv", [
    ("llama-3.1-8b", "fp8", 1, "fp8"), ("qwen3-coder-30b-a3b", "w4a16", 2, "bf16"),
    (KIMI, "checkpoint", 8, "bf16"), (GLM5, "checkpoint", 8, "fp8"),
])
def test_the_limit_is_below_the_roofline_everywhere(name, precision, tp, kv):
    """The derated roofline, with its kernel floors, is never faster than the limit."""
    model = _model(name)
    roof = RooflineOps(model, precision, "h200", tp, kv)
    limit = PhysicalLimitOps(model, precision, "h200", tp, kv)
    tokens = np.array([1.0, 7.0, 64.0, 512.0, 4096.0, 32768.0])
    assert (limit.gemm(tokens, 4096, 2048, "fp8") <= roof.gemm(tokens, 4096, 2048, "fp8")).all()
    assert (limit.allreduce(tokens * 8192, 8) <= roof.allreduce(tokens * 8192, 8)).all()
    if model.is_moe:
        assert (limit.moe(tokens) <= roof.moe(tokens)).all()
    for new, cached in [(1, 0), (512, 0), (512, 131072), (32768, 0), (8192, 8192)]:
        assert limit.attn_prefill(new, cached) <= roof.attn_prefill(new, cached)
    context = np.array([1.0, 1000.0, 131072.0])
    assert (limit.attn_decode(64, context) <= roof.attn_decode(64, context)).all()


def test_mla_prefill_limit_is_the_cheaper_of_expanded_and_absorbed():
    limit = PhysicalLimitOps(_model(KIMI), "checkpoint", "h200", 8, "bf16")
    roof = RooflineOps(_model(KIMI), "checkpoint", "h200", 8, "bf16")
    # one token over a long cached context: expanding 131k latents costs far more than reading
    # them, so the absorbed path sets the limit, well under the (expanded) roofline
    assert limit.attn_prefill(1, 131072) < 0.5 * roof.attn_prefill(1, 131072)


def _profile(table: Table) -> Profile:
    return Profile("synthetic", "H200", {"source": "harness"}, 1e-3, "harness", [table])


def test_a_point_below_the_limit_is_read_from_the_roofline_and_the_label_says_so():
    m = np.array([1.0, 4096.0])
    limit = PhysicalLimitOps(LLAMA, "bf16", "h200").gemm(m, 4096, 4096, "bf16")
    roof = RooflineOps(LLAMA, "bf16", "h200").gemm(m, 4096, 4096, "bf16")
    latency = np.array([limit[0] * 1.5, limit[1] * 0.5])  # the second: twice the peak
    table = Table("gemm", "bf16", "harness", {"n": 4096, "k": 4096}, {"m": m}, latency)
    ops = ProfileOps(_profile(table), LLAMA, "bf16", "h200",
                     fallback=RooflineOps(LLAMA, "bf16", "h200"))
    np.testing.assert_allclose(ops.gemm(m, 4096, 4096), [latency[0], roof[1]], rtol=1e-12)
    assert ops.sources()["gemm bf16 n=4096 k=4096"] == (
        "harness (1 of 2 points below the physical limit, read from the roofline)")
    assert table.latency[1] == latency[1]  # the profile's own table is left as it was


def test_a_table_within_the_limit_is_read_as_it_is():
    limit = PhysicalLimitOps(LLAMA, "bf16", "h200").gemm(np.array([1.0, 4096.0]), 4096, 4096,
                                                        "bf16")
    table = Table("gemm", "bf16", "harness", {"n": 4096, "k": 4096},
                  {"m": np.array([1.0, 4096.0])}, limit * 1.2)
    ops = ProfileOps(_profile(table), LLAMA, "bf16", "h200",
                     fallback=RooflineOps(LLAMA, "bf16", "h200"))
    ops.gemm(np.array([1.0]), 4096, 4096)
    assert ops.sources()["gemm bf16 n=4096 k=4096"] == "harness"
    assert ops._cache[("gemm", "bf16", (("n", 4096), ("k", 4096)))] is table


def test_the_shipped_mla_prefill_keeps_every_measured_prompt_length():
    """vLLM labels its MLA module's rows by backend, which changes with the prompt's length
    (FLASH_ATTN_MLA up to 512 tokens, FLASH_ATTN beyond); the importer once kept one label's
    rows and extended 512 tokens, flat, to a 32,768-token chunk 20 times faster than measured.
    """
    model = _model(KIMI)
    ops = ProfileOps(resolve_profile("h200_aiconfigurator_vllm"), model, "checkpoint", "h200",
                     8, "bf16", fallback=RooflineOps(model, "checkpoint", "h200", 8, "bf16"))
    # NVIDIA's rows (mla_context_module_perf, 8 heads, BF16 cache and projections, batch 1)
    for new, measured_ms in [(512, 0.1533), (8192, 1.0633), (32768, 6.3415)]:
        assert float(ops.attn_prefill(new, 1)) == pytest.approx(measured_ms * 1e-3, rel=1e-3)
    limit = PhysicalLimitOps(model, "checkpoint", "h200", 8, "bf16")
    for new, cached in [(32768, 0), (16384, 16384), (8192, 131072), (512, 131072)]:
        assert float(ops.attn_prefill(new, cached)) >= limit.attn_prefill(new, cached) * 0.999
    table = ops._attn_table("attn_prefill")
    assert table.extra["kernel"] == ("FLASH_ATTN_MLA (1-512 tokens), FLASH_ATTN (1024-32768 "
                                     "tokens)")


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 7)),
              elements=st.floats(1e-6, 1.0)))
def test_a_fitted_grid_never_falls_along_either_axis(grid):
    fitted = monotone_grid(grid)
    assert (np.diff(fitted, axis=0) >= 0).all() and (np.diff(fitted, axis=1) >= 0).all()
    assert fitted.min() >= grid.min() and fitted.max() <= grid.max()


def test_a_grid_that_never_falls_is_read_unchanged():
    grid = np.cumsum(np.cumsum(np.random.default_rng(0).random((5, 6)), axis=0), axis=1)
    np.testing.assert_array_equal(monotone_grid(grid), grid)


@pytest.mark.parametrize("gpu", ["h200", "b200", "h100"])
@pytest.mark.parametrize("name, precision, tp", [
    ("llama-3.1-8b", "fp8", 1), ("qwen3-coder-30b-a3b", "fp8", 2),
    ("aic:openai--gpt-oss-120b", "checkpoint", 4), ("aic:MiniMaxAI--MiniMax-M2.5", "checkpoint", 4),
])
def test_a_bigger_step_is_never_faster_on_any_shipped_profile(gpu, name, precision, tp):
    """More decoding sequences, more context, or a longer prefill chunk never gives a faster
    iteration (NVIDIA's B200 all-reduce rows fall by a third at one size)."""
    model = build_step_model(aic_model_path(name), precision, gpu, tp=tp,
                             profile=f"{gpu}_aiconfigurator_vllm")
    for context in (100, 2000, 30000):
        steps = [model.step_time(StepShape((), b, b * context)) for b in range(1, 300, 7)]
        assert (np.diff(steps) >= -1e-12).all(), (context, steps)
    for batch in (1, 32, 256):
        steps = [model.step_time(StepShape((), batch, batch * c)) for c in range(1, 60000, 997)]
        assert (np.diff(steps) >= -1e-12).all(), (batch, steps)
    chunks = [model.step_time(StepShape(((n, 0),))) for n in range(1, 16384, 173)]
    assert (np.diff(chunks) >= -1e-12).all()


def test_beyond_the_decode_table_a_larger_batch_is_never_faster():
    """NVIDIA's B200 decode rows end at 32,768 tokens of context; each row continued on its own
    last slope read batch 2 faster than batch 1 at 131,072."""
    model = build_step_model("llama-3.1-70b", "bf16", "b200", profile="b200_aiconfigurator_vllm")
    one, two = (model.step_time(StepShape((), b, b * 131072)) for b in (1, 2))
    assert two >= one


def test_a_step_s_dense_prefill_chunks_share_one_launch_but_mla_modules_do_not():
    dense = build_step_model("llama-3.1-8b", "fp8", "h200", profile="h200_aiconfigurator_vllm")
    one, four = StepShape(((32, 0),)), StepShape(((32, 0),) * 4)
    linear = dense._linear_time(128) - dense._linear_time(32) + dense._lm_head_time(4) \
        - dense._lm_head_time(1)
    attention = 4 * dense._attn_prefill(32, 0) - 3 * dense._attn_prefill(1, 0)
    assert dense.step_time(four) == pytest.approx(
        dense.step_time(one) - dense._attn_prefill(32, 0) + attention + linear, rel=1e-12)
    kimi = build_step_model(aic_model_path(KIMI), "checkpoint", "h200", tp=8,
                            profile="h200_aiconfigurator_vllm")
    attention = 4 * kimi._attn_prefill(32, 0)  # a whole module per chunk (assembly docstring)
    linear = kimi._linear_time(128) - kimi._linear_time(32) + kimi._lm_head_time(4) \
        - kimi._lm_head_time(1)
    assert kimi.step_time(four) == pytest.approx(
        kimi.step_time(one) - kimi._attn_prefill(32, 0) + attention + linear, rel=1e-12)


def test_the_busiest_gpu_reads_at_least_one_whole_expert():
    """One token over eight GPUs with one expert each: the layer waits for a GPU that reads a
    whole expert, not a quarter of one."""
    mixtral = dataclasses.replace(QWEN, name="eight", hidden=4096, expert_intermediate=14336,
                                  num_experts=8, top_k=2)
    roof = RooflineOps(mixtral, "bf16", "h200", tp=8, ep=8)
    expert = 3 * mixtral.hidden * mixtral.expert_intermediate * 2.0  # 352 MB
    assert roof.moe(np.array([1.0]))[0] >= expert / (4.8e12 * roof.c.bw_eff)


def test_a_shared_launch_never_takes_a_chunk_below_its_cache_read():
    """Fully cached prompts recompute one token each: eight such chunks over 32k-token caches
    read 17 GB of KV on H100, 5.1 ms, and sharing their launch once made the step 6.4 ms with
    the weights (7.5 ms at the limit)."""
    from tiersim.perf.assembly import AssembledStepModel

    path = aic_model_path("aic:meta-llama--Meta-Llama-3.1-8B")
    model = build_step_model(path, "fp8", "h100", kv_dtype="fp8",
                             profile="h100_aiconfigurator_vllm")
    limit = AssembledStepModel(path, "fp8", 1, PhysicalLimitOps(path, "fp8", "h100",
                                                                kv_dtype="fp8"), "limit")
    for n in (2, 8, 32):
        shape = StepShape(((1, 32768),) * n)
        assert model.step_time(shape) >= limit.step_time(shape)


@pytest.mark.parametrize("gpu", ["h200", "b200", "h100"])
def test_beyond_a_table_s_last_point_no_operator_reads_faster_than_physics(gpu):
    """Past a table's grid the rule extrapolates; a GEMM continued on its last segment's slope
    beyond 32,768 tokens ran faster than the tensor cores, and a 1-token chunk over 262,144
    cached tokens read faster than its cache."""
    model = build_step_model("llama-3.1-8b", "bf16", gpu, tp=2,
                             profile=f"{gpu}_aiconfigurator_vllm")
    limit = PhysicalLimitOps("llama-3.1-8b", "bf16", gpu, 2)
    m = np.array([98304.0, 262144.0])
    assert (model.ops.gemm(m, 4096, 2048) >= limit.gemm(m, 4096, 2048, "bf16")).all()
    for new, cached in [(1, 262144), (3, 196608), (40000, 0)]:
        assert float(model.ops.attn_prefill(new, cached)) >= limit.attn_prefill(new, cached)
        assert model._prefill_op(new, cached) >= limit.attn_prefill(new, cached)
    context = np.array([300000.0])
    assert (model.ops.attn_decode(4096, context) >= limit.attn_decode(4096, context)).all()
