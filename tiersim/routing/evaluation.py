"""Calibration metrics of probabilistic predictions: AUROC, Brier, ECE, reliability table.

ECE binning: ``bins`` equal-width bins on [0, 1] (right-closed except the first, which includes
0); ECE = sum over non-empty bins of (bin count / n) x |mean predicted - observed rate|.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import brier_score_loss, roc_auc_score


def reliability_table(prob: np.ndarray, outcome: np.ndarray, bins: int = 10) -> list[dict]:
    """Per equal-width bin: edges, count, mean predicted probability, observed rate."""
    prob = np.asarray(prob, dtype=np.float64)
    outcome = np.asarray(outcome, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, prob, side="left") - 1, 0, bins - 1)
    rows = []
    for b in range(bins):
        mask = which == b
        count = int(mask.sum())
        rows.append(
            {
                "lo": float(edges[b]),
                "hi": float(edges[b + 1]),
                "count": count,
                "predicted": float(prob[mask].mean()) if count else None,
                "observed": float(outcome[mask].mean()) if count else None,
            }
        )
    return rows


def expected_calibration_error(prob, outcome, bins: int = 10) -> float:
    """ECE over equal-width bins (see module docstring)."""
    table = reliability_table(prob, outcome, bins)
    n = sum(r["count"] for r in table)
    return float(
        sum(r["count"] / n * abs(r["predicted"] - r["observed"]) for r in table if r["count"])
    )


def calibration_report(prob, outcome, bins: int = 10, raw_score=None) -> dict:
    """AUROC (of ``raw_score`` if given, else of ``prob``), Brier, ECE, reliability, base rate."""
    outcome = np.asarray(outcome, dtype=bool)
    ranking = prob if raw_score is None else raw_score
    both = outcome.any() and (~outcome).any()
    return {
        "auroc": float(roc_auc_score(outcome, ranking)) if both else None,
        "auroc_calibrated": float(roc_auc_score(outcome, prob)) if both else None,
        "brier": float(brier_score_loss(outcome, prob)),
        "ece": expected_calibration_error(prob, outcome, bins),
        "ece_binning": f"{bins} equal-width bins on [0, 1], weighted by count",
        "base_rate": float(outcome.mean()),
        "n": int(len(outcome)),
        "reliability": reliability_table(prob, outcome, bins),
    }
