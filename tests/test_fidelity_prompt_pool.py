"""The fidelity benchmark's reused prompts: a campaign whose measured request rate is more than
its servers could prefill from fresh prompts is replayed as aiperf's default client sends it (a
pool of distinct prompts, drawn again and again, against a server that caches prefixes)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

from tiersim.engine import SchedulerLimits, TierSpec  # noqa: E402
from tiersim.perf.base import LinearStepModel  # noqa: E402

MODEL = LinearStepModel(
    overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4, per_context_token=1e-8
)
GAP_FOLDER = "/Users/harrli/projects/aic-auto-gap-analysis/data/h200_sxm/vllm/0.12.0"


def tier() -> TierSpec:
    """One replica on the linear test model, room for every prompt in its KV cache."""
    return TierSpec("t", 1, 10**5, MODEL, SchedulerLimits(max_num_seqs=256))


@pytest.mark.parametrize(("row", "expected"), [
    ({"silicon_data_source": f"source_file={GAP_FOLDER}/nvidia_Llama-3.1-8B-Instruct-FP8.csv; "
      "silicon_concurrency=64", "model_path": "nvidia/Llama-3.1-8B-Instruct-FP8",
      "backend": "vllm", "backend_version": "0.12.0"},
     f"{GAP_FOLDER}, nvidia/Llama-3.1-8B-Instruct-FP8, vllm 0.12.0"),
    ({"silicon_data_source": "source_file=2026-04-06.csv; model=Kimi-K2.5; ; "
      "measured=2026-03-27T00:00:00.000Z; wip=False", "model_path": "moonshotai/Kimi-K2.5",
      "backend": "vllm", "backend_version": "0.16.0"},
     "source_file=2026-04-06.csv, moonshotai/Kimi-K2.5, 2026-03-27, vllm 0.16.0"),
    ({"silicon_data_source": "db-dump/2026-04-27; config_id=606; workflow_run_id=305"},
     "db-dump/2026-04-27"),
])
def test_a_campaign_is_one_models_runs_from_one_source_date_and_version(row, expected):
    assert fs.campaign(row) == expected


def test_fresh_prompts_draw_no_pool():
    assert fs.Protocol().prompts(10) is None  # decided per campaign before a row replays
    assert fs.Protocol(pool=0).prompts(10) is None


def test_a_pool_draws_seeded_entries_within_it():
    drawn = fs.Protocol(pool=7, seed=3).prompts(500)
    assert drawn.min() >= 0 and drawn.max() < 7 and len(set(drawn)) == 7
    assert np.array_equal(drawn, fs.Protocol(pool=7, seed=3).prompts(500))
    with pytest.raises(ValueError, match="--prompt-pool must be >= 0"):
        fs.Protocol(pool=-1)


def test_requests_sending_one_prompt_share_its_lengths_and_blocks():
    proto = fs.Protocol(per_client=10, spread=0.3, pool=3)
    work = fs.closed_loop_workload(isl=100, osl=20, concurrency=4, proto=proto, gap_s=0.0)
    entry = proto.prompts(len(work))
    for i in range(len(work)):
        same = np.flatnonzero(entry == entry[i])
        assert set(work.input_tokens[same]) == {work.input_tokens[i]}
        assert set(work.output_tokens[same]) == {work.output_tokens[i]}
        hashes = list(work.prefix_hashes[i])
        assert len(hashes) == -(-int(work.input_tokens[i]) // fs.BLOCK_SIZE)
        assert all(list(work.prefix_hashes[j]) == hashes for j in same)
        other = np.flatnonzero(entry != entry[i])
        assert all(not set(hashes) & set(work.prefix_hashes[j]) for j in other)
    assert work.hash_block_tokens == fs.BLOCK_SIZE
    fresh = fs.closed_loop_workload(100, 20, 4, fs.Protocol(per_client=10), 0.0)
    assert fresh.prefix_hashes is None


def test_a_reused_prompt_is_found_cached_and_prefills_faster():
    """One client sends the same 2,000-token prompt four times: after the first, every block is
    cached and only the last block is computed (as vLLM, a hit is whole blocks of 16 below the
    last token: 1,984 tokens)."""
    fresh = fs.replay(tier(), 2000, 10, 1, fs.Protocol(per_client=4, pool=0))
    reused = fs.replay(tier(), 2000, 10, 1, fs.Protocol(per_client=4, pool=1))
    first = (0.005 + 2e-5 * 2000) * 1e3
    assert fresh["sim_ttft_ms"] == pytest.approx(first)
    hit = (0.005 + 2e-5 * 16) * 1e3
    assert reused["sim_ttft_ms"] == pytest.approx((first + 3 * hit) / 4)


def test_prefill_load_on_a_linear_model_is_the_rate_per_replica_times_a_packed_prompt(
        monkeypatch):
    """Two DP ranks, 8 clients, a 1,000-token prompt: 8 prompts fit one 8,192-token step, so a
    prompt costs an eighth of that step; the closed loop serves 8 / (TTFT + 99 TPOT) a second
    over the two ranks."""
    case = fs.Case(model="m", precision="fp8", tp=1, dp=2, ep=1, engine="vllm")
    monkeypatch.setattr(fs, "case_of", lambda row: case)
    monkeypatch.setattr(fs, "replica_tier", lambda *a, **k: (tier(), {}))
    row = {"isl": 1000, "osl": 100, "batch_size": 8, "silicon_ttft_ms": 100.0,
           "silicon_tpot_ms": 10.0}
    per_prompt = (0.005 + 2e-5 * 8000) / 8
    rate = 8 / (0.1 + 99 * 0.01) / 2
    assert fs.prefill_load(row, "auto") == pytest.approx(rate * per_prompt)
    long = dict(row, isl=10000)  # chunks of the budget: 8,192 then 1,808 tokens
    assert fs.prefill_load(long, "auto") == pytest.approx(
        rate * (0.005 + 2e-5 * 8192 + 0.005 + 2e-5 * 1808))


def test_run_gives_each_row_its_campaigns_prompts(monkeypatch):
    """``run`` decides the pool per campaign and records it; a pool given on the command line
    (or 0) holds for every row."""
    rows = pd.DataFrame({"id": ["a1", "a2", "a3", "b1"], "c": ["a", "a", "a", "b"],
                         "load": [1.5, 1.2, 0.4, 0.1], "silicon_ttft_ms": 1.0,
                         "silicon_tpot_ms": 1.0})
    monkeypatch.setattr(fs, "campaign", lambda row: row["c"])
    monkeypatch.setattr(fs, "_load_star", lambda args: args[0]["load"])
    monkeypatch.setattr(fs, "_LOADS", {})
    monkeypatch.setattr(fs, "simulate_row", lambda row, kv, proto, knobs: {
        "sim_ttft_ms": float(proto.pool), "sim_tpot_ms": 1.0})
    res = fs.run(rows, "auto", fs.Protocol(per_client=8), jobs=1)
    assert list(res["prompt_pool"]) == [100, 100, 100, 0]
    assert list(res["sim_ttft_ms"]) == [100.0, 100.0, 100.0, 0.0]  # what each row replayed
    assert list(res["campaign_load"].fillna(-1)) == [1.2, 1.2, 1.2, -1]
    forced = fs.run(rows, "auto", fs.Protocol(per_client=8, pool=0), jobs=1)
    assert list(forced["prompt_pool"]) == [0, 0, 0, 0]


def test_the_command_line_pool_holds_in_every_protocol():
    def proto(*argv: str) -> fs.Protocol:
        return fs.protocol_from_args(fs.build_parser().parse_args(argv))

    assert proto().pool is None
    assert proto("--prompt-pool", "0").pool == 0
    assert proto("--steady-state", "--prompt-pool", "7").pool == 7
    with pytest.raises(SystemExit):
        fs.main(["--fit", "--prompt-pool", "0"])


def test_prefill_load_is_the_measured_rate_times_the_prompts_prefill():
    rows = fs.load_rows()
    row = rows[(rows["model"] == "Llama-3.1-70B") & (rows["backend"] == "vllm")].iloc[0].to_dict()
    load = fs.prefill_load(row, "auto")
    assert 0 < load < 1
    slower = dict(row, silicon_ttft_ms=2 * row["silicon_ttft_ms"],
                  silicon_tpot_ms=2 * row["silicon_tpot_ms"])
    assert fs.prefill_load(slower, "auto") == pytest.approx(load / 2)
    assert np.isnan(fs.prefill_load(dict(row, conflict="filed twice"), "auto"))


def test_a_campaign_reuses_prompts_when_its_median_row_outruns_fresh_prefill(monkeypatch):
    nan = float("nan")
    loads = {"a": [0.2, 3.0, 0.3], "b": [1.2, 0.9, 1.5], "c": [0.5, 1.0, 1.0],
             "d": [1.8, 1.9], "e": [1.8, 1.9, nan]}  # d, e: too few rows to say what is typical
    rows = pd.DataFrame([{"c": c, "load": v} for c, vs in loads.items() for v in vs])
    monkeypatch.setattr(fs, "campaign", lambda row: row["c"])
    monkeypatch.setattr(fs, "_load_star", lambda args: args[0]["load"])
    monkeypatch.setattr(fs, "_LOADS", {})
    assert fs.reused_prompt_campaigns(rows, "auto", jobs=1) == {"b": 1.2}


def test_only_the_campaign_faster_than_fresh_prefill_reuses_prompts():
    """On the shipped H200 rows the rule picks one campaign: vLLM 0.12's Llama-3.1-8B runs,
    whose typical row finishes prompts faster than the GPU could prefill them (its Qwen3 runs,
    same harness, do not need it)."""
    rows = fs.load_rows()
    reused = fs.reused_prompt_campaigns(rows, "auto", jobs=1)
    llama = f"{GAP_FOLDER}, nvidia/Llama-3.1-8B-Instruct-FP8, vllm 0.12.0"
    assert list(reused) == [llama]
    assert reused[llama] > 1.1
    vllm = rows["backend"] == "vllm"
    gap_row = rows[(rows["model"] == "Llama-3.1-8B") & vllm].iloc[0]
    other = rows[(rows["model"] == "Qwen3-235B-FP8") & vllm].iloc[0]
    auto = fs.Protocol(per_client=8)
    assert fs.row_protocol(auto, gap_row.to_dict(), reused).pool == fs.AIPERF_PROMPT_POOL
    assert fs.row_protocol(auto, other.to_dict(), reused).pool == 0
    forced = fs.Protocol(per_client=8, pool=0)
    assert fs.row_protocol(forced, gap_row.to_dict(), reused) is forced


def test_the_report_names_each_campaign_replayed_with_reused_prompts():
    res = pd.DataFrame({"campaign": ["x", "x", "x", "y"],
                        "campaign_load": [1.4, 1.4, 1.4, np.nan],
                        "sim_tpot_ms": [10.0, 11.0, np.nan, 12.0]})  # one x row not replayed
    lines = fs.reuse_lines(res)
    assert lines[0].startswith("replayed with reused prompts (100 distinct")
    assert lines[1:] == ["  x: 2 rows, median prefill load 1.40", ""]
    assert fs.reuse_lines(res.iloc[2:]) == []
    assert fs.reuse_lines(pd.DataFrame({"campaign": ["x"]})) == []
