"""Round 53, auroc53: the router's realised quality on the replayed trace.

A scenario states how good its classifier is meant to be (``workload.difficulty.hint_auroc``)
and what errors to inject (``router.confusion``); the run reported the realised FPR / FNR but
not the classifier's realised AUROC on the trace, nor either beside what was asked. It now
does: ``summary.json`` ``router.quality``, one console line and three report rows, each saying
what the AUROC is scored against (the trace's labels, else the drawn difficulty) and over how
many requests, and why there is none where there is none (never NaN).
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import copy_folder, tiny_doc, write_frame, write_yaml
from scipy.stats import norm

from tiersim.cli import main
from tiersim.results import RouterQuality, RunResult
from tiersim.routing.quality import auroc, auroc_interval, realised_quality
from tiersim.workload import difficulty as dif


def _drawn(classes: list[str]) -> pd.DataFrame:
    """A routed table with drawn difficulty classes, as prepare_workload leaves it."""
    return pd.DataFrame({"difficulty_class": pd.Categorical(
        classes, categories=list(dif.CLASS_NAMES))})


def test_scores_that_are_the_labels_give_auroc_one():
    """Closed form: a score equal to the positive class ranks every positive above every
    negative (AUROC 1), its reverse every one below (0)."""
    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1], dtype=float)
    assert auroc(labels, labels == 1) == 1.0
    assert auroc(1.0 - labels, labels == 1) == 0.0


@pytest.mark.parametrize("d", [0.5, 1.0, 2.0])
def test_two_gaussians_give_phi_of_d_over_root_two(d):
    """Closed form: scores N(d, 1) for positives and N(0, 1) for negatives have AUROC
    Phi(d / sqrt 2). At 200,000 requests the AUROC's standard error is about 0.0012 (Hanley
    and McNeil), so 0.005 is four of them."""
    rng = np.random.default_rng(7)
    positive = rng.random(200_000) < 0.3
    score = d * positive + rng.standard_normal(len(positive))
    assert auroc(score, positive) == pytest.approx(norm.cdf(d / math.sqrt(2.0)), abs=0.005)


def test_the_interval_holds_the_two_gaussian_auroc():
    """The AUROC's interval holds Phi(d / sqrt 2) about 95 % of the time: 200 samples of 300
    requests, 30 % positive, d = 1 (DeLong's variance since review53b, Hanley and McNeil's
    before: tests/test_round53_review53b.py)."""
    rng = np.random.default_rng(11)
    true, held = norm.cdf(1.0 / math.sqrt(2.0)), 0
    for _ in range(200):
        positive = rng.random(300) < 0.3
        score = positive + rng.standard_normal(300)
        value = auroc(score, positive)
        lo, hi = auroc_interval(score, positive, value)
        held += lo <= true <= hi
    assert 0.91 <= held / 200 <= 0.99


def test_the_asked_auroc_is_placed_against_the_interval():
    """The AUROC asked reads within, above (the classifier worse than asked) or below the
    realised AUROC's interval."""
    q = RouterQuality(truth="drawn difficulty", requests=900, target="hard or hopeless",
                      positives=300, auroc=0.70, auroc_ci95=(0.66, 0.74), auroc_asked=0.8,
                      asked_from="workload.difficulty.hint_auroc")
    assert q.asked_text() == ("0.8 (workload.difficulty.hint_auroc; above the 95% CI: the "
                              "classifier is worse than asked)")
    low = dataclasses.replace(q, auroc_asked=0.6)
    assert low.asked_text().endswith("; below the 95% CI: the classifier is better than asked)")


def test_the_hint_feature_has_the_auroc_asked():
    """The scenario's hint feature (``hint_auroc``: s x [not easy] + N(0, 1)) scored as the
    router's score against the drawn classes gives the AUROC asked, within sampling error,
    and the quality says which key asked it."""
    rng = np.random.default_rng(3)
    cls = dif.three_type(100_000, 0.7, 0.14, rng)
    score = dif.hint(dif.Difficulty(value=np.zeros(len(cls)), cls=cls), 0.72, rng)
    df = _drawn([dif.CLASS_NAMES[c] for c in cls])
    q = realised_quality(df, score, "fp8", "floor", False, None, 0.72)
    assert q.auroc == pytest.approx(0.72, abs=0.006)
    assert (q.truth, q.requests, q.positives) == ("drawn difficulty", 100_000,
                                                  int((cls != dif.EASY).sum()))
    assert q.asked_text() == "0.72 (workload.difficulty.hint_auroc; within the 95% CI)"


