"""The fidelity benchmark's engine pairs: one checkpoint measured on one GPU and layout by two
engines, compared at the client counts both ran (a gap between engines that no
engine-independent model of the GPU closes)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402


def row(backend: str, clients: int, tpot: float, sim: float = np.nan, *, tp: int = 2,
        version: str | None = "1.0", mode: str = "agg", conflict=None,
        path: str = "org/Model-FP8", isl: int = 1000, osl: int = 100) -> dict:
    """One measured row as :func:`fs.run` returns it (only the columns the pairs read)."""
    return {"backend": backend, "backend_version": version, "model_path": path,
            "model": path.split("/")[1], "mode": mode, "conflict": conflict, "tp_size": tp,
            "isl": isl, "osl": osl, "attention_dp_size": np.nan, "moe_tp_size": np.nan,
            "moe_ep_size": np.nan,
            "batch_size": clients, "silicon_data_source": f"silicon_concurrency={clients}",
            "silicon_tpot_ms": tpot, "sim_tpot_ms": sim}


def test_two_engines_compare_inside_the_clients_both_ran():
    res = pd.DataFrame([
        row("vllm", 4, 50.0, 30.0), row("vllm", 8, 54.0, 32.4, osl=500),
        row("vllm", 64, 90.0, 60.0),
        row("sglang", 2, 15.0, 14.0), row("sglang", 4, 16.0, 16.0, isl=2000),
        row("sglang", 8, 20.0, 18.0, osl=500),
    ])
    pairs = fs.engine_pairs(res)
    assert len(pairs) == 1
    p = pairs.iloc[0]
    assert p["clients"] == (4, 8)  # sglang's fewest is 2, vllm's most is 64
    assert (p["engine_a"], p["engine_b"]) == ("vllm 1.0", "sglang 1.0")  # vLLM first
    assert (p["n_a"], p["n_b"]) == (2, 2)
    assert (p["tpot_a_ms"], p["tpot_b_ms"]) == (52.0, 18.0)
    assert (p["sim_a_ms"], p["sim_b_ms"]) == (31.2, 17.0)
    assert (round(p["err_a"], 6), round(p["err_b"], 6)) == (-40.0, -5.0)
    assert p["same_lengths"]  # both ran 1000/500
    line = fs.engine_pair_lines(res)[1]
    assert line == ("  Model-FP8 TP 2, 4-8 clients: vllm 1.0 52.0 ms (tiersim 31.2 ms, -40%, n=2) "
                    "/ sglang 1.0 18.0 ms (tiersim 17.0 ms, -5%, n=2) = 2.89; same lengths")


def test_no_pair_without_overlapping_clients_or_on_another_layout():
    res = pd.DataFrame([
        row("vllm", 16, 50.0), row("vllm", 32, 55.0),
        row("sglang", 2, 15.0), row("sglang", 4, 16.0),  # clients never overlap
        row("trtllm", 16, 40.0, tp=4),  # another layout
    ])
    assert fs.engine_pairs(res).empty
    assert fs.engine_pair_lines(res) == []


def test_rows_that_say_nothing_of_the_layout_are_left_out():
    res = pd.DataFrame([
        row("vllm", 4, 50.0), row("sglang", 4, 16.0, mode="disagg"),
        row("trtllm", 4, 20.0, conflict="its id says tp4 ep4"),
        row("trtllm", 4, 21.0, path="org/Other"),  # another checkpoint
    ])
    assert fs.engine_pairs(res).empty


def test_an_engine_not_replayed_prints_so():
    res = pd.DataFrame([row("sglang", 4, 16.0), row("trtllm", 4, 20.0, 22.0, version=None,
                                                    osl=200)])
    line = fs.engine_pair_lines(res)[1]
    assert line == ("  Model-FP8 TP 2, 4 clients: sglang 1.0 16.0 ms (not replayed, n=1) / "
                    "trtllm 20.0 ms (tiersim 22.0 ms, +10%, n=1) = 0.80; no same lengths")
