"""Benchmark: peak memory of a sweep's end, where every stored point becomes ``sweep.parquet``.

A sweep ends by reading its stored point records and writing the sweep table, and a resumed
sweep first reads them to find the finished points. This stores ``--points`` points whose
summaries are a real run's ``summary.json`` (``scenarios/tiny.yaml``, run once), then resumes
the finished sweep in a fresh process, so that the end is all it does, and prints that
process's wall time and peak RSS. The runner returns the stored summary, so no simulation is
timed; the figures are the sweep's bookkeeping alone. The sweep is called as ``tiersim sweep``
calls it (no table returned); ``--report`` writes ``report.html`` too, as ``tiersim sweep`` does
unless told not to.

Run: ``python benchmarks/sweep_table.py [--points 20000] [--report]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def real_summary(folder: Path) -> dict:
    """A real run's summary.json (the tiny scenario, baselines off), as a point stores it."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = ROOT / "tiersim" / "scenarios" / "tiny.yaml"
    run_scenario(load_scenario(path), out_dir=folder / "run", scenario_path=path,
                 baselines=False, report=False)
    return json.loads((folder / "run" / "summary.json").read_text())


def sweep_doc(points: int) -> dict:
    """A one-axis grid of ``points`` seeds."""
    return {"name": "table", "sweep": {"seed": list(range(points))},
            "limits": {"max_sweep_points": max(points, 1)}}


def _sweep(out: str, points: int, summary_file: str, report: bool = False) -> None:
    """Run (or resume) the sweep in this process with a runner returning the stored summary;
    print wall seconds and peak RSS (MB) as one JSON line."""
    from tiersim.sweep.run import run_sweep

    summary = json.loads(Path(summary_file).read_text())

    def stored_summary(doc: dict, source: str = "scenario") -> dict:
        """The real summary, its seed set to the point's."""
        return {**summary, "seed": doc.get("seed")}

    start = time.perf_counter()
    run_sweep(sweep_doc(points), out, workers=1, runner=stored_summary, validator=None,
              source="table.yaml", progress=False, report=report, table=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall_s": time.perf_counter() - start, "peak_mb": peak}))


def _child(out: Path, points: int, summary_file: Path, report: bool = False) -> dict:
    """:func:`_sweep` in a fresh process; its JSON line."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import sweep_table; "
            f"sweep_table._sweep({str(out)!r}, {points}, {str(summary_file)!r}, {report})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Store the points, then resume the finished sweep; print both processes' figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--report", action="store_true", help="write report.html too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        summary_file = folder / "summary.json"
        summary_file.write_text(json.dumps(real_summary(folder)))
        out = folder / "sweep"
        ran = _child(out, args.points, summary_file)
        resumed = _child(out, args.points, summary_file, args.report)
        table = (out / "sweep.parquet").stat().st_size / 1e6
    print(f"{args.points} points: stored in {ran['wall_s']:.1f} s (peak RSS "
          f"{ran['peak_mb']:.0f} MB); a resume with every point done took "
          f"{resumed['wall_s']:.1f} s at peak RSS {resumed['peak_mb']:.0f} MB "
          f"(sweep.parquet {table:.1f} MB)")


if __name__ == "__main__":
    main()
