"""Round 26 (consistency): a figure shown in one output reads as the same figure, with the same
name, unit and source, in every other output (console, summary.json, report.html, sweep and
plan outputs)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tiersim.cli.run import baseline_table
from tiersim.report.page import savings_section
from tiersim.results import RunResult

GOLDEN = Path(__file__).parent / "golden"


def _console_text(renderable) -> str:
    """A rich renderable as the console prints it (wide enough for every header)."""
    console = Console(file=io.StringIO(), width=200, markup=False)
    console.print(renderable)
    return console.file.getvalue()


def test_baseline_accuracy_column_names_the_runs_basis():
    """cascade_models scores accuracy on realised draws, and so are its uniform fleets'
    accuracies (93.49% for all large; a `tiersim run` of that fleet reads 93.41% expected):
    the baseline table's column says so in the console and the report, as the headline does."""
    run = RunResult.read(GOLDEN / "cascade_models_summary.json")
    assert run.router.basis == "realised"
    assert "accuracy (realised draws)" in _console_text(baseline_table(run))
    assert "<th>accuracy (realised draws)</th>" in savings_section(run)


def test_baseline_accuracy_column_expected_basis():
    """On the expected basis the column is the headline's "expected accuracy"."""
    run = RunResult.read(GOLDEN / "tiny_summary.json")
    assert run.router.basis == "expected"
    assert "expected accuracy" in _console_text(baseline_table(run))
    assert "<th>expected accuracy</th>" in savings_section(run)
