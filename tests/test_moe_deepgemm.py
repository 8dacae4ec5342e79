"""vLLM 0.12's DeepGEMM MoE (``moe_backend: deepgemm``): its worst-case row count, a step model
whose routed experts do not grow with a small batch, the scenario's one-line refusals, and the
fidelity benchmark's reading of which rows ran it."""

from __future__ import annotations

import json
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


def test_each_pass_of_16k_tokens_is_sized_on_its_own():
    """vLLM's modular MoE kernel runs at most VLLM_FUSED_MOE_CHUNK_SIZE (16,384) tokens a pass,
    and each pass pads every expert again."""
    one = float(deepgemm_rows(16384.0, 128, 8))
    assert one == 131072.0 + 16256.0
    assert float(deepgemm_rows(32768.0, 128, 8)) == 2 * one
    assert float(deepgemm_rows(16385.0, 128, 8)) == one + 16384.0  # 8 + 16,256 rounded up


def _moe_times(backend: str, tokens) -> np.ndarray:
    step = build_step_model(MOE, "fp8_block", "H200", profile=None, moe_backend=backend)
    return np.array([step._routed_experts(np.array([float(t)]))[0] for t in tokens])


def test_deepgemm_experts_cost_the_same_at_1_and_16_tokens_and_more_than_the_routed_kernel():
    """The rows (so the GEMMs' work) are the same from 1 to 16 tokens, only the gather of the
    tokens' own rows grows (under 1%); the routed-only kernel reads more experts as tokens grow,
    and reads fewer than DeepGEMM computes."""
    deep, routed = _moe_times("deepgemm", [1, 8, 16]), _moe_times("auto", [1, 8, 16])
    assert deep[0] < deep[1] < deep[2] < 1.01 * deep[0]
    assert routed[2] > 1.2 * routed[0]
    assert (deep > routed).all()


class Recording:
    """Roofline operator times that record every GEMM shape asked for."""

    def __init__(self, ops):
        self.ops, self.calls = ops, []

    def __getattr__(self, name):
        return getattr(self.ops, name)

    def gemm(self, m, n, k, precision, tokens=None, group=1):
        self.calls.append((np.asarray(m, dtype=float).tolist(), n, k, precision))
        return self.ops.gemm(m, n, k, precision, group=group)


@pytest.mark.parametrize("tp, dp, ep, width, local, fed", [
    (2, 1, 1, 384, 128, 8),     # experts 768 wide split 2 ways
    (1, 2, 1, 384, 128, 16),    # DP ranks in lockstep: the experts see both ranks' tokens
    (2, 1, 2, 768, 64, 8),      # expert parallel: whole experts, half of them on each GPU
])
def test_the_two_grouped_gemms_have_the_experts_per_gpu_shapes(tp, dp, ep, width, local, fed):
    from tiersim.hardware import get_model
    from tiersim.perf.assembly import AssembledStepModel
    from tiersim.perf.roofline import RooflineOps

    arch = get_model(MOE)
    ops = Recording(RooflineOps(arch, "fp8_block", "H200", tp=tp, dp=dp, ep=ep))
    step = AssembledStepModel(arch, "fp8_block", tp, ops, "test", dp=dp, ep=ep,
                              moe_backend="deepgemm")
    ops.calls.clear()
    step._moe_layer(np.array([8.0]))
    rows = float(deepgemm_rows(float(fed), local, arch.top_k))
    assert (([rows], 2 * width, arch.hidden, "fp8_block") in ops.calls
            and ([rows], arch.hidden, width, "fp8_block") in ops.calls)


def test_a_scenario_tier_runs_deepgemm(tmp_path):
    """The tier's moe_backend reaches the step model the run builds: same tier, slower decode
    steps at a small batch than with the routed kernel."""
    from tiersim.fleet import step_model

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=MOE, precision="fp8_block", gpus=2, dp=1, ep="false"))
    scenario = load_scenario(path)
    deep = step_model(scenario, scenario.tiers[0])
    auto = step_model(scenario, scenario.tiers[0].model_copy(update={"moe_backend": "auto"}))
    assert deep.moe_backend == "deepgemm" and auto.moe_backend == "auto"
    assert deep.decode_times(4, np.array([1024.0]))[0] > auto.decode_times(4, np.array([1024.0]))[0]


