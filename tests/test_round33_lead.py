"""Round 33 (lead): the checkpoint a quantized row of a BF16 release ran, in the fidelity replay."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fidelity_silicon as fs  # noqa: E402

from tiersim.hardware import get_model  # noqa: E402


def row(**overrides) -> dict:
    """A vLLM H200 row of meta-llama's Llama-3.1-70B (a BF16 release) at TP 1."""
    base = {"id": "r", "backend": "vllm", "backend_version": "0.12.0", "mode": "agg",
            "model_path": "meta-llama/Llama-3.1-70B", "system": "h200_sxm", "precision": "fp8",
            "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "isl": 1024, "osl": 8192,
            "batch_size": 32, "tp_size": 1, "pp_size": 1, "attention_dp_size": 1.0,
            "moe_tp_size": 1.0, "moe_ep_size": 1.0, "silicon_ttft_ms": 474.0,
            "silicon_tpot_ms": 37.8}
    return {**base, **overrides}


def test_an_fp8_row_of_a_bf16_release_runs_nvidias_fp8_export_and_its_fp8_kv_cache():
    """The row's FP8 run is NVIDIA's ModelOpt export (its config ships with
    aiconfigurator-core): FP8 weights and, as vLLM's --kv-cache-dtype auto reads its
    kv_cache_quant_algo, an FP8 KV cache, twice the tokens of the BF16 cache the replay gave
    it before. The label and aiconfigurator's model stay the model's."""
    pytest.importorskip("aiconfigurator_core")
    spec = fs.row_spec(row())
    assert spec.name == fs.row_label(row()) == "Llama-3.1-70B"
    assert spec.aic == "meta-llama/Meta-Llama-3.1-70B"
    assert spec.tiersim.endswith("nvidia--Llama-3.1-70B-Instruct-FP8_config.json")
    case = fs.case_of(row())
    assert case.precision == "checkpoint" and get_model(case.model).kv_cache == "fp8"
    before = dataclasses.replace(case, model="llama-3.1-70b", precision="fp8")  # BF16 config
    exported, bf16_cache = (fs.engine_kv_blocks(c, "auto", {}) for c in (case, before))
    assert 1.9 * bf16_cache < exported < 2.1 * bf16_cache  # the same weights, half the bytes


def test_rows_without_such_an_export_keep_their_checkpoint():
    """An fp4 row of the same model (no NVIDIA FP4 config of it ships), a BF16 row, and the
    FP8 rows of nvidia's 8B checkpoint (its own path: no config ships) are served as before."""
    pytest.importorskip("aiconfigurator_core")
    assert fs.row_spec(row(precision="fp4")).tiersim == "llama-3.1-70b"
    assert fs.case_of(row(precision="fp4")).precision == "nvfp4"
    assert fs.row_spec(row(precision="bf16")).tiersim == "llama-3.1-70b"
    eight = row(model_path="nvidia/Llama-3.1-8B-Instruct-FP8")
    assert fs.row_spec(eight).tiersim == "llama-3.1-8b"
    assert fs.case_of(eight).precision == "fp8"


def test_prompt_blocks_no_tier_caches_are_noted(tmp_path, capsys):
    """Mooncake's trace names its prompts' blocks; a fleet that caches no prefix replayed it
    without a word, its prefix figures null (the converse of round 22's note)."""
    import json

    from test_round19 import run_cli
    from test_round22_serving import SCENARIOS

    text = (SCENARIOS / "tiny.yaml").read_text().replace(
        "path: azure2023_code.parquet\n  window: [240, 360]",
        "path: mooncake_synthetic.parquet\n  window: [0, 20]")
    scenario = tmp_path / "m.yaml"
    scenario.write_text(text)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    note = (f"note: {scenario}: the requests name their prompts' blocks (prefix_hashes), but no "
            "tier caches prefixes, so no prompt reuses another's: every prompt is computed whole "
            "and the prefix figures stay empty; set scheduler.enable_prefix_caching: true on a "
            "tier to replay the reuse")
    assert note in err.splitlines()
    notes = json.loads((tmp_path / "out" / "summary.json").read_text())["notes"]
    assert note.removeprefix(f"note: {scenario}: ") in [n.split(": ", 1)[-1] for n in notes]
    cached = tmp_path / "c.yaml"
    cached.write_text(text.replace("    precision: bf16\n    replicas: 1\n",
                                   "    precision: bf16\n    replicas: 1\n"
                                   "    scheduler: {enable_prefix_caching: true}\n"))
    code, err = run_cli(capsys, "run", cached, "--no-baselines")
    assert code == 0, err
    assert "prompts' blocks" not in err


def test_the_harness_given_the_importers_from_says_which_command_imports():
    """``python -m tiersim.calibrate --from aiconfigurator`` said 'unrecognized arguments:
    --from; see tiersim calibrate --help', where ``tiersim calibrate --from`` is valid: the
    import is that command's, not the harness's."""
    import subprocess

    done = subprocess.run([sys.executable, "-m", "tiersim.calibrate", "--from", "aiconfigurator",
                           "--out", "p.json"], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "Error: --from is the import of NVIDIA's tables, which `tiersim calibrate --from "
        "aiconfigurator --out P.json` runs (tiersim[aic]); python -m tiersim.calibrate runs the "
        "harness alone, measuring this machine; see tiersim calibrate --help"]
