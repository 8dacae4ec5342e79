"""False-positive sweep on the default fleet: what a router's mistakes save and cost.

The default scenario (Azure code traffic, Qwen3-Coder-30B-A3B, tiers nvfp4 / w4a16 / bf16 on
H200s) gets a three-type workload (14% hopeless, the rest 70% easy) with per-class accuracy
tables, and the oracle router (lagrangian on true expected correctness, lambda 0.05) with an
injected false-positive rate from 0 to 0.3: that share of the requests that needed a higher tier
are sent lower. Per point it prints the simulated attributed cost, expected accuracy with its
bootstrap 95% interval, the realised FPR, the silent-failure rate (wrong on a cheap tier where
bf16 was right) and the TTFT p99.

Every point uses the same seed, so the workload and the draws are common across points and the
trend is not hidden by sampling noise.

Run: ``python benchmarks/fpr_sweep.py [--window 900] [--policy oracle|threshold|lagrangian]``.

Measured here (whole hour, oracle lambda 0.05), 2026-11-29, after cascades and injected
confusion were scored on realised correctness:

    fpr fpr_real USD/1k req accuracy              ci95  silent ttft_p99
   0.00    0.090     0.1085   0.7986 [0.7909, 0.8072]  0.0061    1.678
   0.10    0.158     0.1083   0.7940 [0.7860, 0.8025]  0.0108    1.711
   0.20    0.250     0.1083   0.7877 [0.7800, 0.7968]  0.0170    1.711
   0.30    0.353     0.1077   0.7807 [0.7725, 0.7899]  0.0240    1.711

Accuracy falls and silent failures rise monotonically; cost falls only 0.7% (within a 0.0003
noise band): on an H200, nvfp4 is not native, so the cheap tiers are barely cheaper per request,
and taking traffic off bf16 also shrinks its batches. With the type-only oracle (``--lambda -1``,
most traffic on bf16) cost even rises with FPR for that reason: at this fleet's low load a tier's
attributed cost per token grows as its traffic shrinks. The fixed-cost test in
``tests/test_routing_fpr.py`` isolates the routing effect.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import yaml

from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
TABLES = {
    "nvfp4": {"easy": 0.99, "hard": 0.55, "hopeless": 0.0},
    "w4a16": {"easy": 0.995, "hard": 0.65, "hopeless": 0.0},
    "bf16": {"easy": 1.0, "hard": 0.8, "hopeless": 0.0},
}


def scenario_dict(fpr: float, policy: str, window: float | None, lam: float | None) -> dict:
    """The default scenario with a three-type workload and injected FPR."""
    d = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    d["tiers"] = [{"name": name, "precision": name, "replicas": 1, "cost_per_gpu_hour": 3.5,
                   "accuracy": table} for name, table in TABLES.items()]
    d.pop("accuracy_floor", None)
    d["workload"] = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14}}
    d["router"] = {"policy": policy, "confusion": {"fpr": fpr}}
    if lam is not None:
        d["router"]["lambda"] = lam
    d["sweep"] = {}
    if window:
        d["trace"]["window"] = [0, window]
    return d


def main() -> None:
    """Print one row per injected FPR."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=None, help="seconds of trace to replay")
    ap.add_argument("--policy", default="oracle", choices=["oracle", "threshold", "lagrangian"])
    ap.add_argument("--lambda", dest="lam", type=float, default=0.05,
                    help="lambda of the oracle / lagrangian (negative: none)")
    args = ap.parse_args()
    print(f"{'fpr':>5} {'fpr_real':>8} {'USD/1k req':>10} {'accuracy':>8} {'ci95':>17} "
          f"{'silent':>7} {'ttft_p99':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for fpr in np.linspace(0.0, 0.3, 7):
            path = Path(tmp) / f"fpr{fpr:.2f}.yaml"
            path.write_text(yaml.safe_dump(scenario_dict(
                float(fpr), args.policy, args.window, None if args.lam < 0 else args.lam)))
            s = run_scenario(load_scenario(path), scenario_path=path).to_json()
            r = s["router"]
            lo, hi = r["accuracy_ci95"]
            print(f"{fpr:5.2f} {r['fpr']:8.3f} {1e3 * s['cost_usd'] / s['requests']:10.4f} "
                  f"{s['accuracy']:8.4f} [{lo:.4f}, {hi:.4f}] {r['silent_failure_rate']:7.4f} "
                  f"{s['ttft_p99_s']:8.3f}")


if __name__ == "__main__":
    main()
