"""Engine speed: requests simulated per wall second and peak memory.

Replays the Azure 2023 conversation trace's (input, output) lengths (``--trace``: another bundled
trace's, with its prefix hashes), resampled to N requests with Poisson arrivals, through the
default scenario's fleet (every tier and replica of scenarios/default.yaml with the shipped
profile's step times; today Qwen3-Coder-30B-A3B on H200, FP8 10 x 1 + BF16 7 x 1 GPU; the
figures below were taken on earlier defaults, each named with its figures),
the requests split evenly at random across the tiers (the scenario's router is not used), at an
arrival rate of 70% of the fleet's saturation throughput (requests completed per second with every
request queued at once; measured by a first run unless ``--rate`` is given). Only
``engine.simulate`` is timed; building step models and loading the trace are reported apart.

    python benchmarks/engine_speed.py                 # 200,000 requests
    python benchmarks/engine_speed.py -n 20000 --per-iteration   # also time per-iteration stepping
    python benchmarks/engine_speed.py -n 40000 --replicas 1024   # the tier at the replica cap
    python benchmarks/engine_speed.py --scenario scenarios/prefix_cache.yaml \
        --trace mooncake_synthetic.parquet --replicas 1024 -n 20000   # prefix-aware, the cap

Not a test: timings on shared machines are noisy. Quote the figure with the machine and load.

Measured (2-core shared box, 1 Dec 2026), on the default of then (BF16 17 x 1 GPU; 200,000
requests at 187.6 req/s, 70% of its 268.1/s), quiet, three runs: 32,123 / 31,833 / 33,746
requests/s, peak RSS 248 MB. On the default before it (FP8 9 x 1 + BF16 8 x 1 GPU; 171.9 req/s,
70% of 245.6/s; not comparable with figures taken on the earlier three-replica default),
median of 3 alternated with the same tree without issue 13's engine work (decode table, lazy
replicas, point lookups): 32,838 requests/s against 16,424 on a quiet box; 20,741 against 10,477
with other jobs on the box (user CPU ratio 0.54 both times). Results are bit-identical
(tests/test_engine_speed_paths.py).

At the replica cap (``--replicas 1024 -n 40000``: 11,175.6 req/s, 70% of 15,965/s; 5 Dec 2026,
load 7 on the 2-core box, alternated, two runs each), the least-tokens balancer on its board
(tiersim.engine.replica.OutstandingBoard): 598 / 750 -> 2,303 / 3,504 requests/s; at
``--replicas 256`` (2,793.9 req/s), load 7.5-9: 1,572 / 1,575 -> 2,063 / 2,234. Each pick is
the loop's (tests/test_round30_bal.py).

The prefix-aware balancer at the cap (``--scenario scenarios/prefix_cache.yaml --trace
mooncake_synthetic.parquet --replicas 1024 -n 20000``: 1,117.6 req/s, 70% of 1,596.5/s; 5 Dec
2026, load 5 on the 2-core box, alternated, two runs each), the board's least-loaded replica
and the replicas holding the prompt's first block (tiersim.engine.cluster.PrefixAware) instead
of a scan of every replica and its cache: 499 / 928 -> 1,572 / 2,204 requests/s; at
``--replicas 256`` (279.4 req/s): 2,365 / 2,056 -> 3,184 / 2,351. Each pick is the scan's
(tests/test_round30_pfx.py). With the board's reads and the load series' rows written out
(5 Dec 2026, load 1-2.5, ``--rate`` given, five alternations, medians): prefix-aware 3,405 ->
3,881 requests/s, least-tokens at the cap 8,568 -> 9,277 (tests/test_round31_speed.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time

import numpy as np

from tiersim import engine
from tiersim.paths import bundled
from tiersim.runner import step_model, tier_specs
from tiersim.scenario import load_scenario
from tiersim.trace import load_trace
from tiersim.workload.synthetic import resample

CONV = "azure2023_conv.parquet"
"""The bundled trace replayed unless ``--trace`` names another."""


def build(n: int, rate: float, seed: int = 0, scenario_path=None, replicas: int | None = None,
          trace: str = CONV):
    """The fleet of ``scenario_path`` (default: the default scenario; ``replicas`` given: that
    many replicas in each of its tiers) and a workload of ``n`` requests resampled from the
    bundled ``trace`` (its prefix hashes too, where it has them) at ``rate`` req/s."""
    scenario = load_scenario(scenario_path or bundled("scenarios", "default.yaml"))
    specs = tier_specs(scenario, [step_model(scenario, t) for t in scenario.tiers])
    if replicas is not None:
        specs = [dataclasses.replace(spec, replicas=replicas) for spec in specs]
    rows = load_trace(bundled("traces", trace))
    rng = np.random.default_rng(seed)
    df = resample(rows, n, rate, rng)
    tier = rng.integers(0, len(specs), n)
    hashes = list(df["prefix_hashes"]) if "prefix_hashes" in df.columns else None
    work = engine.Workload(df["arrival_s"].to_numpy(), df["input_tokens"].to_numpy(np.int64),
                           df["output_tokens"].to_numpy(np.int64), tier, prefix_hashes=hashes)
    return specs, work


def utilization(res: engine.SimResult) -> float:
    """Mean busy fraction of all replicas over the run (a replica is busy while it steps)."""
    busy = [b for tier in res.busy_s.values() for b in tier]
    return float(np.mean(busy) / res.end_s)


def saturation_rate(n: int = 20_000, scenario_path=None, trace: str = CONV) -> float:
    """Requests per second the fleet completes when every request is already queued.

    Load is quoted against this: with continuous batching a replica is "busy" with a batch of
    two, so its busy fraction says little about how close it is to its throughput limit.
    """
    specs, work = build(n, 1e6, scenario_path=scenario_path, trace=trace)
    res = engine.simulate(specs, work)
    return float((~np.isnan(res.finish_s)).sum() / res.end_s)


def main() -> None:
    """Run the benchmark and print one line of figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=None, help="req/s (default: 70%% load)")
    ap.add_argument("--load", type=float, default=0.7, help="fraction of saturation throughput")
    ap.add_argument("--per-iteration", action="store_true", help="also time without fast-forward")
    ap.add_argument("--scenario", help="replay this scenario's fleet instead of the default's "
                    "(e.g. an earlier default.yaml, to compare with figures taken on it)")
    ap.add_argument("--replicas", type=int, help="this many replicas in each tier (e.g. 1024, "
                    "the replica cap); saturation is the scenario fleet's, scaled to them")
    ap.add_argument("--trace", default=CONV, help="replay this bundled trace (e.g. "
                    "mooncake_synthetic.parquet, whose prefix hashes a prefix-caching "
                    "scenario's tiers use)")
    args = ap.parse_args()
    saturation = saturation_rate(scenario_path=args.scenario, trace=args.trace)
    if args.replicas is not None:  # the same per replica (a tier's requests split evenly)
        specs, _ = build(1, 1.0, scenario_path=args.scenario)
        saturation *= args.replicas * len(specs) / sum(spec.replicas for spec in specs)
    rate = args.rate if args.rate is not None else args.load * saturation
    t0 = time.perf_counter()
    specs, work = build(args.n, rate, scenario_path=args.scenario, replicas=args.replicas,
                        trace=args.trace)
    t_build = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    res = engine.simulate(specs, work)
    t_sim, c_sim = time.perf_counter() - t0, time.process_time() - c0
    done = int((~np.isnan(res.finish_s)).sum())
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"requests={args.n} rate={rate:.1f}/s = {rate / saturation:.0%} of saturation "
          f"({saturation:.1f}/s) sim_span={res.end_s:.0f}s busy={utilization(res):.2f} "
          f"completed={done} dropped={int(res.dropped.sum())}")
    print(f"fast-forward: {t_sim:.2f} s wall -> {args.n / t_sim:,.0f} requests/s "
          f"(build {t_build:.1f} s); peak RSS {rss_mb:.0f} MB")
    # CPU seconds: on a shared machine the wall time counts other work's turns too (2026-12-07,
    # load 4-7 on 2 cores: 20-29 s wall for the 200,000 requests); compare trees on both
    print(f"engine CPU: {c_sim:.2f} s -> {args.n / c_sim:,.0f} requests per CPU second")
    if args.per_iteration:
        t0 = time.perf_counter()
        slow = engine.simulate(specs, work, fast_forward=False)
        t_slow = time.perf_counter() - t0
        same = np.allclose(slow.finish_s, res.finish_s, rtol=1e-9, equal_nan=True)
        print(f"per-iteration: {t_slow:.2f} s wall -> {args.n / t_slow:,.0f} requests/s; "
              f"same per-request times: {same}")


if __name__ == "__main__":
    main()
