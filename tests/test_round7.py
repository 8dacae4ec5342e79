"""Round 7 of hostile input: KV offload's load-or-recompute rule and its levels, the harness's
fp8_block precision, the block-FP8 rule check script and the planner's notes and reasons.

Each test pins a fix (it failed before it) and, where a user sees one, the exact line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_kv_offload import offload_tier

from tiersim.cli import main as tiersim_main
from tiersim.engine import Workload, simulate
from tiersim.engine.prefix_cache import PrefixCache, use_prefill_model
from tiersim.errors import Note
from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
CODE_TRACE = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = tiersim_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- 1. a last offload level that holds no block -------------------------------------------

def _offload_yaml(tmp_path: Path, **host) -> Path:
    """The bundled kv_offload scenario on its first two minutes, with one host level whose keys
    ``host`` overrides (no SSD level)."""
    doc = yaml.safe_load(bundled("scenarios", "kv_offload.yaml").read_text())
    doc["trace"] = {"path": str(bundled("traces", "mooncake_synthetic.parquet")),
                    "window": [0, 120]}
    level = {"name": "host", "capacity_gb": 200, "read_gb_s": 50, "write_gb_s": 50, **host}
    doc["tiers"][0]["scheduler"]["kv_offload"] = [level]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_last_level_holding_no_block_is_left_out_with_a_note(tmp_path):
    """capacity_gb: 0 dropped every block the GPU wrote to it, yet charged each write: at
    write_gb_s 0.01 the first two minutes of Mooncake lasted hours (the whole trace 150,854 s
    instead of 420 s on one test fleet)."""
    path = _offload_yaml(tmp_path, capacity_gb=0, write_gb_s=0.01)
    with pytest.warns(Note) as notes:
        scenario = load_scenario(path)
    line = next(i + 1 for i, text in enumerate(path.read_text().splitlines())
                if "capacity_gb" in text)
    assert [str(n.message) for n in notes] == [
        f"{path}: line {line}: tiers[0].scheduler.kv_offload[0].capacity_gb: 0 GB holds no "
        f"prompt block (one is 50.3 MB per GPU on tier 'bf16'), so level 'host' is left out, as "
        f"if not listed (evicted blocks are dropped, not written)"]
    empty = run_scenario(scenario).to_json()
    doc = yaml.safe_load(path.read_text())
    del doc["tiers"][0]["scheduler"]["kv_offload"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    none = run_scenario(load_scenario(path)).to_json()
    assert empty["duration_s"] == none["duration_s"] < 200
    assert empty["tiers"] == none["tiers"]


def test_a_first_level_holding_no_block_is_left_out_with_a_note(tmp_path):
    """A host level of capacity_gb: 0 above the SSD handed each block on at once: the GPU paid
    the host's 50 GB/s write instead of the SSD's 3 GB/s one (TTFT p50 0.173 s instead of
    1.087 s over the whole trace)."""
    path = _offload_yaml(tmp_path, capacity_gb=0)
    doc = yaml.safe_load(path.read_text())
    ssd = {"name": "ssd", "capacity_gb": 2000, "read_gb_s": 6, "write_gb_s": 3}
    doc["tiers"][0]["scheduler"]["kv_offload"].append(ssd)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.warns(Note) as notes:
        scenario = load_scenario(path)
    line = next(i + 1 for i, text in enumerate(path.read_text().splitlines())
                if "capacity_gb: 0" in text)
    assert [str(n.message) for n in notes] == [
        f"{path}: line {line}: tiers[0].scheduler.kv_offload[0].capacity_gb: 0 GB holds no "
        f"prompt block (one is 50.3 MB per GPU on tier 'bf16'), so level 'host' is left out, as "
        f"if not listed (evicted blocks move down to level 'ssd', at its write_gb_s)"]
    empty = run_scenario(scenario).to_json()
    doc["tiers"][0]["scheduler"]["kv_offload"] = [ssd]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    ssd_only = run_scenario(load_scenario(path)).to_json()
    assert empty["duration_s"] == ssd_only["duration_s"]
    assert empty["tiers"] == ssd_only["tiers"]
    assert list(empty["tiers"]["bf16"]["prefix_hit_by_level"]) == ["gpu", "ssd"]


def test_a_level_that_holds_blocks_is_kept_without_a_note(tmp_path, recwarn):
    scenario = load_scenario(_offload_yaml(tmp_path, capacity_gb=0.06))  # one 50.3 MB block
    assert not [w for w in recwarn if issubclass(w.category, Note)]
    tier = run_scenario(scenario).to_json()["tiers"]["bf16"]
    assert list(tier["prefix_hit_by_level"]) == ["gpu", "host"]


# ---- 2. the rule asks the step model once per shape -------------------------------------------

class CountingModel:
    """A step model that counts the prefill shapes it is asked for."""

    def __init__(self):
        self.asked = []

    def step_time(self, shape) -> float:
        self.asked.append(shape.prefill_chunks)
        new, done = shape.prefill_chunks[0]
        return 0.01 + 1e-5 * new + 1e-7 * done


def test_prefill_times_are_asked_once_per_shape_across_a_tiers_replicas():
    """A cache-aware balancer asks every replica's cache at every dispatch; each lookup that
    found hits below asked the step model again (21% more engine time on 32 replicas)."""
    tier = offload_tier(host_blocks=4, hbt=16)
    model, memo = CountingModel(), {}
    caches = [PrefixCache(2, 16, tier.limits.kv_levels, 2.0) for _ in range(2)]
    for cache in caches:
        use_prefill_model(cache, model, tier.limits, memo)
    for cache in caches:
        for _ in range(3):
            assert cache.prefill_s(16, 48) == pytest.approx(0.01 + 32e-5 + 16e-7)
    assert model.asked == [((32, 16),)]


def test_the_prefill_memo_is_bounded(monkeypatch):
    import tiersim.engine.prefix_cache as pc

    monkeypatch.setattr(pc, "PREFILL_MEMO_LIMIT", 4)
    tier, memo = offload_tier(host_blocks=4, hbt=16), {}
    cache = PrefixCache(2, 16, tier.limits.kv_levels, 2.0)
    use_prefill_model(cache, CountingModel(), tier.limits, memo)
    for end in range(1, 50):
        cache.prefill_s(0, end)
    assert len(memo) <= 4


@pytest.mark.parametrize(("prompt", "hashes"), [
    (1, lambda i: [7]),  # one-token prompts: nothing to skip
    (16 * 40, lambda i: list(range(40))),  # every request shares one long prefix
    (1, lambda i: list(range(30))),  # more hashes than the prompt has blocks
    (16 * 6 + 1, lambda i: list(range(6)) + [1000 + i % 3]),  # a 1-token last block
])
def test_edge_traces_lose_no_request_and_stay_within_the_bound(prompt, hashes):
    n = 60
    work = Workload(np.arange(n) * 0.01, np.full(n, prompt), np.full(n, 3),
                    np.zeros(n, dtype=np.int64), prefix_hashes=[hashes(i) for i in range(n)],
                    hash_block_tokens=16)
    for read_bw in (1.0, 1e9):
        spec = offload_tier(num_blocks=200, prefix_cache_fraction=0.05, host_blocks=8,
                            read_bw=read_bw, hbt=16)
        res = simulate([spec], work)
        s = res.prefix_stats["t"]
        assert not res.dropped.any() and np.all(np.isfinite(res.finish_s))
        assert sum(s.hit_tokens) + s.recomputed_tokens <= s.bound_tokens <= s.prompt_tokens
        assert s.offload_loads + s.offload_recomputes <= n
        if prompt == 1:  # no token to skip: no block below is loaded or recomputed
            assert s.offload_loads == s.offload_recomputes == 0


def test_a_prompt_with_no_token_to_skip_neither_loads_nor_recomputes():
    # long prompts fill the cache and push blocks below; one-token prompts naming the same
    # blocks find them there, but skip nothing (their one token is always computed)
    n = 60
    long_ = np.arange(n) % 2 == 0
    prompts = np.where(long_, 16 * 40, 1)
    work = Workload(np.arange(n) * 0.01, prompts, np.full(n, 3), np.zeros(n, dtype=np.int64),
                    prefix_hashes=[list(range(40)) for _ in range(n)], hash_block_tokens=16)
    for read_bw in (1.0, 1e12):
        spec = offload_tier(num_blocks=200, prefix_cache_fraction=0.05, host_blocks=64,
                            read_bw=read_bw, hbt=16)
        res = simulate([spec], work)
        s = res.prefix_stats["t"]
        assert s.offload_loads + s.offload_recomputes <= int(long_.sum())


# ---- 3. the harness's fp8_block precision ---------------------------------------------------

def _calibrate(capsys, *argv) -> tuple[int, str]:
    """``python -m tiersim.calibrate ARGV`` in this process: (exit status, stderr)."""
    pytest.importorskip("torch")
    from tiersim.calibrate.cli import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


FP8_BLOCK_MOE = ("fp8_block moe: not measured (the harness times block-FP8 dense GEMMs; a "
                 "per-expert loop of them would time the host, not the layer)")


def test_fp8_block_with_moe_only_says_why_nothing_was_measured(tmp_path, capsys):
    """It said 'every selected table was skipped (first -: -)'."""
    out = tmp_path / "p.json"
    code, err = _calibrate(capsys, "--device", "cpu", "--quick", "--precisions", "fp8_block",
                           "--ops", "moe", "--out", out)
    assert code == 1 and not out.exists()
    assert err.strip().splitlines()[-1] == (
        f"Error: nothing measured: {FP8_BLOCK_MOE}; {out} not written; choose other --ops or "
        f"--precisions")
    assert f"note: {FP8_BLOCK_MOE}" in err.splitlines()


def _unaligned_config(tmp_path: Path) -> Path:
    """A dense config.json whose widths are no multiple of 128."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 200,
                                "max_position_embeddings": 32768,
                                "num_attention_heads": 4,
                                "num_key_value_heads": 2, "num_hidden_layers": 2,
                                "vocab_size": 1000, "intermediate_size": 300}))
    return path


