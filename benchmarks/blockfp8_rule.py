"""Check the block-FP8 graph-read rule against block-FP8 GEMMs the harness measured.

NVIDIA's vLLM block-FP8 GEMM tables were timed eagerly: their small-``m`` rows (57-83 us at
every shape) are the host launch path, not the kernel. Inside a CUDA-graph decode step
tiersim reads them as ``max(roofline, latency - its launch floor)`` (the
*graph-read rule*, ``tiersim/perf/profile.py``), a rule fitted on served rows, never checked
against a kernel time (docs/fidelity.md, "Block-FP8 GEMMs in CUDA graphs"). The harness
(``python -m tiersim.calibrate --precisions fp8,fp8_block --ops overhead,gemm``) times the block-FP8
kernel itself on the device. This script sets the two side by side, shape by shape:

    python benchmarks/blockfp8_rule.py HARNESS_PROFILE.json [--shipped PROFILE] [--max-m 512]

For every ``fp8_block`` GEMM table of the harness profile, at each measured ``m`` up to
``--max-m``: the harness's block-FP8 time, its row-wise FP8 time at the same shape when it
was measured (the per-tensor-based rule's ratio), NVIDIA's eager time and the graph-read
rule's time from the shipped profile (anchored on the nearest shape when NVIDIA has none at
this one: the label says so), and rule / measured. It ends with the median of rule / measured
for m <= 16 and for 32 <= m <= max-m: near 1 the shipped rule stands; far from 1 the
measured table should replace it (import it, then refit with ``fidelity_silicon.py --fit``).
Both profiles must be of the same GPU (H200 for the shipped default).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tiersim.errors import TiersimError  # noqa: E402
from tiersim.hardware import get_gpu, get_model  # noqa: E402
from tiersim.perf import resolve_profile  # noqa: E402
from tiersim.perf.profile import ProfileOps, load_profile  # noqa: E402
from tiersim.perf.roofline import RooflineOps  # noqa: E402

SHIPPED = "h200_aiconfigurator_vllm"
#: A catalogue model whose checkpoint format the lookups need; GEMM lookups depend only on the
#: (n, k) asked for, not on the model.
CARRIER_MODEL = "Qwen3-30B-A3B"


def shipped_ops(shipped: str) -> ProfileOps:
    """The shipped profile's operator answers at block FP8, with the roofline as floor."""
    profile = resolve_profile(shipped)
    try:
        dev = get_gpu(profile.gpu)
    except TiersimError as exc:  # a harness profile of a CPU, say: no roofline to floor it
        raise TiersimError(f"--shipped {shipped}: a profile of {profile.gpu}, which tiersim "
                           f"does not model ({exc}); name a profile of one of those GPUs"
                           ) from None
    arch = get_model(CARRIER_MODEL)
    fallback = RooflineOps(arch, "fp8_block", dev)
    return ProfileOps(profile, arch, "fp8_block", dev, fallback=fallback)


def compare(harness_path: str, shipped: str = SHIPPED, max_m: int = 512) -> list[dict]:
    """One row per (n, k, m) of the harness's fp8_block GEMM tables, up to ``max_m``."""
    harness = load_profile(harness_path)
    ops = shipped_ops(shipped)
    if ops.profile.gpu.lower() != harness.gpu.lower():
        raise TiersimError(f"{harness_path}: measured on {harness.gpu}, the rule's profile "
                           f"{shipped} on {ops.profile.gpu}; compare profiles of one GPU")
    rows = []
    for table in harness.tables:
        if table.op != "gemm" or table.dtype != "fp8_block":
            continue
        n, k = table.key["n"], table.key["k"]
        rowwise = harness.find("gemm", "fp8", {"n": n, "k": k})
        ms = np.asarray([m for m in table.axes["m"] if m <= max_m], dtype=np.float64)
        rule = np.asarray(ops.gemm(ms, n, k, "fp8_block"), dtype=np.float64)
        nvidia = ops.profile.find("gemm", "fp8_block", {"n": n, "k": k})
        label = ops.sources().get(f"gemm fp8_block n={n} k={k}", "roofline")
        for i, m in enumerate(ms):
            measured = float(table.lookup(m))
            rows.append({
                "n": n, "k": k, "m": int(m), "measured_s": measured,
                "rowwise_fp8_s": float(rowwise.lookup(m)) if rowwise is not None else None,
                "nvidia_eager_s": float(nvidia.lookup(m)) if nvidia is not None else None,
                "rule_s": float(rule[i]), "rule_source": label,
                "rule_over_measured": float(rule[i]) / measured,
                "emulated": table.extra.get("kernel", "").startswith("emulated"),
            })
    return rows


