"""Round 53 (plan53): ``tiersim plan``'s console gives the latency cost of its saving, the p99
TTFT / TPOT line ``tiersim run`` prints under its uniform-fleets table, for the plan and the
sized uniform fleets plan.json records, in the run's words (one wording function); and its
accuracy line gives the plan's 95 % interval where plan.json has one."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest

from tiersim.cli.plan_text import format_plan
from tiersim.results import PlanResult

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"

P99 = ("  p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): uniform w4a16 0.578 s / 95.5 ms; "
       "uniform bf16 0.334 s / 78.2 ms; plan 0.334 s / 78.2 ms")
"""tiny.yaml planned: bf16 1 x 1 GPU (modelled; the figures are tied to the roofline
calibration, as the tiny golden's)."""


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory) -> tuple[PlanResult, Path]:
    from tiersim.cli.plan import plan_capacity
    from tiersim.errors import Note

    out = tmp_path_factory.mktemp("plan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(TINY, out_dir=out, report=False)
    return result, out


def _lines(result: PlanResult) -> list[str]:
    return format_plan(result).splitlines()


def _edited(result: PlanResult, edit) -> PlanResult:
    doc = copy.deepcopy(result.to_json())
    edit(doc)
    return PlanResult.from_json(doc)


def test_plan_prints_the_runs_p99_line(tiny_plan):
    result, out = tiny_plan
    lines = _lines(result)
    assert P99 in lines
    # after the uniform lines, as the run prints it under its uniform-fleets table
    assert lines.index(P99) == max(k for k, line in enumerate(lines)
                                   if line.startswith("  uniform ")) + 1
    # the plan's p99s are the planned run's, which `tiersim run` words the same way
    summary = json.loads((out / "summary.json").read_text())
    assert (round(summary["ttft_p99_s"], 10), round(summary["tpot_p99_s"], 10)) == (
        round(result.plan["ttft_p99_s"], 10), round(result.plan["tpot_p99_s"], 10))


def test_one_wording_function():
    from tiersim.cli import plan_text, run_summary

    source = Path(plan_text.__file__).read_text()
    assert "p99 TTFT / TPOT (SLOs" not in source  # the run's words, not a copy
    assert run_summary.p99_words([("plan", 0.5, 0.05)], 2.0, 0.1) == (
        "p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): plan 0.500 s / 50.0 ms")


def test_a_fleet_without_figures_is_skipped(tiny_plan):
    result, _ = tiny_plan

    def drop_w4a16(doc):  # a plan.json without the figure: no figure invented, nothing said
        for u in doc["uniform"]:
            if u["design"] == "w4a16":
                del u["ttft_p99_s"], u["tpot_p99_s"]

    lines = _lines(_edited(result, drop_w4a16))
    assert ("  p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): uniform bf16 0.334 s / 78.2 ms; "
            "plan 0.334 s / 78.2 ms") in lines

    def missed(doc):  # a fleet that missed at every size: its p99s are the last size tried's
        for u in doc["uniform"]:
            if u["design"] == "w4a16":
                u["feasible"], u["missed"] = False, "latency: ttft_p99_s 9 > 2"

    assert "uniform w4a16 0.578 s" not in format_plan(_edited(result, missed))

    def none(doc):
        for u in doc["uniform"]:
            del u["ttft_p99_s"]

    assert not any("p99 TTFT / TPOT" in line for line in _lines(_edited(result, none)))

    def no_plan_p99(doc):
        del doc["plan"]["ttft_p99_s"]

    assert not any("p99 TTFT / TPOT" in line for line in _lines(_edited(result, no_plan_p99)))


def test_accuracy_line_gives_the_interval(tmp_path):
    """tiny.yaml at --accuracy-floor 0.94 (modelled; tied to the accuracy priors and the
    roofline calibration): the plan is bf16 at 95.00 %, its interval 93.16 % - 95.77 %, the
    planned run's, with the floor inside it."""
    from tiersim.cli.plan import plan_capacity
    from tiersim.errors import Note

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(TINY, floor=0.94, out_dir=tmp_path, report=False)
    line = ("  expected accuracy: 95.00% (95% CI 93.16% - 95.77%, the floor inside it) "
            "vs floor 94.00%; source: prior")
    assert line in _lines(result)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [round(v, 8) for v in result.plan["accuracy_ci95"]] == [
        round(v, 8) for v in summary["router"]["accuracy_ci95"]]

    def low_floor(doc):  # a floor below the interval: the interval, nothing more said
        doc["plan"]["margins"]["accuracy"]["limit"] = 0.9
        doc["constraints"]["accuracy_floor"] = 0.9

    assert ("  expected accuracy: 95.00% (95% CI 93.16% - 95.77%) vs floor 90.00%; "
            "source: prior") in _lines(_edited(result, low_floor))

    def no_interval(doc):  # a plan.json without it (--robust, or written before it)
        del doc["plan"]["accuracy_ci95"]

    assert ("  expected accuracy: 95.00% vs floor 94.00%; source: prior"
            in _lines(_edited(result, no_interval)))


def test_robust_plan_has_no_interval(tmp_path):
    """--robust: the plan's accuracy is the worst seed's, of no one run, so no interval."""
    from tiersim.cli.plan import plan_capacity
    from tiersim.errors import Note

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(TINY, floor=0.94, report=False, check_seeds=1, robust=True)
    assert "accuracy_ci95" not in result.plan
    assert "95% CI" not in format_plan(result)
