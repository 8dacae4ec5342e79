"""Round 27 (helper ``missing``): the fidelity benchmark imports, for each replayed row, every
table its step model reads that the profile lacks, and counts a row's anchored tables
whatever else its label says."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

from tiersim.perf import profile as profile_mod  # noqa: E402
from tiersim.perf.aiconfigurator import table_requests  # noqa: E402
from tiersim.perf.profile import table_name  # noqa: E402

QWEN_FP8 = str(fs.DATA / "configs" / "Qwen3-235B-A22B-FP8")
#: DeepGEMM's first grouped GEMM of Qwen3-235B-FP8's experts over TP 1 x DP 2
#: (2 x 1,536 / 2 wide, hidden 4,096): NVIDIA measured it, the profile before the dense grid
#: (4e2fcf2) did not hold it.
EXPERT_GEMM = "gemm fp8_block n=1536 k=4096"


def test_table_requests_with_deepgemm_ask_for_the_expert_gemms():
    """A replica on DeepGEMM reads its experts from the block-FP8 GEMM tables: those are
    requested (they were not: the probe assembled the MoE table's replica)."""
    names = {table_name(*r[:3]) for r in
             table_requests(QWEN_FP8, "checkpoint", 1, "bf16", dp=2, moe_backend="deepgemm")}
    assert EXPERT_GEMM in names
    assert not any(n.startswith("moe ") for n in names)


def test_missing_expert_gemm_is_imported_for_a_deepgemm_row():
    """Over a profile without the experts' GEMM table, a DeepGEMM row reads NVIDIA's own
    table at that shape, not one anchored from another shape."""
    pytest.importorskip("aiconfigurator_core")
    full = fs.engine_profile("vllm")
    lacking = dataclasses.replace(full, tables=[t for t in full.tables if t.name != EXPERT_GEMM])
    case = fs.Case(QWEN_FP8, "checkpoint", 1, 2, 1, "vllm", moe_backend="deepgemm")
    profile = fs.with_missing_tables(lacking, case, "bf16")
    assert EXPERT_GEMM in {t.name for t in profile.tables}



def test_anchored_tables_counts_labels_read_in_graphs_or_by_deepgemm(monkeypatch):
    """A row's anchored tables are counted whatever reading their label starts with: over a
    profile without the experts' GEMM and with importing off, a DeepGEMM row of Qwen3-235B-FP8
    reads its experts anchored (labels ``graph-read:anchored:...`` and ``deepgemm: graph-read:
    anchored:...``), and the ``anchored_tables`` column says so (it read 0)."""
    pytest.importorskip("aiconfigurator_core")
    full = fs.engine_profile("vllm")
    # both expert GEMMs removed (round 28 ships n=4096 k=768 too: the grid's small sides and
    # the tables DeepGEMM reads)
    experts = (EXPERT_GEMM, "gemm fp8_block n=4096 k=768")
    lacking = dataclasses.replace(full, tables=[t for t in full.tables if t.name not in experts])
    rows = fs.load_rows(fs.FIT_SYSTEM)
    case = fs.Case(QWEN_FP8, "checkpoint", 1, 2, 1, "vllm", moe_backend="deepgemm")
    row = next(r for r in rows.to_dict("records") if r["backend"] == "vllm"
               and "Qwen3-235B-A22B-FP8" in r["model_path"] and fs.case_of(r) == case)
    monkeypatch.setitem(fs.IMPORT_MISSING, "on", False)
    monkeypatch.setattr(fs, "engine_profile", lambda *args: lacking)
    # both are grid points, which the grid tables around them would interpolate (round 28,
    # helper grid): read them anchored, as a profile with no grid around them would
    monkeypatch.setattr(profile_mod, "interpolated_gemm", lambda *args: None)
    # the two expert GEMMs and "moe deepgemm", which reads the first
    assert fs.simulate_row(row, "auto", fs.Protocol(per_client=3), fs.Knobs())[
        "anchored_tables"] == 3
    labels = {"a": "graph-read:anchored:measured:x (gemm fp8_block n=4096 k=1024)",
              "b": "deepgemm: graph-read:anchored:measured:x (gemm fp8_block n=1024 k=4096)",
              "c": "anchored:measured:x (allreduce tp=4)", "d": "measured:x", "e": "roofline"}
    assert fs.anchored(labels) == ["a", "b", "c"]