def test_the_tier_sources_say_deepgemm_and_no_moe_table():
    step = build_step_model(MOE, "fp8_block", "H200", profile=None, moe_backend="deepgemm")
    label = step.sources()["moe deepgemm"]
    # a run with no profile: the experts' GEMMs are the roofline divided by H200's median FP8
    # GEMM efficiency (block FP8 takes per-tensor FP8's factors), and the label says so
    assert label == ("deepgemm: roofline; calibrated: divided by 0.36-0.86 (by rows and weight "
                     "size), the median ratio of bare-roofline to measured time over NVIDIA's "
                     "H200 fp8 GEMM tables (fp8_block takes fp8's factors)")
    assert not [k for k in step.sources() if k.startswith("moe ") and k != "moe deepgemm"]
    assert source_kind(label) == ("roofline, calibrated on H200's measured tables, GEMM table "
                                  "at DeepGEMM's worst-case rows (vLLM 0.12 MoE)")


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
        "for block-FP8 (fp8_block) experts tensor-parallel over fewer than 8 GPUs, and ")


@pytest.mark.parametrize("model, precision, gpus, dp, ep, why", [
    ("Llama-3.1-8B", "fp8_block", 1, 1, "false", "Llama-3.1-8B has no MoE layers"),
    (MOE, "w4a16", 1, 1, "false", "its experts are w4a16"),
    (MOE, "fp8_block", 8, 1, "false", "its experts are tensor-parallel over 8 GPUs"),
    (MOE, "fp8_block", 8, 2, "false", "its experts are tensor-parallel over 8 GPUs"),
])
def test_a_tier_that_cannot_run_deepgemm_is_refused_at_its_line(tmp_path, model, precision,
                                                                 gpus, dp, ep, why):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=model, precision=precision, gpus=gpus, dp=dp, ep=ep))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: {HEAD}{why}; use moe_backend: auto"


@pytest.mark.parametrize("gpus, dp, ep", [(2, 1, "false"), (8, 2, "true"), (2, 2, "false")])
def test_a_block_fp8_moe_tier_under_moe_tp_8_loads(tmp_path, gpus, dp, ep):
    """Expert parallel (MoE TP 1) also across DP ranks: vLLM 0.12's default all-gather
    dispatch feeds the same kernel."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=MOE, precision="fp8_block", gpus=gpus, dp=dp, ep=ep))
    assert load_scenario(path).tiers[0].moe_backend == "deepgemm"


def _row(**overrides) -> dict:
    row = {"backend": "vllm", "backend_version": "0.12.0"}
    row.update(overrides)
    return row


@pytest.mark.parametrize("row, moe_tp, expected", [
    (_row(), 2, "deepgemm"),
    (_row(), 4, "deepgemm"),
    (_row(), 1, "deepgemm"),  # expert parallel
    (_row(), 8, "auto"),  # vLLM 0.12 turns DeepGEMM MoE off from MoE TP 8
    (_row(backend_version="0.16.0"), 2, "auto"),
    (_row(backend_version="0.13.0"), 2, "auto"),
    (_row(backend="sglang"), 2, "auto"),
])
def test_the_benchmark_reads_deepgemm_for_vllm_0_12_block_fp8_experts(row, moe_tp, expected):
    from tiersim.hardware import get_model

    arch = get_model(MOE)
    assert fs.vllm_moe_backend(row, arch, "fp8_block", moe_tp) == expected
    assert fs.vllm_moe_backend(row, arch, "bf16", moe_tp) == "auto"
    assert fs.vllm_moe_backend(row, get_model("Llama-3.1-8B"), "fp8_block", moe_tp) == "auto"


@pytest.mark.parametrize("backend, fix", [
    ("deepgemm", "use moe_backend: auto with gpus_per_replica 8"),
    ("auto", "use gpus_per_replica 8"),
])
def test_a_fit_error_offers_no_gpu_count_where_the_moe_backend_is_refused(backend, fix):
    """A deepgemm tier too big for 4 GPUs: 8 hold it, but its experts would be
    tensor-parallel over 8 GPUs, where deepgemm is refused, so the fix says to switch."""
    from tiersim.hardware import get_gpu, get_model
    from tiersim.perf.memory import FitError, kv_capacity_blocks

    with pytest.raises(FitError) as info:
        kv_capacity_blocks(get_model(MOE), "fp8_block", get_gpu("H200"), tp=4,
                           gpu_memory_utilization=0.05, moe_backend=backend)
    assert str(info.value).endswith(
        f"(it is 0.05), or {fix}, a smaller precision or a GPU with more memory")


def test_a_plan_whose_every_gpu_count_fails_blames_memory_not_a_layout_the_tier_lacks(tmp_path):
    """On 1 GPU with 5% of its memory the tier fits on no count up to 4 and deepgemm is refused
    on 8: the line says it does not fit (the tier's own count is 1, not 8), then the refusal."""
    from tiersim.cli.plan import plan_capacity

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=MOE, precision="fp8_block", gpus=1, dp=1, ep="false")
                    + "    gpu_memory_utilization: 0.05\n")
    with pytest.raises(ScenarioError) as info:
        plan_capacity(path, max_replicas=2, report=False)
    assert str(info.value) == (
        f"{path}: tiers[0]: tier 'a': Qwen3-Coder-30B-A3B at FP8 (block) does not fit on "
        "4x H200: weights 7.8 GB + reserve 1.7 GB > usable 7.5 GB per GPU (short by 2.0 GB); set "
        "gpu_memory_utilization to at least 0.064 (it is 0.05), or use moe_backend: auto with "
        "gpus_per_replica 8, a smaller precision or a GPU with more memory (on 8 GPUs per "
        f"replica: {HEAD.split(': ', 3)[3]}its experts are tensor-parallel over 8 GPUs; use "
        "moe_backend: auto)")


