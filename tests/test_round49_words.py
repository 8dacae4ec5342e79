"""Round 49: the words and digits of savings, percents and the planner's repeats.

1. A dearer fleet's saving: ``tiersim run``'s console and its report printed "saved vs uniform
   bf16 -100 % per hour" where ``tiersim plan`` words the same case "costs ... more than";
   the three now share one wording (:func:`tiersim.results.saving_verdict`,
   :func:`tiersim.results.dearer_words`).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import run_cli

from tiersim.cli.plan_text import _saving_line
from tiersim.cli.run import router_rows, saving_row
from tiersim.report.page import plan_section, savings_section
from tiersim.results import OVER_THE_TRACE, PER_HOUR, PlanResult, RunResult, SavingsResult

# --------------------------------------------------------------------- 1. a dearer fleet's saving


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[RunResult, str, str]:
    """``tiersim run tiny``: two H200s (w4a16 + bf16, 3.50 USD/hour each) against uniform bf16
    on one H200 (3.50 USD/hour): the routed fleet costs 7.00 USD/hour, 100 % more per hour.
    (The uniform fleets' sizes come from the roofline calibration: one replica each.) The
    result, its console and its report."""
    out = tmp_path_factory.mktemp("r49words") / "tiny"
    done = run_cli("run", "tiny", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return (RunResult.read(out / "summary.json"), done.stdout,
            (out / "report.html").read_text())


def test_a_dearer_run_says_it_costs_more_on_the_console_and_in_its_report(tiny_run):
    """Before: "saved vs uniform bf16 │ -100 % per hour" on the console, "saved vs that tier
    per hour │ -100 %" (and the static split's row likewise) in the report."""
    run, console, page = tiny_run
    s = run.savings
    assert (s.routed_cost_per_hour_usd, s.vs_uniform_frac, s.baseline_uniform_tier) == (
        7.0, -1.0, "bf16")
    row = next(line for line in console.splitlines() if "saved vs uniform bf16" in line)
    assert "│ costs 100 % more per hour │" in row
    assert "-100" not in console
    assert ("<tr><td>saved vs that tier</td><td>costs 100 % more per hour</td></tr>"
            in page)
    assert ("<tr><td>saved vs a static split of equal accuracy</td><td>costs 100 % more per "
            "hour</td></tr>" in page)
    assert "-100 %" not in page
    assert router_rows(run, "prior")[-1] == (
        "saved vs uniform bf16", "costs 100 % more per hour",
        "provisioned; uniform fleets simulated")


def test_a_dearer_plan_reads_the_same_words_with_the_same_digits(tiny_run):
    """``tiersim plan``'s line for the tiny run's saving: "costs 100 % more per hour than",
    the console's and the report's "costs 100 % more per hour"."""
    run, _, _ = tiny_run
    s = run.savings
    line = _saving_line({"vs_uniform_frac": s.vs_uniform_frac, "vs_uniform_usd": s.vs_uniform_usd,
                         "saving_basis": s.saving_basis, "baseline_uniform_tier": "bf16"})
    assert line == ("  costs 100 % more per hour than the cheapest sized uniform fleet (bf16), "
                    "simulated")


def _saving(frac: float | None, usd: float, **changes) -> SavingsResult:
    """A simulated saving of ``frac`` per hour (``usd`` over the trace) against bf16."""
    saving = SavingsResult(method="simulated", cost_model="provisioned", routed_cost_usd=9.0,
                           accuracy=0.9, accuracy_floor=0.85, uniform=(),
                           baseline_uniform_tier="bf16", vs_uniform_usd=usd,
                           vs_uniform_frac=frac, static_split_cost_usd=None,
                           vs_static_split_usd=None, vs_static_split_frac=None,
                           saving_basis=PER_HOUR)
    return dataclasses.replace(saving, **changes)


@pytest.mark.parametrize(("frac", "usd", "console", "plan"), [
    (-0.05949, -0.5, "costs 5.95 % more per hour", "costs 5.95 % more per hour than"),
    (0.05949, 0.5, "5.95 % per hour", "saves 5.95 % per hour against"),  # as it was
    (-5e-12, -1e-11, "costs 0.000000000500 % more per hour",
     "costs 0.000000000500 % more per hour than"),
    (0.0, 0.0, "0 % per hour", "costs the same per hour as"),  # as each was
    (None, -2.0, "costs 2 USD (the baseline costs 0 USD: no percentage) more",
     "costs 2 USD (the baseline costs 0 USD: no percentage) more than"),  # a free baseline
])
def test_the_console_the_report_and_the_plan_word_a_saving_alike(tiny_run, frac, usd, console,
                                                                 plan):
    """One saving in ``tiersim run``'s row, the run's report (the basis in the label where the
    fleet saves, in the cell where it costs more), the plan's report and the plan's line: the
    same words and digits."""
    saving = _saving(frac, usd)
    assert saving_row(saving)[1] == console
    dearer = console.startswith("costs ")
    label = "saved vs that tier" if dearer or frac is None else "saved vs that tier per hour"
    cell = (f"<td>{console}</td>" if dearer else
            f'<td class="num">{console.removesuffix(" per hour")}</td>')
    run_page = savings_section(dataclasses.replace(tiny_run[0], savings=saving))
    assert f"<tr><td>{label}</td>{cell}</tr>" in run_page
    assert _saving_line({"vs_uniform_frac": frac, "vs_uniform_usd": usd, "saving_basis": PER_HOUR,
                         "baseline_uniform_tier": "bf16"}) == (
        f"  {plan} the cheapest sized uniform fleet (bf16), simulated")
    label = label.replace("that tier", "it")
    assert f"<tr><td>{label}</td>{cell}</tr>" in _plan_page(frac, usd)


def test_an_estimated_dearer_saving_says_so_without_a_basis():
    """An estimate (over the trace) that is dearer: "costs 5.95 % more (estimate)", where it
    read "-5.95 % (estimate)"."""
    saving = _saving(-0.05949, -0.5, method="estimated", saving_basis=OVER_THE_TRACE)
    assert saving_row(saving)[1] == "costs 5.95 % more (estimate)"
    assert saving_row(dataclasses.replace(saving, vs_uniform_frac=0.05949))[1] == \
        "5.95 % (estimate)"


def _plan_page(frac: float | None, usd: float) -> str:
    """The plan report's section for a plan saving ``frac`` per hour against bf16."""
    savings = {"accuracy_floor": 0.8, "baseline_uniform_tier": "bf16", "drain_gap": None,
               "baseline_uniform_cost_usd": 6.0, "baseline_uniform_cost_per_hour_usd": 59.5,
               "routed_cost_usd": 6.0 - usd, "vs_uniform_frac": frac, "vs_uniform_usd": usd,
               "saving_basis": PER_HOUR}
    chosen = {"design": "fp8+bf16", "replicas": {"fp8": 8, "bf16": 9},
              "gpus_per_replica": {"fp8": 1, "bf16": 1}, "cost_usd": 6.0 - usd,
              "cost_model": "provisioned", "cost_per_hour_usd": 59.5, "savings": savings}
    return plan_section(PlanResult(scenario="s", constraints={}, plan=chosen))
