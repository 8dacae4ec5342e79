"""The fidelity benchmark's closed-loop replay through the engine, and its summary line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

from tiersim.engine import SchedulerLimits, TierSpec, simulate  # noqa: E402
from tiersim.perf.base import LinearStepModel, StepShape  # noqa: E402

MODEL = LinearStepModel(
    overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4, per_context_token=1e-8
)


def tier(num_blocks: int = 10**5, max_tokens: int = 8192, model=MODEL) -> TierSpec:
    """One replica on the linear test model."""
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=max_tokens)
    return TierSpec("t", 1, num_blocks, model, limits)


P3 = fs.Protocol(per_client=3)


def test_one_client_sees_one_prefill_then_decodes():
    res = fs.replay(tier(), isl=100, osl=10, concurrency=1, proto=P3)
    assert res["sim_ttft_ms"] == pytest.approx((0.005 + 2e-5 * 100) * 1e3)
    # decode i (i = 1..9) computes token 100 + i over a context that includes it
    decode = [0.005 + 1e-4 + 1e-8 * (100 + i) for i in range(1, 10)]
    assert res["sim_tpot_ms"] == pytest.approx(np.mean(decode) * 1e3)


def test_workload_chains_each_client_and_staggers_round_zero():
    proto = fs.Protocol(per_client=4)
    work = fs.closed_loop_workload(isl=50, osl=5, concurrency=3, proto=proto, gap_s=0.25)
    assert list(work.follows) == [-1, -1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert list(work.arrival_s[:3]) == [0.0, 0.25, 0.5]
    res = simulate([tier()], work)
    for i in range(3, 12):  # each request arrives exactly when its client's previous finishes
        assert res.arrival_s[i] == res.finish_s[i - 3]


@settings(max_examples=25, deadline=None)
@given(
    conc=st.integers(1, 12),
    isl=st.integers(1, 600),
    osl=st.integers(2, 40),
    stagger=st.booleans(),
)
def test_replay_is_bounded_by_an_idle_replica(conc, isl, osl, stagger):
    """Sharing the replica can only slow a request down: TTFT and TPOT are at least those of a
    lone client."""
    proto = fs.Protocol(stagger=stagger, per_client=3)
    alone = fs.replay(tier(max_tokens=512), isl, osl, 1, proto)
    shared = fs.replay(tier(max_tokens=512), isl, osl, conc, proto)
    assert shared["sim_ttft_ms"] >= alone["sim_ttft_ms"] * (1 - 1e-9)
    assert shared["sim_tpot_ms"] >= alone["sim_tpot_ms"] * (1 - 1e-9)


def test_measured_rounds_leave_out_warm_up_and_cool_down():
    assert fs.Protocol(per_client=6).rounds() == slice(1, 5)
    assert fs.Protocol(per_client=2, all_rounds=True).rounds() == slice(0, 2)
    with pytest.raises(ValueError, match="per-client"):
        fs.Protocol(per_client=2)
    with pytest.raises(ValueError, match="length-spread"):
        fs.Protocol(spread=1.0)


def test_length_spread_keeps_lengths_in_range_and_is_seeded():
    proto = fs.Protocol(spread=0.2, seed=3)
    a, b = proto.lengths(1000, 500, 0), proto.lengths(1000, 500, 0)
    assert np.array_equal(a, b) and not np.array_equal(a, proto.lengths(1000, 500, 1))
    assert a.min() >= 800 and a.max() <= 1200 and abs(a.mean() - 1000) < 20
    assert fs.Protocol(spread=0.5).lengths(2, 50, 1).min() == 2  # TPOT needs two outputs


def test_loadgen_flag_fills_unset_options_only():
    def proto(*argv: str) -> fs.Protocol:
        return fs.protocol_from_args(fs.build_parser().parse_args(argv))

    assert proto() == fs.Protocol()
    assert proto("--loadgen", "--per-client", "4") == fs.Protocol(
        stagger=False, per_client=4, all_rounds=True, spread=0.1
    )
    assert proto("--no-stagger", "--length-spread", "0.2").spread == 0.2


def test_cycle_estimate_is_prefill_plus_decodes():
    # 1000-token prompt in 512-token chunks: two chunk-sized steps (an upper bound)
    prefill = 2 * (0.005 + 2e-5 * 512)
    decode = 0.005 + 1e-4 * 4 + 1e-8 * 4 * (1000 + 10)
    assert fs.cycle_estimate(MODEL, 1000, 20, 4, max_tokens=512) == pytest.approx(
        prefill + 20 * decode
    )


def test_small_kv_cache_preempts_and_still_finishes():
    res = fs.replay(tier(num_blocks=100), isl=200, osl=200, concurrency=8, proto=P3)
    assert res["preemptions"] > 0 and res["sim_tpot_ms"] > 0


def test_budget_chunks_long_prompts():
    seen = []

    class Spy(LinearStepModel):
        def step_time(self, shape: StepShape) -> float:
            seen.append(shape.num_tokens)
            return super().step_time(shape)

    fs.replay(tier(max_tokens=256, model=Spy()), isl=1000, osl=2, concurrency=1, proto=P3)
    assert max(seen) == 256


def test_summary_line_format():
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
    rows = fs.load_rows()
    row = rows[(rows.backend == "vllm") & (rows.model == "70B") & (rows.tp_size == 8)].iloc[[0]]
    res = fs.run(row, "fp8", P3, jobs=1)
    assert res["sim_tpot_ms"].iloc[0] > 0 and np.isfinite(res["tpot_err"].iloc[0])
    assert res["preemptions"].iloc[0] == 0