UNALIGNED = ("fp8_block gemm: left out qkv n=400 k=200, o n=200 k=200, lm_head n=1000 k=200, "
             "gate_up n=600 k=200, down n=200 k=300 (block-FP8 checkpoints keep the router and "
             "lm_head in bf16; blocks need n and k multiples of 128)")


def test_fp8_block_gemms_a_config_cannot_block_are_named(tmp_path, capsys):
    """Nothing measured said 'first -: -'; with the overhead measured, the run wrote a
    'complete' profile and printed nothing about the GEMMs it left out."""
    config, out = _unaligned_config(tmp_path), tmp_path / "p.json"
    code, err = _calibrate(capsys, "--device", "cpu", "--config", config, "--precisions",
                           "fp8_block", "--ops", "gemm", "--out", out)
    assert code == 1 and not out.exists()
    assert err.strip().splitlines()[-1] == (
        f"Error: nothing measured: {UNALIGNED}; {out} not written; choose other --ops or "
        f"--precisions")
    code, err = _calibrate(capsys, "--device", "cpu", "--config", config, "--precisions",
                           "fp8_block", "--ops", "overhead,gemm", "--out", out)
    assert code == 0 and out.exists()
    assert [line for line in err.splitlines() if line.startswith("note:")] == [
        f"note: {UNALIGNED}"]