def _us(value: float | None) -> str:
    """Seconds as microseconds, or '-'."""
    return "-" if value is None else f"{value * 1e6:8.1f}"


def render(rows: list[dict], max_m: int) -> str:
    """The comparison as text: one line per point, then the two medians."""
    lines = [f"{'n':>6} {'k':>6} {'m':>5}  {'harness':>8} {'rowwise':>8} {'NVIDIA':>8} "
             f"{'rule':>8}  rule/harness  (microseconds)"]
    shape = None
    for r in rows:
        if (r["n"], r["k"]) != shape:
            shape = (r["n"], r["k"])
            lines.append(f"rule at n={r['n']} k={r['k']}: {r['rule_source']}"
                         + ("; harness EMULATED (no block-FP8 kernel ran: not a kernel time)"
                            if r["emulated"] else ""))
        lines.append(f"{r['n']:>6} {r['k']:>6} {r['m']:>5}  {_us(r['measured_s'])} "
                     f"{_us(r['rowwise_fp8_s'])} {_us(r['nvidia_eager_s'])} {_us(r['rule_s'])}"
                     f"  {r['rule_over_measured']:11.2f}")
    for lo, hi in ((1, min(16, max_m)), (32, max_m)):
        if lo > hi:  # --max-m below this range: no line that reads "32 <= m <= 8"
            continue
        ratios = [r["rule_over_measured"] for r in rows if lo <= r["m"] <= hi]
        text = f"{statistics.median(ratios):.2f} (n={len(ratios)})" if ratios else "no points"
        lines.append(f"graph-read rule / measured block-FP8, {lo} <= m <= {hi}: median {text}")
    return "\n".join(lines)


def _no_rows(harness_path: str, max_m: int) -> str:
    """Why :func:`compare` found no point: no fp8_block GEMM table at all, or none measured at
    an ``m`` up to ``max_m``."""
    smallest = [min(t.axes["m"]) for t in load_profile(harness_path).tables
                if t.op == "gemm" and t.dtype == "fp8_block"]
    if smallest:
        return (f"{harness_path}: no fp8_block gemm point at m <= {max_m} (the smallest "
                f"measured is m = {min(smallest):g}); raise --max-m")
    return (f"{harness_path}: no fp8_block gemm table; measure one with python -m "
            f"tiersim.calibrate --precisions fp8,fp8_block --ops overhead,gemm")


def main(argv: list[str] | None = None) -> int:
    """Print the comparison for a harness profile; 1 with one line on a bad input."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("harness", help="a profile written by python -m tiersim.calibrate")
    p.add_argument("--shipped", default=SHIPPED, help=f"profile holding the rule (default "
                                                      f"{SHIPPED})")
    p.add_argument("--max-m", type=int, default=512,
                   help="largest m compared (the CUDA-graph limit of the shipped profile)")
    args = p.parse_args(argv)
    if args.max_m < 1:
        print(f"error: --max-m {args.max_m}: must be a whole number >= 1 (the largest m "
              f"compared; default 512)", file=sys.stderr)
        return 1
    try:
        rows = compare(args.harness, args.shipped, args.max_m)
    except TiersimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not rows:
        print(f"error: {_no_rows(args.harness, args.max_m)}", file=sys.stderr)
        return 1
    print(render(rows, args.max_m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
