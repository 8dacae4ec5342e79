"""Round 56, fresh56: ``tiersim plan`` says what its saving costs in accuracy: the plan's
accuracy beside that of the uniform fleet its saving is quoted against, and the gap in points,
on the console under the saving line and in the report's plan section. Before, the console
gave the baseline only as "meets every constraint", and the question "what accuracy do I
lose?" needed plan.json."""

from __future__ import annotations

import warnings

import pytest
from conftest import TINY

from tiersim.cli.plan_text import format_plan
from tiersim.results_plan_lines import baseline_accuracy_line

CHOSEN = {
    "accuracy": 0.9462221664,
    "accuracy_sources": {"basis": "expected"},
    "savings": {"baseline_uniform_design": "bf16"},
}
UNIFORM = [{"design": "fp8", "accuracy": 0.9389}, {"design": "bf16", "accuracy": 0.9490205927}]


def test_the_gap_to_the_baseline_is_given_in_points():
    assert baseline_accuracy_line(CHOSEN, UNIFORM) == (
        "expected accuracy against the saving's baseline (uniform bf16): plan 94.62% against "
        "94.90%, 0.28 points lower"
    )


def test_a_plan_more_accurate_than_its_baseline_reads_higher():
    line = baseline_accuracy_line({**CHOSEN, "accuracy": 0.951}, UNIFORM)
    assert line.endswith("plan 95.10% against 94.90%, 0.20 points higher")


def test_realised_draws_are_named_so_and_equal_ones_said_alike():
    chosen = {**CHOSEN, "accuracy": 0.9490205927, "accuracy_sources": {"basis": "realised"}}
    assert baseline_accuracy_line(chosen, UNIFORM) == (
        "accuracy (realised draws) against the saving's baseline (uniform bf16): plan 94.90% "
        "against 94.90%, the same to 0.01 points"
    )


def test_no_line_without_a_baseline_or_its_accuracy():
    assert baseline_accuracy_line({**CHOSEN, "savings": {}}, UNIFORM) is None
    assert baseline_accuracy_line(CHOSEN, [{"design": "bf16"}]) is None
    assert baseline_accuracy_line({**CHOSEN, "accuracy": None}, UNIFORM) is None


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory):
    from tiersim.cli.plan import plan_capacity
    from tiersim.errors import Note

    out = tmp_path_factory.mktemp("plan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(TINY, out_dir=out, check_seeds=0)
    return result, out


def test_the_console_and_the_report_give_the_same_line(tiny_plan):
    import html
    import re

    result, out = tiny_plan
    line = baseline_accuracy_line(result.plan, result.uniform)
    assert line is not None
    lines = format_plan(result).splitlines()
    at = next(i for i, text in enumerate(lines) if "the cheapest sized uniform fleet" in text)
    assert "  " + line in lines[at + 1 : at + 3]  # after the saving (and a chance line)
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert f"|{line}|" in page
