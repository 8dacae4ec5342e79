"""False-positive sweep on the default fleet: what a router's mistakes save and cost.

The default scenario (Azure code traffic, Qwen3-Coder-30B-A3B, tiers nvfp4 / w4a16 / bf16 on
H200s) gets a three-type workload (14% hopeless, the rest 70% easy) with per-class accuracy
tables, and the oracle router (each request on the cheapest tier good enough for it) with an
injected false-positive rate from 0 to 0.3: that share of the requests that needed a higher tier
are sent lower. Per point it prints the simulated attributed cost, expected accuracy with its
bootstrap 95% interval, the realised FPR, the silent-failure rate (wrong on a cheap tier where
bf16 was right) and the TTFT p99.

Every point uses the same seed, so the workload and the draws are common across points and the
trend is not hidden by sampling noise.

Run: ``python benchmarks/fpr_sweep.py [--window 900] [--policy oracle|threshold]``.
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


def scenario_dict(fpr: float, policy: str, window: float | None) -> dict:
    """The default scenario with a three-type workload and injected FPR."""
    d = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    for tier in d["tiers"]:
        tier["accuracy"] = TABLES[tier["name"]]
    d["workload"] = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14}}
    d["router"] = {"policy": policy, "confusion": {"fpr": fpr}}
    d["sweep"] = {}
    if window:
        d["trace"]["window"] = [0, window]
    return d


def main() -> None:
    """Print one row per injected FPR."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=None, help="seconds of trace to replay")
    ap.add_argument("--policy", default="oracle", choices=["oracle", "threshold"])
    args = ap.parse_args()
    print(f"{'fpr':>5} {'fpr_real':>8} {'USD/1k req':>10} {'accuracy':>8} {'ci95':>17} "
          f"{'silent':>7} {'ttft_p99':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for fpr in np.linspace(0.0, 0.3, 7):
            path = Path(tmp) / f"fpr{fpr:.2f}.yaml"
            path.write_text(yaml.safe_dump(scenario_dict(float(fpr), args.policy, args.window)))
            s = run_scenario(load_scenario(path), scenario_path=path)
            r = s["router"]
            lo, hi = r["accuracy_ci95"]
            print(f"{fpr:5.2f} {r['fpr']:8.3f} {1e3 * s['cost_usd'] / s['requests']:10.4f} "
                  f"{s['accuracy']:8.4f} [{lo:.4f}, {hi:.4f}] {r['silent_failure_rate']:7.4f} "
                  f"{s['ttft_p99_s']:8.3f}")


if __name__ == "__main__":
    main()
