"""The router's realised quality on the trace it replayed, beside what the scenario asked.

A scenario states how good its difficulty classifier is meant to be (``workload.difficulty.
hint_auroc``: the AUROC of the ``feat_difficulty_hint`` feature it learns from) and how often
the router is to err on top of its policy (``router.confusion: {fpr, fnr}``). The run reports
the realised FPR and FNR already (:func:`tiersim.routing.metrics.error_rates`, on the realised
correctness); this module adds the classifier's realised AUROC over every request the router
scored, by scikit-learn's ``roc_auc_score``, and the rates asked, so a planner sees whether the
modelled classifier was as good as assumed.

The AUROC is of the classifier's score (its uncalibrated probability that the cheapest tier
answers wrong; a training row's out-of-fold score, so none is in-sample), with its 95%
interval (:func:`auroc_interval`), against:

- the trace's labels where it has them (``correct_<tier>``): positive where the cheapest tier
  answers wrong, the classifier's own target (a scenario states no AUROC for it);
- else the drawn difficulty class: positive where a request is not easy (hard, or hard or
  hopeless on a ``three_type`` workload: :func:`drawn_target` names the classes drawn), the
  target ``hint_auroc`` is stated for, which is then the AUROC asked; and, as a second
  figure, the drawn correctness: positive where the cheapest tier answers wrong, what a
  routing error costs (``auroc_wrong``; on the default job about 0.66 against 0.72 for "not
  easy", modelled: an easy request the cheapest tier gets wrong, or a hard one it gets right,
  is noise to a classifier of difficulty).

No AUROC is given, with the reason in words (never NaN), where the router has no classifier,
no request reached it, the difficulty is continuous (no classes: ``kind: continuous`` or the
trace's own ``difficulty`` column), or the requests are all of one class.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tiersim.results_parts import AUROC_VERDICT_MIN_CLASS, RouterQuality
from tiersim.routing.accuracy import correct_column

LABELS = "trace labels"
"""``RouterQuality.truth`` where the trace carries ``correct_<tier>`` labels."""
DRAWN = "drawn difficulty"
"""``RouterQuality.truth`` where tiersim drew each request's difficulty class."""
MIN_CLASS = 2
"""Requests of each class :func:`auroc_interval` needs at least (DeLong's variance is each
class's sample variance): with fewer, the AUROC is given without an interval."""
EDGE_TAIL = 0.025
"""The tail :func:`auroc_interval` leaves below an AUROC of 1 (above one of 0), where every
positive-negative pair is ordered alike: half of the 5 % a 95% interval leaves out."""
VERDICT_MIN_CLASS = AUROC_VERDICT_MIN_CLASS
"""Requests of each class the AUROC asked needs before it is judged against the realised
AUROC's interval (within, worse, better: :meth:`tiersim.results_parts.RouterQuality.
asked_text`): from 100 of each, the interval held the true AUROC in at least 93 % of samples
in every cell of ``benchmarks/auroc_coverage.py``'s grid drawn 2,000 times; at 50 in as few
as 88 %, and less below, to 31 % at 2 (:func:`auroc_interval`). The same figure as
:data:`tiersim.results_parts.AUROC_VERDICT_MIN_CLASS`, which the console reads."""
HINT_KEY = "workload.difficulty.hint_auroc"
"""Where the AUROC asked is stated: the hint feature's own AUROC for "not easy"."""


def auroc(score: np.ndarray, positive: np.ndarray) -> float | None:
    """scikit-learn's ``roc_auc_score`` of ``score`` for the 0/1 (or bool) ``positive``; None
    where there are not both classes (it is undefined, and scikit-learn warns and gives NaN)."""
    from sklearn.metrics import roc_auc_score  # lazy: scikit-learn is a heavy import

    positive = np.asarray(positive, dtype=bool)
    if not positive.any() or positive.all():
        return None
    return float(roc_auc_score(positive, np.asarray(score, dtype=np.float64)))


