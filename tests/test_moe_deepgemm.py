"""vLLM 0.12's DeepGEMM MoE (``moe_backend: deepgemm``): its worst-case row count, a step model
whose routed experts do not grow with a small batch, the scenario's one-line refusals, and the
fidelity benchmark's reading of which rows ran it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tiersim.errors import ScenarioError
from tiersim.perf import build_step_model
from tiersim.perf.assembly import deepgemm_rows
from tiersim.scenario import load_scenario
from tiersim.summary import source_kind

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

MOE = "Qwen3-Coder-30B-A3B"  # 128 experts, top-8


def test_rows_are_sized_for_every_expert_padded_to_a_block():
    """round_up(T x top_k + E x 127, 128): 16,384 rows for 1 to 16 tokens of 128 experts, top 8
    (vLLM 0.12 ``compute_aligned_M`` without per-expert counts)."""
    assert deepgemm_rows(np.array([1.0, 16.0, 17.0, 48.0]), 128, 8).tolist() == [
        16384.0, 16384.0, 16512.0, 16640.0]
    assert float(deepgemm_rows(8192.0, 64, 8)) == 73728.0  # 65,536 + 8,128 rounded up


def _moe_times(backend: str, tokens) -> np.ndarray:
    step = build_step_model(MOE, "fp8_block", "H200", profile=None, moe_backend=backend)
    return np.array([step._routed_experts(np.array([float(t)]))[0] for t in tokens])


def test_deepgemm_experts_cost_the_same_at_1_and_16_tokens_and_more_than_the_routed_kernel():
    """The rows (so the work) are the same from 1 to 16 tokens; the routed-only kernel reads
    more experts as tokens grow, and reads fewer than DeepGEMM computes."""
    deep, routed = _moe_times("deepgemm", [1, 8, 16]), _moe_times("auto", [1, 8, 16])
    assert deep[0] == deep[1] == deep[2]
    assert routed[0] < routed[1] < routed[2]
    assert (deep > routed).all()


def test_the_tier_sources_say_deepgemm():
    step = build_step_model(MOE, "fp8_block", "H200", profile=None, moe_backend="deepgemm")
    label = step.sources()["moe deepgemm"]
    assert label == "deepgemm: roofline"
    assert source_kind(label) == (
        "roofline, GEMM table at DeepGEMM's worst-case rows (vLLM 0.12 MoE)")


SCENARIO = """name: dg
model: {model}
gpu: H200
profile: null
trace:
  path: azure2023_code.parquet
  window: [240, 300]
tiers:
  - name: a
    precision: {precision}
    replicas: 1
    gpus_per_replica: {gpus}
    data_parallel: {dp}
    expert_parallel: {ep}
    moe_backend: deepgemm
    cost_per_gpu_hour: 3.5
"""
HEAD = ("line 15: tiers[0].moe_backend: tier 'a': moe_backend deepgemm is vLLM 0.12's kernel "
        "for block-FP8 (fp8_block) experts split over fewer than 8 GPUs without all-to-all "
        "dispatch, and ")


@pytest.mark.parametrize("model, precision, gpus, dp, ep, why", [
    ("Llama-3.1-8B", "fp8_block", 1, 1, "false", "Llama-3.1-8B has no MoE layers"),
    (MOE, "w4a16", 1, 1, "false", "its experts are w4a16"),
    (MOE, "fp8_block", 8, 1, "false", "its experts are split over 8 GPUs"),
    (MOE, "fp8_block", 4, 2, "true",
     "its experts are dispatched all-to-all (expert parallel over data-parallel ranks)"),
])
def test_a_tier_that_cannot_run_deepgemm_is_refused_at_its_line(tmp_path, model, precision,
                                                                 gpus, dp, ep, why):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=model, precision=precision, gpus=gpus, dp=dp, ep=ep))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: {HEAD}{why}; use moe_backend: auto"


def test_a_block_fp8_moe_tier_on_fewer_than_8_gpus_loads(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=MOE, precision="fp8_block", gpus=2, dp=1, ep="false"))
    assert load_scenario(path).tiers[0].moe_backend == "deepgemm"


def _row(**overrides) -> dict:
    row = {"backend": "vllm", "backend_version": "0.12.0"}
    row.update(overrides)
    return row


@pytest.mark.parametrize("row, moe_tp, all_to_all, expected", [
    (_row(), 2, False, "deepgemm"),
    (_row(), 4, False, "deepgemm"),
    (_row(), 8, False, "auto"),  # vLLM 0.12 turns DeepGEMM MoE off from MoE TP 8
    (_row(), 1, True, "auto"),
    (_row(backend_version="0.16.0"), 2, False, "auto"),
    (_row(backend_version="0.13.0"), 2, False, "auto"),
    (_row(backend="sglang"), 2, False, "auto"),
])
def test_the_benchmark_reads_deepgemm_for_vllm_0_12_block_fp8_experts(row, moe_tp, all_to_all,
                                                                      expected):
    from tiersim.hardware import get_model

    arch = get_model(MOE)
    assert fs.vllm_moe_backend(row, arch, "fp8_block", moe_tp, all_to_all) == expected
    assert fs.vllm_moe_backend(row, arch, "bf16", moe_tp, all_to_all) == "auto"
    assert fs.vllm_moe_backend(row, get_model("Llama-3.1-8B"), "fp8_block", moe_tp,
                               all_to_all) == "auto"
