"""Round 30 (h100): the per-operator prefill diagnostic reads another GPU's rows.

``benchmarks/prefill_ops.py`` compared a prefill step operator by operator only for H200 rows of
models :data:`fidelity_silicon.MODELS` lists: H100's Qwen3-32B rows (the group that carries the
H100 vLLM TTFT median, docs/fidelity.md) could not be picked (named by their path) and
aiconfigurator's side looked the model up in ``MODELS`` (``KeyError``). ``--system`` and
``--case`` pick them; the tiersim side is the step model the row's replay runs on H100's profile.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fidelity_silicon as fs  # noqa: E402
import prefill_ops  # noqa: E402

from tiersim.perf.base import StepShape  # noqa: E402


@pytest.fixture(scope="module")
def h100_rows():
    """H100's vLLM rows, named as prefill_ops names them."""
    return prefill_ops.vllm_rows("h100_sxm")


def test_an_h100_qwen3_32b_row_is_picked_and_timed_on_h100(h100_rows):
    row = prefill_ops.pick_row(h100_rows, "Qwen3-32B", 2)
    assert (row["system"], int(row["tp_size"])) == ("h100_sxm", 2)
    case = fs.case_of(row)
    assert case.gpu == "h100"
    step = fs.replica_tier(case, 1, "auto")[0].step_model
    ops = prefill_ops.tiersim_ops(row, 4096)
    assert ops["TOTAL"] == pytest.approx(1e3 * step.step_time(StepShape(((4096, 0),))))


def test_aiconfigurator_side_reads_a_model_missing_from_models(h100_rows):
    pytest.importorskip("aiconfigurator_core")
    assert "Qwen/Qwen3-32B" not in fs.MODELS
    row = prefill_ops.pick_row(h100_rows, "Qwen3-32B", 8)
    ops = prefill_ops.aic_ops(row, 1024)
    assert ops["TOTAL"] > 0 and ops["gate_ffn1_gemm"] > 0


@pytest.mark.parametrize("text, case", [("Qwen3-32B:2", ("Qwen3-32B", 2, 1)),
                                        ("Qwen3-235B-FP8:1:2", ("Qwen3-235B-FP8", 1, 2))])
def test_case_option_reads_name_tp_dp(text, case):
    assert prefill_ops.parse_case(text) == case


@pytest.mark.parametrize("text", ["Qwen3-32B", "Qwen3-32B:0", "Qwen3-32B:2:x", ":2"])
def test_case_option_refuses_a_malformed_case_with_one_line(text, capsys):
    with pytest.raises(SystemExit) as exc:
        prefill_ops.main(["--case", text])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("write NAME:TP or NAME:TP:DP, e.g. Qwen3-32B:2")


def test_a_case_the_rows_lack_exits_with_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        prefill_ops.main(["--system", "h100_sxm", "--case", "Qwen3-32B:3"])
    assert "no vLLM row of Qwen3-32B at TP 3 x DP 1 on h100_sxm" in str(exc.value.code)