def test_fp8_block_leaving_out_only_the_router_and_lm_head_is_no_note(tmp_path, capsys):
    code, err = _calibrate(capsys, "--device", "cpu", "--quick", "--precisions", "fp8,fp8_block",
                           "--ops", "gemm,moe", "--out", tmp_path / "p.json")
    assert code == 0 and "note:" not in err  # as checkpoints ship; fp8 measures the MoE
    doc = json.loads((tmp_path / "p.json").read_text())
    assert FP8_BLOCK_MOE in doc["provenance"]["notes"]


@pytest.mark.parametrize(("flag", "value", "twice"), [
    ("--precisions", "fp8_block,fp8,fp8_block", "fp8_block"),
    ("--kv-dtypes", "bf16,bf16", "bf16"),
    ("--ops", "gemm,overhead,gemm", "gemm"),
])
def test_a_value_named_twice_is_refused(tmp_path, capsys, flag, value, twice):
    """A repeated precision measured every table twice, and the profile written then failed
    to load ('tables[2]: duplicates tables[0]')."""
    out = tmp_path / "p.json"
    code, err = _calibrate(capsys, "--device", "cpu", "--quick", flag, value, "--out", out)
    assert code == 1 and not out.exists()
    assert err.strip() == f"Error: {flag} '{value}': names {twice} twice; name each once"