def test_one_class_and_no_classifier_say_why_there_is_no_auroc():
    """No AUROC is a reason in words, not NaN: one class only (every request easy, or the
    cheapest tier right on all), a router with no classifier, a continuous difficulty."""
    easy = _drawn(["easy"] * 40)
    q = realised_quality(easy, np.linspace(0, 1, 40), "w4a16", "threshold", False, None, None)
    assert q.auroc is None and q.positives == 0
    assert q.auroc_text() == ("none (all 40 requests are easy: one class only, and an AUROC "
                              "needs both)")
    right = pd.DataFrame({"correct_w4a16": np.ones(12)})
    q = realised_quality(right, np.zeros(12), "w4a16", "threshold", True, None, None)
    assert q.no_auroc == ("the cheapest tier w4a16 answers all 12 requests right: one class "
                          "only, and an AUROC needs both")
    q = realised_quality(_drawn(["easy", "hard"]), None, "w4a16", "uniform", False, None, None)
    assert q.no_auroc == "the uniform router has no classifier to score requests"
    assert q.positives == 1  # the classes are still counted
    continuous = pd.DataFrame({"difficulty_class": pd.Categorical(
        [None, None], categories=list(dif.CLASS_NAMES))})
    q = realised_quality(continuous, np.zeros(2), "w4a16", "threshold", False, None, None)
    assert q.no_auroc.startswith("the difficulty is continuous")
    empty = realised_quality(_drawn([]), None, "w4a16", "floor", False, None, None)
    assert empty.no_auroc == "no request reached the router"
    assert json.dumps(q.to_json(), allow_nan=False)  # no NaN anywhere


def _run(tmp_path, capsys, trace: pd.DataFrame | None = None, window: list | None = None,
         **edits) -> tuple[str, dict, str]:
    """``tiersim run --no-baselines`` of the tiny scenario (edited; ``trace``: a trace of
    one's own; ``window``: tiny's trace over another window): its console (whitespace
    folded), summary.json and report."""
    if trace is not None:
        edits["trace"] = {"path": str(write_frame(trace, tmp_path / "t.parquet"))}
    if window is not None:
        edits["trace"] = {**tiny_doc()["trace"], "window": window}
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**edits))
    capsys.readouterr()
    code = main(["run", str(path), "--out", str(tmp_path / "r"), "--no-baselines"])
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    return " ".join(out.out.split()), summary, (tmp_path / "r" / "report.html").read_text()


def _line(out: str) -> str:
    """The console's router-quality line (it ends where the tier table's title begins)."""
    start = out.index("router quality on the replayed trace")
    return out[start:out.index(" tiers (cheapest first", start)]


def test_a_classifier_run_gives_its_auroc_beside_the_one_asked(tmp_path, capsys):
    """A threshold router on drawn difficulty with a hint of AUROC 0.8 and injected errors:
    the console line, summary.json and the report give the realised AUROC (0.792, modelled,
    over the 332 requests, 110 of them hard or hopeless) with its interval, the 0.8 asked
    (within it), the realised FPR / FNR and the injected rates asked. The intervals are
    DeLong's since review53b, on the logit scale since auroc54. Since auroc54 the trace
    window is 240 - 420 s, not tiny's 240 - 360 s: its 317 requests had 95 hard or hopeless,
    under the 100 of each class a verdict needs, and read "no verdict" (0.753, 95% CI 0.696 -
    0.811 by plain DeLong, 0.691 - 0.816 by Hanley and McNeil's before review53b)."""
    out, summary, page = _run(
        tmp_path, capsys, window=[240, 420],
        workload={"difficulty": {"kind": "three_type", "hint_auroc": 0.8}},
        router={"policy": "threshold", "thresholds": 0.7,
                "confusion": {"fpr": 0.05, "fnr": 0.1}})
    q = summary["router"]["quality"]
    assert q == {"truth": "drawn difficulty", "requests": 332, "target": "hard or hopeless",
                 "positives": 110, "auroc": 0.7918099918,
                 "auroc_ci95": [0.735575704, 0.8387074435], "no_auroc": None,
                 "auroc_asked": 0.8, "asked_from": "workload.difficulty.hint_auroc",
                 "fpr_asked": 0.05, "fnr_asked": 0.1,
                 # and for what a routing error costs, the cheapest tier answering wrong
                 # against the drawn correctness (left53, 2026-12-07)
                 "wrong_target": "the cheapest tier w4a16 answering wrong",
                 "wrong_positives": 73, "auroc_wrong": 0.7469720209,
                 "auroc_wrong_ci95": [0.6803320148, 0.803727659]}
    assert _line(out) == (
        "router quality on the replayed trace: AUROC 0.792 (95% CI 0.736 - 0.839) for hard or "
        "hopeless, against the drawn difficulty of 332 requests (110 of them), asked 0.8 "
        "(workload.difficulty.hint_auroc; within the 95% CI), and 0.747 (95% CI 0.680 - 0.804) "
        "for the cheapest tier w4a16 answering wrong (73 of them), against the drawn "
        "correctness; FPR / FNR 100 % / 11.2 % "
        "realised (scored on prior), asked 5 % / 10 % injected (router.confusion, on top of "
        "the policy's own errors)")
    assert ("<td>classifier AUROC on the replayed trace</td><td>0.792 (95% CI 0.736 - 0.839)"
            "</td><td>hard or hopeless, against the drawn difficulty of 332 requests (110 of "
            "them)</td>") in page
    assert ("<td>classifier AUROC for the cheapest tier w4a16 answering wrong</td><td>0.747 "
            "(95% CI 0.680 - 0.804)</td><td>against the drawn correctness of 332 requests (73 "
            "of them): what a routing error costs</td>") in page
    assert ("<td>AUROC asked</td><td>0.8 (workload.difficulty.hint_auroc; within the 95% CI)"
            "</td>") in page
    assert ("<td>FPR / FNR asked</td><td>5 % / 10 % injected (router.confusion, on top of "
            "the policy&#x27;s own errors)</td>") in page
    back = RunResult.from_json((tmp_path / "r" / "summary.json").read_text())
    assert back.router.quality.auroc == q["auroc"]
    assert back.router.quality.auroc_ci95 == tuple(q["auroc_ci95"])
    assert back.router.quality.auroc_wrong_ci95 == tuple(q["auroc_wrong_ci95"])


