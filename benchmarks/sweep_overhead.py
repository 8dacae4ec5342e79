"""Benchmark: a sweep's overhead per point beyond the simulation, and speed-up with N workers.

Three measurements, each on a fresh output folder:

1. Overhead: points whose runner does nothing (the synthetic runner with no work). Everything
   measured is overhead: building the point's scenario dict, pickling it to a worker, the
   record's atomic write (temp file + fsync + rename), the progress bar and collecting
   sweep.parquet. Reported per point, for in-process (1 worker) and a process pool.
2. Speed-up on CPU-bound points: the synthetic runner busy-looping ``--cpu-s`` seconds per point,
   1 worker vs N. Ideal is N (while N <= cores).
   Next to it, the same work in a bare ``multiprocessing.Pool``: what the machine's cores allow
   at all for that work, whatever the executor.
3. Speed-up on sleeping points (``--sleep-s``): the executor's own concurrency, independent of
   how many cores are free.
4. With ``--real``: the same on real simulations of ``scenarios/tiny.yaml`` over 15 minutes of
   its trace (sweeping bf16 replicas and the seed), with the bare-pool ceiling for them.

Run: ``python benchmarks/sweep_overhead.py [--points 48] [--cpu-s 0.25] [--workers 2] [--real]``.
Numbers depend on the machine; the README quotes one run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml

from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner

ROOT = Path(__file__).resolve().parents[1]


def synthetic_doc(points: int, cpu_s: float) -> dict:
    """A synthetic scenario with ``points`` sweep points (two axes)."""
    half = max(points // 2, 1)
    return {"tiers": [{"name": "w4a16", "replicas": 2}, {"name": "bf16", "replicas": 2}],
            "synthetic": {"cpu_s": cpu_s},
            "sweep": {"router.confusion.fpr": [round(0.01 * i, 3) for i in range(half)],
                      "tiers.bf16.replicas": [1, 2]}}


def timed_sweep(doc, workers: int, runner=synthetic_runner, validator=None,
                source: str = "bench.yaml") -> tuple[float, float, int]:
    """(wall seconds, summed runner seconds, points) of one fresh sweep."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        frame = run_sweep(doc, out, workers=workers, runner=runner, validator=validator,
                          source=source, progress=False, report=False)
        wall = time.perf_counter() - t0
    return wall, float(frame["wall_s"].sum()), len(frame)


def overhead(points: int, workers: int) -> None:
    """Print fixed start-up and marginal per-point overhead with a no-op runner."""
    for n in (1, workers):
        fixed, _, _ = timed_sweep(synthetic_doc(2, 0.0), n)
        wall, sim, count = timed_sweep(synthetic_doc(points, 0.0), n)
        print(f"overhead  workers={n}: fixed {fixed:.3f} s per sweep "
              f"({'in-process' if n == 1 else 'incl. process-pool start-up'}); "
              f"{1e3 * (wall - fixed - sim / n) / (count - 2):.2f} ms per extra point "
              f"({count} no-op points in {wall:.3f} s)")


def speedup(doc, label: str, workers: int, **kw) -> None:
    """Print 1-worker vs N-worker wall time and speed-up."""
    one, sim1, count = timed_sweep(doc, 1, **kw)
    many, _, _ = timed_sweep(doc, workers, **kw)
    print(f"{label}: {count} points, runner time {sim1:.2f} s; 1 worker {one:.2f} s, "
          f"{workers} workers {many:.2f} s -> speed-up {one / many:.2f}x "
          f"(overhead at 1 worker {1e3 * (one - sim1) / count:.1f} ms/point)")


def _busy(cpu_s: float) -> None:
    """The synthetic runner's busy loop, alone."""
    from tiersim.sweep.testing import _burn

    _burn(cpu_s)


def _simulate(doc_source: tuple[dict, str]) -> None:
    """One real simulation, without any sweep machinery."""
    from tiersim.sweep.points import default_runner

    default_runner(*doc_source)


def ceiling(label: str, work, items: list, workers: int) -> None:
    """Speed-up of a bare fork pool on the same work: the ceiling for any executor here."""
    import multiprocessing

    t0 = time.perf_counter()
    for item in items:
        work(item)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(work, items, chunksize=1)
    many = time.perf_counter() - t0
    print(f"ceiling, {label} in a bare multiprocessing.Pool: 1 process {one:.2f} s, "
          f"{workers} processes {many:.2f} s -> {one / many:.2f}x")


def real_doc(points: int) -> tuple[dict, str]:
    """scenarios/tiny.yaml over 15 minutes of its trace, sweeping bf16 replicas and the seed."""
    source = ROOT / "scenarios" / "tiny.yaml"
    doc = yaml.safe_load(source.read_text())
    doc["trace"]["window"] = [0, 900]
    doc["sweep"] = {"tiers.bf16.replicas": [1, 2], "seed": list(range(max(points // 2, 1)))}
    return doc, str(source)


def main() -> None:
    """Parse options and run the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=48)
    parser.add_argument("--cpu-s", type=float, default=0.25)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--sleep-s", type=float, default=0.25)
    parser.add_argument("--real", action="store_true", help="also time real tiny simulations")
    parser.add_argument("--real-points", type=int, default=8)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs")
    overhead(args.points * 4, args.workers)
    speedup(synthetic_doc(args.points, args.cpu_s), f"cpu-bound {args.cpu_s} s points",
            args.workers)
    ceiling("busy work", _busy, [args.cpu_s] * args.points, args.workers)
    sleepy = synthetic_doc(args.points, 0.0)
    sleepy["synthetic"] = {"sleep_s": args.sleep_s}
    for n in sorted({args.workers, 2 * args.workers, 4 * args.workers}):
        speedup(sleepy, f"sleeping {args.sleep_s} s points", n)
    if args.real:
        import tiersim.runner  # noqa: F401 - imported once here, not charged to the first point
        from tiersim.sweep.axes import apply, expand
        from tiersim.sweep.points import default_runner, default_validator

        doc, source = real_doc(args.real_points)
        speedup(doc, "real tiny.yaml points", args.workers, runner=default_runner,
                validator=default_validator, source=source)
        items = [(apply(doc, p.values), source) for p in expand(doc["sweep"])]
        ceiling("the same simulations", _simulate, items, args.workers)


if __name__ == "__main__":
    main()
