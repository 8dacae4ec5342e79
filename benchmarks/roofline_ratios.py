"""The roofline against NVIDIA's measured operator tables on every GPU with measured rows.

For each vLLM profile of NVIDIA's tables (the shipped H200, H100 and B200 ones, and B300's kept in
``benchmarks/data``), every GEMM and MoE table is timed on tiersim's roofline at the table's own
shape and split, and the ratio roofline / measured is summarised per operator and format
(median, 10th and 90th percentile; GEMMs split at 256 rows, where decode steps sit below).
A ratio under 1 is the roofline running faster than measured. ``tests/test_roofline_vs_measured.py``
keeps the BF16 families of H200 in band; this prints every family on every GPU, so a change to
the roofline's constants can be checked on GPUs it was not set on (docs/fidelity.md, "The
roofline alone, per GPU").

    python benchmarks/roofline_ratios.py
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402
from tiersim.perf.roofline import RooflineOps  # noqa: E402

#: The profile of NVIDIA's vLLM tables per GPU.
PROFILES = {"H200": REPO / "tiersim/profiles/h200_aiconfigurator_vllm.json",
            "H100": REPO / "tiersim/profiles/h100_aiconfigurator_vllm.json",
            "B200": REPO / "tiersim/profiles/b200_aiconfigurator_vllm.json",
            "B300": REPO / "benchmarks/data/b300_aiconfigurator_vllm.json"}
#: The architecture a table's shape is put into (its GEMM and expert shapes replace these).
BASE = get_model("Qwen3-Coder-30B-A3B")
#: GEMMs with at most this many rows are reported apart (decode steps).
SMALL_M = 256


def gemm_ratios(table, gpu: str) -> dict[str, np.ndarray]:
    """Roofline / measured of one GEMM table, by row range."""
    m = table.axes["m"]
    ops = RooflineOps(BASE, "bf16", gpu)
    ratio = ops.gemm(m, table.key["n"], table.key["k"], table.dtype) / table.latency
    return {f"m<={SMALL_M}": ratio[m <= SMALL_M], f"m>{SMALL_M}": ratio[m > SMALL_M]}


def moe_ratios(table, gpu: str) -> np.ndarray:
    """Roofline / measured of one MoE table at its expert shape, MoE TP and EP."""
    key = table.key
    arch = dataclasses.replace(BASE, hidden=key["hidden"], expert_intermediate=key["inter"],
                               num_experts=key["num_experts"], top_k=key["top_k"])
    ep = key.get("ep", 1)
    ops = RooflineOps(arch, table.dtype, gpu, tp=key["tp"], dp=ep, ep=ep)
    return ops.moe(table.axes["tokens"]) / table.latency


def family_ratios(path: Path, gpu: str) -> dict[tuple[str, str, str], list[np.ndarray]]:
    """(op, format, rows) -> the ratios of every table of that family in the profile."""
    out: dict[tuple[str, str, str], list[np.ndarray]] = collections.defaultdict(list)
    for table in load_profile(path).tables:
        if table.op == "gemm":
            for rows, ratio in gemm_ratios(table, gpu).items():
                out[("gemm", table.dtype, rows)].append(ratio)
        elif table.op == "moe":
            out[("moe", table.dtype, "")].append(moe_ratios(table, gpu))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print one line per GPU, operator and format."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="append", choices=sorted(PROFILES),
                        help="only these GPUs (repeatable; default all)")
    args = parser.parse_args(argv)
    print(f"{'gpu':5} {'op':5} {'format':10} {'rows':7} {'tables':>6}  roofline / measured: "
          "median (p10-p90)")
    for gpu in args.gpu or PROFILES:
        for (op, fmt, rows), found in sorted(family_ratios(PROFILES[gpu], gpu).items()):
            ratio = np.concatenate([np.ravel(r) for r in found])
            if ratio.size:
                print(f"{gpu:5} {op:5} {fmt:10} {rows:7} {len(found):6}  {np.median(ratio):.2f} "
                      f"({np.percentile(ratio, 10):.2f}-{np.percentile(ratio, 90):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
