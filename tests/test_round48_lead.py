"""Round 48 (lead): a CSV trace's header is judged before its whole file is scanned.

The header checks read at most 64 kB; the NUL-byte scan reads every byte. A file that is not a
trace by its header (too many columns) is refused for that, whatever its rows hold, without the
scan (README, "Hostile input": a 205 MB CSV with a 200,000-column header is refused in about
0.4 ms). A file whose header is fine still has its NUL bytes found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def test_a_too_wide_header_is_refused_for_its_width_even_with_nul_bytes_below(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_bytes(",".join(f"c{i}" for i in range(1203)).encode() + b"\n1,2\n\0\0\0\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: has 1,203 columns or more, above the 1,000 a trace may "
                              "have; not a trace")


def test_a_good_header_with_nul_bytes_below_is_refused_for_the_nul(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes(b"arrival_time,prompt_tokens,output_tokens\n0,10,5\n\0\0\0\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (
        f"{path}: file line 3 holds a NUL byte, which no text trace holds (zeros a write cut "
        "short by a crash left, or damage); remove the NUL bytes (tr -d '\\000' < FILE > FIXED) "
        "or restore the file")


# --- a tier told its model's measured rows ran other weight formats (fresh48) ---------------


def test_a_tier_is_told_when_its_models_rows_ran_other_weight_formats():
    """All 60 H200 vLLM rows of Llama-3.1-70B ran NVIDIA's FP8 export. A BF16 tier of the
    model shares their shapes, and the fidelity line quoted their 3.9% as its own; it now says
    at which formats they were replayed. An FP8 tier, and an FP8 checkpoint served as it
    ships, serve what the rows did and read as before."""
    from tiersim import fidelity

    qwen = str(Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "configs"
               / "Qwen3-235B-A22B-FP8")
    tiers = {"bf16": ("Llama-3.1-70B", "bf16"), "fp8": ("Llama-3.1-70B", "fp8"),
             "ckpt": (qwen, "checkpoint"), "per_tensor": (qwen, "fp8")}
    line = fidelity.describe(fidelity.check_for("h200_aiconfigurator_vllm", tiers))
    rows = ("Llama-3.1-70B (rows of meta-llama/Llama-3.1-70B): 3.9% TPOT, 3.4% TTFT on its 60 "
            "rows, which the fit was made on")
    assert (f"tier bf16 (Llama-3.1-70B, bf16): {rows} (replayed 60 at FP8; this tier serves "
            "BF16); ") in line
    assert f"tier fp8 (Llama-3.1-70B, fp8): {rows}; " in line
    # the block-FP8 checkpoint as it ships serves its rows' formats; per-tensor FP8 does not
    assert "(replayed 51 at FP8 (block); this tier serves FP8)" in line.split("tier per_tensor")[1]
    assert line.count("this tier serves") == 2


def test_a_record_without_the_rows_formats_says_nothing_of_them():
    """A summary.json written before the record counted its rows' formats reads as it did."""
    from tiersim import fidelity

    check = fidelity.check_for("h200_aiconfigurator_vllm", {"bf16": ("Llama-3.1-70B", "bf16")})
    check["tiers"][0]["checked_model"].pop("formats_rows")
    assert "this tier serves" not in fidelity.describe(check)
