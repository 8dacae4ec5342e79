"""The accuracy model: per-request correctness of every tier.

A routed table carries, per tier ``t`` (cheapest first):

- ``correct_<t>``: realised correctness, 0 or 1 (measured labels, or drawn here);
- ``p_correct_<t>`` (only when generated here): the expected correctness the draw came from.

Accuracy is scored on the expected value when present (less noise), else on the labels, unless
the router's decisions read the realised values: a cascade (its confidence signal is the cheap
tier's realised correctness) or a router with injected ``confusion`` (it acts on each request's
realised needed tier). Scoring those on expectations would credit a request the cascade kept
because its cheap answer was right with that tier's mean accuracy on its class, not 1. Such a
router's :class:`~tiersim.routing.types.Assignment` carries ``basis="realised"`` and
:func:`expected_matrix` called with that basis returns the realised values. Whether a tier
was *good enough* for a request, and so FPR/FNR and silent failures, always use the realised
values: tier k is good enough when ``correct_k >= correct_top``.

When the trace has no labels, :func:`prepare_workload` draws difficulty (two-type, three-type or
continuous) and turns each tier's accuracy spec into per-request probabilities:

- a table ``{easy, hard, hopeless}``: looked up per class (hopeless defaults to 0);
- a float ``a``: a logistic capability curve ``P(correct | d) = 1 / (1 + exp((d - theta) / w))``
  with ``theta`` solved so the mean over the trace equals ``a`` (hard requests fail first);
- nothing: the per-precision prior (``tiersim.routing.priors``) times ``top_accuracy`` times the
  share of requests that are not hopeless, then the float rule. Such tiers are labelled "prior".

Draws on different tiers share one uniform per request (``correct_k = u < p_k``), so a request
right on a weaker tier is right on every tier at least as accurate.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from tiersim.errors import Note, ScenarioError, shown_yaml
from tiersim.routing.config import DifficultyConfig, WorkloadQualityConfig
from tiersim.routing.priors import relative_accuracy
from tiersim.routing.roots import brentq
from tiersim.routing.types import Basis, Prepared, TierInfo
from tiersim.workload import difficulty as dif


def correct_column(tier: TierInfo | str) -> str:
    """Name of the realised-correctness column of a tier."""
    return f"correct_{tier if isinstance(tier, str) else tier.name}"


def expected_column(tier: TierInfo | str) -> str:
    """Name of the expected-correctness column of a tier (present only when generated)."""
    return f"p_correct_{tier if isinstance(tier, str) else tier.name}"


def realised_matrix(df: pd.DataFrame, tiers: list[TierInfo]) -> np.ndarray:
    """(n, K) realised correctness, 0/1 as float."""
    return np.column_stack([df[correct_column(t)].to_numpy(np.float64) for t in tiers])


def true_expected_matrix(df: pd.DataFrame, tiers: list[TierInfo]) -> np.ndarray:
    """(n, K) expected correctness: ``p_correct_<t>`` where present, else ``correct_<t>``."""
    cols = expected_columns(df, tiers)
    return np.column_stack([df[c].to_numpy(np.float64) for c in cols])


def expected_columns(df: pd.DataFrame, tiers: list[TierInfo],
                     basis: Basis = "expected") -> list[str]:
    """The column of ``df`` that :func:`expected_matrix` reads for each tier."""
    if basis == "realised":
        return [correct_column(t) for t in tiers]
    return [expected_column(t) if expected_column(t) in df else correct_column(t) for t in tiers]


def expected_matrix(df: pd.DataFrame, tiers: list[TierInfo],
                    basis: Basis = "expected") -> np.ndarray:
    """(n, K) correctness that accuracy is scored on: :func:`true_expected_matrix`, or the
    realised values when ``basis`` is "realised" (the router's decisions read them; pass the
    assignment's ``basis``, see the module docstring)."""
    if basis == "realised":
        return realised_matrix(df, tiers)
    return true_expected_matrix(df, tiers)


def needed_tier(realised: np.ndarray) -> np.ndarray:
    """Per request, the cheapest tier whose realised correctness is at least the top tier's."""
    good = realised >= realised[:, -1:]
    return np.argmax(good, axis=1).astype(np.int64, copy=False)


def capability(d: np.ndarray, theta: float, width: float) -> np.ndarray:
    """Logistic P(correct) of difficulty ``d`` for a tier of capability ``theta``: SciPy's
    ``expit`` written as it computes it, ``1 / (1 + exp(-x))``, equal within 1e-15 relative
    (numpy's SIMD ``exp`` may round its last bits apart from C's: up to 4 units in the last
    place on an AVX-512 machine, none on AVX2; no figure tiersim writes shows them) (NOTE: importing
    ``scipy.special`` for it took 0.4 s of every run that has tier accuracies; issue 13). Where
    ``exp(-x)`` overflows the result is 0, as ``expit``'s, without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-((theta - d) / width)))


MEET_TOLERANCE = 1e-6
"""How far the solved curve's mean accuracy may lie from the tier's accuracy: a curve_width of
1e-13 is a step no root finder resolves, and an accuracy of 0.5 came out 0.734."""


def solve_capability(d: np.ndarray, hopeless: np.ndarray, target: float, width: float) -> float:
    """The ``theta`` whose mean capability over non-hopeless requests gives accuracy ``target``.

    Hopeless requests count as wrong; ``target`` must lie strictly between 0 and the share of
    requests that are not hopeless. Raises ValueError when no ``theta`` meets ``target``
    within :data:`MEET_TOLERANCE` (a curve too narrow for the root finder).
    """
    live = d[~hopeless]
    n = len(d)

    def gap(theta: float) -> float:
        """Mean accuracy at ``theta`` minus the target."""
        return capability(live, theta, width).sum() / n - target

    lo, hi = -1.0 - 40 * width, 2.0 + 40 * width
    theta = float(brentq(gap, lo, hi, xtol=1e-12))
    if abs(gap(theta)) > MEET_TOLERANCE:  # a curve too narrow to resolve: a step, not a root
        raise ValueError(f"the curve meets {gap(theta) + target:.6g}, not {target:.6g}")
    return theta


def tier_target(tier: TierInfo, index: int, cfg: DifficultyConfig, ceiling: float, source: str):
    """A tier's accuracy spec resolved to a float or a table, checked against the ceiling.

    Returns ``(spec, label)`` where label is "prior" for prior-derived accuracy, else "scenario".
    """
    where = f"tiers[{index}].accuracy"
    spec, label = tier.accuracy, "scenario"
    if spec is None:
        try:
            spec = cfg.top_accuracy * ceiling * relative_accuracy(tier.precision)
        except KeyError as exc:
            raise ScenarioError(source, where, f"{exc.args[0]}; set accuracy explicitly") from None
        label = "prior"
    if isinstance(spec, dict):
        if cfg.kind == "continuous":
            raise ScenarioError(source, where, "a continuous workload takes one float accuracy")
        unknown = set(spec) - set(dif.CLASS_NAMES)
        if unknown or not {"easy", "hard"} <= set(spec):
            raise ScenarioError(
                source, where, "table needs keys easy and hard (optional hopeless); got "
                f"{shown_yaml(spec, 80)}")
        bad = next((k for k, v in spec.items() if not 0.0 <= v <= 1.0), None)
        if bad is not None:
            raise ScenarioError(source, f"{where}.{bad}", f"an accuracy is in [0, 1] (got "
                                f"{spec[bad]:.4g})")
        return spec, label
    if not 0.0 < spec < ceiling:
        if label == "prior":  # the tier set no accuracy: what is out of range is the workload's
            raise ScenarioError(
                source, "workload.difficulty.p_hopeless",
                f"leaves {ceiling:.4g} of the requests answerable, too few for the prior "
                f"accuracy of tier {tier.name!r}; lower p_hopeless or set the tier's accuracy")
        raise ScenarioError(source, where, _float_out_of_range(spec, ceiling, cfg.kind))
    return float(spec), label


def _float_out_of_range(spec: float, ceiling: float, kind: str) -> str:
    """Why one accuracy number is refused at 0 or the ceiling and beyond, and what to give: a
    number is met by a tier capability on the logistic curve over difficulty, which reaches 0
    and the ceiling only in the limit; a table sets each class's accuracy as given, so
    ``{easy: 1.0, hard: 1.0}`` is allowed where ``1.0`` is not."""
    table = ("" if kind == "continuous" else ", or a table such as {easy: 1.0, hard: 1.0} "
             "(each class's accuracy as given, 0 and 1 allowed)")
    return (f"accuracy {spec:.4g} must lie in (0, {ceiling:.4g}), ends excluded: one number is "
            "fitted by a logistic curve over difficulty, which reaches 0 and the ceiling (the "
            "share of requests that are not hopeless) only in the limit; give a number "
            f"inside{table}")


def expected_correctness(
    diff: dif.Difficulty, tiers: list[TierInfo], cfg: DifficultyConfig, source: str = "scenario"
) -> tuple[np.ndarray, list[str]]:
    """(n, K) expected correctness per request and tier, and each tier's label."""
    hopeless = diff.hopeless
    ceiling = 1.0 - float(hopeless.mean()) if len(hopeless) else 1.0
    columns, labels = [], []
    for k, tier in enumerate(tiers):
        spec, label = tier_target(tier, k, cfg, ceiling, source)
        if isinstance(spec, dict):
            if (diff.cls < 0).any():  # a trace's own difficulty column: no classes to look up
                raise ScenarioError(
                    source, f"tiers[{k}].accuracy", "a table looks accuracy up by difficulty "
                    "class, and the trace's difficulty column gives a difficulty in [0, 1], "
                    "not a class; give the tier one accuracy (a curve over difficulty) or drop "
                    "the column")
            table = [spec["easy"], spec["hard"], spec.get("hopeless", 0.0)]
            col = np.asarray(table, dtype=np.float64)[np.clip(diff.cls, 0, 2)]
        else:
            try:
                theta = solve_capability(diff.value, hopeless, spec, cfg.curve_width)
            except ValueError:
                raise _out_of_reach(source, k, tier, spec, label, cfg) from None
            col = np.where(hopeless, 0.0, capability(diff.value, theta, cfg.curve_width))
        columns.append(col)
        labels.append(label)
    return np.column_stack(columns), labels


def _note_unused_labels(df: pd.DataFrame, source: str) -> None:
    """A note when the trace carries correctness labels named after no tier: they are not
    used, and the accuracy comes from the tiers' own numbers or priors instead."""
    unused = [str(c) for c in df.columns if str(c).startswith("correct_")]
    if unused:  # the same words for every fleet a plan tries: the note is printed once
        warnings.warn(f"{source}: the trace's {', '.join(unused[:4])} columns name none of the "
                      "fleet's tiers (correct_<tier>) and are not used; name the tiers after "
                      "them to use the labels", Note, stacklevel=3)


def _out_of_reach(source: str, index: int, tier: TierInfo, spec: float, label: str,
                  cfg: DifficultyConfig) -> ScenarioError:
    """A tier accuracy no capability on the difficulty curve reaches: the tier's own number,
    or, for a prior (the tier set none), the workload's ``top_accuracy`` it was scaled from."""
    if label == "prior":
        return ScenarioError(
            source, "workload.difficulty.top_accuracy", f"the prior accuracy of tier "
            f"{tier.name!r} scaled from it ({spec:.4g}) is out of reach of the difficulty curve "
            f"(width {cfg.curve_width}); widen workload.difficulty.curve_width, change "
            "top_accuracy or set the tier's accuracy")
    return ScenarioError(
        source, f"tiers[{index}].accuracy", f"accuracy {spec:.6g} is out of reach of the "
        f"difficulty curve (width {cfg.curve_width}); lower it or widen "
        "workload.difficulty.curve_width")


def _difficulty_cfg(workload_cfg) -> DifficultyConfig:
    """Accept a WorkloadQualityConfig, a DifficultyConfig, a dict of either, or None."""
    if workload_cfg is None:
        return DifficultyConfig()
    if isinstance(workload_cfg, DifficultyConfig):
        return workload_cfg
    if isinstance(workload_cfg, WorkloadQualityConfig):
        return workload_cfg.difficulty
    if hasattr(workload_cfg, "difficulty"):
        return _difficulty_cfg(workload_cfg.difficulty)
    if isinstance(workload_cfg, dict):
        if "difficulty" in workload_cfg:
            return DifficultyConfig.model_validate(workload_cfg["difficulty"])
        return DifficultyConfig.model_validate(workload_cfg)
    raise TypeError(f"unsupported workload config {type(workload_cfg).__name__}")


def _check_labels(df: pd.DataFrame, tiers: list[TierInfo], source: str) -> bool:
    """True when every tier has a label column; raise when only some do or values are bad."""
    present = [correct_column(t) in df for t in tiers]
    if not any(present):
        _note_unused_labels(df, source)
        return False
    if not all(present):
        missing = [correct_column(t) for t, p in zip(tiers, present, strict=True) if not p]
        first = present.index(False)  # named at its tier (a baseline's: at baselines[j])
        raise ScenarioError(
            source, f"tiers[{first}].name", f"trace has some correct_<tier> columns but lacks "
            f"{', '.join(missing)}; add them or rename the tiers to match"
        )
    for t in tiers:
        values = df[correct_column(t)].to_numpy(np.float64)
        bad = ~((values >= 0) & (values <= 1))
        if bad.any():
            row = int(np.argmax(bad))
            raise ScenarioError(
                source, f"trace row {row}, column {correct_column(t)}",
                f"correctness must be in [0, 1] (got {values[row]})",
            )
    return True


def _note_unused_specs(tiers: list[TierInfo], cfg: DifficultyConfig, source: str) -> None:
    """A note when the trace's ``correct_<tier>`` labels replace what the scenario says about
    accuracy: a tier's ``accuracy`` or a ``workload.difficulty`` setting, which the labels make
    unused (the run would otherwise read as if they had been applied)."""
    unused = []
    named = [t.name for t in tiers if t.accuracy is not None]
    if named:
        unused.append(f"accuracy of tier{'s' if len(named) > 1 else ''} {', '.join(named)}")
    keys = sorted(k for k in cfg.model_fields_set if not (k == "kind" and cfg.kind == "labels"))
    if keys:
        unused.append(f"workload.difficulty.{', '.join(keys)}")
    if unused:
        warnings.warn(f"{source}: the trace's correct_<tier> labels give every tier's accuracy, "
                      f"so these are not used: {'; '.join(unused)}; remove them, or the labels "
                      "to use them", Note, stacklevel=3)


KIND_KEYS = {"p_hopeless": ("three_type",), "beta_a": ("continuous",),
             "beta_b": ("continuous",), "p_easy": ("two_type", "three_type"),
             "class_difficulty": ("two_type", "three_type")}
"""The ``workload.difficulty`` keys only some kinds draw with, and those kinds."""


def _note_unread_kind_keys(cfg: DifficultyConfig, source: str) -> None:
    """A note when ``workload.difficulty`` sets a key its ``kind`` never reads
    (:data:`KIND_KEYS`): ``kind: two_type`` beside ``p_hopeless: 0.2`` draws no hopeless
    request. A note, as for the keys labels replace (:func:`_note_unused_specs`): a sweep over
    ``kind`` keeps the others on purpose."""
    unread = [k for k in KIND_KEYS if k in cfg.model_fields_set and cfg.kind not in KIND_KEYS[k]]
    for kinds in dict.fromkeys(KIND_KEYS[k] for k in unread):  # one note per reading kind(s)
        keys = [k for k in unread if KIND_KEYS[k] == kinds]
        by = f"kind {kinds[0]}" if len(kinds) == 1 else f"kinds {' and '.join(kinds)}"
        many = len(keys) > 1
        warnings.warn(f"{source}: workload.difficulty.{', '.join(keys)} "
                      f"{'are' if many else 'is'} read only by {by}, and kind is {cfg.kind}, "
                      f"so {'they change' if many else 'it changes'} nothing; remove "
                      f"{'them' if many else 'it'}, or change kind", Note, stacklevel=3)


def _note_replaced_draw_keys(cfg: DifficultyConfig, source: str) -> None:
    """A note when the trace's ``difficulty`` column (every request's difficulty, read as
    continuous) makes the ``workload.difficulty`` keys that draw difficulty unused: ``kind``
    (unless continuous, as the column is read) and :data:`KIND_KEYS` (``kind: three_type``
    with ``p_hopeless: 0.3`` ran without a hopeless request, and nothing said so)."""
    keys = [k for k in ("kind", *KIND_KEYS) if k in cfg.model_fields_set
            and not (k == "kind" and cfg.kind == "continuous")]
    if keys:
        many = len(keys) > 1
        warnings.warn(f"{source}: the trace's difficulty column gives every request's "
                      f"difficulty, so workload.difficulty.{', '.join(keys)} "
                      f"{'are' if many else 'is'} not used (nothing is drawn); remove "
                      f"{'them' if many else 'it'}, or the column to draw difficulty", Note,
                      stacklevel=3)


def _note_replaced_classes(df: pd.DataFrame, source: str) -> None:
    """A note when the trace's own ``difficulty_class`` column (any class given) is replaced,
    as the trace has no ``correct_<tier>`` labels: by the classes workload.difficulty draws,
    or by none where the trace's ``difficulty`` column gives every request's difficulty
    (continuous, no class). Replaced silently, a trace's classes vanished from
    ``accuracy_by_class`` and the closed form's ``p`` without a word."""
    if "difficulty_class" not in df or not df["difficulty_class"].notna().any():
        return
    if "difficulty" in df and df["difficulty"].notna().all():
        instead = ("the trace's difficulty column gives every request's difficulty, read as "
                   "continuous, with no class")
    else:
        instead = "each request's class is drawn from workload.difficulty instead"
    warnings.warn(f"{source}: the trace's difficulty_class column is not used: without "
                  f"correct_<tier> labels, {instead} (accuracy_by_class and the closed form's "
                  "p read those); give every tier's correct_<tier> labels in the trace to "
                  "keep its classes", Note, stacklevel=3)


def _note_unread_hopeless(tiers: list[TierInfo], cfg: DifficultyConfig, source: str) -> None:
    """A note for an accuracy table's ``hopeless`` entry beside ``kind: two_type``, which
    draws no hopeless request (only three_type does), so the entry changes nothing."""
    if cfg.kind != "two_type":
        return
    named = [t.name for t in tiers if isinstance(t.accuracy, dict) and "hopeless" in t.accuracy]
    if named:
        warnings.warn(f"{source}: the accuracy table of tier(s) {', '.join(named)} gives "
                      "hopeless, and workload.difficulty.kind two_type draws no hopeless "
                      "request (only three_type does), so it changes nothing; remove it, or "
                      "set kind: three_type", Note, stacklevel=3)


def _note_unread_accuracy_keys(tiers: list[TierInfo], cfg: DifficultyConfig,
                               source: str) -> None:
    """A note when ``workload.difficulty`` sets a key no tier's accuracy reads:
    ``top_accuracy`` (it scales the prior of a tier without an accuracy) beside tiers that all
    set one, ``curve_width`` (the curve one number is fitted by, priors included) and
    ``class_difficulty`` (where that curve places the classes) beside tiers whose accuracies
    are all tables."""
    if "top_accuracy" in cfg.model_fields_set and all(t.accuracy is not None for t in tiers):
        warnings.warn(f"{source}: workload.difficulty.top_accuracy scales the precision prior "
                      "of a tier that sets no accuracy, and every tier sets its own, so it "
                      "changes nothing; remove it, or drop a tier's accuracy to use the prior",
                      Note, stacklevel=3)
    tables = all(isinstance(t.accuracy, dict) for t in tiers)
    if "curve_width" in cfg.model_fields_set and tables:
        warnings.warn(f"{source}: workload.difficulty.curve_width shapes the curve one "
                      "accuracy number is fitted by, and every tier's accuracy is a table per "
                      "class, so it changes nothing; remove it, or give a tier one number",
                      Note, stacklevel=3)
    if "class_difficulty" in cfg.model_fields_set and tables:
        warnings.warn(f"{source}: workload.difficulty.class_difficulty places the classes on "
                      "the difficulty axis the curve one accuracy number is fitted by, and "
                      "every tier's accuracy is a table per class, so it changes nothing; "
                      "remove it, or give a tier one number", Note, stacklevel=3)


def _refuse_unlabelled_expectations(df: pd.DataFrame, tiers: list[TierInfo],
                                    source: str) -> None:
    """A trace's ``p_correct_<tier>`` column of one of ``tiers`` without the ``correct_<tier>``
    labels is refused: the run draws correctness from the difficulty model and writes its own
    ``p_correct_<tier>`` over it, so the trace's numbers would be replaced without a word. A
    column naming no tier is left alone, as its labels are (a note names those)."""
    column = next((expected_column(t) for t in tiers if expected_column(t) in df), None)
    if column is not None:
        raise ScenarioError(
            source, f"trace column {column}", "expected correctness is read only beside "
            "realised correct_<tier> labels for every tier, which the trace lacks, so the run "
            "would draw its own and replace it; add the correct_<tier> columns (0 or 1), or "
            "remove the column")


def prepare_workload(
    df: pd.DataFrame,
    tiers: list[TierInfo],
    workload_cfg=None,
    rng: np.random.Generator | None = None,
    source: str = "scenario",
) -> Prepared:
    """A copy of ``df`` with ``correct_<tier>`` for every tier (cheapest first), and where each
    tier's accuracy came from.

    A trace that already has the labels is returned unchanged (a copy), every tier's source
    "labels" (its own ``difficulty_class`` column, if any, gives the classes). Otherwise
    difficulty is drawn (or read from a ``difficulty`` column) and per-tier expected and
    realised correctness are added, with ``difficulty`` and ``difficulty_class`` (a trace's
    own class column replaced, with a note: :func:`_note_replaced_classes`); each tier's
    source is "scenario" or "prior".
    """
    cfg = _difficulty_cfg(workload_cfg)
    out = df.copy(deep=False)  # copy-on-write: new columns never reach ``df``, none is copied
    if _check_labels(df, tiers, source):
        _note_unused_specs(tiers, cfg, source)
        return Prepared(out, {t.name: "labels" for t in tiers})
    if cfg.kind == "labels":
        raise ScenarioError(
            source, "workload.difficulty.kind",
            f"'labels' needs columns {', '.join(correct_column(t) for t in tiers)} in the trace; "
            "add them or use kind two_type, three_type or continuous",
        )
    _refuse_unlabelled_expectations(df, tiers, source)
    if rng is None:
        raise ValueError("prepare_workload needs an rng to draw difficulty")
    if "difficulty" not in df:  # drawn from cfg: a key its kind never reads is noted
        _note_unread_kind_keys(cfg, source)
        _note_unread_hopeless(tiers, cfg, source)
    else:
        _note_replaced_draw_keys(cfg, source)
    _note_unread_accuracy_keys(tiers, cfg, source)
    _note_replaced_classes(df, source)
    diff = _read_or_draw(df, cfg, rng)
    expected, labels = expected_correctness(diff, tiers, cfg, source)
    realised = (rng.random(len(df))[:, None] < expected).astype(np.float32)
    for k, tier in enumerate(tiers):
        out[expected_column(tier)] = expected[:, k]  # float64: a prior of 0.95 stays 0.95
        out[correct_column(tier)] = realised[:, k]
    if cfg.hint_auroc is not None:  # drawn last: adding it leaves the other columns unchanged
        out["feat_difficulty_hint"] = dif.hint(diff, cfg.hint_auroc, rng).astype(np.float32)
    out["difficulty"] = diff.value.astype(np.float32)
    out["difficulty_class"] = pd.Categorical.from_codes(
        np.where(diff.cls < 0, -1, diff.cls), categories=list(dif.CLASS_NAMES)
    )
    return Prepared(out, {t.name: lab for t, lab in zip(tiers, labels, strict=True)})


def _read_or_draw(df: pd.DataFrame, cfg: DifficultyConfig, rng) -> dif.Difficulty:
    """A trace's own ``difficulty`` column (as continuous), else a draw from ``cfg``."""
    if "difficulty" in df and df["difficulty"].notna().all():
        value = df["difficulty"].to_numpy(np.float64)
        return dif.Difficulty(value=value, cls=np.full(len(df), dif.NO_CLASS, dtype=np.int8))
    return dif.generate(len(df), cfg, rng)


def tier_output_tokens(output_tokens: np.ndarray, tier: np.ndarray, tiers: list[TierInfo]):
    """Output tokens of each request on the tier it is first served on (the tier's
    ``output_length_multiplier`` applied, rounded, at least 1)."""
    from tiersim.routing.capability import output_on_tier

    mult = np.array([t.output_length_multiplier for t in tiers], dtype=np.float64)[tier]
    return output_on_tier(output_tokens, mult).astype(np.int32)
