"""benchmarks/tpot_breakdown.py: one model's TPOT error by row, beside tiersim's decode step
alone (docs/fidelity.md, "Llama-3.1-8B's TPOT, row by row"). Fed a CSV whose predictions are
made up (measured x 1.1), so nothing here depends on the calibration."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import tpot_breakdown as tb  # noqa: E402


@pytest.fixture(scope="module")
def rows_csv(tmp_path_factory) -> Path:
    """The 21 measured vLLM Llama-3.1-8B rows, each 'replayed' 10% slow with the 100-prompt
    pool its campaign is replayed with."""
    rows = tb.fs.load_rows()
    rows = rows[(rows["backend"] == "vllm") & (rows["model"] == "Llama-3.1-8B")].copy()
    rows["sim_tpot_ms"] = rows["silicon_tpot_ms"] * 1.1
    rows["prompt_pool"] = 100
    path = tmp_path_factory.mktemp("breakdown") / "rows.csv"
    rows.to_csv(path, index=False)
    return path


def test_each_row_and_the_groups_read_the_replay(rows_csv, capsys):
    assert tb.main(["--csv", str(rows_csv)]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ") and "(+10%)" in line]
    assert len(table) == 21  # every row, each 10% slow
    assert "all             n= 21  median |TPOT error|  10.0%  signed +10.0%" in out
    assert "osl 100         n= 12" in out and "TP 8            n=  2" in out


def test_a_rows_columns_are_the_replay_over_the_decode_step_alone(rows_csv):
    res = pd.read_csv(rows_csv)
    b = tb.breakdown(res)
    assert len(b) == 21
    assert np.allclose(b["sim_dec"], 1.1 * b["meas_dec"])
    spread = (b["osl"] - 1) / b["clients"]
    assert np.allclose(b["extra_sim"] - b["extra_meas"], 0.1 * b["meas"] * spread)
    # 8 requests a client from 100 prompts: at 112 clients every prompt is sent first once
    first = b.loc[b["clients"] == 112, "first"].iloc[0]
    assert first == pytest.approx(100 / (8 * 112))


def test_a_csv_that_is_not_the_benchmarks_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert tb.main(["--csv", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a fidelity_silicon.py --csv file" in err
