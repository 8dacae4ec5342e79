"""A trial of two changes to the roofline, replayed on a GPU's measured vLLM rows; neither ships.

tiersim's roofline (what a run with no profile reads) is fast on every GPU with measured rows:
its FP8 and 4-bit kernels run ahead of NVIDIA's tables (``benchmarks/roofline_ratios.py``), and
it pays an assumed host time, not the one ``fidelity_silicon.py --fit`` found for vLLM. This
script replays ``--system``'s vLLM rows as ``fidelity_silicon.py --roofline`` does, with:

- ``--derate``: each FP8 GEMM divided by H200's roofline / measured median for its rows (0.75
  up to 256 rows, 0.52 above), each MoE by its format's (FP8 0.71, block FP8 0.72, W4A16 0.44,
  NVFP4 and MXFP4 on Hopper 0.46 / 0.48; native FP4 on Blackwell as is): the medians
  ``roofline_ratios.py --gpu H200`` printed on 2026-12-06, typed here, not read;
- ``--host triton`` or ``--host kernel``: vLLM's host time fitted on H200 (the overhead and the
  eager cost of the shipped profile, no tables), every MoE layer at the rate fitted on experts
  launching Triton kernels, or at the C++ rate where the format's usual kernel launches from
  C++ alone (W4A16 and NVFP4 on Hopper, every format on Blackwell: the MoE tables' kernel
  names); ``--host assumed`` (default) keeps the roofline's own.

    python benchmarks/roofline_trial.py --system b300_sxm --derate --host kernel

docs/fidelity.md, section 2, "The roofline alone, per GPU", has the figures and why neither
change ships yet.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fidelity_silicon as fs  # noqa: E402

from tiersim.perf import roofline  # noqa: E402
from tiersim.perf.profile import ProfileOps  # noqa: E402

#: H200's roofline / measured medians (roofline_ratios.py): GEMMs by rows (<= 256, above).
GEMM_RATIO = {"fp8": (0.75, 0.52), "fp8_block": (0.75, 0.52)}
#: H200's MoE medians by experts' format (Hopper's weight-only 4-bit paths for FP4 formats).
MOE_RATIO = {"fp8": 0.71, "fp8_block": 0.72, "w4a16": 0.44, "nvfp4": 0.46, "mxfp4": 0.48}
#: Experts' formats whose vLLM MoE kernel launches from C++ alone on Hopper (Marlin).
HOPPER_CPP_MOE = {"w4a16", "nvfp4"}


def derate() -> None:
    """Divide the roofline's FP8 GEMMs and its MoE by H200's medians (:data:`GEMM_RATIO`,
    :data:`MOE_RATIO`); native FP4 on a GPU that has it is left as is."""
    gemm, moe = roofline.RooflineOps.gemm, roofline.RooflineOps.moe

    def derated_gemm(self, m, n, k, precision, *, tokens=None):
        t = gemm(self, m, n, k, precision, tokens=tokens)
        small, large = GEMM_RATIO.get(str(getattr(precision, "name", precision)), (1.0, 1.0))
        return t / np.where(np.asarray(m, dtype=float) <= 256, small, large)

    def derated_moe(self, tokens):
        name = self.weights.experts.name
        native_fp4 = name in ("nvfp4", "mxfp4") and "nvfp4" in self.gpu.native
        return moe(self, tokens) / (1.0 if native_fp4 else MOE_RATIO.get(name, 1.0))

    roofline.RooflineOps.gemm, roofline.RooflineOps.moe = derated_gemm, derated_moe


def fitted_host(rule: str) -> None:
    """Replay on a profile with no tables and H200's fitted host time (``fs.empty_profile``),
    the MoE eager rate chosen by ``rule`` ("triton" or "kernel")."""
    def cpp_moe(self) -> bool:
        if not self.model.moe_layers or rule == "triton":
            return False
        return "nvfp4" in self.gpu.native or self.weights.experts.name in HOPPER_CPP_MOE

    def engine_profile(engine, knobs=None, gpu="h200"):
        system = next(s for s, g in fs.SYSTEM_GPU.items() if g == gpu)
        key = ("trial", engine, gpu)
        if key not in fs._PROFILES:
            fs._PROFILES[key] = fs.empty_profile(engine, system)
        return fs._PROFILES[key]

    ProfileOps.cpp_moe = cpp_moe
    fs.engine_profile = engine_profile
    fs.IMPORT_MISSING["on"] = False


def main(argv: list[str] | None = None) -> int:
    """Replay the system's vLLM rows with the chosen changes and print the summary lines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default=fs.FIT_SYSTEM, choices=sorted(fs.SYSTEM_GPU))
    parser.add_argument("--derate", action="store_true", help="derate FP8 and 4-bit kernels")
    parser.add_argument("--host", choices=("assumed", "triton", "kernel"), default="assumed")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if args.derate:
        derate()
    if args.host != "assumed":
        fitted_host(args.host)
    rows = fs.load_rows(args.system)
    rows = fs.with_aic(rows[rows["backend"] == "vllm"].reset_index(drop=True), args.system)
    proto = fs.protocol_from_args(fs.build_parser().parse_args(["--system", args.system]))
    knobs = fs.Knobs(roofline=args.host == "assumed")
    res = fs.run(rows, "auto", proto, args.jobs, knobs)
    print("\n".join(fs.summary_lines(res)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