# ---- 4. benchmarks/blockfp8_rule.py -----------------------------------------------------------

@pytest.fixture(scope="module")
def rule_script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blockfp8_rule

    return blockfp8_rule


def _profile(path: Path, gpu: str = "H200", ms=(4, 16, 64)) -> Path:
    """A minimal harness profile with one fp8_block GEMM table (Qwen3-235B's qkv at TP 4)."""
    path.write_text(json.dumps({
        "schema": "tiersim.profile/1", "name": "p", "gpu": gpu,
        "provenance": {"source": "harness"}, "overhead_s": {"value": 3e-6, "source": "harness"},
        "tables": [{"op": "gemm", "precision": "fp8_block", "source": "harness",
                    "key": {"n": 2304, "k": 4096}, "axes": {"m": list(ms)},
                    "latency_s": [1e-5 * (i + 1) for i in range(len(ms))],
                    "kernel": "cuBLASLt block-scaled"}]}))
    return path


@pytest.mark.parametrize("max_m", ["0", "-5"])
def test_rule_check_refuses_a_max_m_below_one(rule_script, tmp_path, capsys, max_m):
    """It said the profile had no fp8_block gemm table (it had)."""
    path = _profile(tmp_path / "P.json")
    assert rule_script.main([str(path), "--max-m", max_m]) == 1
    assert capsys.readouterr().err.strip() == (f"error: --max-m {max_m}: must be a whole number "
                                               f">= 1 (the largest m compared; default 512)")