def _labelled(right: np.ndarray) -> pd.DataFrame:
    """A trace of ``len(right)`` like requests, one a second, labelled: the cheap tier w4a16
    right where ``right``, bf16 always; ``feat_wrong`` is the cheap tier's label reversed
    (a perfect surface feature)."""
    n = len(right)
    return pd.DataFrame({"request_id": range(n), "arrival_s": np.arange(n, dtype=float),
                         "input_tokens": 200, "output_tokens": 20,
                         "correct_w4a16": right.astype(float), "correct_bf16": 1.0,
                         "feat_wrong": 1.0 - right})


def test_a_classifier_whose_feature_is_the_label_has_auroc_one(tmp_path, capsys):
    """End to end, closed form: on a labelled trace whose one feature is the cheap tier's
    label, the classifier's scores order the requests as the labels do: AUROC 1, scored
    against the trace's labels, nothing asked."""
    right = np.resize([1, 1, 0, 1, 0], 60).astype(bool)
    out, summary, _ = _run(tmp_path, capsys, trace=_labelled(right),
                           router={"policy": "threshold", "thresholds": 0.7})
    q = summary["router"]["quality"]
    assert (q["auroc"], q["truth"], q["requests"], q["positives"]) == (1.0, "trace labels",
                                                                       60, 24)
    # every pair ordered alike: the interval from 0.025 ** (1 / 24), not [1, 1] (review54)
    assert "AUROC 1.000 (95% CI 0.858 - 1.000) for the cheapest tier w4a16 answering wrong, " \
           "against the trace labels of 60 requests (24 of them), asked none (a scenario " \
           "states no AUROC for its trace's labels)" in _line(out)


def test_a_labelled_trace_of_one_class_says_why_there_is_no_auroc(tmp_path, capsys):
    """The cheap tier right on every request: one class, no AUROC, its reason in the JSON
    (null, not NaN), the console and the report."""
    out, summary, page = _run(tmp_path, capsys, trace=_labelled(np.ones(30, bool)),
                              router={"policy": "threshold", "thresholds": 0.7})
    q = summary["router"]["quality"]
    why = ("the cheapest tier w4a16 answers all 30 requests right: one class only, and an "
           "AUROC needs both")
    assert (q["auroc"], q["no_auroc"]) == (None, why)
    assert f"AUROC none ({why}) for the cheapest tier w4a16 answering wrong" in _line(out)
    assert f"<td>none ({why})</td>" in page


def test_tiny_without_a_classifier_says_so(tmp_path, capsys):
    """The tiny scenario's static split has no classifier: the exact line, no AUROC. Its
    workload is two-type, so the target reads "hard" since round 55 (misc55: "hard or
    hopeless" before, a class it has not)."""
    out, summary, _ = _run(tmp_path, capsys)
    assert summary["router"]["quality"]["auroc"] is None
    assert _line(out) == (
        "router quality on the replayed trace: AUROC none (the static_split router has no "
        "classifier to score requests) for hard, against the drawn difficulty of "
        "317 requests (69 of them), asked none (no workload.difficulty.hint_auroc); FPR / FNR "
        "40.0 % / 54.5 % realised (scored on prior), asked none (no router.confusion)")


