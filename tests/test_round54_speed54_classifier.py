"""Round 54 (speed54): the floor router trains the difficulty classifier once per design a plan
routes, and most of those fits are the same fit again (the label is only the cheapest tier's
correctness; every design routes the same requests with the same seed). A fit of the same
inputs (:func:`tiersim.routing.classifier._fit_key`) is now reused: the classifier, its
scores, its calibrations and the generator's state after it are what a fresh fit gives, and
anything the fit reads that differs is fitted anew."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.routing import TierInfo
from tiersim.routing import classifier as clf_module
from tiersim.routing.classifier import train_classifier
from tiersim.routing.config import ClassifierConfig


def _table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Requests whose cheap tier is wrong more often on long prompts."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(10, 4000, n)
    return pd.DataFrame({
        "input_tokens": tokens,
        "task_type": rng.choice(["code", "chat", "math"], n),
        "correct_cheap": (rng.random(n) > tokens / 5000).astype(float),
        "correct_mid": (rng.random(n) > tokens / 8000).astype(float),
        "correct_strong": np.ones(n)})


def _fresh(monkeypatch):
    """No fit kept from an earlier test."""
    monkeypatch.setattr(clf_module, "_FITTED", type(clf_module._FITTED)())


def _same(a, b, df) -> None:
    """Two classifiers give the same scores and calibrated probabilities to the bit."""
    np.testing.assert_array_equal(a.score(df), b.score(df), strict=True)
    np.testing.assert_array_equal(a._oof, b._oof, strict=True)
    np.testing.assert_array_equal(a.p_correct(df, a.score(df)), b.p_correct(df, b.score(df)),
                                  strict=True)
    assert a.report == b.report


def test_the_same_fit_is_reused_and_gives_the_same_classifier(monkeypatch):
    """A second training of the same inputs takes the kept pipeline (no new fit), and equals
    a fresh fit in every number; the generator is left where a fresh fit leaves it."""
    _fresh(monkeypatch)
    df = _table()
    tiers = [TierInfo("cheap"), TierInfo("strong")]
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    first = train_classifier(df, tiers, ClassifierConfig(), rng_a)
    assert len(clf_module._FITTED) == 1
    fits = []
    monkeypatch.setattr(clf_module, "make_pipeline",
                        lambda *a, **k: fits.append(1) or pytest.fail("fitted again"))
    second = train_classifier(df, [TierInfo("cheap"), TierInfo("mid"), TierInfo("strong")],
                              ClassifierConfig(), rng_b)  # other tiers above: the same fit
    assert second.pipeline is first.pipeline and not fits
    assert rng_a.random() == rng_b.random()  # the shuffle's seed drawn either way
    monkeypatch.undo()
    _fresh(monkeypatch)
    fresh = train_classifier(df, [TierInfo("cheap"), TierInfo("mid"), TierInfo("strong")],
                             ClassifierConfig(), np.random.default_rng(7))
    assert fresh.pipeline is not first.pipeline
    _same(second, fresh, df)


@pytest.mark.parametrize("change", ["labels", "seed", "features", "setting", "rows"])
def test_a_fit_of_other_inputs_is_fitted_anew(monkeypatch, change):
    """Another cheapest tier (labels), generator seed, feature values, classifier setting or
    trace: not the kept fit."""
    _fresh(monkeypatch)
    df = _table()
    tiers = [TierInfo("cheap"), TierInfo("strong")]
    first = train_classifier(df, tiers, ClassifierConfig(), np.random.default_rng(7))
    cfg, seed, other = ClassifierConfig(), 7, df
    if change == "labels":
        tiers = [TierInfo("mid"), TierInfo("strong")]
    elif change == "seed":
        seed = 8
    elif change == "features":
        other = df.assign(input_tokens=df["input_tokens"] + 1)
    elif change == "setting":
        cfg = ClassifierConfig(C=0.5)
    else:
        other = _table(seed=1)
    again = train_classifier(other, tiers, cfg, np.random.default_rng(seed))
    assert again.pipeline is not first.pipeline
    assert len(clf_module._FITTED) == 2
