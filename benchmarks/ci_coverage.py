"""Coverage of ``router.accuracy_ci95`` on fractional per-request accuracies, by simulation.

For each shape below (a distribution of per-request expected accuracies in [0, 1] with a known
mean) and each sample size n, draw ``--draws`` samples of n values, take the 95% interval of
each (``tiersim.routing.metrics.accuracy_ci``, and for comparison the percentile bootstrap
tiersim used before: 200 resamples), and print the share of intervals holding the true mean,
and their mean width. A 95% interval should hold it in about 95% of samples.

Shapes:

- ``beta(8,2)``: smooth and skewed, mean 0.8;
- ``bimodal``: 80% near 1 (Beta(20, 1)), 20% near 0 (Beta(1, 20)), mean 16.2 / 21;
- ``mostly-1``: 90% at exactly 1, 10% uniform on [0.2, 0.6], mean 0.94 (a sample of 10 has no
  low value 35% of the time, 0.9 ** 10);
- ``default job``: the default scenario's own values when this was written, uniform BF16 17 x 1
  (``tiersim run scenarios/default.yaml``, ``requests.parquet``'s ``expected_accuracy``: 1,279
  requests at 0, 2,232 at 0.8, 5,308 at 1), drawn with replacement; the mean is theirs. The
  routed default of 2026-12-06 (FP8 10 + BF16 7) moves 721 of the 0.8s to 0.76.

Run: ``python benchmarks/ci_coverage.py [--draws 2000] [--seed 1]`` (about 20 s of CPU,
most of it the bootstrap). It ends with the time of one interval of 1,000,000 values.
Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tiersim.routing.metrics import accuracy_ci, wilson_ci

SIZES = (5, 10, 30, 100, 1000)
DEFAULT_JOB = np.repeat([0.0, 0.8, 1.0], [1279, 2232, 5308])


def beta_8_2(rng: np.random.Generator, size: int) -> np.ndarray:
    """Beta(8, 2) values."""
    return rng.beta(8.0, 2.0, size)


def bimodal(rng: np.random.Generator, size: int) -> np.ndarray:
    """80% Beta(20, 1) (near 1), 20% Beta(1, 20) (near 0)."""
    high = rng.random(size) < 0.8
    return np.where(high, rng.beta(20.0, 1.0, size), rng.beta(1.0, 20.0, size))


def mostly_one(rng: np.random.Generator, size: int) -> np.ndarray:
    """90% exactly 1, 10% uniform on [0.2, 0.6]."""
    low = rng.random(size) < 0.1
    return np.where(low, rng.uniform(0.2, 0.6, size), 1.0)


def default_job(rng: np.random.Generator, size: int) -> np.ndarray:
    """The default scenario's per-request expected accuracies, drawn with replacement."""
    return rng.choice(DEFAULT_JOB, size)


SHAPES = {
    "beta(8,2)": (beta_8_2, 0.8),
    "bimodal": (bimodal, 16.2 / 21.0),
    "mostly-1": (mostly_one, 0.94),
    "default job": (default_job, float(DEFAULT_JOB.mean())),
}
"""Name -> (draw(rng, size), true mean)."""


def interval_before(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The interval tiersim gave before: Wilson's when every value is 0 or 1 (a ``mostly-1``
    sample with no low value), else the percentile bootstrap, 2.5% and 97.5% quantiles of the
    means of 200 resamples (NaN for fewer than two values)."""
    n = len(values)
    if n < 2:
        return (float("nan"), float("nan"))
    if np.all((values == 0.0) | (values == 1.0)):
        return wilson_ci(float(values.sum()), n)
    means = values[rng.integers(0, n, (200, n))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return (float(lo), float(hi))


def tiersim_interval(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """tiersim's own ``accuracy_ci`` (which draws no random numbers)."""
    del rng
    return accuracy_ci(values)


METHODS = {"before: percentile bootstrap": interval_before,
           "tiersim accuracy_ci": tiersim_interval}


def coverage(method, draw, mean: float, n: int, draws: int, seed: int) -> tuple[float, float]:
    """Share of ``draws`` samples of ``n`` whose interval holds ``mean``, and the mean width."""
    rng = np.random.default_rng(seed)
    samples = draw(rng, (draws, n))
    intervals = np.array([method(row, rng) for row in samples])
    held = (intervals[:, 0] <= mean) & (mean <= intervals[:, 1])
    return float(held.mean()), float(np.mean(intervals[:, 1] - intervals[:, 0]))


def table(method, draws: int, seed: int) -> list[str]:
    """Markdown rows: per shape, coverage % (mean width) at each size."""
    rows = ["| shape | " + " | ".join(f"n = {n}" for n in SIZES) + " |",
            "|---|" + "---|" * len(SIZES)]
    for name, (draw, mean) in SHAPES.items():
        cells = [coverage(method, draw, mean, n, draws, seed) for n in SIZES]
        rows.append(f"| {name} | " + " | ".join(f"{100 * c:.1f}% ({w:.3f})" for c, w in cells)
                    + " |")
    return rows


def million_seconds(seed: int) -> float:
    """Seconds for tiersim's interval of 1,000,000 Beta(8, 2) values (best of 3)."""
    values = beta_8_2(np.random.default_rng(seed), 1_000_000)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        accuracy_ci(values)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    """Print the coverage tables and the 1M-value timing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000, help="samples per cell")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for label, method in METHODS.items():
        print(f"\n{label}: coverage of the true mean ({args.draws} samples per cell), "
              "mean width in brackets")
        print("\n".join(table(method, args.draws, args.seed)))
    print(f"\ntiersim accuracy_ci of 1,000,000 values: {million_seconds(args.seed):.4f} s")


if __name__ == "__main__":
    main()
