"""Round 55 (speed55): the classifier's held-out report (:func:`tiersim.routing.classifier.
heldout_report`) was made at every training, about 4 % of ``tiersim plan``'s time (the floor
router trains once per design it routes), though no command writes it. It is now made when
``report`` is first read, from the held-out rows and calibrations the training kept: the same
figures whenever it is read, also after the classifier scored other tables."""

from __future__ import annotations

import numpy as np
import pytest
from test_round54_speed54_classifier import _fresh, _table

from tiersim.routing import TierInfo
from tiersim.routing import classifier as clf_module
from tiersim.routing.accuracy import realised_matrix
from tiersim.routing.classifier import heldout_report, train_classifier
from tiersim.routing.config import ClassifierConfig


def test_the_report_is_made_when_read_and_is_what_training_made(monkeypatch):
    """Training makes no report; read after the classifier scored the training table and
    another, it equals the report made at once after training (every figure, the features
    and row counts too), and it is made once."""
    _fresh(monkeypatch)
    df, other = _table(), _table(seed=1)
    tiers = [TierInfo("cheap"), TierInfo("mid"), TierInfo("strong")]
    cfg = ClassifierConfig()
    calls = []
    made = clf_module.heldout_report

    def counted(*args, **kwargs):
        calls.append(1)
        return made(*args, **kwargs)

    monkeypatch.setattr(clf_module, "heldout_report", counted)
    clf = train_classifier(df, tiers, cfg, np.random.default_rng(3))
    assert not calls  # nothing made at training
    test = np.setdiff1d(np.arange(len(df)), clf.train_index)
    at_once = heldout_report(clf, df.iloc[test], realised_matrix(df, tiers)[test], tiers, cfg)
    clf.score(df), clf.score(other)  # scored since: the report does not depend on it
    report = clf.report
    assert calls == [1] and clf.report is report and calls == [1]
    assert {k: v for k, v in report.items()
            if k not in ("features", "train_rows", "heldout_rows")} == at_once
    assert (report["train_rows"], report["heldout_rows"]) == (len(clf.train_index), len(test))
    assert report["features"]


def test_a_report_set_is_the_one_read():
    """The attribute may still be set (a library caller's own report), and a classifier made
    by hand reads an empty one."""
    clf = clf_module.DifficultyClassifier(pipeline=None, groups=[], good_enough=[], correct=[])
    assert clf.report == {}
    clf.report = {"mine": 1}
    assert clf.report == {"mine": 1}


@pytest.fixture(autouse=True)
def _no_kept_fits(monkeypatch):
    """No fit kept from an earlier test."""
    _fresh(monkeypatch)
