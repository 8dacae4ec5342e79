"""Round 57 (hard57): the accuracy per difficulty class, routed and per uniform fleet.

A capacity planner asked "do the hard requests lose accuracy?" and no output answered: the
summary, console, report and requests.parquet gave the overall accuracy only. Where requests
have a ``difficulty_class`` the run now writes ``accuracy_by_class``; the classes add up to the
overall figures (weighted by their request counts), and nothing new is written without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.class_accuracy import UNCLASSIFIED, accuracy_by_class, routed_per_request
from tiersim.errors import TiersimError
from tiersim.paths import bundled
from tiersim.results import RunResult
from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.types import TierInfo

TIERS = [TierInfo(name="cheap", cost_weight=1.0), TierInfo(name="top", cost_weight=2.0)]


def make_table(n: int, classes: list[str | None], rng: np.random.Generator) -> pd.DataFrame:
    """A prepared table of ``n`` requests: both tiers' expected and realised correctness and
    each request's class (None: none)."""
    p = rng.random((n, 2))
    return pd.DataFrame(
        {
            "p_correct_cheap": p[:, 0],
            "p_correct_top": p[:, 1],
            "correct_cheap": (rng.random(n) < p[:, 0]).astype(np.float32),
            "correct_top": (rng.random(n) < p[:, 1]).astype(np.float32),
            "difficulty_class": pd.Series(classes, dtype="object"),
        }
    )


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    basis=st.sampled_from(["expected", "realised"]),
    names=st.lists(
        st.sampled_from(["easy", "hard", "hopeless", "odd", None]), min_size=1, max_size=4
    ),
)
def test_class_accuracies_weighted_by_their_counts_give_the_overall_ones(n, seed, basis, names):
    rng = np.random.default_rng(seed)
    classes = [names[i] for i in rng.integers(0, len(names), n)]
    df = make_table(n, classes, rng)
    result = SimpleNamespace(final_tier=rng.integers(0, 2, n), dropped=rng.random(n) < 0.2)
    out = accuracy_by_class(df, result, TIERS, basis, {t.name: t for t in TIERS})
    if all(c is None for c in classes):
        assert out == ()
        return
    assert sum(c.requests for c in out) == n
    overall = routed_per_request(df, result, TIERS, basis).mean()
    assert sum(c.requests * c.accuracy for c in out) / n == pytest.approx(overall, abs=1e-12)
    uniform = expected_matrix(df, TIERS, basis).mean(axis=0)
    for k, tier in enumerate(TIERS):
        got = sum(c.requests * c.uniform[tier.name] for c in out) / n
        assert got == pytest.approx(uniform[k], abs=1e-12)
    for c in out:
        lo, hi = c.accuracy_ci95
        assert 0 <= lo <= c.accuracy <= hi <= 1
    assert (UNCLASSIFIED in [c.name for c in out]) == (None in classes)


def test_the_results_know_the_generators_classes():
    from tiersim.results_classes import GENERATED_CLASSES
    from tiersim.workload.difficulty import CLASS_NAMES

    assert GENERATED_CLASSES == CLASS_NAMES


def test_a_sweep_table_gets_a_column_per_class_figure(tiny):
    from tiersim.sweep.store import flatten

    run, _ = tiny
    flat = flatten(run.to_json())
    hard = run.accuracy_by_class[1]
    assert flat["accuracy_by_class.hard.accuracy"] == pytest.approx(hard.accuracy)
    assert flat["accuracy_by_class.hard.uniform.bf16"] == pytest.approx(hard.uniform["bf16"])


def test_classes_come_in_the_generators_order_then_the_others():
    rng = np.random.default_rng(0)
    df = make_table(5, ["odd", "hopeless", None, "hard", "easy"], rng)
    result = SimpleNamespace(final_tier=np.zeros(5, int), dropped=np.zeros(5, bool))
    names = [c.name for c in accuracy_by_class(df, result, TIERS, "expected")]
    assert names == ["easy", "hard", "hopeless", "odd", UNCLASSIFIED]


