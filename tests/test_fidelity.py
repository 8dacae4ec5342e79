"""The fidelity benchmark's closed-loop replica and its summary line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from closed_loop import ClosedLoop  # noqa: E402

from tiersim.perf.base import LinearStepModel, StepShape  # noqa: E402

MODEL = LinearStepModel(
    overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4, per_context_token=1e-8
)


def test_one_client_sees_one_prefill_then_decodes():
    res = ClosedLoop(MODEL, isl=100, osl=10, concurrency=1, kv_capacity_tokens=10**6).run(3)
    assert res.ttft_s == pytest.approx(0.005 + 2e-5 * 100)
    # decode i (i = 1..9) reads a context of 100 + i - 1 tokens
    decode = [0.005 + 1e-4 + 1e-8 * (100 + i) for i in range(9)]
    assert res.tpot_s == pytest.approx(np.mean(decode))
    assert res.requests == 2  # the first request is a warm-up


class NoFastForward(ClosedLoop):
    """The same replica stepping every iteration."""

    def _fast_forward(self) -> bool:
        return False


@pytest.mark.parametrize("stagger", [True, False])
def test_fast_forward_equals_stepping(stagger):
    kw = dict(isl=300, osl=50, concurrency=6, kv_capacity_tokens=10**6, max_num_batched_tokens=512)
    a = ClosedLoop(MODEL, **kw).run(3, stagger=stagger)
    b = NoFastForward(MODEL, **kw).run(3, stagger=stagger)
    assert a.ttfts == pytest.approx(b.ttfts, rel=1e-9)
    assert a.tpots == pytest.approx(b.tpots, rel=1e-9)


def test_small_kv_cache_preempts_and_still_finishes():
    loop = ClosedLoop(MODEL, isl=200, osl=200, concurrency=8, kv_capacity_tokens=1500)
    res = loop.run(2, stagger=False)
    assert res.requests == 16 and res.preemptions > 0
    assert all(r.generated == 200 for r in loop.finished)
    assert np.all(res.tpots > 0)


def test_budget_chunks_long_prompts():
    seen = []

    class Spy(LinearStepModel):
        def step_time(self, shape: StepShape) -> float:
            seen.append(shape.num_tokens)
            return super().step_time(shape)

    ClosedLoop(
        Spy(), isl=1000, osl=2, concurrency=1, kv_capacity_tokens=10**6, max_num_batched_tokens=256
    ).run(1, stagger=False)
    assert max(seen) <= 256


def test_summary_line_format():
    import fidelity_silicon as fs

    res = pd.DataFrame(
        {
            "backend": ["vllm", "vllm", "trtllm"],
            "tpot_err": [0.1, -0.2, 0.3],
            "ttft_err": [0.5, 0.1, -0.4],
        }
    )
    assert fs.summary_lines(res) == [
        "trtllm median |TPOT error| = 30.0%, |TTFT error| = 40.0% (n=1)",
        "vllm median |TPOT error| = 15.0%, |TTFT error| = 30.0% (n=2)",
    ]


def test_one_measured_row_replays():
    import fidelity_silicon as fs

    rows = fs.load_rows()
    row = rows[(rows.backend == "vllm") & (rows.model == "70B") & (rows.tp_size == 8)].iloc[[0]]
    res = fs.run(row, "fp8", True, 2, jobs=1)
    assert res["sim_tpot_ms"].iloc[0] > 0 and np.isfinite(res["tpot_err"].iloc[0])
