"""Round 21 of hostile input on the serving techniques and routing inputs (agentic sessions,
speculative decoding, disaggregation, KV offload, prefix and response caches, routing and
cascades), each a failure found from outside and fixed: the exact line a user sees, or the
number that was wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"


def test_speculative_decoding_on_data_parallel_moe_ranks_is_refused(tmp_path, capsys):
    """vLLM steps a MoE model's data-parallel ranks in lockstep; tiersim models that only
    without speculative decoding, and quietly ran a speculative tier's ranks independently
    (each rank's step its own, faster than vLLM's)."""
    text = (SCENARIOS / "spec_decode.yaml").read_text().replace(
        "model: Llama-3.1-70B", "model: Qwen3-Coder-30B-A3B").replace(
        "    gpus_per_replica: 2\n", "    gpus_per_replica: 2\n    data_parallel: 2\n")
    scenario = tmp_path / "spec.yaml"
    scenario.write_text(text)
    line = error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "out",
                               "--no-baselines"))
    assert line == (f"Error: {scenario}: line 26: tiers[0].data_parallel: Qwen3-Coder-30B-A3B "
                    "is a MoE model, whose data-parallel ranks vLLM steps in lockstep, which "
                    "tiersim does not model with speculative decoding; set data_parallel: 1 or "
                    "drop speculative")
    assert not (tmp_path / "out").exists()


def test_speculative_decoding_on_data_parallel_dense_ranks_still_runs(tmp_path, capsys):
    """A dense model's data-parallel ranks step on their own in vLLM too: still accepted."""
    text = (SCENARIOS / "spec_decode.yaml").read_text().replace(
        "model: Llama-3.1-70B", "model: Llama-3.1-8B").replace(
        "    gpus_per_replica: 2\n", "    gpus_per_replica: 2\n    data_parallel: 2\n").replace(
        "window: [0, 120]", "window: [0, 20]")
    scenario = tmp_path / "spec.yaml"
    scenario.write_text(text)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err


def test_a_prefix_cache_holding_no_prompt_block_is_noted(tmp_path, capsys):
    """``prefix_cache_fraction: 0.0001`` left each replica's prefix cache 73 tokens, less than
    one 512-token prompt block: caching was on, nothing was ever cached, and the run said
    nothing (its hit rate read 0 beside a 65% bound)."""
    text = (SCENARIOS / "prefix_cache.yaml").read_text().replace(
        "prefix_cache_fraction: 1.0", "prefix_cache_fraction: 0.0001")
    scenario = tmp_path / "prefix.yaml"
    scenario.write_text(text)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    assert ("note: tier bf16: scheduler.prefix_cache_fraction 0.0001 leaves its prefix cache "
            "73 tokens per replica (of 738,464), less than one 512-token prompt block, so it "
            "caches nothing and no prompt hits it; raise prefix_cache_fraction, or set "
            "enable_prefix_caching: false") in err.splitlines()


def test_a_prefix_cache_holding_a_block_is_not_noted(tmp_path, capsys):
    """The bundled scenario's cache draws no such note."""
    code, err = run_cli(capsys, "run", SCENARIOS / "prefix_cache.yaml", "--out",
                        tmp_path / "out", "--no-baselines")
    assert code == 0, err
    assert "prefix_cache_fraction" not in err


def test_an_empty_gpu_prefix_cache_above_offload_levels_says_where_blocks_go(tmp_path, capsys):
    """Beneath offload levels such a cache still hands every block down: the note says so."""
    text = (SCENARIOS / "kv_offload.yaml").read_text().replace(
        "prefix_cache_fraction: 1.0", "prefix_cache_fraction: 0.0001").replace(
        "path: mooncake_synthetic.parquet", "path: mooncake_synthetic.parquet\n  window: [0, 60]")
    scenario = tmp_path / "offload.yaml"
    scenario.write_text(text)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    assert ("note: tier bf16: scheduler.prefix_cache_fraction 0.0001 leaves its prefix cache "
            "73 tokens per replica (of 738,464), less than one 512-token prompt block, so it "
            "keeps no block on the GPU: each is written down to level 'host' as soon as it is "
            "computed; raise prefix_cache_fraction, or set enable_prefix_caching: false"
            ) in err.splitlines()


def _difficulty_trace(tmp_path: Path, n: int = 80) -> Path:
    """A CSV trace with a difficulty column in [0, 1]."""
    rng = np.random.default_rng(0)
    path = tmp_path / "difficulty.csv"
    pd.DataFrame({"request_id": np.arange(n), "arrival_s": np.sort(rng.uniform(0, 60, n)),
                  "input_tokens": rng.integers(50, 2000, n),
                  "output_tokens": rng.integers(10, 300, n),
                  "difficulty": rng.random(n)}).to_csv(path, index=False)
    return path


DIFFICULTY_SCENARIO = """\
name: d
model: Qwen3-Coder-30B-A3B
gpu: H200
profile: null
trace: {{path: {trace}}}
workload: {{difficulty: {difficulty}}}
tiers:
  - {{name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5, accuracy: 0.6}}
  - {{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5, accuracy: 0.65}}
router: {{policy: uniform}}
"""


