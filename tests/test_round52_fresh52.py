"""Round 52, fresh52 (a new user planning Qwen3-32B tiers on H200): what the "saved vs uniform"
row says when no uniform fleet is a baseline.

A run of FP8 + BF16 + W4A16 Qwen3-32B behind the floor router at an accuracy floor of 80 %
read 79.84 %, as its uniform BF16 fleet did (which met the SLOs), and the row said "no uniform
fleet meets the SLOs and this run's accuracy (or the floor): none to compare with": read as
written, false, since uniform BF16 met the SLOs and this run's accuracy. A uniform fleet is held
to the floor where the scenario sets one, else to the run's own accuracy
(:func:`tiersim.results_accuracy.baseline_floor`), so the row names the one in force.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.results import RunResult


def _words(floor: float | None, estimated: bool = False, *infeasible: str | None) -> str:
    uniform = tuple(SimpleNamespace(tier=f"t{k}", infeasible=why)
                    for k, why in enumerate(infeasible or (None,)))
    savings = SimpleNamespace(baseline_uniform_tier=None, estimated=estimated, uniform=uniform)
    run = SimpleNamespace(savings=savings, requests=100, completed=100, accuracy_floor=floor)
    return RunResult.no_baseline_words(run)


def test_the_row_names_the_floor_where_the_scenario_sets_one():
    assert _words(0.8) == ("no uniform fleet meets the SLOs and the accuracy floor: none to "
                           "compare with (uniform fleets table)")
    assert _words(0.8, False, "drops 2 requests", None) == (
        "all t0 drops 2 requests; no other meets the SLOs and the accuracy floor: none to "
        "compare with (uniform fleets table)")
    assert _words(0.8, True) == ("no uniform fleet's estimate reaches the accuracy floor: none "
                                 "to compare with (estimate; --baselines simulates)")
    assert _words(0.8, True, "drops 2 requests", None) == (
        "all t0 drops 2 requests; no other reaches the accuracy floor: none to compare with "
        "(estimate; --baselines simulates)")


def test_the_row_names_the_runs_accuracy_where_no_floor_is_set():
    assert _words(None) == ("no uniform fleet meets the SLOs and this run's accuracy: none to "
                            "compare with (uniform fleets table)")
    assert _words(None, True) == ("no uniform fleet's estimate reaches this run's accuracy: "
                                  "none to compare with (estimate; --baselines simulates)")


def test_a_run_under_an_unreachable_floor_says_the_floor_in_console_and_report(tmp_path):
    """tiny.yaml with every request on BF16 and a floor of 0.999 no fleet reaches: the console's
    row and the report's "saved vs that tier" name the floor, not the run's accuracy (which the
    uniform BF16 fleet matches)."""
    import html
    import re

    from rich.console import Console

    from tiersim.cli.run import headline_table
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(accuracy_floor=0.999, router={"policy": "uniform", "tier": "bf16"})
    out = tmp_path / "o"
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), out, baselines=True,
                       report=True)
    bf16 = next(u for u in run.savings.uniform if u.tier == "bf16")
    assert bf16.accuracy == pytest.approx(run.accuracy, rel=1e-12)  # BF16 reaches it
    console = Console(width=400, record=True)
    console.print(headline_table(run))
    row = next(line.split("│")[1:4] for line in console.export_text().splitlines()
               if "vs uniform" in line)
    assert [cell.strip() for cell in row] == [
        "saved vs uniform", "-", "no uniform fleet meets the SLOs and the accuracy floor: none "
        "to compare with (uniform fleets table)"]
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert ("|saved vs that tier||no uniform fleet meets the SLOs and the accuracy floor: none "
            "to compare with (uniform fleets table)|") in page