def auroc_interval(score: np.ndarray, positive: np.ndarray,
                   value: float | None = None) -> tuple[float, float] | None:
    """The 95% interval of ``score``'s AUROC for the 0/1 (or bool) ``positive`` (both classes
    present), by DeLong, DeLong and Clarke-Pearson's variance (1988, "Comparing the areas under
    two or more correlated receiver operating characteristic curves", the structural
    components): each positive's share of the negatives scored below it (a tie counts half),
    V10, and each negative's share of the positives scored above it, V01; SE^2 = var(V10) / n1
    + var(V01) / n0 (sample variances). Since auroc54 the interval is taken on the logit scale
    (the delta method: logit(A) +- q SE / (A (1 - A)), and back, so it stays inside (0, 1) and
    is skewed away from the nearer end, as the AUROC's spread is), with q Student's t 97.5 %
    quantile on the Welch-Satterthwaite degrees of freedom of SE^2's two terms (1.96 at
    thousands of requests; up to 12.7 where a class of two requests, whose sample variance
    rests on one degree of freedom, carries the variance). A is ``value`` (default: the mean
    of V10, the AUROC). It assumes nothing of the scores' shape and treats the two classes
    alike.

    Coverage (the share of intervals holding the true AUROC; 2026-12-07, seeded simulation
    over binormal, unequal-spread binormal and five-level tied scores, true AUROC 0.6 - 0.95,
    class sizes 2 - 1000 each way: ``benchmarks/auroc_coverage.py``, docs/metrics.md): at
    least 93 % in every cell with 100 or more of each class drawn 2,000 times (92 % in one of
    the cells of over 1,200 requests, drawn 500 times: +- 2 % of noise; DeLong's plain A +-
    1.96 SE, used until auroc54, 90 % at 100 beside 1,000); with fewer it is lower where the
    classes are unbalanced and the AUROC high (as few as 88 % at 50 of a class, 31 % at 2),
    which is why the AUROC asked is judged against it only from :data:`VERDICT_MIN_CLASS` of
    each class (:meth:`tiersim.results_parts.RouterQuality.asked_text`). Averaged over the
    grid it held 92 % at 2 of a class and 94 % from 3 on (DeLong's plain interval: 79 % at 2,
    86 % at 10).

    Zero-wide where every score ties (an AUROC of 0.5 that no sample moves). Where every
    positive-negative pair is ordered alike (an AUROC of 1, or 0), DeLong's variance is 0, and
    the interval runs from the least AUROC theta at which ``k = min(n1, n0)`` disjoint
    positive-negative pairs, each ordered rightly with probability at most theta, are all
    ordered rightly with probability :data:`EDGE_TAIL` (``theta ** k``), to 1 (from 0 to ``1 -
    theta`` for an AUROC of 0): zero-wide there, it held the true AUROC in 61 % of samples of 5
    positives and 5 negatives 2 apart, which are ordered alike in about 2 of 5 (review54).
    None where a class has fewer than :data:`MIN_CLASS` requests: a class's sample variance
    needs two, and counting one request's as 0 held the true AUROC in 13 % of samples of 1
    positive beside 200 negatives (review54, ``tests/test_round54_review54.py``)."""
    from scipy.special import expit, logit, stdtrit  # lazy, as scikit-learn is
    from scipy.stats import rankdata

    score = np.asarray(score, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    pos, neg = score[positive], score[~positive]
    n1, n0 = len(pos), len(neg)
    if min(n1, n0) < MIN_CLASS:
        return None
    ranks = rankdata(score)  # midranks: a tie counts half
    v10 = (ranks[positive] - rankdata(pos)) / n0  # negatives below each positive, as a share
    v01 = 1.0 - (ranks[~positive] - rankdata(neg)) / n1  # positives above each negative
    a = float(v10.mean()) if value is None else float(value)
    s10, s01 = float(v10.var(ddof=1)) / n1, float(v01.var(ddof=1)) / n0
    var = s10 + s01
    if a <= 0.0 or a >= 1.0:  # every pair ordered alike: DeLong's variance is 0
        edge = EDGE_TAIL ** (1.0 / min(n1, n0))  # the least AUROC theta with theta**k >= 2.5 %
        return (edge, 1.0) if a >= 1.0 else (0.0, 1.0 - edge)
    if var <= 0.0:  # every score ties: an AUROC of 0.5 that no sample moves
        return (a, a)
    df = var ** 2 / (s10 ** 2 / (n1 - 1) + s01 ** 2 / (n0 - 1))  # Welch-Satterthwaite
    half = float(stdtrit(df, 0.975)) * math.sqrt(var) / (a * (1.0 - a))  # delta method
    return (float(expit(logit(a) - half)), float(expit(logit(a) + half)))


def realised_quality(df: pd.DataFrame, score: np.ndarray | None, cheapest: str,
                     policy: str, labelled: bool, confusion: tuple[float, float] | None,
                     hint_auroc: float | None) -> RouterQuality:
    """The router's realised quality on ``df`` (the requests it routed).

    ``score``: its classifier's score per request (None: the router has none); ``cheapest``:
    the cheapest tier's name; ``labelled``: the trace carries ``correct_<tier>`` labels;
    ``confusion``: the ``(fpr, fnr)`` the scenario injects (None where it sets no
    ``router.confusion``); ``hint_auroc``: the scenario's ``workload.difficulty.hint_auroc``."""
    n = len(df)
    asked = {"fpr_asked": None if confusion is None else float(confusion[0]),
             "fnr_asked": None if confusion is None else float(confusion[1])}
    if labelled:
        truth, target = LABELS, f"the cheapest tier {cheapest} answering wrong"
        positive = df[correct_column(cheapest)].to_numpy(np.float64) < 0.5 if n else None
    else:
        classes = df.get("difficulty_class")
        truth, target = DRAWN, drawn_target(classes)
        positive = None
        if classes is not None and n and classes.notna().all():
            positive = (classes != "easy").to_numpy(bool)
    hint = None if labelled else hint_auroc
    count = None if positive is None else int(positive.sum())
    base = dict(truth=truth, requests=n, target=target, positives=count, auroc_asked=hint,
                asked_from=None if hint is None else HINT_KEY, **asked)
    if not n:
        return RouterQuality(**base, no_auroc="no request reached the router")
    if score is None:
        return RouterQuality(**base, no_auroc=f"the {policy} router has no classifier to "
                                              "score requests")
    base.update(_wrong_on_drawn(df, score, cheapest) if not labelled else {})
    if positive is None:
        return RouterQuality(**base, no_auroc="the difficulty is continuous (kind continuous, "
                                              "or the trace's own difficulty column): no easy "
                                              "or hard class to score against")
    value = auroc(score, positive)
    if value is None:
        one = _one_class(truth, cheapest, count, n, target)
        return RouterQuality(**base, no_auroc=f"{one}: one class only, and an AUROC needs both")
    return RouterQuality(**base, auroc=value, auroc_ci95=auroc_interval(score, positive, value))


def drawn_target(classes: pd.Series | None) -> str:
    """The drawn classes an AUROC on drawn difficulty takes as positive, named as the workload
    has them: every class but easy drawn, in :data:`~tiersim.routing.config.DIFFICULTY_CLASSES`
    order ("hard" on a ``two_type`` workload, "hard or hopeless" on a ``three_type`` one);
    "not easy" where none was drawn (every request easy, or no classes). Before, it read "hard
    or hopeless" on a two-type workload, which has no hopeless class."""
    from tiersim.routing.config import DIFFICULTY_CLASSES

    drawn = set() if classes is None else set(classes.dropna().unique())
    return " or ".join(c for c in DIFFICULTY_CLASSES[1:] if c in drawn) or "not easy"


def _wrong_on_drawn(df: pd.DataFrame, score: np.ndarray, cheapest: str) -> dict:
    """On drawn difficulty, ``score``'s AUROC for the cheapest tier answering wrong against
    its drawn correctness (``correct_<cheapest>``), with its interval and count, as
    :class:`RouterQuality`'s ``auroc_wrong`` fields; empty where the table has no such column
    or the cheapest tier answers every request alike."""
    column = df.get(correct_column(cheapest))
    if column is None:
        return {}
    wrong = column.to_numpy(np.float64) < 0.5
    value = auroc(score, wrong)
    if value is None:
        return {}
    count = int(wrong.sum())
    return {"wrong_target": f"the cheapest tier {cheapest} answering wrong",
            "wrong_positives": count, "auroc_wrong": value,
            "auroc_wrong_ci95": auroc_interval(score, wrong, value)}


def _one_class(truth: str, cheapest: str, count: int, n: int, target: str) -> str:
    """The requests' one class in words: "all 500 requests are easy", "the cheapest tier
    fp8 answers all 500 requests right"."""
    if truth == LABELS:
        return (f"the cheapest tier {cheapest} answers all {n:,} requests "
                f"{'wrong' if count else 'right'}")
    return f"all {n:,} requests are {target if count else 'easy'}"
