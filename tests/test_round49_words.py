"""Round 49: the words and digits of savings, percents and the planner's repeats.

1. A dearer fleet's saving: ``tiersim run``'s console and its report printed "saved vs uniform
   bf16 -100 % per hour" where ``tiersim plan`` words the same case "costs ... more than";
   the three now share one wording (:func:`tiersim.results.saving_verdict`,
   :func:`tiersim.results.dearer_words`).
2. A share near 1 (an SLO attainment of 0.9996) printed "100 %" ("1.00" in the report), which a
   planner reads as all met; a tiny share at fixed decimals "0%". A share that is not exactly
   1 (or 0) is now shown to as many more figures as tell it apart
   (:func:`tiersim.results.share_digits`, :func:`tiersim.results.percent_text`).
3. ``tiersim plan --choose router.policy=cascade`` with an accuracy floor tried the cascade at
   each raised floor (and each ``--choose router.floor``), though a cascade reads no floor: the
   same routing routed and sized again to the same result. Each is now sized once
   (:meth:`tiersim.plan.planner.Planner.best`).
"""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
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
    assert re.search(r"│ costs 100 % more per hour +│", row)
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
    (None, -2.0, "costs 2 USD more (the baseline costs 0 USD: no percentage)",
     "costs 2 USD more (the baseline costs 0 USD: no percentage) than"),  # a free baseline
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


# --------------------------------------------------------------- 2. a share is not shown as 100 %


@pytest.mark.parametrize(("share", "console", "console4", "report3", "report4"), [
    (0.9996, "99.96 %", "99.96 %", "0.9996", "0.9996"),  # "100 %", "1.00" before
    (0.99996, "99.996 %", "99.996 %", "0.99996", "0.99996"),  # "100 %", "100.0 %", "1.000"
    (1999 / 2000, "99.95 %", "99.95 %", "0.9995", "0.9995"),
    (1.0, "100 %", "100.0 %", "1.00", "1.000"),  # exactly all: as it was
    (1 - 1e-12, "100 %", "100.0 %", "1.00", "1.000"),  # 1 as summary.json writes it
    (0.997, "99.7 %", "99.70 %", "0.997", "0.9970"),  # as it was
    (0.0, "0 %", "0 %", "0", "0"),  # as it was
])
def test_a_share_short_of_all_is_not_shown_as_all(share, console, console4, report3, report4):
    """The console's percents (3 figures; an accuracy's 4), the report's percents and its
    fractions (an SLO attainment to 3 figures, an accuracy to 4)."""
    from tiersim.report.page import fmt, percent, to_figures
    from tiersim.results import figure_text, share_text

    assert figure_text(share, " %", 100) == console
    assert figure_text(share, " %", 100, digits=4) == console4
    assert fmt(percent(share)) == share_text(share) == console
    assert fmt(to_figures(share, 3)) == report3
    assert fmt(to_figures(share)) == report4


def test_an_slo_attainment_short_of_all_reads_so_on_the_console_and_in_the_report(
        tiny_run, capsys, monkeypatch):
    """1,999 of 2,000 requests within the SLOs: "SLO attainment 100 %" on the console and 1.00
    in the report before; now 99.95 % and 0.9995. An accuracy of 0.99996: 99.996 % and
    0.99996 (it read 100.0 % and 1.000)."""
    from tiersim.cli.run_summary import print_summary
    from tiersim.report.page import run_headline

    run = dataclasses.replace(tiny_run[0], slo_attainment=1999 / 2000, accuracy=0.99996)
    monkeypatch.setenv("COLUMNS", "120")
    capsys.readouterr()
    print_summary(run, None)
    console = capsys.readouterr().out
    assert re.search(r"│ SLO attainment +│ 99\.95 % +│", console)
    assert re.search(r"│ expected accuracy +│ 99\.996 % +│", console)
    page = run_headline(run)
    assert '<tr><td>SLO attainment</td><td class="num">0.9995</td>' in page
    assert '<tr><td>expected accuracy</td><td class="num">0.99996</td>' in page


def test_a_share_at_fixed_decimals_is_shown_apart_from_0_and_100():
    """A tier's share under an SLO note ("0%" of the requests go to it), a static split's mix
    ("100.0% bf16 + 0.0% fp8"), a plan's accuracy ("100.00%")."""
    from tiersim.cli.plan_text import _accuracy_line
    from tiersim.results import mix_words, percent_text, tier_over_slo_note

    assert tier_over_slo_note("bf16", "tpot_p99_s", 0.2, 0.1, 0.003).endswith(
        "(0.3% of the requests go to it)")
    assert tier_over_slo_note("bf16", "tpot_p99_s", 0.2, 0.1, 0.9996).endswith(
        "(99.96% of the requests go to it)")
    assert tier_over_slo_note("bf16", "tpot_p99_s", 0.2, 0.1, 0.25).endswith(
        "(25% of the requests go to it)")  # as it was
    assert mix_words({"bf16": 0.9996, "fp8": 0.0004}) == "99.96% bf16 + 0.04% fp8"
    assert mix_words({"bf16": 0.677, "fp8": 0.323}) == "67.7% bf16 + 32.3% fp8"  # as it was
    assert _accuracy_line({"accuracy": 0.99996}) == (
        "  expected accuracy: 99.996% (no floor: the uniform baselines must reach it)")
    assert _accuracy_line({"accuracy": 0.85}).startswith("  expected accuracy: 85.00% (")
    assert [percent_text(v, 1) for v in (1.0, 0.0, 1 - 1e-12, 1e-13, 0.00004)] == [
        "100.0%", "0.0%", "100.0%", "0.0%", "0.004%"]


