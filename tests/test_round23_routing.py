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


def _steps(n: int = 40_000) -> tuple[pd.DataFrame, list[TierInfo]]:
    """A two-type workload of agent steps, half of them a step type the map sends to the top
    tier (final), half of a type the fallback routes (other)."""
    tiers = [TierInfo("a", accuracy={"easy": 0.9, "hard": 0.3}, cost_weight=1.0),
             TierInfo("c", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=3.0)]
    df = pd.DataFrame({"input_tokens": np.full(n, 200, np.int32),
                       "output_tokens": np.full(n, 100, np.int32),
                       "step_type": np.where(np.arange(n) % 2 == 0, "final", "other")})
    cfg = {"difficulty": {"kind": "two_type", "p_easy": 0.6}}
    return prepare_workload(df, tiers, cfg, np.random.default_rng(0)).df, tiers


@pytest.mark.parametrize("fpr, fnr", [(0.5, 0.0), (0.0, 0.5)])
def test_step_type_cascade_fallback_takes_injected_errors_as_a_cascade_does(fpr, fnr):
    """With ``step_fallback: cascade`` the injected errors moved the first tier, as for a
    single-pass policy: fpr 0.5 changed nothing (no request is first served above the
    cheapest), and fnr sent requests first to the top tier and then escalated them to it
    again. On the fallback's steps they act on the escalation, as a cascade's own do."""
    from tiersim.routing.accuracy import realised_matrix
    from tiersim.routing.metrics import error_rates

    df, tiers = _steps()
    confusion = {"confusion": {"fpr": fpr, "fnr": fnr}}
    a = build_router({"policy": "step_type", "step_fallback": "cascade", **confusion},
                     tiers).assign(df, np.random.default_rng(5))
    other = (df["step_type"] == "other").to_numpy()
    assert not (a.escalated & (a.tier == a.escalate_to)).any()  # no second pass on one tier
    assert (a.tier[other] == 0).all()  # the cascade answers first on its from_tier
    sub = df[other].reset_index(drop=True)
    b = build_router({"policy": "cascade", **confusion}, tiers).assign(
        sub, np.random.default_rng(5))
    got = error_rates(a.final_tier[other], realised_matrix(sub, tiers))
    want = error_rates(b.final_tier, realised_matrix(sub, tiers))
    for key in ("fpr", "fnr"):  # the same rates within sampling noise (20,000 steps)
        assert got[key] == pytest.approx(want[key], abs=0.02)
    final = ~other  # the mapped steps keep their tier and escalate nowhere
    assert (a.escalate_to[final] == -1).all()


@pytest.mark.parametrize("features, says", [
    ([], "router.classifier.features: names no feature group; list those the trace has "
         "columns for: input_tokens, subject"),
    (["feat", "text"], "router.classifier.features: the trace has no column for feat "
                       "(feat_* columns) or text (a prompt column); add them, or list groups "
                       "the trace has columns for: input_tokens, subject"),
])
def test_classifier_features_the_trace_lacks_are_named(features, says):
    """`features: [feat]` on a trace with input_tokens said "no feature columns found in the
    trace; add input_tokens, ...", a column the trace had: the line names the groups listed
    that found nothing, and those the trace could give."""
    from tiersim.errors import ScenarioError

    df = _two_subjects(400)
    with pytest.raises(ScenarioError) as err:
        build_router({"policy": "threshold", "classifier": {"features": features}}, TWO,
                     train_df=df, rng=np.random.default_rng(1))
    assert str(err.value) == f"scenario: {says}"


