"""Injected false positives: cost and accuracy fall together (Done-when 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.routing import TierInfo, build_router, prepare_workload, score
from tiersim.routing.frontier import fixed_cost

TIERS = [
    TierInfo("nvfp4", accuracy={"easy": 0.96, "hard": 0.35}, cost_weight=1.0),
    TierInfo("fp8", accuracy={"easy": 0.99, "hard": 0.65}, cost_weight=1.7),
    TierInfo("bf16", accuracy={"easy": 1.0, "hard": 0.85}, cost_weight=2.6),
]


def test_fpr_sweep_cost_and_accuracy_fall_with_silent_failures_reported():
    df = pd.DataFrame({"input_tokens": np.full(40_000, 100, np.int32)})
    cfg = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14}}
    df = prepare_workload(df, TIERS, cfg, np.random.default_rng(0)).df
    rows = []
    for fpr in np.linspace(0.0, 0.3, 7):
        router = build_router({"policy": "oracle", "confusion": {"fpr": float(fpr)}}, TIERS)
        a = router.assign(df, np.random.default_rng(1))  # same draws at every point
        s = score(df, a, TIERS)
        rows.append((fpr, fixed_cost(a, TIERS).mean(), s["accuracy"], s["fpr"],
                     s["silent_failure_rate"]))
    fpr, cost, acc, realised, silent = np.array(rows).T
    assert np.all(np.diff(cost) < 0)
    assert np.all(np.diff(acc) < 0)
    assert np.all(np.diff(silent) > 0) and silent[0] == 0.0
    assert np.allclose(realised, fpr, atol=0.01)
