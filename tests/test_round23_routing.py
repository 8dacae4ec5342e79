"""Round 23, routing: difficulty routing and the classifier under hostile or edge inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tiersim.routing import TierInfo, build_router, prepare_workload

TWO = [TierInfo("cheap", accuracy={"easy": 0.98, "hard": 0.5}, cost_weight=1.0),
       TierInfo("top", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=3.0)]


def _two_subjects(n: int = 4000) -> pd.DataFrame:
    """A two-type workload whose only feature is one of two subjects: the classifier's scores
    take two values, so half the calibration rows tie with one another."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"input_tokens": np.full(n, 200, np.int32),
                       "output_tokens": np.full(n, 100, np.int32),
                       "subject": rng.choice(["a", "b"], n)})
    cfg = {"difficulty": {"kind": "two_type", "p_easy": 0.7}}
    return prepare_workload(df, TWO, cfg, np.random.default_rng(0)).df


@pytest.mark.parametrize("cfg", [{"policy": "budget", "budget_relative": 0.6},
                                 {"policy": "floor", "floor": 0.9}])
def test_constrained_cuts_never_split_tied_scores(cfg):
    """A cut inside a run of equal scores promised a split the router cannot make (every tied
    request has the same score, so all go one way): the budget router promised 1.8 per request
    and spent 2.01 on its own calibration rows. Cuts lie between distinct scores, so what the
    fit promises is what the routing does there."""
    df = _two_subjects()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        router = build_router({**cfg, "classifier": {"features": ["subject"]}}, TWO,
                              train_df=df, rng=np.random.default_rng(1))
        a = router.assign(df, np.random.default_rng(2))
    rows = router.classifier.train_index
    shares = np.bincount(a.tier[rows], minlength=2) / len(rows)
    assert shares.tolist() == pytest.approx(list(router.cuts.shares), abs=1e-12)
    cost = float(np.array([1.0, 3.0])[a.tier[rows]].mean())
    assert cost == pytest.approx(router.cuts.cost, abs=1e-9)
    if cfg["policy"] == "budget":
        assert cost <= 0.6 * 3.0 + 1e-9