def test_rule_check_says_when_no_point_is_at_or_below_max_m(rule_script, tmp_path, capsys):
    path = _profile(tmp_path / "P.json")
    assert rule_script.main([str(path), "--max-m", "2"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: {path}: no fp8_block gemm point at m <= 2 (the smallest measured is m = 4); "
        f"raise --max-m")


def test_rule_check_prints_no_empty_range(rule_script, tmp_path, capsys):
    """With --max-m 8 it printed 'graph-read rule / measured block-FP8, 32 <= m <= 8: median
    no points' and named 16 as the first range's top."""
    assert rule_script.main([str(_profile(tmp_path / "P.json")), "--max-m", "8"]) == 0
    tail = capsys.readouterr().out.strip().splitlines()[-1]
    assert tail.startswith("graph-read rule / measured block-FP8, 1 <= m <= 8: median ")


def test_rule_check_names_a_shipped_profile_of_no_modelled_gpu(rule_script, tmp_path, capsys):
    """It said only "unknown GPU 'cpu'; known GPUs: H200, H100, B200", naming no file or flag."""
    harness = _profile(tmp_path / "P.json", gpu="cpu")
    shipped = _profile(tmp_path / "S.json", gpu="cpu")
    assert rule_script.main([str(harness), "--shipped", str(shipped)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: --shipped {shipped}: a profile of cpu, which tiersim does not model (unknown "
        f"GPU 'cpu'; known GPUs: H200, H100, B200, B300); name a profile of one of those GPUs")


# ---- 5. tiersim plan ----------------------------------------------------------------------------

def _plan_yaml(tmp_path: Path, trace: Path, floor: float, tiers=("w4a16", "bf16"),
               **sched) -> Path:
    """A floor-routed plan on one minute of the code trace (roofline)."""
    acc = {"nvfp4": (0.99, 0.55), "w4a16": (0.99, 0.6), "fp8": (1.0, 0.76), "bf16": (1.0, 0.8)}
    doc = {"name": "t", "seed": 0, "model": "Qwen3-Coder-30B-A3B", "profile": None,
           "trace": {"path": str(trace), "window": [240, 300]},
           "workload": {"difficulty": {"kind": "three_type", "p_hopeless": 0.14,
                                       "hint_auroc": 0.72}},
           "tiers": [{"name": t, "precision": t, "replicas": 1, "cost_per_gpu_hour": 3.5,
                      "accuracy": {"easy": acc[t][0], "hard": acc[t][1], "hopeless": 0.0},
                      **({"scheduler": sched} if sched else {})} for t in tiers],
           "router": {"policy": "floor"}, "slo": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1},
           "accuracy_floor": floor}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_plan_names_requests_longer_than_the_context(tmp_path, capsys):
    """It said 'more replicas do not help ...: a single request's step is too slow for the
    SLO' and tried every GPUs-per-replica value (48 simulations) for requests no fleet
    could serve."""
    code, out, _ = run_cli(capsys, "plan", _plan_yaml(tmp_path, CODE_TRACE, 0.78,
                                                      max_model_len=2000),
                           "--out", tmp_path / "p", "--no-report")
    assert code == 1  # no fleet meets the constraints
    assert "step is too slow" not in out
    for tier in ("w4a16", "bf16"):
        assert (f"{tier}: latency: 90 requests are longer (prompt + output) than their tier's "
                f"context ({tier}'s max_model_len 2,000) and are dropped at any size; raise "
                f"tiers[].scheduler.max_model_len (up to the model's context) or leave them out "
                f"of the trace (") in out
    assert json.loads((tmp_path / "p" / "plan.json").read_text())["simulations"] <= 12


def test_plan_notes_unused_label_columns_once(tmp_path, capsys):
    """A guard, not a fix: the planner now ignores the router's floor notes while it searches;
    the trace's unused label columns are still noted, once (not once per design)."""
    df = pd.read_parquet(CODE_TRACE)
    df["correct_fp8x"] = np.arange(len(df)) % 5 > 0
    trace = tmp_path / "labels.parquet"
    df.to_parquet(trace)
    path = _plan_yaml(tmp_path, trace, 0.999, tiers=("w4a16", "fp8", "bf16"))
    code, out, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report")
    assert code == 1 and "no fleet meets the constraints" in out  # no planned run, no 2nd note
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    # round 52: priced over the served requests, w4a16 costs more per request than fp8 at
    # one price per hour, and the tier-order note says so (once too)
    assert [n for n in notes if "correct_" in n] == [
        f"note: {path}: the trace's correct_fp8x columns name none of the fleet's tiers "
        f"(correct_<tier>) and are not used; name the tiers after them to use the labels"]
    assert len(notes) == len(set(notes)) == 2 and "'w4a16' and 'fp8' cost the same" in notes[1]


def test_a_plan_that_finds_a_fleet_notes_unused_labels_once(tmp_path, capsys):
    """The planned run raised the note a second time, and for a smaller fleet with other words
    (its tier list): each distinct note is now printed once per command, in one wording."""
    df = pd.read_parquet(CODE_TRACE)
    df["correct_fp8x"] = np.arange(len(df)) % 5 > 0
    trace = tmp_path / "labels.parquet"
    df.to_parquet(trace)
    path = _plan_yaml(tmp_path, trace, 0.5)
    code, out, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report")
    assert code == 0 and "no fleet meets the constraints" not in out
    # the tier-order note (round 53: w4a16 at BF16's price is the dearer per request at this
    # load) is another note, once; the labels' note is the one this test is about
    assert [line for line in err.splitlines() if line.startswith("note:")
            and "listed first, costs more per request" not in line] == [
        f"note: {path}: the trace's correct_fp8x columns name none of the fleet's tiers "
        f"(correct_<tier>) and are not used; name the tiers after them to use the labels"]
