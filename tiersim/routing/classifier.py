"""The surface-feature difficulty classifier and its K-1 isotonic calibrations.

A logistic regression on features known at arrival (log input tokens, task type, ``feat_*``
columns, subject, and when a ``prompt`` column exists its TF-IDF and log length) scores how likely
the cheapest tier is to answer wrong. Isotonic regressions (``out_of_bounds="clip"``, decreasing in
the score) map that score to calibrated probabilities: P(tier k is good enough) for the K-1 tiers
below the top, and P(tier k is correct) for all K tiers (for the lagrangian policy).

Calibrations are fitted on out-of-fold scores of the training split (``cv_folds``-fold), so they
are not fooled by the classifier's fit to its own training rows. Each fold needs a request of each
class (the cheapest tier wrong, and right): when the smaller class has fewer requests than
``cv_folds`` the folds are lowered to its size, with a note; below two there is nothing to learn
or calibrate, and every request gets the split's rates (:class:`ConstantScore`), with a note.
The held-out split gives the report: AUROC, Brier score, ECE and a reliability table, and
RouteLLM's APGR / CPT for the cheapest tier against the top one (the raw score as the router's
strong-win rate).
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from tiersim.errors import Note, ScenarioError
from tiersim.routing.accuracy import needed_tier, realised_matrix
from tiersim.routing.config import ClassifierConfig
from tiersim.routing.evaluation import calibration_report
from tiersim.routing.metrics import routellm_metrics
from tiersim.routing.types import TierInfo
from tiersim.text_columns import as_text, text_lengths

NUMERIC = "numeric__"


def feature_frame(df: pd.DataFrame, groups: list[str]) -> tuple[pd.DataFrame, dict[str, list]]:
    """The classifier's input columns from ``df`` and which group each came from.

    Groups whose source columns are absent are skipped; numeric columns are log-scaled lengths
    and ``feat_*`` values; categorical ones are text (:func:`tiersim.text_columns.as_text`: a
    trace's column of categories stays one, without a copy of each row's text).
    """
    cols: dict[str, pd.Series] = {}
    used: dict[str, list] = {}
    if "input_tokens" in groups and "input_tokens" in df:
        cols[NUMERIC + "log_input_tokens"] = np.log1p(df["input_tokens"].astype(float))
        used["input_tokens"] = [NUMERIC + "log_input_tokens"]
    if "feat" in groups:
        feats = [c for c in df.columns if c.startswith("feat_")]
        for c in feats:
            cols[NUMERIC + c] = df[c].astype(float)
        if feats:
            used["feat"] = [NUMERIC + c for c in feats]
    for group in ("task_type", "subject"):
        if group in groups and group in df:
            cols[group] = as_text(df[group])
            used[group] = [group]
    if "text" in groups and "prompt" in df:
        cols["prompt"] = as_text(df["prompt"])
        cols[NUMERIC + "log_prompt_chars"] = pd.Series(
            np.log1p(text_lengths(cols["prompt"])), index=df.index)
        used["text"] = ["prompt", NUMERIC + "log_prompt_chars"]
    return pd.DataFrame(cols, index=df.index), used


def make_pipeline(frame: pd.DataFrame, cfg: ClassifierConfig,
                  source: str = "scenario") -> Pipeline:
    """Column transformer (scale / one-hot / TF-IDF) followed by a logistic regression; an
    error names ``source``."""
    numeric = [c for c in frame.columns if c.startswith(NUMERIC)]
    parts = []
    if numeric:
        parts.append(("numeric", StandardScaler(), numeric))
    categorical = [c for c in ("task_type", "subject") if c in frame]
    if categorical:
        parts.append(("categorical", OneHotEncoder(handle_unknown="ignore"), categorical))
    if "prompt" in frame:
        tfidf = TfidfVectorizer(
            max_features=cfg.text_max_features, sublinear_tf=True, min_df=2, dtype=np.float32
        )
        parts.append(("text", tfidf, "prompt"))
    if not parts:
        raise ScenarioError(
            source, "router.classifier.features",
            "no feature columns found in the trace; add input_tokens, task_type, feat_*, "
            "subject or prompt columns",
        )
    model = LogisticRegression(C=cfg.C, max_iter=2000, solver="liblinear")
    return Pipeline([("features", ColumnTransformer(parts)), ("model", model)])


GROUP_COLUMNS = {"input_tokens": "an input_tokens column", "task_type": "a task_type column",
                 "feat": "feat_* columns", "subject": "a subject column",
                 "text": "a prompt column"}
"""The trace columns each feature group reads (:func:`feature_frame`)."""


def _no_features(df: pd.DataFrame, groups: list[str], source: str) -> ScenarioError:
    """The error for ``features`` that find no column in ``df``: the groups listed and the
    columns they read, and the groups the trace has columns for (its fix)."""
    has = list(feature_frame(df, list(GROUP_COLUMNS))[1])
    where = "router.classifier.features"
    columns = "the trace has none of the columns a group reads (input_tokens, task_type, " \
              "feat_*, subject, prompt)"
    if not groups:
        return ScenarioError(source, where, "names no feature group; " + (
            f"list those the trace has columns for: {', '.join(has)}" if has else
            f"{columns}: add some, and list their groups"))
    named = " or ".join(f"{g} ({GROUP_COLUMNS[g]})" for g in dict.fromkeys(groups))
    fix = (f"add them, or list groups the trace has columns for: {', '.join(has)}" if has
           else f"add them ({columns})")
    return ScenarioError(source, where, f"the trace has no column for {named}; {fix}")


def _note_unread_groups(cfg: ClassifierConfig, used: dict[str, list], source: str) -> None:
    """Notes for classifier keys the trace leaves unread (groups without columns are skipped
    by :func:`feature_frame`): a group ``features`` lists explicitly that finds no column, and
    ``text_max_features`` where no prompt text is read."""
    if "features" in cfg.model_fields_set:
        for group in dict.fromkeys(g for g in cfg.features if g not in used):
            warnings.warn(f"{source}: router.classifier.features lists {group}, and the trace "
                          f"has no column for it ({GROUP_COLUMNS[group]}), so it changes "
                          "nothing; add the column, or remove the group", Note, stacklevel=3)
    if "text_max_features" in cfg.model_fields_set and "text" not in used:
        why = ("features does not list text" if "text" not in cfg.features else
               "the trace has no prompt column")
        fix = "list text" if "text" not in cfg.features else "add prompts"
        warnings.warn(f"{source}: router.classifier.text_max_features bounds the vocabulary of "
                      f"the prompt text, and the classifier reads none ({why}), so it changes "
                      f"nothing; {fix}, or remove it", Note, stacklevel=3)


def _isotonic(score: np.ndarray, target: np.ndarray) -> IsotonicRegression:
    """Decreasing isotonic map from difficulty score to a probability, clipped outside range."""
    iso = IsotonicRegression(out_of_bounds="clip", increasing=False, y_min=0.0, y_max=1.0)
    return iso.fit(score, target)


@dataclass
class DifficultyClassifier:
    """A trained classifier and its calibrations; ``report`` holds the held-out evaluation."""

    pipeline: Pipeline | ConstantScore
    groups: list[str]
    good_enough: list[IsotonicRegression]
    correct: list[IsotonicRegression]
    _report: dict | None = field(default=None, repr=False)
    train_index: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    _cache: tuple | None = field(default=None, repr=False)
    _trained_on: pd.DataFrame | None = field(default=None, repr=False)
    _oof: np.ndarray | None = field(default=None, repr=False)
    _report_of: Callable[[DifficultyClassifier], dict] | None = field(default=None, repr=False)

    @property
    def report(self) -> dict:
        """The held-out evaluation (:func:`heldout_report`), made when first read: no command
        writes it (summary.json and the report show none), and a plan trains once per design
        it routes (NOTE (speed): it was 4 % of ``tiersim plan``'s time; its figures are the
        same whenever made, from the held-out rows and calibrations kept)."""
        if self._report is None:
            self._report = self._report_of(self) if self._report_of is not None else {}
            self._report_of = None
        return self._report

    @report.setter
    def report(self, value: dict) -> None:
        self._report, self._report_of = value, None

    def score(self, df: pd.DataFrame) -> np.ndarray:
        """Uncalibrated score: the model's probability that the cheapest tier is wrong.

        The last table's scores are cached (by object identity), so sweeping a policy's
        options over one table featurises it once. On the very table it was trained on, the
        training rows get their out-of-fold scores, so routing that table is not in-sample.
        """
        if self._cache is not None and self._cache[0] is df:
            return self._cache[1]
        frame, _ = feature_frame(df, self.groups)
        out = self.pipeline.predict_proba(frame)[:, 1]
        if self._trained_on is df:  # routing the training table: no row scored by a model
            out[self.train_index] = self._oof  # that saw it (out-of-fold scores instead)
        self._cache = (df, out)
        return out

    def p_good_enough(self, df: pd.DataFrame, score: np.ndarray | None = None) -> np.ndarray:
        """(n, K-1) calibrated P(tier k is good enough) for the tiers below the top."""
        s = self.score(df) if score is None else score
        if not self.good_enough:  # one tier: none below the top
            return np.empty((len(s), 0))
        return np.column_stack([iso.predict(s) for iso in self.good_enough])

    def p_correct(self, df: pd.DataFrame, score: np.ndarray | None = None) -> np.ndarray:
        """(n, K) calibrated P(tier k answers correctly)."""
        s = self.score(df) if score is None else score
        return np.column_stack([iso.predict(s) for iso in self.correct])


def split_index(n: int, train_fraction: float, rng: np.random.Generator):
    """Random train / held-out row positions."""
    order = rng.permutation(n)
    cut = int(round(n * train_fraction))
    return np.sort(order[:cut]), np.sort(order[cut:])


def train_classifier(
    df: pd.DataFrame,
    tiers: list[TierInfo],
    cfg: ClassifierConfig | None = None,
    rng: np.random.Generator | None = None,
    source: str = "scenario",
) -> DifficultyClassifier:
    """Train on ``train_fraction`` of the labelled rows of ``df``, report on the rest; errors
    name ``source`` (the scenario file)."""
    cfg = cfg or ClassifierConfig()
    rng = rng or np.random.default_rng(0)
    _note_unwritten_bins(cfg, source)
    realised = realised_matrix(df, tiers)
    wrong0 = (realised[:, 0] < 0.5).astype(int)
    train, test = split_index(len(df), cfg.train_fraction, rng)
    if not len(train):
        raise ScenarioError(source, "router.classifier.train_fraction",
                            f"{cfg.train_fraction:g} of {len(df):,} requests leaves none to "
                            "train the classifier on; use more requests")
    if not len(test):
        raise ScenarioError(source, "router.classifier.train_fraction",
                            f"{cfg.train_fraction:g} of {len(df):,} requests leaves none held "
                            "out to check the classifier on; lower train_fraction or use more "
                            "requests")
    frame, used = feature_frame(df, list(cfg.features))
    if frame.shape[1] == 0:
        raise _no_features(df, list(cfg.features), source)
    _note_unread_groups(cfg, used, source)
    smaller = int(min(np.bincount(wrong0[train], minlength=2)))
    if smaller < 2:  # no fold split can hold one of each class: nothing to learn or calibrate
        _note_constant(source, tiers[0].name, wrong0[train], wrong0)
        pipeline = ConstantScore(float(wrong0[train].mean()))
        oof = pipeline.predict_proba(frame.iloc[train])[:, 1]
    else:
        folds = _folds(cfg, smaller, source, tiers[0].name)
        state = int(rng.integers(2**31))  # the folds' shuffle (drawn whether fitted or not)
        key = _fit_key(frame, cfg, train, wrong0[train], folds, state)
        fitted = None if key is None else _FITTED.get(key)
        if fitted is None:
            pipeline = make_pipeline(frame, cfg, source)
            oof = _fit(pipeline, frame.iloc[train], wrong0[train], folds, state, source)
            if key is not None:
                _FITTED[key] = (pipeline, oof.copy())
                while len(_FITTED) > FITTED_KEPT:
                    _FITTED.popitem(last=False)
        else:
            _FITTED.move_to_end(key)
            pipeline, oof = fitted[0], fitted[1].copy()
    good = realised >= realised[:, -1:]
    clf = DifficultyClassifier(
        pipeline=pipeline,
        groups=list(cfg.features),
        good_enough=[_isotonic(oof, good[train, k]) for k in range(len(tiers) - 1)],
        correct=[_isotonic(oof, realised[train, k]) for k in range(len(tiers))],
        train_index=train,
        _trained_on=df,
        _oof=oof,
    )
    held = realised[test]

    def report(clf: DifficultyClassifier) -> dict:
        out = heldout_report(clf, df.iloc[test], held, tiers, cfg)
        out.update(features={k: v for k, v in used.items()}, train_rows=len(train),
                   heldout_rows=len(test))
        return out

    clf._report_of = report
    return clf


def _note_unwritten_bins(cfg: ClassifierConfig, source: str) -> None:
    """A note when ``ece_bins`` is set: it sizes the bins of the held-out calibration error in
    :func:`heldout_report`, which only the library's ``report`` attribute holds (no command
    writes it), so in a scenario it changes nothing."""
    if "ece_bins" in cfg.model_fields_set:
        warnings.warn(f"{source}: router.classifier.ece_bins sizes the bins of the classifier's "
                      "held-out calibration error, which no command writes (summary.json and "
                      "the report show none), so it changes nothing; remove it", Note,
                      stacklevel=3)


class ConstantScore:
    """The classifier's stand-in when the training split has fewer than two requests the
    cheapest tier answers wrong (or right): every request gets the split's share of wrong
    answers as its score, so the calibrations are the split's rates and routing treats every
    request alike."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """``(n, 2)``: P(cheapest right), P(cheapest wrong), the same for every row."""
        return np.column_stack([np.full(len(frame), 1.0 - self.rate),
                                np.full(len(frame), self.rate)])


def _note_constant(source: str, cheapest: str, wrong: np.ndarray,
                   every: np.ndarray | None = None) -> None:
    """The note for a training split with under two requests of one class; ``every``: the
    class of every request, so the advice to use more requests is not given where the whole
    workload has under two of that class too (more of the same could not help)."""
    n, k = len(wrong), int(wrong.sum())
    fix = "use more requests for a classifier that can"
    if every is not None and min(np.bincount(every, minlength=2)) < 2:
        fix = (f"it is wrong on {int(every.sum()):,} of all {len(every):,} requests, so more "
               "requests like these cannot help: a classifier needs requests the cheapest tier "
               "answers right and wrong")
    warnings.warn(f"{source}: router.classifier: the cheapest tier {cheapest} is wrong on {k:,} "
                  f"of the {n:,} training requests, too few of one kind to learn from or "
                  "calibrate on, so every request gets the same probabilities (the split's "
                  f"rates) and routing cannot tell requests apart; {fix}", Note, stacklevel=3)


def _folds(cfg: ClassifierConfig, smaller: int, source: str, cheapest: str) -> int:
    """``cfg.cv_folds``, or fewer (down to 2, with a note) when the smaller class of the
    training split has fewer requests than that (each fold needs one of each class)."""
    if cfg.cv_folds <= smaller:
        return cfg.cv_folds
    warnings.warn(f"{source}: router.classifier.cv_folds: the smaller class of the training "
                  f"split (the cheapest tier {cheapest} wrong, or right) has {smaller:,} "
                  f"requests, fewer than cv_folds ({cfg.cv_folds}); the calibrations use "
                  f"{smaller}-fold scores (each fold needs one of each class)", Note,
                  stacklevel=3)
    return smaller


FITTED_KEPT = 16
"""Fitted pipelines :func:`train_classifier` keeps, the latest used (:func:`_fit_key`)."""

_FITTED: collections.OrderedDict = collections.OrderedDict()


def _fit_key(frame: pd.DataFrame, cfg: ClassifierConfig, train: np.ndarray, wrong: np.ndarray,
             folds: int, state: int) -> bytes | None:
    """Everything a fitted pipeline and its out-of-fold scores depend on, as a digest: the
    feature frame's values (``pandas.util.hash_pandas_object``, row by row, and its columns),
    the training rows and their labels, the folds, their shuffle's seed and the settings the
    pipeline reads.

    NOTE (speed): a plan routes every design through its own router, and the floor router
    trains the classifier for each (``tiersim plan scenarios/plan_default.yaml``: 82 trainings,
    two thirds of them the same fit again: the label is only the cheapest tier's correctness,
    and every design routes the same requests with the same seed, whatever its floor and its
    other tiers). The same inputs give the same fit (liblinear and the folds are seeded), so a
    fit of the same key is reused: the same pipeline (read only: ``predict_proba``) and a copy
    of its scores, the same numbers to the bit. None (nothing kept) for a frame pandas cannot
    hash."""
    import hashlib

    digest = hashlib.blake2b(digest_size=32)
    digest.update(repr((list(frame.columns), [str(t) for t in frame.dtypes], folds, state,
                        sorted(cfg.model_dump().items()))).encode())
    try:
        rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    except TypeError:  # a column of values pandas cannot hash
        return None
    digest.update(rows.tobytes())
    digest.update(np.ascontiguousarray(train, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(wrong, dtype=np.int64).tobytes())
    return digest.digest()


def _fit(pipeline: Pipeline, frame: pd.DataFrame, wrong: np.ndarray, folds: int,
         state: int, source: str) -> np.ndarray:
    """Fit ``pipeline`` on the training rows; return their out-of-fold scores (the folds
    shuffled with seed ``state``)."""
    split = StratifiedKFold(folds, shuffle=True, random_state=state)
    try:
        oof = cross_val_predict(pipeline, frame, wrong, cv=split, method="predict_proba")[:, 1]
        pipeline.fit(frame, wrong)
    except ValueError as exc:
        if "vocabulary" not in str(exc) and "no terms remain" not in str(exc):
            raise
        raise ScenarioError(
            source, "router.classifier.features",
            "the trace's prompt column has no word in two or more prompts of a training fold "
            "(TF-IDF keeps only those); give prompts with text, or drop text from the features",
        ) from None
    return oof


def heldout_report(clf, df_test, realised, tiers, cfg) -> dict:
    """AUROC / Brier / ECE / reliability of the calibrated probabilities on held-out rows."""
    score = clf.score(df_test)
    p_correct = clf.p_correct(df_test, score)
    p_good = clf.p_good_enough(df_test, score)
    need = needed_tier(realised)
    report = {
        "target": f"{tiers[0].name} (cheapest tier) is wrong",
        "cheapest_wrong": calibration_report(
            1.0 - p_correct[:, 0], realised[:, 0] < 0.5, cfg.ece_bins, raw_score=score
        ),
        "routellm": routellm_metrics(score, realised[:, 0], realised[:, -1]),
        "good_enough": {
            t.name: calibration_report(p_good[:, k], need <= k, cfg.ece_bins)
            for k, t in enumerate(tiers[:-1])
        },
    }
    return report