def test_a_sweeps_fractions_short_of_all_are_not_shown_as_all(tmp_path):
    """The sweep table's SLO attainment and router rates: 0.9996 read 1.00."""
    from tiersim.report.load import ReportData
    from tiersim.report.page import sweep_headline

    data = ReportData(tmp_path, sweep=pd.DataFrame({
        "point_id": ["p0", "p1"], "status": ["ok", "ok"], "seed": [0, 1],
        "slo_attainment": [0.9996, 1.0], "router.fpr": [0.99996, 0.5],
        "accuracy": [0.99996, 0.9]}), sweep_axes=["seed"])
    cells = re.findall(r'<td class="num">([^<]*)</td>', sweep_headline(data))
    # each point's accuracy, SLO attainment, FPR (1.000, 1.00, 1.00 for the first before)
    assert cells[-6:] == ["0.99996", "0.9996", "0.99996", "0.9000", "1.00", "0.500"]


# ------------------------------------------------------ 3. a cascade is not retried at each floor


class _CountingEvaluator:
    """A :class:`~tiersim.plan.testing.FakeEvaluator` counting its routings per router."""

    def __init__(self, evaluator):
        self.inner, self.routed = evaluator, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def routing(self, design):
        self.routed.append(dict(design.router).get("policy"))
        return self.inner.routing(design)


def _cascade_plan(floor: float, choose: dict, monkeypatch=None, repeat: bool = False):
    """A plan of the fake cheap (accuracy 0.69) and top (0.95) tiers at ``floor``, 90 % of the
    requests on cheap (0.716 accurate routed: the fake routes every router alike), with
    ``choose``; ``repeat``: with every setting sized anew, as before (each setting read whole,
    so none reads as another). The result and the evaluator."""
    import warnings

    from tiersim.plan import Constraints, Planner
    from tiersim.plan import planner as planner_module
    from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario

    if repeat:
        monkeypatch.setattr(planner_module, "_sized_key", lambda start, setting: repr(
            (start, setting)))
    tiers = [FakeTier("cheap", accuracy=0.69, capacity_rps=10.0), FakeTier("top", accuracy=0.95)]
    scenario = fake_scenario(tiers, floor=floor)
    evaluator = _CountingEvaluator(FakeEvaluator(tiers, p_easy=0.9))
    planner = Planner(scenario, Constraints.of(scenario), evaluator, gpu_options=(1,),
                      choose=choose)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return planner.plan(), evaluator


def _same_plan(new, old) -> None:
    """The plan, its runners-up, its uniform fleets and every fleet it judged, alike."""
    assert new.plan == old.plan
    assert new.runners_up == old.runners_up
    assert new.uniform == old.uniform
    assert new.evaluated == old.evaluated


def test_a_cascade_missing_the_floor_is_routed_once_not_at_each_raised_floor(monkeypatch):
    """At a floor of 0.75 the cascade (0.716) misses at 0.75, 0.7525, 0.755, 0.76 and 0.77:
    it was routed 5 times to one routing; now once. The plan (uniform top) is the same,
    and so is every fleet judged (plan.json's evaluated list): the repeats never reached the
    sizing, each missing the floor before it."""
    new, evaluator = _cascade_plan(0.75, {"router.policy": ["cascade"]})
    assert evaluator.routed.count("cascade") == 1
    assert new.plan["design"] == "top"
    old, before = _cascade_plan(0.75, {"router.policy": ["cascade"]}, monkeypatch, repeat=True)
    assert before.routed.count("cascade") == 5
    _same_plan(new, old)
    assert new.simulations == old.simulations


def test_a_cascade_beside_chosen_floors_is_sized_once(monkeypatch):
    """``--choose router.policy=floor,cascade --choose router.floor=0.72,0.73`` at a floor of
    0.7: the floor router is tried at 0.7 and at each chosen floor, the cascade (meeting the
    floor) was sized at 0.7, 0.72 and 0.73 alike, 3 sizings of one routing; now once. The
    plan, its runners-up and every fleet judged are the same (the judged list already kept
    one entry per fleet as plan.json shows it: the cascade's repeats were judged again), in
    fewer simulations."""
    choose = {"router.policy": ["floor", "cascade"], "router.floor": [0.72, 0.73]}
    new, evaluator = _cascade_plan(0.7, choose)
    old, before = _cascade_plan(0.7, choose, monkeypatch, repeat=True)
    assert evaluator.routed.count("cascade") == 1
    assert before.routed.count("cascade") == 3
    assert evaluator.routed.count("floor") == before.routed.count("floor") == 3
    _same_plan(new, old)
    assert new.plan["router"] in ({"policy": "cascade"}, {"policy": "floor", "floor": 0.7})
    assert new.simulations < old.simulations
