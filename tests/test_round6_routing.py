"""Routers and accuracy specs under hostile but valid-looking scenarios (sixth round): each
one was accepted with wrong numbers, or failed with a misleading line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiersim.cli import main

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def scenario(tmp_path: Path, tiers: str, router: str, workload: str = "{}",
             trace: str = f"{{path: {TRACE}, window: [240, 360]}}") -> Path:
    """A two-tier scenario on two minutes of the code trace, roofline step times."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
                    f"trace: {trace}\nworkload: {workload}\ntiers:\n{tiers}router: {router}\n")
    return path


def two_tiers(price: float = 3.5, extra: tuple[str, str] = ("", "")) -> str:
    return "".join(f"  - {{name: {name}, precision: {name}, replicas: 1, "
                   f"cost_per_gpu_hour: {price}{more}}}\n"
                   for name, more in zip(("w4a16", "bf16"), extra, strict=True))


def run(capsys, path: Path, *more: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["run", str(path), "--no-baselines", "--no-report", *more])
    return code, capsys.readouterr().err


def test_an_accuracy_table_out_of_0_1_is_one_line(tmp_path, capsys):
    """easy 1.5 ran, with expected accuracies up to 1.5 and a 95% interval reaching 1.06."""
    path = scenario(tmp_path, two_tiers(extra=(", accuracy: {easy: 1.5, hard: 0.5}",
                                               ", accuracy: {easy: 1.0, hard: 0.9}")),
                    "{policy: uniform}")
    code, err = run(capsys, path)
    assert code == 1
    assert err.strip() == f"Error: {path}: line 8: tiers[0].accuracy.easy: an accuracy is in " \
                          "[0, 1] (got 1.5)"


def test_a_trace_difficulty_column_cannot_feed_a_class_table(tmp_path, capsys):
    """The column's continuous difficulty has no class: every request was read as easy."""
    trace = pd.read_parquet(TRACE).head(200)
    trace["difficulty"] = np.random.default_rng(1).random(len(trace))
    trace.to_parquet(tmp_path / "d.parquet")
    path = scenario(tmp_path, two_tiers(extra=(", accuracy: {easy: 0.9, hard: 0.5}",
                                               ", accuracy: {easy: 1.0, hard: 0.8}")),
                    "{policy: uniform}", trace=f"{{path: {tmp_path / 'd.parquet'}}}")
    code, err = run(capsys, path)
    assert code == 1
    assert err.strip() == (
        f"Error: {path}: line 8: tiers[0].accuracy: a table looks accuracy up by difficulty "
        "class, and the trace's difficulty column gives a difficulty in [0, 1], not a class; "
        "give the tier one accuracy (a curve over difficulty) or drop the column")


def test_a_prior_out_of_reach_names_top_accuracy(tmp_path, capsys):
    path = scenario(tmp_path, two_tiers(), "{policy: uniform}",
                    workload="{difficulty: {top_accuracy: 1.0e-300}}")
    code, err = run(capsys, path)
    assert code == 1 and err.strip().startswith(
        f"Error: {path}: line 6: workload.difficulty.top_accuracy: the prior accuracy of tier "
        "'w4a16' scaled from it (")


@pytest.mark.parametrize("router", ["{policy: lagrangian, lambda: 0.0}",
                                    "{policy: oracle, lambda: 1.0}"])
def test_free_tiers_are_routed_on_accuracy_not_to_the_cheapest(tmp_path, capsys, router):
    """Both tiers at $0: 0/0 made every value NaN and argmax sent every request to w4a16."""
    out = tmp_path / "o"
    path = scenario(tmp_path, two_tiers(price=0.0), router,
                    workload="{difficulty: {hint_auroc: 0.8}}")
    code, err = run(capsys, path, "--out", str(out))
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tiers"]["bf16"]["requests"] > 0


def test_an_unreachable_router_floor_is_noted_and_reported_missed(tmp_path, capsys):
    out = tmp_path / "o"
    path = scenario(tmp_path, two_tiers(), "{policy: floor, floor: 0.99}",
                    workload="{difficulty: {kind: three_type, p_hopeless: 0.14, "
                             "hint_auroc: 0.72}}")
    code, err = run(capsys, path, "--out", str(out))
    assert code == 0
    assert "note: router.floor 0.99 is above the most accurate routing the router finds (" in err
    router = json.loads((out / "summary.json").read_text())["router"]
    assert router["accuracy_floor"] == 0.99 and router["floor_met"] is False


def test_classifier_notes_name_the_scenario_file(tmp_path, capsys):
    """One generated task: too few requests of one kind to learn from. It was an error (named
    'scenario'); now every request gets the split's rates, with a note naming the file."""
    path = scenario(tmp_path, two_tiers(), "{policy: threshold}",
                    workload="{difficulty: {p_easy: 0.8}, sessions: {source: generate, "
                             "generate: {tasks: 1}}}")
    code, err = run(capsys, path)
    assert code == 0 and (f"note: {path}: router.classifier: the cheapest tier w4a16 is wrong "
                          "on 0 of the 3 training requests") in err


def test_labels_named_after_no_tier_are_noted(tmp_path, capsys):
    trace = pd.read_parquet(TRACE).head(100)
    trace["correct_weak"] = 1.0
    trace["correct_strong"] = 0.0
    trace.to_parquet(tmp_path / "l.parquet")
    path = scenario(tmp_path, two_tiers(), "{policy: uniform}",
                    trace=f"{{path: {tmp_path / 'l.parquet'}}}")
    code, err = run(capsys, path)
    assert code == 0
    assert (f"note: {path}: the trace's correct_weak, correct_strong columns name none of the "
            "fleet's tiers (correct_<tier>) and are not used; name the tiers after them to use "
            "the labels") in err
