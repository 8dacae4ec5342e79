"""Coverage of ``router.quality``'s AUROC interval at small and large class sizes, by simulation.

For each score shape below, each true AUROC and each pair of class sizes (positives n1,
negatives n0), draw ``--draws`` samples of n1 positive and n0 negative scores, take each
sample's 95% interval by each method, and print the share of intervals holding the true
AUROC (coverage; a 95% interval should hold it in about 95 % of samples) and their mean width.

Methods:

- ``delong``: DeLong, DeLong and Clarke-Pearson's variance (1988), AUROC +- 1.96 SE within
  [0, 1] (tiersim's interval until round 54);
- ``logit``: the same variance carried to the logit scale by the delta method
  (SE / (A (1 - A))), +- 1.96 SE there, and back;
- ``logit-t``: as ``logit`` with Student's t 97.5 % quantile on the Welch-Satterthwaite
  degrees of freedom of DeLong's two variance terms in place of 1.96
  (``tiersim.routing.quality.auroc_interval`` since round 54).

All three give ``[0.025 ** (1 / k), 1]`` (k the smaller class's count) where every pair is
ordered alike (an AUROC of 1; mirrored at 0), and a zero-wide interval where every score ties.
Also, with ``--bootstrap`` (cells of at most 50 a class only, 200 samples each: it is slow):

- ``bca``: scipy's ``stats.bootstrap``, BCa,
  999 resamples of each class apart, on the AUROC.

Shapes (negatives N(0, 1) throughout):

- ``binormal``: positives N(d, 1), true AUROC Phi(d / sqrt 2);
- ``binormal-sd2``: positives N(d, 2), true AUROC Phi(d / sqrt 5) (unequal spread);
- ``tied``: the binormal scores cut into 5 levels at -0.5, 0.3, 1.0, 1.7 (many ties), true
  AUROC P(X > Y) + P(X = Y) / 2 from the levels' probabilities, d solved for it.

A cell of over 1,200 requests draws a quarter of ``--draws`` (500 by default: +- 2 % of
noise on a coverage of 95 %, against +- 1 % at 2,000).

Run: ``python benchmarks/auroc_coverage.py [--draws 2000] [--seed 1] [--bootstrap]``
(about 8 minutes on a shared 2-core machine for the default grid without ``--bootstrap``).
Deterministic for a seed. ``--summary`` ends with the least and the mean coverage over the
grid for each count of the smaller class (docs/metrics.md's table).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm, rankdata
from scipy.stats import t as t_dist

from tiersim.routing.quality import EDGE_TAIL

SIZES = (2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000)
AUROCS = (0.6, 0.72, 0.85, 0.92, 0.95)
SHAPES = ("binormal", "binormal-sd2", "tied")
CUTS = np.array([-0.5, 0.3, 1.0, 1.7])
Z = float(norm.ppf(0.975))


def _tied_auroc(d: float) -> float:
    """True AUROC of the 5-level scores with positives shifted by ``d``."""
    edges = np.concatenate([[-np.inf], CUTS, [np.inf]])
    p0 = np.diff(norm.cdf(edges))
    p1 = np.diff(norm.cdf(edges - d))
    below = np.concatenate([[0.0], np.cumsum(p0)[:-1]])
    return float(np.sum(p1 * (below + 0.5 * p0)))


def shift(shape: str, target: float) -> float:
    """The positives' shift d giving ``shape`` the true AUROC ``target``."""
    if shape == "binormal":
        return math.sqrt(2.0) * float(norm.ppf(target))
    if shape == "binormal-sd2":
        return math.sqrt(5.0) * float(norm.ppf(target))
    return brentq(lambda d: _tied_auroc(d) - target, 0.0, 10.0)


def draw(rng: np.random.Generator, shape: str, d: float, n1: int, n0: int,
         draws: int) -> np.ndarray:
    """``draws`` samples as rows: n1 positive scores, then n0 negative."""
    sd = 2.0 if shape == "binormal-sd2" else 1.0
    pos = rng.normal(d, sd, (draws, n1))
    neg = rng.normal(0.0, 1.0, (draws, n0))
    scores = np.concatenate([pos, neg], axis=1)
    if shape == "tied":
        scores = np.searchsorted(CUTS, scores).astype(np.float64)
    return scores