class _Draws:
    """A stand-in generator whose uniforms are the given values."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def random(self, n):
        return self.values[:n]


def test_static_split_never_sends_a_request_to_a_tier_given_no_share():
    """Fractions may sum to 1 within 1e-6; [0.5, 0.4999995, 0] left the top of the uniform
    range, [0.9999995, 1), to the last tier, whose share is 0 (5 requests in 10 million). The
    shares are scaled to sum to 1, and the last tier with a share takes the top of the range."""
    tiers = [TierInfo(n, cost_weight=1.0) for n in ("a", "b", "c")]
    router = build_router({"policy": "static_split", "fractions": [0.5, 0.4999995, 0.0]}, tiers)
    a = router.choose(pd.DataFrame(index=range(3)), _Draws([0.2, 0.7, 0.9999998]))
    assert a.tier.tolist() == [0, 1, 1]
    router = build_router({"policy": "static_split", "fractions": [0.0, 1.0000005, 0.0]}, tiers)
    a = router.choose(pd.DataFrame(index=range(3)), _Draws([0.0, 0.5, 0.9999999]))
    assert a.tier.tolist() == [1, 1, 1]


@pytest.mark.parametrize("difficulty, unused", [
    ({"kind": "three_type", "p_hopeless": 0.3}, "kind, p_hopeless"),
    ({"kind": "continuous", "beta_a": 9.0, "curve_width": 0.1}, "beta_a"),
])
def test_trace_difficulty_column_notes_the_draw_keys_it_replaces(difficulty, unused):
    """A trace's difficulty column is every request's difficulty, so nothing is drawn: kind
    three_type with p_hopeless 0.3 ran without a hopeless request, and nothing said so."""
    from tiersim.errors import Note

    tiers = [TierInfo("a", accuracy=0.6, cost_weight=1.0),
             TierInfo("b", accuracy=0.8, cost_weight=2.0)]
    df = pd.DataFrame({"input_tokens": [10] * 50, "output_tokens": [10] * 50,
                       "difficulty": np.linspace(0, 1, 50)})
    with pytest.warns(Note) as notes:
        prepare_workload(df, tiers, {"difficulty": difficulty}, np.random.default_rng(0))
    assert [str(n.message) for n in notes] == [
        "scenario: the trace's difficulty column gives every request's difficulty, so "
        f"workload.difficulty.{unused} {'are' if ',' in unused else 'is'} not used (nothing "
        f"is drawn); remove {'them' if ',' in unused else 'it'}, or the column to draw "
        "difficulty"]


def test_trace_difficulty_column_beside_no_draw_key_says_nothing():
    tiers = [TierInfo("a", accuracy=0.6, cost_weight=1.0),
             TierInfo("b", accuracy=0.8, cost_weight=2.0)]
    df = pd.DataFrame({"input_tokens": [10] * 50, "output_tokens": [10] * 50,
                       "difficulty": np.linspace(0, 1, 50)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare_workload(df, tiers, {"difficulty": {"kind": "continuous", "curve_width": 0.1}},
                         np.random.default_rng(0))


@pytest.mark.parametrize("fractions", [[0.999999, 0.0], [1.000001, 0.0], [0.4999995, 0.4999995],
                                       [0.5000005, 0.5000005]])
def test_fractions_within_1e6_of_one_are_taken_above_and_below(fractions):
    """Fractions may sum to 1 within 1e-6: 1.000001 was taken and 0.999999 refused (as a
    double it lies 1.00000000003e-6 below 1)."""
    from tiersim.routing.config import RouterConfig

    assert RouterConfig(policy="static_split", fractions=fractions).fractions == fractions


@pytest.mark.parametrize("fractions, total", [([0.999998, 0.0], "0.999998"),
                                              ([0.5, 0.500002], "1.000002")])
def test_fractions_further_from_one_are_refused_naming_their_sum(fractions, total):
    """Beyond 1e-6 they are refused, and the line shows the sum to the digit that is off
    (1.000002 read "got sum 1")."""
    from pydantic import ValidationError

    from tiersim.routing.config import RouterConfig

    with pytest.raises(ValidationError) as err:
        RouterConfig(policy="static_split", fractions=fractions)
    assert err.value.errors()[0]["msg"] == (
        f"Value error, fractions must be >= 0 and sum to 1 (got sum {total})")


@pytest.mark.parametrize("a, b", [(1e308, 1e308), (5e-324, 5e-324)])
def test_beta_shapes_numpy_cannot_draw_are_refused(a, b):
    """numpy's Beta(1e308, 1e308) drew 0 for every request (a + b overflows; the mean is 0.5)
    and Beta(5e-324, 5e-324) a mean of 0.25: every request easy, silently. The shapes lie in
    [1e-6, 1e6], where the draws keep their mean."""
    from pydantic import ValidationError

    from tiersim.routing.config import DifficultyConfig

    with pytest.raises(ValidationError):
        DifficultyConfig(kind="continuous", beta_a=a, beta_b=b)
    cfg = DifficultyConfig(kind="continuous", beta_a=1e6, beta_b=1e-6)
    assert cfg.beta_a == 1e6


def test_an_accuracy_a_narrow_curve_cannot_meet_is_refused_not_missed():
    """A curve_width of 1e-13 is a step no root finder resolves: tier a's accuracy 0.5 came
    out 0.734 (and 0.9 as 0.971), silently. The solved curve must meet the accuracy."""
    from tiersim.errors import ScenarioError

    tiers = [TierInfo("a", accuracy=0.5, cost_weight=1.0),
             TierInfo("b", accuracy=0.9, cost_weight=2.0)]
    df = pd.DataFrame({"input_tokens": [10] * 5000, "output_tokens": [10] * 5000})
    with pytest.raises(ScenarioError) as err:
        prepare_workload(df, tiers, {"difficulty": {"kind": "two_type", "curve_width": 1e-13}},
                         np.random.default_rng(0))
    assert str(err.value) == (
        "scenario: tiers[0].accuracy: accuracy 0.5 is out of reach of the difficulty curve "
        "(width 1e-13); lower it or widen workload.difficulty.curve_width")
    out = prepare_workload(df, tiers, {"difficulty": {"kind": "two_type", "curve_width": 1e-6}},
                           np.random.default_rng(0)).df
    assert out["p_correct_a"].mean() == pytest.approx(0.5, abs=1e-9)
