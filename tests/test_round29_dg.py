"""DeepGEMM's expert GEMMs (``moe_backend: deepgemm``) are read graph or eager by the step's
batched tokens, not by their padded rows: a decode step of 8 tokens replays a CUDA graph even
though its experts compute 16,384 padded rows."""

from __future__ import annotations

import numpy as np
from conftest import BUNDLED_H200_PROFILE

from tiersim.perf import build_step_model
from tiersim.perf.aiconfigurator import aic_model_path
from tiersim.perf.assembly import deepgemm_rows
from tiersim.perf.profile import load_profile

QWEN_FP8 = "aic:Qwen--Qwen3-235B-A22B-FP8"


def _step(ep: int = 1):
    """Qwen3-235B-FP8 at TP 2 (experts over ``ep`` GPUs) on the shipped H200 profile (graph
    steps up to 512 tokens)."""
    return build_step_model(aic_model_path(QWEN_FP8), "checkpoint", "h200", 2,
                            profile=load_profile(BUNDLED_H200_PROFILE), ep=ep,
                            moe_backend="deepgemm")


def _expert_gemms(step, count: float, **step_tokens) -> float:
    """Both expert GEMMs of a step of ``count`` tokens over its padded rows."""
    rows = deepgemm_rows(np.array([count]), step._local_experts, step.model.top_k)
    return float(sum(step.ops.gemm(rows, *shape, "fp8_block", **step_tokens)[0]
                     for shape in (step._expert_up, step._expert_down)))


def test_a_decode_step_reads_its_padded_expert_rows_graph_read():
    """8 tokens (a graph step, <= 512) pad to 8,192 rows (> 512) with the experts over 2 GPUs:
    the rows are read as the graph step's (the table less its launch floor), faster than the
    eager reading of the same rows."""
    step = _step(ep=2)
    assert step.ops._graph_max == 512
    assert float(deepgemm_rows(8.0, step._local_experts, step.model.top_k)) == 8192.0
    graph = _expert_gemms(step, 8.0, tokens=np.array([8.0]))
    eager = _expert_gemms(step, 8.0, tokens=np.array([1024.0]))
    assert _expert_gemms(step, 8.0) == eager  # without tokens: the rows decide (eager)
    assert graph < eager
    routed = float(step._routed_experts(np.array([8.0]))[0])
    passes = routed - graph
    assert 0 < passes < 0.1 * routed  # the routed experts read the graph step's GEMMs


def test_a_graph_read_is_never_slower_than_the_eager_table():
    """At 16,384 padded rows (TP 2, experts not split) NVIDIA's graph-timed per-tensor FP8
    GEMM, the graph read's floor, is above the eager block-FP8 table (322 against 300 us at
    n 1,536, k 4,096): a CUDA graph takes host work off a kernel, so the graph read stops at
    the eager time rather than rising above it."""
    step = _step()
    rows = deepgemm_rows(np.array([8.0]), step._local_experts, step.model.top_k)
    for n, k in (step._expert_up, step._expert_down):
        table = step.ops._table("gemm", "fp8_block", {"n": n, "k": k})
        eager = table.lookup(rows)
        floor = step.ops._graph_floor(rows, n, k, "fp8_block")
        graph = step.ops.gemm(rows, n, k, "fp8_block", tokens=np.array([8.0]))
        assert (floor > eager).all()
        assert np.allclose(graph, eager)


def test_an_eager_step_still_reads_its_expert_rows_as_measured():
    """A step of 1,024 tokens (> 512) runs eagerly: its padded rows read the eager table."""
    step = _step()
    rows = deepgemm_rows(np.array([1024.0]), step._local_experts, step.model.top_k)
    table = step.ops._table("gemm", "fp8_block", {"n": step._expert_up[0],
                                                    "k": step._expert_up[1]})
    got = step.ops.gemm(rows, *step._expert_up, "fp8_block", tokens=np.array([1024.0]))
    assert np.allclose(got, table.lookup(rows))
