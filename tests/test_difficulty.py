"""Difficulty generators and the accuracy model (prepare_workload, priors)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.errors import ScenarioError
from tiersim.routing import TierInfo, prepare_workload, tier_output_tokens
from tiersim.routing.config import DifficultyConfig
from tiersim.routing.priors import relative_accuracy
from tiersim.workload import difficulty as dif


def make_trace(n=20_000, **cols) -> pd.DataFrame:
    """A minimal trace of n requests with extra columns."""
    return pd.DataFrame({"input_tokens": np.full(n, 100, np.int32),
                         "output_tokens": np.full(n, 50, np.int32), **cols})


def make_tiers(*accuracies, precisions=None):
    """Tiers t0, t1, ... with the given accuracy specs."""
    precisions = precisions or ["bf16"] * len(accuracies)
    return [TierInfo(f"t{i}", precision=p, accuracy=a)
            for i, (a, p) in enumerate(zip(accuracies, precisions, strict=True))]


def test_two_and_three_type_shares():
    rng = np.random.default_rng(0)
    cls = dif.three_type(200_000, 0.7, 0.14, rng)
    assert np.mean(cls == dif.HOPELESS) == pytest.approx(0.14, abs=0.003)
    assert np.mean(cls == dif.EASY) == pytest.approx(0.86 * 0.7, abs=0.003)
    assert np.mean(dif.two_type(200_000, 0.3, rng) == dif.EASY) == pytest.approx(0.3, abs=0.003)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["two_type", "three_type", "continuous"]),
       a_low=st.floats(0.3, 0.7), gain=st.floats(0.0, 0.1), seed=st.integers(0, 2**16))
def test_float_accuracy_is_met_exactly_and_draws_are_coupled(kind, a_low, gain, seed):
    tiers = make_tiers(a_low, a_low + gain)
    out = prepare_workload(make_trace(5_000), tiers, DifficultyConfig(kind=kind),
                           np.random.default_rng(seed)).df
    assert out["p_correct_t0"].mean() == pytest.approx(a_low, abs=1e-5)
    assert out["p_correct_t1"].mean() == pytest.approx(a_low + gain, abs=1e-5)
    # one uniform per request: right on the weaker tier implies right on the stronger one
    assert np.all(out["correct_t1"] >= out["correct_t0"])
    assert set(np.unique(out["correct_t0"])) <= {0.0, 1.0}


def test_hard_requests_fail_first_and_hopeless_always_fail():
    tiers = make_tiers(0.7, 0.8)
    out = prepare_workload(make_trace(), tiers, DifficultyConfig(kind="three_type"),
                           np.random.default_rng(1)).df
    by = out.groupby("difficulty_class", observed=True)["p_correct_t0"].mean()
    assert by["easy"] > by["hard"] > by["hopeless"] == 0.0
    assert out.loc[out["difficulty_class"] == "hopeless", "correct_t1"].sum() == 0


def test_table_accuracy_is_looked_up_per_class():
    tiers = make_tiers({"easy": 0.9, "hard": 0.5}, {"easy": 1.0, "hard": 0.8, "hopeless": 0.0})
    prepared = prepare_workload(make_trace(), tiers, {"difficulty": {"kind": "two_type"}},
                                np.random.default_rng(2))
    out = prepared.df
    easy = out["difficulty_class"] == "easy"
    assert set(out.loc[easy, "p_correct_t0"].astype(float).round(6)) == {0.9}
    assert set(out.loc[~easy, "p_correct_t1"].astype(float).round(6)) == {0.8}
    assert prepared.accuracy_source == {"t0": "scenario", "t1": "scenario"}
    assert out.attrs == {}  # nothing travels in df.attrs


def test_priors_fill_missing_accuracy_and_are_labelled():
    tiers = make_tiers(None, None, precisions=["w4a16", "bf16"])
    cfg = DifficultyConfig(kind="two_type", top_accuracy=0.9)
    prepared = prepare_workload(make_trace(), tiers, cfg, np.random.default_rng(3))
    out = prepared.df
    assert prepared.accuracy_source == {"t0": "prior", "t1": "prior"}
    assert out["p_correct_t1"].mean() == pytest.approx(0.9, abs=1e-5)
    assert out["p_correct_t0"].mean() == pytest.approx(0.9 * relative_accuracy("w4a16"), abs=1e-5)
    assert relative_accuracy("bf16") == 1.0 > relative_accuracy("w4a16") > 0.9


def test_trace_difficulty_column_is_used():
    d = np.linspace(0, 1, 1000)
    out = prepare_workload(make_trace(1000, difficulty=d), make_tiers(0.6, 0.8), None,
                           np.random.default_rng(0)).df
    p = out["p_correct_t0"].to_numpy()
    assert np.all(np.diff(p) <= 1e-7)  # harder -> less likely right


def test_labelled_trace_is_returned_unchanged():
    df = make_trace(10, correct_t0=np.zeros(10), correct_t1=np.ones(10))
    prepared = prepare_workload(df, make_tiers(0.5, 0.9))
    pd.testing.assert_frame_equal(prepared.df, df)
    assert prepared.accuracy_source == {"t0": "labels", "t1": "labels"}


def test_same_seed_same_workload():
    args = (make_trace(3000), make_tiers(0.7, 0.8), DifficultyConfig(kind="three_type"))
    a = prepare_workload(*args, rng=np.random.default_rng(7)).df
    b = prepare_workload(*args, rng=np.random.default_rng(7)).df
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    ("df", "tiers", "cfg", "message"),
    [
        (make_trace(5, correct_t0=np.ones(5)), make_tiers(0.5, 0.9), None,
         "scenario: tiers[1].name: trace has some correct_<tier> columns but lacks "
         "correct_t1; add them or rename the tiers to match"),
        (make_trace(5), make_tiers(0.5, 0.9), DifficultyConfig(kind="labels"),
         "scenario: workload.difficulty.kind: 'labels' needs columns correct_t0, correct_t1 in "
         "the trace; add them or use kind two_type, three_type or continuous"),
        (make_trace(500), make_tiers(0.5, 0.9), DifficultyConfig(kind="three_type", p_hopeless=0.5),
         "scenario: tiers[1].accuracy: accuracy 0.9 must lie in (0, "),
        (make_trace(5), make_tiers(0.5, None, precisions=["bf16", "int3"]), None,
         "scenario: tiers[1].accuracy: no accuracy prior for precision 'int3'"),
        (make_trace(5, correct_t0=[0, 1, 2, 0, 1.0], correct_t1=np.ones(5)), make_tiers(0.5, 0.9),
         None, "scenario: trace row 2, column correct_t0: correctness must be in [0, 1] (got 2.0)"),
    ],
)
def test_errors_are_one_line_and_actionable(df, tiers, cfg, message):
    with pytest.raises(ScenarioError) as err:
        prepare_workload(df, tiers, cfg, np.random.default_rng(0))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_output_length_multiplier_per_tier():
    tiers = [TierInfo("q", output_length_multiplier=1.5), TierInfo("bf16")]
    out = tier_output_tokens(np.array([10, 10, 1]), np.array([0, 1, 0]), tiers)
    assert out.tolist() == [15, 10, 2]


@pytest.mark.parametrize("kind", ["two_type", "three_type"])
def test_hint_feature_has_the_requested_auroc_and_changes_nothing_else(kind):
    from sklearn.metrics import roc_auc_score

    tiers = make_tiers(0.6, 0.8)
    plain = prepare_workload(make_trace(40_000), tiers, DifficultyConfig(kind=kind),
                             np.random.default_rng(5)).df
    hinted = prepare_workload(make_trace(40_000), tiers,
                              DifficultyConfig(kind=kind, hint_auroc=0.75),
                              np.random.default_rng(5)).df
    auroc = roc_auc_score(hinted["difficulty_class"] != "easy", hinted["feat_difficulty_hint"])
    assert auroc == pytest.approx(0.75, abs=0.01)
    pd.testing.assert_frame_equal(hinted.drop(columns="feat_difficulty_hint"), plain)


def test_a_trace_s_expected_correctness_without_labels_is_refused(tmp_path, capsys):
    """A trace with p_correct_<tier> and no correct_<tier> labels ran on drawn correctness
    that replaced its column: p_correct 0.01 / 0.02 gave 95% accuracy from the prior."""
    from conftest import tiny_doc, write_frame, write_yaml
    from test_hostile_inputs import run_cli

    n = 20
    trace = write_frame(pd.DataFrame({
        "request_id": np.arange(n), "arrival_s": np.arange(n) * 0.5,
        "input_tokens": np.full(n, 100, np.int32), "output_tokens": np.full(n, 10, np.int32),
        "p_correct_w4a16": np.full(n, 0.01), "p_correct_bf16": np.full(n, 0.02),
    }), tmp_path / "t.parquet")
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace)}))
    code, err = run_cli(capsys, "run", path, "--no-baselines")
    assert code == 1
    assert err == (f"Error: {path}: trace column p_correct_w4a16: expected correctness is read "
                   "only beside realised correct_<tier> labels for every tier, which the trace "
                   "lacks, so the run would draw its own and replace it; add the correct_<tier> "
                   "columns (0 or 1), or remove the column\n")


def test_accuracy_the_labels_replace_is_noted():
    """A tier's accuracy and a workload.difficulty block were silently unused on a labelled
    trace: accuracy 0.5 on both tiers ran at the labels' 91.5% with no word."""
    import warnings

    from tiersim.errors import Note

    df = make_trace(10, correct_t0=np.zeros(10), correct_t1=np.ones(10))
    cfg = DifficultyConfig(kind="two_type", p_easy=0.3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepare_workload(df, make_tiers(0.5, None), cfg, source="s.yaml")
        prepare_workload(df, make_tiers(None, None), DifficultyConfig(kind="labels"),
                         source="s.yaml")
    assert [str(w.message) for w in caught if issubclass(w.category, Note)] == [
        "s.yaml: the trace's correct_<tier> labels give every tier's accuracy, so these are not "
        "used: accuracy of tier t0; workload.difficulty.kind, p_easy; remove them, or the "
        "labels to use them"]


def test_expected_correctness_of_tiers_the_fleet_lacks_is_not_refused(tmp_path, capsys):
    """Only a tier's own p_correct_<tier> is refused (the drawn one would replace it): a trace
    labelled for other models (correct_gpt4, p_correct_gpt4) ran with a note that its labels
    name none of the tiers, and was then refused as if its column would be overwritten."""
    from conftest import tiny_doc, write_frame, write_yaml
    from test_hostile_inputs import run_cli

    n = 20
    trace = write_frame(pd.DataFrame({
        "request_id": np.arange(n), "arrival_s": np.arange(n) * 0.5,
        "input_tokens": np.full(n, 100, np.int32), "output_tokens": np.full(n, 10, np.int32),
        "correct_gpt4": np.ones(n), "p_correct_gpt4": np.full(n, 0.9),
    }), tmp_path / "t.parquet")
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace)}))
    code, err = run_cli(capsys, "run", path, "--no-baselines", "--out", tmp_path / "o",
                        "--no-report")
    assert code == 0, err
    assert (f"note: {path}: the trace's correct_gpt4 columns name none of the fleet's tiers "
            "(correct_<tier>) and are not used") in " ".join(err.split())