def tiny_doc(**workload) -> dict:
    """scenarios/tiny.yaml with its trace path made absolute and ``workload`` set."""
    doc = yaml.safe_load(bundled("scenarios", "tiny.yaml").read_text())
    doc["trace"]["path"] = str(bundled("traces", "azure2023_code.parquet"))
    if workload:
        doc["workload"] = workload
    return doc


def run_doc(doc: dict, folder, baselines: bool = True) -> RunResult:
    """Run a scenario document into ``folder``/out."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return run_scenario(
        load_scenario(path), folder / "out", scenario_path=path, baselines=baselines, report=True
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """tiny.yaml (two_type difficulty) with sized uniform baselines, run once."""
    folder = tmp_path_factory.mktemp("tiny57")
    return run_doc(tiny_doc(), folder), folder / "out"


def test_a_tiny_run_writes_each_class_and_they_add_up(tiny):
    run, out = tiny
    classes = run.accuracy_by_class
    assert [c.name for c in classes] == ["easy", "hard"]
    assert sum(c.requests for c in classes) == run.requests
    weighted = sum(c.requests * c.accuracy for c in classes) / run.requests
    assert weighted == pytest.approx(run.accuracy, abs=1e-12)
    for fleet in run.savings.uniform:
        each = sum(c.requests * c.uniform[fleet.tier] for c in classes) / run.requests
        assert each == pytest.approx(fleet.accuracy, abs=1e-9)
    data = json.loads((out / "summary.json").read_text())
    assert list(data["accuracy_by_class"]) == ["easy", "hard"]
    assert set(data["accuracy_by_class"]["hard"]) == {
        "requests",
        "accuracy",
        "accuracy_ci95",
        "uniform",
    }


def test_the_hard_class_reads_routed_against_the_uniform_baseline(tiny):
    from tiersim.cli.run_summary import class_rows

    run, _ = tiny
    hard = run.accuracy_by_class[1]
    base = run.savings.baseline_uniform_tier
    ((label, value, source),) = class_rows(run, run.sources.accuracy)
    assert label == "expected accuracy by difficulty class"
    assert (
        f"hard {100 * hard.accuracy:.2f} % (all {base} {100 * hard.uniform[base]:.2f} %)" in value
    )
    assert source == run.sources.accuracy == "prior"


def test_requests_parquet_names_each_requests_class(tiny):
    run, out = tiny
    rows = pd.read_parquet(out / "requests.parquet")
    assert list(rows.columns)[-1] == "difficulty_class"
    counts = rows["difficulty_class"].value_counts().to_dict()
    assert counts == {c.name: c.requests for c in run.accuracy_by_class}
    for c in run.accuracy_by_class:
        mine = rows["difficulty_class"] == c.name
        assert rows.loc[mine, "expected_accuracy"].mean() == pytest.approx(c.accuracy)


def test_the_report_has_the_class_table(tiny):
    _, out = tiny
    page = (out / "report.html").read_text()
    assert "<h3>Accuracy by difficulty class</h3>" in page
    assert (
        "<th>routed (this run)</th><th>95% interval of the mean expected value</th>"
        "<th>all w4a16</th>"
    ) in page


def test_the_summary_reads_back_with_and_without_the_key(tiny):
    run, out = tiny
    text = (out / "summary.json").read_text()
    back = RunResult.from_json(text)
    assert back.accuracy_by_class == tuple(RunResult.from_json(run.dumps()).accuracy_by_class)
    assert [c.name for c in back.accuracy_by_class] == ["easy", "hard"]
    old = json.loads(text)
    del old["accuracy_by_class"]  # a summary written before round 57
    assert RunResult.from_json(old).accuracy_by_class == ()
    assert "accuracy_by_class" not in RunResult.from_json(old).to_json()


def test_a_malformed_class_entry_is_one_line():
    text = (Path(__file__).parent / "golden" / "tiny_summary.json").read_text()
    data = json.loads(text)
    data["accuracy_by_class"] = {"hard": {"requests": 3, "accuracy": 1.5}}
    with pytest.raises(TiersimError) as err:
        RunResult.from_json(data, "x/summary.json")
    assert str(err.value) == (
        "x/summary.json: malformed summary ('accuracy_by_class.hard' "
        "accuracies must be fractions between 0 and 1); rerun `tiersim "
        "run` to rewrite it"
    )


def test_three_type_gives_the_hopeless_class_too(tmp_path):
    run = run_doc(
        tiny_doc(difficulty={"kind": "three_type", "p_hopeless": 0.2}), tmp_path, baselines=False
    )
    names = [c.name for c in run.accuracy_by_class]
    assert names == ["easy", "hard", "hopeless"]
    hopeless = run.accuracy_by_class[2]
    assert hopeless.accuracy == 0.0  # no tier answers a hopeless request
    weighted = sum(c.requests * c.accuracy for c in run.accuracy_by_class) / run.requests
    assert weighted == pytest.approx(run.accuracy, abs=1e-12)


def test_without_classes_nothing_new_is_written_or_said(tmp_path):
    from tiersim.cli.run_summary import class_rows

    run = run_doc(tiny_doc(difficulty={"kind": "continuous"}), tmp_path, baselines=False)
    assert run.accuracy_by_class == ()
    assert "accuracy_by_class" not in json.loads((tmp_path / "out" / "summary.json").read_text())
    assert class_rows(run, run.sources.accuracy) == []
    rows = pd.read_parquet(tmp_path / "out" / "requests.parquet")
    assert "difficulty_class" not in rows.columns
    assert "by difficulty class" not in (tmp_path / "out" / "report.html").read_text()


def test_the_plan_line_gives_each_class_against_the_baseline():
    from tiersim.results_plan_lines import class_line

    chosen = {
        "design": "w4a16+bf16",
        "accuracy_by_class": {
            "easy": {"requests": 248, "accuracy": 0.9998},
            "hard": {"requests": 69, "accuracy": 0.7436},
        },
        "savings": {"baseline_uniform_design": "bf16"},
        "accuracy_sources": {"basis": "expected", "source": "prior"},
    }
    uniform = [
        {
            "design": "bf16",
            "accuracy_by_class": {"easy": {"accuracy": 0.9998}, "hard": {"accuracy": 0.7709}},
        }
    ]
    assert class_line(chosen, uniform) == (
        "expected accuracy by difficulty class, plan vs uniform bf16 (modelled): easy 99.98% "
        "vs 99.98%; hard 74.36% vs 77.09%; source: prior"
    )
    alone = {**chosen, "savings": {"baseline_uniform_design": "w4a16+bf16"}}
    assert class_line(alone, uniform) == (
        "expected accuracy by difficulty class, plan (modelled): easy 99.98%; hard 74.36%; "
        "source: prior"
    )
    assert class_line({"design": "bf16"}, uniform) is None


def test_a_plans_designs_give_each_class_and_they_add_up(tmp_path):
    from tiersim.cli.plan import plan_capacity

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_doc()))
    plan = plan_capacity(path, report=False).to_json()
    designs = [plan["plan"], *plan["uniform"], *plan["runners_up"]]
    for design in designs:
        if design.get("accuracy") is None:
            continue
        classes = design["accuracy_by_class"]
        assert list(classes) == ["easy", "hard"]
        total = sum(c["requests"] for c in classes.values())
        weighted = sum(c["requests"] * c["accuracy"] for c in classes.values()) / total
        assert weighted == pytest.approx(design["accuracy"], abs=1e-9)


def test_a_plan_without_classes_writes_none(tmp_path):
    from tiersim.cli.plan import plan_capacity

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(tiny_doc(difficulty={"kind": "continuous"})))
    plan = plan_capacity(path, report=False).to_json()
    assert "accuracy_by_class" not in plan["plan"]
    assert all("accuracy_by_class" not in u for u in plan["uniform"])
