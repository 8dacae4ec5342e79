"""Benchmark: how long a big sweep grid takes to prepare, before its first point runs.

``tiersim sweep`` expands the grid, checks every axis value (the real validator), writes the
folder's ``sweep.json`` and only then starts points. This times that preparation on
``scenarios/tiny.yaml`` with two axes (``seed`` and ``tiers.bf16.cost_per_gpu_hour``) of
``--side`` values each, so ``side x side`` points: wall and CPU seconds and the process's peak
RSS at the moment the first point would run (the runner stops the process there).

Run: ``python benchmarks/sweep_grid.py [--side 1000]`` (10^6 points by default).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def grid_doc(side: int) -> dict:
    """The tiny scenario with a ``side x side`` sweep grid (trace path made absolute)."""
    doc = yaml.safe_load((ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text())
    doc["trace"]["path"] = str(ROOT / "tiersim" / "traces" / doc["trace"]["path"])
    doc["sweep"] = {"seed": list(range(side)),
                    "tiers.bf16.cost_per_gpu_hour": [round(1 + i / side, 6) for i in range(side)]}
    doc["limits"] = {"max_sweep_points": max(side * side, 1)}
    return doc


def main() -> None:
    """Write the grid's scenario, run the sweep until its first point, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1000, help="values per axis (default 1000)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tiersim-grid-"))
    scenario = folder / "grid.yaml"
    scenario.write_text(yaml.safe_dump(grid_doc(args.side)))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    from tiersim.sweep.run import run_sweep

    def first_point(doc, source="scenario"):
        """Stop at the first point: everything before it is what is measured."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{args.side * args.side:,} points: first point after "
              f"{time.perf_counter() - wall0:.1f} s wall, {time.process_time() - cpu0:.1f} s "
              f"CPU, peak RSS {peak:.0f} MB", flush=True)
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)

    first_point.__name__ = "default_runner"  # run_sweep keys points by the runner's name
    run_sweep(scenario, folder / "out", workers=1, runner=first_point, progress=False,
              report=False)


if __name__ == "__main__":
    main()