PLAN = {"design": "fp8+bf16@2", "tiers": ["fp8", "bf16"], "replicas": {"bf16": 3, "fp8": 4},
        "gpus_per_replica": {"fp8": 1, "bf16": 2}, "cost_usd": 1.0, "cost_model": "provisioned",
        "cost_per_hour_usd": 35.0, "accuracy": 0.85, "margins": {}}


def test_runner_up_lines_give_gpus_as_the_plans_line_does():
    """The plan's line gives "bf16=3x2 GPU"; a runner-up's line gave "bf16 6 replicas" alone,
    so a 2-GPU tier read as one of half the GPUs. It now gives each tier's GPUs per replica;
    a plan.json without them (a design never sized has no size at all) keeps the old words."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.results import PlanResult

    runners = (
        {"design": "w4a16+bf16@2", "tiers": ["w4a16", "bf16"],
         "replicas": {"bf16": 6, "w4a16": 2}, "gpus_per_replica": {"w4a16": 1, "bf16": 2},
         "feasible": True, "cost_usd": 1.4,
         "missed": "meets every constraint; 40.0 % dearer than the plan per hour"},
        {"design": "fp8+bf16", "tiers": ["fp8", "bf16"], "replicas": {"bf16": 9, "fp8": 5},
         "feasible": False, "missed": "latency: misses the SLOs at any size"},
    )
    text = format_plan(PlanResult(scenario="s", constraints={}, plan=PLAN, runners_up=runners,
                                  uniform=(), simulations=9, wall_s=1.0))
    lines = text.splitlines()
    assert lines[0].startswith("plan (9 simulations in 1.0 s): fp8+bf16@2: fp8=4x1 GPU, "
                               "bf16=3x2 GPU;")
    assert [line for line in lines if "runner-up" in line] == [
        "  runner-up w4a16+bf16@2 (w4a16 2 x 1 GPU + bf16 6 x 2 GPU): meets every constraint; "
        "40.0 % dearer than the plan per hour",
        "  runner-up fp8+bf16 (fp8 5 + bf16 9 replicas, the last size tried): latency: misses "
        "the SLOs at any size"]


@pytest.mark.parametrize(("edit", "problem"), [
    ({"auroc": 1.5, "auroc_ci95": [0.9, 1.0]},
     "'router.quality.auroc' must be a fraction between 0 and 1, got 1.5"),
    ({"auroc": 0.7, "auroc_ci95": [0.6, 2.5]},
     "'router.quality.auroc_ci95[1]' must be a fraction between 0 and 1, got 2.5"),
    ({"requests": "many"}, "'router.quality.requests' must be a number, got \"many\""),
    ({"no_auroc": 3}, "'router.quality.no_auroc' must be str, got 3"),
])
def test_a_hand_edited_quality_is_one_line(hand_edited_run, tmp_path, capsys, edit, problem):
    """``tiersim report`` on a summary whose ``router.quality`` was edited to a figure no run
    writes says so in one line, naming the key."""
    from test_hostile_inputs import one_error_line, run_cli

    from tiersim.report.load import load_dir

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    assert load_dir(folder).run.router.quality.truth == "drawn difficulty"
    doc["router"]["quality"].update(edit)
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def test_a_sweep_of_the_hint_shows_the_auroc_each_point_realised(tmp_path):
    """A sweep of ``workload.difficulty.hint_auroc`` listed the AUROC asked alone; the Points
    table now shows the AUROC each point's classifier realised (sweep.parquet's
    ``router.quality.auroc``), as each point's console line gives it."""
    from conftest import run_cli

    from tiersim.sweep.store import read_table

    doc = tiny_doc(workload={"difficulty": {"kind": "three_type", "hint_auroc": 0.6}},
                   router={"policy": "threshold", "thresholds": 0.7},
                   sweep={"workload.difficulty.hint_auroc": [0.6, 0.95]})
    done = run_cli("sweep", str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                   str(tmp_path / "sw"), "--workers", "1")
    assert done.returncode == 0, done.stderr
    table = read_table(tmp_path / "sw" / "sweep.parquet")
    realised = table["router.quality.auroc"].tolist()
    assert realised[0] < realised[1]  # the better hint, the better classifier
    page = (tmp_path / "sw" / "report.html").read_text()
    assert "<th>classifier AUROC, realised</th>" in page
    assert f'<td class="num">{realised[1]:.3g}</td>' in page
