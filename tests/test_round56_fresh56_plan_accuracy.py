"""Round 56, fresh56: ``tiersim plan`` says what its saving against its baseline (the sized
uniform fleet it is quoted against) is worth a month and costs in accuracy, on the console
after the saving line and in the report's plan section alike: "against the saving's baseline
(uniform bf16): 3.50 USD/hour less, 2,555 USD less a month of 730 hours (...); expected
accuracy 94.62% against 94.90%, 0.28 points lower". Before, the console gave the saving as a
share per hour alone, the baseline's accuracy nowhere (only plan.json), and USD a month only
against today's fleet (``plan.current``)."""

from __future__ import annotations

import warnings

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan_text import format_plan
from tiersim.results_plan_lines import baseline_line

SAVING = {
    "baseline_uniform_design": "bf16",
    "saving_basis": "per_hour",
    "routed_cost_per_hour_usd": 28.0,
    "baseline_uniform_cost_per_hour_usd": 31.5,
}
CHOSEN = {"accuracy": 0.9462221664, "accuracy_sources": {"basis": "expected"}, "savings": SAVING}
UNIFORM = [{"design": "fp8", "accuracy": 0.9389}, {"design": "bf16", "accuracy": 0.9490205927}]
MONTH = (
    "3.50 USD/hour less, 2,555 USD less a month of 730 hours (24/7, both fleets "
    "provisioned for the trace's load; modelled); "
)


def test_the_month_and_the_accuracy_gap_are_given():
    assert baseline_line(CHOSEN, UNIFORM) == (
        "against the saving's baseline (uniform bf16): "
        + MONTH
        + "expected accuracy 94.62% against 94.90%, 0.28 points lower"
    )


def test_the_month_is_todays_fleets_where_one_is_named():
    line = baseline_line(CHOSEN, UNIFORM, {"hours_per_month": 500.0})
    assert "3.50 USD/hour less, 1,750 USD less a month of 500 hours (both fleets" in line


def test_a_tie_and_a_more_accurate_plan_read_so():
    tie = {**CHOSEN, "accuracy": 0.951, "savings": {**SAVING, "routed_cost_per_hour_usd": 31.5}}
    assert baseline_line(tie, UNIFORM) == (
        "against the saving's baseline (uniform bf16): the same USD/hour; expected accuracy "
        "95.10% against 94.90%, 0.20 points higher"
    )


def test_no_money_off_a_per_hour_basis_and_realised_draws_named_so():
    chosen = {
        "accuracy": 0.9490205927,
        "accuracy_sources": {"basis": "realised"},
        "savings": {**SAVING, "saving_basis": "over_trace"},
    }
    assert baseline_line(chosen, UNIFORM) == (
        "against the saving's baseline (uniform bf16): accuracy (realised draws) 94.90% "
        "against 94.90%, the same to 0.01 points"
    )


def test_no_line_without_a_baseline_or_its_accuracy():
    assert baseline_line({**CHOSEN, "savings": {}}, UNIFORM) is None
    assert baseline_line(CHOSEN, [{"design": "bf16"}]) is None
    assert baseline_line({**CHOSEN, "accuracy": None}, UNIFORM) is None


ROUTED = {  # tiny at 6x its load, a cheap fp8 tier and a floor: the plan routes fp8 3 + bf16 1
    "tiers": [
        {
            "name": "fp8",
            "precision": "fp8",
            "replicas": 1,
            "cost_per_gpu_hour": 2.0,
            "accuracy": {"easy": 1.0, "hard": 0.7},
        },
        {
            "name": "bf16",
            "precision": "bf16",
            "replicas": 1,
            "cost_per_gpu_hour": 3.5,
            "accuracy": {"easy": 1.0, "hard": 0.85},
        },
    ],
    "workload": {"difficulty": {"kind": "two_type", "p_easy": 0.8, "hint_auroc": 0.8}},
    "router": {"policy": "floor"},
    "accuracy_floor": 0.945,
}


@pytest.fixture(scope="module")
def routed_plan(tmp_path_factory):
    from tiersim.cli.plan import plan_capacity
    from tiersim.errors import Note

    folder = tmp_path_factory.mktemp("plan")
    doc = tiny_doc(**ROUTED)
    doc["trace"] = {**doc["trace"], "time_scale": 6.0}
    path = write_yaml(folder / "routed.yaml", doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(path, out_dir=folder / "out", check_seeds=0)
    return result, folder / "out"


def test_the_console_and_the_report_give_the_same_line(routed_plan):
    import html
    import re

    result, out = routed_plan
    assert result.plan["design"] == "fp8+bf16"
    line = baseline_line(result.plan, result.uniform, result.current)
    assert line.startswith(
        "against the saving's baseline (uniform bf16): 1.00 USD/hour less, 730 USD less a "
        "month of 730 hours (24/7, both fleets provisioned for the trace's load; modelled); "
        "expected accuracy "
    )
    assert re.search(
        r"expected accuracy \d\d\.\d\d% against \d\d\.\d\d%, "
        r"\d\.\d\d points lower$",
        line,
    )
    lines = format_plan(result).splitlines()
    at = next(i for i, text in enumerate(lines) if "the cheapest sized uniform fleet" in text)
    assert "  " + line in lines[at + 1 : at + 3]  # after the saving (and a chance line)
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert f"|{line}|" in page


def test_a_uniform_plan_is_its_own_baseline_and_gets_no_line():
    chosen = {**CHOSEN, "design": "bf16"}
    assert baseline_line(chosen, UNIFORM) is None
