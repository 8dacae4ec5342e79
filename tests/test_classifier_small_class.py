"""A training split with too few requests of one class for the classifier's folds: fewer folds
(down to 2) with a note, and below that the same probabilities for every request with a note.
It was an error telling the user to lower cv_folds, which could not help (2 failed the same
way, and 1 is refused)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, run_cli

from tiersim.errors import Note
from tiersim.routing import TierInfo
from tiersim.routing.classifier import train_classifier
from tiersim.routing.config import ClassifierConfig

TIERS = [TierInfo("cheap"), TierInfo("strong")]


def table(n: int, wrong: int) -> pd.DataFrame:
    """``n`` requests, the cheap tier wrong on the ``wrong`` longest, the strong tier always
    right; train_fraction 1 - 1/n keeps all but one of them (the shortest) for training."""
    tokens = np.arange(1, n + 1) * 10
    return pd.DataFrame({"input_tokens": tokens,
                         "correct_cheap": (tokens <= (n - wrong) * 10).astype(float),
                         "correct_strong": np.ones(n)})


def test_one_wrong_answer_gives_every_request_the_same_probabilities():
    df = table(40, 1)
    cfg = ClassifierConfig(train_fraction=1 - 1 / 40)
    with pytest.warns(Note, match=r"^s.yaml: router.classifier: the cheapest tier cheap is "
                      r"wrong on 1 of the 39 training requests, too few of one kind"):
        clf = train_classifier(df, TIERS, cfg, np.random.default_rng(0), "s.yaml")
    p = clf.p_good_enough(df)
    assert np.allclose(p, p[0]) and p[0, 0] == pytest.approx(38 / 39)


def test_fewer_wrong_answers_than_folds_lowers_the_folds():
    df = table(40, 2)
    cfg = ClassifierConfig(train_fraction=1 - 1 / 40, cv_folds=5)
    with pytest.warns(Note, match=r"router.classifier.cv_folds: the smaller class of the "
                      r"training split .* has 2 requests, fewer than cv_folds \(5\); the "
                      r"calibrations use 2-fold scores"):
        clf = train_classifier(df, TIERS, cfg, np.random.default_rng(0), "s.yaml")
    assert clf.p_good_enough(df).shape == (40, 1)


def test_a_floor_router_over_near_perfect_tiers_runs(tmp_path):
    """hi1.yaml: exit 1, "router.classifier.cv_folds: 3 folds, but the smaller class of the
    training split has 1 request(s) ...; lower cv_folds", though no classifier was written."""
    doc = yaml.safe_load((REPO / "scenarios" / "tiny.yaml").read_text())
    doc.update(profile=None, accuracy_floor=0.985, router={"policy": "floor"},
               workload={"difficulty": {"kind": "two_type", "p_easy": 0.8}})
    doc["trace"]["window"] = [240, 300]
    doc["tiers"][0]["accuracy"] = {"easy": 0.999, "hard": 0.97}
    doc["tiers"][1]["accuracy"] = {"easy": 1.0, "hard": 0.995}
    path = tmp_path / "hi1.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                   "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert (f"note: {path}: router.classifier: the cheapest tier w4a16 is wrong on 1 of the 94 "
            "training requests, too few of one kind to learn from or calibrate on, so every "
            "request gets the same probabilities (the split's rates) and routing cannot tell "
            "requests apart; use more requests for a classifier that can") in proc.stderr
