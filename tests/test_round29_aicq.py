"""Round 29 (aicq): the per-operator prefill diagnostic times what the replay runs.

``benchmarks/prefill_ops.py`` compares one prefill step of a vLLM row, operator by operator,
with aiconfigurator's. Its tiersim side must be the step model the row is replayed with: the
row's layout (attention-DP ranks included) and the MoE kernel the engine ran (vLLM 0.12's
DeepGEMM for Qwen3-235B-FP8), not the profile's routed MoE table at a TP-only layout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fidelity_silicon as fs  # noqa: E402
import prefill_ops  # noqa: E402

from tiersim.perf.base import StepShape  # noqa: E402


@pytest.fixture(scope="module")
def vllm_rows():
    """The vLLM rows, named as prefill_ops names them."""
    rows = fs.load_rows()
    rows = rows[rows.backend == "vllm"].copy()
    rows["name"] = rows.model_path.map(lambda p: fs.MODELS[p].name if p in fs.MODELS else p)
    return rows


def replayed_step(row: dict):
    """The step model the row's replay runs."""
    return fs.replica_tier(fs.case_of(row), 1, "auto")[0].step_model


@pytest.mark.parametrize("tp, dp", [(2, 1), (1, 2)])
def test_prefill_ops_times_the_replayed_moe_kernel_and_layout(vllm_rows, tp, dp):
    row = prefill_ops.pick_row(vllm_rows, "Qwen3-235B-FP8", tp, dp)
    case = fs.case_of(row)
    assert (case.tp, case.dp, case.moe_backend) == (tp, dp, "deepgemm")
    step = replayed_step(row)
    isl = 4096
    ops = prefill_ops.tiersim_ops(row, isl)
    tokens = np.array([float(isl * dp)])  # lockstep ranks: the experts see every rank's tokens
    moe = 1e3 * step.model.moe_layers * float(step._routed_experts(tokens)[0])
    assert ops["moe"] == pytest.approx(moe)
    assert ops["TOTAL"] == pytest.approx(1e3 * step.step_time(StepShape(((isl, 0),))))