def test_a_plan_that_misses_names_the_gpu_count_deepgemm_is_refused_on(tmp_path):
    """--gpus-per-replica 8 on a deepgemm tier that misses its TPOT on 1 GPU: 8 is left out
    of the search (its experts would be tensor-parallel over 8 GPUs), and the reason says so
    beside the counts tried instead of dropping it silently."""
    from tiersim.cli.plan import plan_capacity

    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(model=MOE, precision="fp8_block", gpus=1, dp=1, ep="false")
                    + "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.001}\n")
    result = plan_capacity(path, max_replicas=1, gpu_options=(8,), report=False)
    assert result.uniform[0]["gpus_per_replica_tried"] == {"a": [1]}
    assert result.reason.endswith(
        "(tried a on 1 GPU per replica; not on 8 GPUs per replica: "
        f"{HEAD.split(': ', 3)[3]}its experts are tensor-parallel over 8 GPUs; use "
        "moe_backend: auto)")


@pytest.mark.parametrize("backend, tail", [
    ("auto", " (replayed 51 with moe_backend deepgemm; this tier runs moe_backend auto)"),
    ("deepgemm", ""),
])
def test_the_fidelity_line_says_when_a_models_rows_ran_another_moe_kernel(backend, tail):
    """Qwen3-235B-FP8's 51 H200 rows were replayed with DeepGEMM (vLLM 0.12): an auto tier of
    that model is told its quoted figures are not its kernel's."""
    from tiersim import fidelity

    config = Path(__file__).resolve().parents[1] / "benchmarks/data/configs/Qwen3-235B-A22B-FP8"
    check = fidelity.check_for("h200_aiconfigurator_vllm",
                               {"a": (str(config), "fp8_block", backend)})
    shipped = json.loads((Path(fidelity.__file__).parent / "data" / "fidelity_check.json")
                         .read_text())["profiles"]["h200_aiconfigurator_vllm"]["models"]
    qwen = shipped["Qwen3-235B-FP8"]  # the figures of the shipped check, as a refit leaves them
    assert (f": {qwen['tpot_abs_median_pct']:.1f}% TPOT, {qwen['ttft_abs_median_pct']:.1f}% "
            f"TTFT on its 51 rows" + tail + " (python benchmarks/" in fidelity.describe(check))
