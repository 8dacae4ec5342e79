"""The roofline against NVIDIA's measured operator tables on every GPU with measured rows.

For each vLLM profile of NVIDIA's tables (the shipped H200, H100 and B200 ones, and B300's kept in
``benchmarks/data``), every GEMM and MoE table is timed on tiersim's roofline at the table's own
shape and split, and the ratio roofline / measured is summarised per operator and format
(median, 10th and 90th percentile; GEMMs split at 256 rows, where decode steps sit below,
and by weight size ``n x k`` at 4096^2 and 8192^2, the bins the calibration reads).
A ratio under 1 is the roofline running faster than measured. ``tests/test_roofline_vs_measured.py``
keeps the BF16 families of H200 in band; this prints every family on every GPU, so a change to
the roofline's constants can be checked on GPUs it was not set on (docs/fidelity.md, "The
roofline alone, per GPU").

    python benchmarks/roofline_ratios.py
    python benchmarks/roofline_ratios.py --write   # the calibration a run with no profile applies

``--write`` derives, from the shipped profiles, the calibration
(:mod:`tiersim.perf.roofline_calibration`): H200's FP8 and 4-bit medians below, vLLM's host time
fitted on H200, and each format's usual MoE kernel path. The ratios printed are the bare
roofline's, what the calibration divides by.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tiersim.perf import roofline_calibration as rc  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402

#: The profile of NVIDIA's vLLM tables per GPU.
PROFILES = {"H200": REPO / "tiersim/profiles/h200_aiconfigurator_vllm.json",
            "H100": REPO / "tiersim/profiles/h100_aiconfigurator_vllm.json",
            "B200": REPO / "tiersim/profiles/b200_aiconfigurator_vllm.json",
            "B300": REPO / "benchmarks/data/b300_aiconfigurator_vllm.json"}


def write_calibration() -> Path:
    """Derive the roofline's calibration from the shipped profiles and write it."""
    profiles = {name: load_profile(REPO / "tiersim/profiles" / f"{name}.json")
                for name in {rc.SOURCE_PROFILE, *rc.KERNEL_PROFILES}}
    rc.CALIBRATION_FILE.write_text(json.dumps(rc.derive(profiles), indent=1, sort_keys=True)
                                   + "\n")
    return rc.CALIBRATION_FILE


def main(argv: list[str] | None = None) -> int:
    """Print one line per GPU, operator and format."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="append", choices=sorted(PROFILES),
                        help="only these GPUs (repeatable; default all)")
    parser.add_argument("--write", action="store_true",
                        help="write the calibration a run with no profile applies "
                             "(tiersim/data/roofline_calibration.json) and stop")
    args = parser.parse_args(argv)
    if args.write:
        print(f"wrote {write_calibration().relative_to(REPO)}")
        return 0
    print(f"{'gpu':5} {'op':5} {'format':10} {'rows':7} {'tables':>6}  roofline / measured: "
          "median (p10-p90)")
    for gpu in args.gpu or PROFILES:
        families = rc.family_ratios(load_profile(PROFILES[gpu]), gpu)
        for (op, fmt, rows), found in sorted(families.items()):
            ratio = np.concatenate([np.ravel(r) for r in found])
            if ratio.size:
                print(f"{gpu:5} {op:5} {fmt:10} {rows:7} {len(found):6}  {np.median(ratio):.2f} "
                      f"({np.percentile(ratio, 10):.2f}-{np.percentile(ratio, 90):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
