"""Round 22 of hostile input, model layouts and KV-cache formats (models3): each a failure
found from outside and fixed (the exact line a user sees)."""

from __future__ import annotations

from pathlib import Path

from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def test_an_e5m2_kv_cache_says_why_it_is_refused(tmp_path, capsys):
    """``kv_dtype: fp8_e5m2`` read as an unknown dtype, though vLLM knows it: its FLASH_ATTN
    backend (Hopper's default) stops on it in every step (``get_fp8_dtype_for_flashattn``:
    "Unrecognized FP8 dtype"), and tiersim's FP8 attention timings are E4M3 kernels'. The line
    now says so, and what to write."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("    precision: w4a16",
                                     "    precision: w4a16\n    kv_dtype: fp8_e5m2", 1))
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: line 16: tiers[0].kv_dtype: KV-cache dtype 'fp8_e5m2' is not "
        "modelled: vLLM's FLASH_ATTN backend (its default on Hopper) stops on it ('Unrecognized "
        "FP8 dtype'), and tiersim times FP8 attention with E4M3 kernels; use 'fp8' (E4M3)")
