"""Whole-process speed and memory of ``tiersim run`` on a large synthetic trace.

The workload of issue 13: N requests of 1,024 input / 128 output tokens arriving as a Poisson
process at 5 req/s, served by Llama-3.1-8B in BF16 on one H200 replica (the shipped H200
profile). The trace is written once as a canonical Parquet file (in row groups of 1M rows)
beside a one-tier scenario, then ``tiersim run SCENARIO --out DIR --no-baselines --no-report``
runs as a child process, timed from start to exit (outputs included); peak RSS is the child's
``ru_maxrss``. With ``--repeat 3`` the median is reported.

    python benchmarks/million.py -n 100000              # the 100k-request reference run
    python benchmarks/million.py -n 1000000             # issue 13: < 60 s, < 600 MB
    python benchmarks/million.py -n 5000000 --repeat 1  # issue 13: peak RSS < 1.5 GB

Not a test: timings on shared machines are noisy. Quote the figure with the machine and load.
To time another tree, run from outside the checkout with ``PYTHONPATH=/path/to/tree`` (the
child runs beside the scenario, so that tree is the one imported).

Measured (2-core shared box, load about 2-3, 1 Dec 2026; "before" is commit 152e8f6, run
alternately with the tree after issue 13's memory, import and engine work, commit 8cbf2b3;
d91d4d3 for 5M, the same run code; "after" also has issue 9's eager-step fidelity change):

| requests | before: wall, peak RSS | after: wall, peak RSS |
|---|---|---|
| 100,000 (median of 3, alternated) | 8.95 s, 243 MiB | 3.71 s, 191 MiB |
| 1,000,000 | 74.5 s, 585 MiB | 41.4 s, 379 MiB |
| 5,000,000 | 680 s, 2,165 MiB (earlier run) | 186.5 s, 1,186 MiB |

Burst (``--burst``, 5 Dec 2026, same box with other work on it): 1,000,000 requests at t = 0 in
30.1 s, 797 MiB (the Poisson run right after it: 60.5 s, 392 MiB); 100,000 in 5.4 s (median of 3),
237 MiB. Time per request does not grow with the burst; memory does, as every request waits on
the replica's queue at once: about 650 bytes a request at peak as request objects, about 300 since
the requests behind the queue's head wait as 32-byte packed rows (alternated with the tree before,
medians of 3, load about 10: 1,000,000 at t = 0 798 -> 467 MiB, 51.2 -> 43.3 s wall, 21.6 ->
20.7 s CPU; 100,000 236 -> 206 MiB; README, "Bursts").

Memory per request: (peak RSS at 5M - peak RSS at 1M) / 4M = (1,186 - 379) MiB / 4,000,000 =
212 bytes a request, outputs included (the rest, about 175 MiB, is the interpreter, its
libraries and the fleet). Where they are: the trace 24 (int64 id, float64 arrival, int32 token
counts), the accuracy columns 13, the routing 16, the engine's per-request result arrays about
103, held through the run; the rest is the peak after it, while statistics and
requests.parquet are computed column by column and row group by row group (no whole-table
frame is ever built).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

RATE_RPS = 5.0
INPUT_TOKENS = 1024
OUTPUT_TOKENS = 128
ROW_GROUP = 1_000_000

SCENARIO = """\
# issue 13's synthetic workload: {n:,} requests, 1,024 in / 128 out, {arrivals},
# Llama-3.1-8B BF16 on one H200 replica (written by benchmarks/million.py)
name: million
seed: 0
model: Llama-3.1-8B
gpu: H200
trace:
  path: {trace}
tiers:
  - name: bf16
    precision: bf16
    replicas: 1
    cost_per_gpu_hour: 3.50
router:
  policy: uniform
slo:
  ttft_p99_s: 2.0
  tpot_p99_s: 0.1
"""


def write_trace(path: Path, n: int, rate: float = RATE_RPS, seed: int = 0,
                burst: bool = False) -> None:
    """A canonical trace of ``n`` fixed-length requests with Poisson(``rate``) arrivals (with
    ``burst``, all at t = 0), written in row groups so neither writing nor reading needs it
    whole in memory."""
    rng = np.random.default_rng(seed)
    schema = pa.schema([("request_id", pa.int64()), ("arrival_s", pa.float64()),
                        ("input_tokens", pa.int32()), ("output_tokens", pa.int32())])
    last = 0.0
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, n, ROW_GROUP):
            size = min(ROW_GROUP, n - start)
            arrival = last + np.cumsum(rng.exponential(1.0 / rate, size))
            arrival[0] = 0.0 if start == 0 else arrival[0]
            if burst:
                arrival[:] = 0.0
            last = float(arrival[-1])
            writer.write_table(pa.table({
                "request_id": np.arange(start, start + size, dtype=np.int64),
                "arrival_s": arrival,
                "input_tokens": np.full(size, INPUT_TOKENS, np.int32),
                "output_tokens": np.full(size, OUTPUT_TOKENS, np.int32)}, schema=schema))


def write_scenario(folder: Path, n: int, burst: bool = False) -> Path:
    """Trace and scenario for ``n`` requests in ``folder`` (the trace is reused if present);
    ``burst``: all of them at t = 0."""
    kind = "burst" if burst else "synthetic"
    trace = folder / f"{kind}_{n}.parquet"
    if not trace.exists():
        write_trace(trace, n, burst=burst)
    scenario = folder / f"million_{kind}_{n}.yaml"
    arrivals = "all at t = 0" if burst else f"Poisson {RATE_RPS} req/s"
    scenario.write_text(SCENARIO.format(n=n, arrivals=arrivals, trace=trace.name))
    return scenario


def run_once(scenario: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``tiersim run`` child process."""
    scenario, out = scenario.resolve(), out.resolve()
    cmd = [sys.executable, "-m", "tiersim", "run", str(scenario), "--out", str(out),
           "--no-baselines", "--no-report"]
    t0 = time.perf_counter()
    # run beside the scenario, not in the checkout: ``-m`` puts the working folder first on
    # sys.path, which would shadow a tree named by PYTHONPATH (an A/B against another tree)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=scenario.parent)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"tiersim run failed ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    """Write the workload, run it ``--repeat`` times and print the median figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="keep trace + scenario here")
    ap.add_argument("--burst", action="store_true", help="every request arrives at t = 0")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tiersim-million-") as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        scenario = write_scenario(folder, args.n, args.burst)
        runs = [run_once(scenario, Path(tmp) / "out") for _ in range(args.repeat)]
    walls = [w for w, _ in runs]
    wall, rss = statistics.median(walls), max(r for _, r in runs)
    arrivals = "burst at t = 0" if args.burst else f"Poisson {RATE_RPS} req/s"
    print(f"requests={args.n:,} ({arrivals}) runs={args.repeat} "
          f"walls={', '.join(f'{w:.1f}' for w in walls)} s")
    print(f"tiersim run: median {wall:.1f} s wall -> {args.n / wall:,.0f} requests/s; "
          f"peak RSS {rss:.0f} MB ({rss * 1024 * 1024 / args.n:,.0f} bytes/request)")


if __name__ == "__main__":
    main()