def delong_parts(scores: np.ndarray, n1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's AUROC, DeLong variance, and that variance's Welch-Satterthwaite degrees of
    freedom (positives are the first ``n1`` columns)."""
    n0 = scores.shape[1] - n1
    ranks = rankdata(scores, axis=1)
    v10 = (ranks[:, :n1] - rankdata(scores[:, :n1], axis=1)) / n0
    v01 = 1.0 - (ranks[:, n1:] - rankdata(scores[:, n1:], axis=1)) / n1
    a = v10.mean(axis=1)
    s10, s01 = v10.var(axis=1, ddof=1) / n1, v01.var(axis=1, ddof=1) / n0
    var = s10 + s01
    with np.errstate(invalid="ignore", divide="ignore"):
        df = var ** 2 / (s10 ** 2 / (n1 - 1) + s01 ** 2 / (n0 - 1))
    return a, var, np.nan_to_num(df, nan=1.0)


def intervals(a: np.ndarray, var: np.ndarray, k: int, method: str,
              df: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's 95% interval by ``method`` ("delong", "logit" or "logit-t": on ``df``
    degrees of freedom)."""
    se = np.sqrt(np.maximum(var, 0.0))
    z = Z if method != "logit-t" else t_dist.ppf(0.975, np.maximum(df, 1.0))
    if method == "delong":
        lo, hi = np.maximum(a - Z * se, 0.0), np.minimum(a + Z * se, 1.0)
    else:
        inner = (a > 0.0) & (a < 1.0)
        safe = np.where(inner, a, 0.5)
        centre = np.log(safe / (1.0 - safe))
        half = z * se / (safe * (1.0 - safe))
        lo = np.where(inner, 1.0 / (1.0 + np.exp(-(centre - half))), a)
        hi = np.where(inner, 1.0 / (1.0 + np.exp(-(centre + half))), a)
    edge = EDGE_TAIL ** (1.0 / k)
    lo = np.where((var <= 0.0) & (a == 1.0), edge, lo)
    hi = np.where((var <= 0.0) & (a == 0.0), 1.0 - edge, hi)
    return lo, hi


def bca(scores: np.ndarray, n1: int, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                        np.ndarray]:
    """scipy's BCa bootstrap interval of each row's AUROC (999 resamples, classes apart)."""
    import warnings

    from scipy.stats import bootstrap

    def stat(x, y, axis=-1):
        gt = (x[..., :, None] > y[..., None, :]).mean(axis=(-1, -2))
        eq = (x[..., :, None] == y[..., None, :]).mean(axis=(-1, -2))
        return gt + 0.5 * eq

    lo, hi = np.empty(len(scores)), np.empty(len(scores))
    for i, row in enumerate(scores):
        with warnings.catch_warnings():  # degenerate resamples: NaN ends, counted as [0, 1]
            warnings.simplefilter("ignore")
            res = bootstrap((row[:n1], row[n1:]), stat, n_resamples=999, method="BCa",
                            rng=rng, vectorized=True)
        lo[i], hi[i] = res.confidence_interval
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)
    return lo, hi


def main() -> None:
    """Print the coverage table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bootstrap", action="store_true")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    methods = ("delong", "logit", "logit-t") + (("bca",) if args.bootstrap else ())
    print("shape,auroc,n1,n0," + ",".join(f"{m}_cover,{m}_width" for m in methods))
    least: dict[tuple[str, int], float] = {}
    covers: dict[tuple[str, int], list[float]] = {}
    for shape in SHAPES:
        for target in AUROCS:
            d = shift(shape, target)
            for n1 in SIZES:
                for n0 in SIZES:
                    draws = args.draws if n1 + n0 <= 1200 else max(args.draws // 4, 200)
                    if args.bootstrap and max(n1, n0) > 50:
                        continue
                    scores = draw(rng, shape, d, n1, n0, draws)
                    a, var, df = delong_parts(scores, n1)
                    row = [shape, f"{target:g}", str(n1), str(n0)]
                    for m in methods:
                        if m == "bca":
                            lo, hi = bca(scores[:200], n1, rng)
                        else:
                            lo, hi = intervals(a, var, min(n1, n0), m, df)
                        cover = float(np.mean((lo <= target) & (target <= hi)))
                        row += [f"{cover:.3f}", f"{float(np.mean(hi - lo)):.3f}"]
                        key = (m, min(n1, n0))
                        least[key] = min(least.get(key, 1.0), cover)
                        covers.setdefault(key, []).append(cover)
                    print(",".join(row), flush=True)
    if args.summary:
        print("\nleast and mean coverage over the grid, by the smaller class's count")
        for m in methods:
            print(m, "least", " ".join(f"{k}:{least[(m, k)]:.3f}" for k in SIZES
                                       if (m, k) in least))
            print(m, "mean", " ".join(f"{k}:{np.mean(covers[(m, k)]):.3f}" for k in SIZES
                                      if (m, k) in covers))


if __name__ == "__main__":
    main()
