"""Round 49, a new user's pass (an inference engineer sizing a cascade of DeepSeek-V3 on H200
with the Mooncake trace, from README alone): what confused them, fixed with exact-text tests."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

from conftest import fake_plan_notes

from tiersim.errors import Note
from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario


def _plan_notes(policy: str | None, floor: float | None, choose=None) -> list[str]:
    """The notes a Planner gives at its start for a fake two-tier scenario of ``policy``."""
    tiers = [FakeTier("w4", accuracy=0.85), FakeTier("fp8", accuracy=0.93)]
    scenario = fake_scenario(tiers, floor=floor)
    if policy is not None:
        scenario.router = SimpleNamespace(policy=policy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers), gpu_options=(1,),
                choose=choose)
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_plan_says_when_the_floor_router_replaces_the_scenarios_cascade():
    """With an accuracy floor the planner routes every multi-tier design with the floor router
    (docs/planning.md, "Routing first"), whatever the scenario's router. A cascade scenario
    (w4 answering first, escalating to fp8) planned that way printed its runner-up
    "w4@4+fp8@8 (w4 4 + fp8 6 replicas): meets every constraint" with no word that it was not
    the cascade: with --choose router.policy=cascade the cascade itself missed the TTFT SLO
    at any size (escalated requests wait through both passes). Now a note says so."""
    # round 54 (fresh54): a cascade's note also says the plan keeps the cascade's realised
    # draws as its accuracy basis (tests/test_round54_fresh54_plan_basis.py)
    assert _plan_notes("cascade", 0.85) == [
        "multi-tier designs are routed by the floor router at the accuracy floor, not the "
        "scenario's cascade router (router.policy: cascade), though every design is scored on "
        "the realised draws a cascade reads, and the planned scenario sets router.confusion "
        "to zeros to keep them (router.policy: floor scores expected accuracy); to size them "
        "with the cascade router, add --choose router.policy=cascade"]
    assert _plan_notes("lagrangian", 0.85)[0].startswith(
        "multi-tier designs are routed by the floor router at the accuracy floor, not the "
        "scenario's lagrangian router")
    assert _plan_notes("floor", 0.85) == []  # the scenario's own router
    assert _plan_notes("cascade", None) == []  # no floor: the scenario's router is used
    assert _plan_notes(None, 0.85) == []  # a stand-in scenario without a router
    assert _plan_notes("cascade", 0.85, {"router.policy": ["cascade"]}) == []
    assert _plan_notes("cascade", 0.85, {"policy": ["cascade", "floor"]}) == []


def test_the_canonical_columns_readme_names_are_what_a_rewritten_trace_needs(tmp_path):
    """README named no canonical column but the optional ones, so a user rewriting a trace
    (the Mooncake file less its rows longer than DeepSeek-V3's 163,840-token context, which
    every fleet drops and so no plan could be made of) had to read tiersim's source. README
    now lists them; this checks what it says: `request_id` may be left out (the 0-based row),
    `prefix_hashes` is a list a row, and a Mooncake file's window is in seconds."""
    import json

    from tiersim.trace import load_trace

    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prefix_hashes\n"
                    "0.0,1024,10,\"[1, 2]\"\n0.5,600,5,\"[1, 3]\"\n2.0,100,1,[]\n")
    df = load_trace(path)
    assert df["request_id"].tolist() == [0, 1, 2]
    assert [list(h) for h in df["prefix_hashes"]] == [[1, 2], [1, 3], []]
    moon = tmp_path / "m.jsonl"
    moon.write_text("".join(json.dumps({"timestamp": t, "input_length": 100,
                                        "output_length": 5, "hash_ids": [k]}) + "\n"
                            for k, t in enumerate((0, 1000, 2500, 400_000))))
    assert load_trace(moon, window=(0, 3))["arrival_s"].tolist() == [0.0, 1.0, 2.5]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert ("canonical Parquet/CSV table are read (canonical columns: `arrival_s`, seconds, "
            "sorted;\n  `input_tokens` and `output_tokens`, whole numbers above 0; optional "
            "`request_id`, unique,\n  else the 0-based row; `prefix_hashes`") in readme
    assert ("a Mooncake file's\n  `timestamp` milliseconds are read as seconds, so its "
            "`window` is in seconds)") in readme


def test_the_saving_row_names_uniform_fleets_no_size_makes_feasible():
    """The Mooncake trace holds 9 requests longer than DeepSeek-V3's context: every uniform
    fleet drops them at any size, so none is a baseline. The estimate's row said so ("all w4
    drops 9 requests longer ... at any size"), the simulated one only "no uniform fleet meets
    the SLOs and this run's accuracy (or the floor)" beside a table where both met the floor.
    Now the simulated row names them too (tests/test_round21_results2.py: every fleet so).
    Round 52: the row names the accuracy in force, here "this run's accuracy" (no floor set),
    where it read "this run's accuracy (or the floor)" (tests/test_round52_fresh52.py)."""
    from tiersim.results import RunResult

    def words(*uniform):
        savings = SimpleNamespace(baseline_uniform_tier=None, estimated=False, uniform=uniform)
        run = SimpleNamespace(savings=savings, requests=3_993, completed=3_984,
                              accuracy_floor=None)
        return RunResult.no_baseline_words(run)

    long = "drops 9 requests longer (prompt + output) than w4's max_model_len 163,840 at any size"
    assert words(SimpleNamespace(tier="w4", infeasible=long),
                 SimpleNamespace(tier="fp8", infeasible=None)) == (
        "all w4 drops 9 requests longer (prompt + output) than w4's max_model_len 163,840 at any "
        "size; no other meets the SLOs and this run's accuracy: none to compare "
        "with (uniform fleets table)")
    assert words(SimpleNamespace(tier="w4", infeasible=None)) == (
        "no uniform fleet meets the SLOs and this run's accuracy: none to "
        "compare with (uniform fleets table)")


def test_a_cascade_chosen_gets_no_note_that_higher_floors_may_cost_less():
    """`tiersim plan --choose router.policy=cascade` of the DeepSeek-V3 cascade (FP8 first,
    escalating to BF16 on 16 GPUs) planned the cascade, then said "each multi-tier design was
    routed at the lowest floor of 0.85 to 0.87 its accuracy met; higher floors were not tried
    and may cost less": a cascade reads no floor, so no floor routes it otherwise. The note
    stays for the floor router (tests/test_round26_planopt.py's fake scenario)."""
    tiers = [FakeTier("cheap", accuracy=0.69, capacity_rps=10.0), FakeTier("top", accuracy=0.95)]

    def notes(choose=None):
        return fake_plan_notes(tiers, 0.70, choose)

    result, said = notes()
    assert result.plan["router"] == {"floor": 0.7, "policy": "floor"}
    assert said == ["each multi-tier design was routed at the lowest floor of 0.7 to 0.72 its "
                    "accuracy met; higher floors were not tried and may cost less (replicas "
                    "round up per tier): try them with --choose router.floor=F1,F2"]
    result, said = notes({"router.policy": ["cascade"]})
    assert result.plan["design"] == "cheap+top"
    assert result.plan["router"] == {"policy": "cascade"}  # a cascade reads no floor: not shown
    assert {str(e["router"]) for e in result.evaluated} == {"{}", "{'policy': 'cascade'}"}
    assert said == []


def _points_table(extra: dict) -> str:
    """The Points table of a two-point sweep of the cascade's ``router.confusion.fpr`` (the
    figures of the DeepSeek-V3 cascade's points at p_easy 0.7), with ``extra`` columns."""
    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import sweep_headline

    sweep = pd.DataFrame({
        "status": ["ok", "ok"], "router.confusion.fpr": [0.0, 0.05],
        "accuracy": [0.926673, 0.923006], "cost_usd": [23.890867, 23.890867],
        "router.basis": ["realised"] * 2, "cost_model": ["provisioned"] * 2, **extra})
    data = ReportData(Path("."), sweep=sweep, sweep_axes=["router.confusion.fpr"],
                      scenario={"name": "dsv3-cascade", "router": {"policy": "cascade"}})
    return sweep_headline(data)


def test_a_sweep_of_the_routers_fpr_shows_the_realised_rates():
    """A sweep of router.confusion.fpr listed the injected rate and the accuracy, not the
    realised FPR (6.74 % at an injected 5 %: the verifier's own misses as well) nor the
    cascade's escalation rate, which each point's run prints; the user had to read
    sweep.parquet for them. The Points table now shows them where the points have them."""
    page = _points_table({"router.fpr": [0.022472, 0.067416], "router.fnr": [0.11477] * 2,
                          "router.escalation_rate": [0.185151, 0.181485]})
    assert ("<th>router FPR, realised (fraction)</th><th>router FNR, realised (fraction)</th>"
            "<th>escalation rate (fraction)</th><th>status</th>") in page
    assert ('<td class="num">0.0674</td><td class="num">0.115</td><td class="num">0.181</td>'
            "<td>ok</td>") in page
    page = _points_table({"router.fpr": [0.02, 0.06], "router.escalation_rate": [0.0, 0.0]})
    assert "router FPR, realised" in page and "escalation rate" not in page  # none escalated
    assert "router FPR" not in _points_table({})  # a uniform fleet's points: no router rates


def test_a_cascades_fnr_counts_escalations_no_tier_answers_right(tmp_path):
    """A cascade's FNR read well above its verifier's false-flag rate (11.5 % where a noise of
    0.3 flags 4.8 % of right answers), and docs/metrics.md did not say why: a request both
    tiers answer wrong did not need the top tier, and a verifier that sees the wrong answer
    escalates it. With a perfect verifier (signal_noise 0) cascade.yaml's FNR is 20.9 %, not
    0; docs/metrics.md now says so with these figures."""
    import yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    repo = Path(__file__).resolve().parent.parent
    doc = yaml.safe_load((repo / "scenarios" / "cascade.yaml").read_text())
    doc["router"]["cascade"]["signal_noise"] = 0.0
    doc["trace"]["path"] = str(repo / "tiersim" / "traces" / "azure2023_conv.parquet")
    doc.pop("sweep")
    path = tmp_path / "perfect.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    router = run_scenario(load_scenario(path)).router
    assert (f"{router.fpr:.1%}", f"{router.fnr:.1%}", f"{router.escalation_rate:.1%}") == (
        "0.0%", "20.9%", "26.2%")
    text = (repo / "docs" / "metrics.md").read_text()
    assert ("`cascade.yaml` at `signal_noise: 0` (a perfect verifier, which flags no right "
            "answer) reads FNR 20.9%, FPR 0%, escalation 26.2%") in text


def test_a_cascades_tier_tables_show_the_passes_its_cheap_tier_ran(tmp_path):
    """The DeepSeek-V3 cascade's tier table read "w4 893 requests, 81.9 %" at 95 %
    utilisation: the requests w4 answered, though it ran all 1,091 first passes (the 198
    escalated among them). summary.json had `passes`; the console and the report did not
    show it. Now both show it where a tier's passes differ from its requests."""
    import html
    import re

    import yaml
    from rich.console import Console

    from tiersim.cli.run_summary import tier_table
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    repo = Path(__file__).resolve().parent.parent
    doc = yaml.safe_load((repo / "scenarios" / "cascade.yaml").read_text())
    doc["trace"] = {"path": str(repo / "tiersim" / "traces" / "azure2023_conv.parquet"),
                    "window": [0, 60]}
    doc.pop("sweep")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = run_scenario(load_scenario(path), tmp_path / "out", report=True)
    nvfp4, bf16 = run.tiers
    assert (nvfp4.requests, nvfp4.passes, bf16.requests, bf16.passes) == (130, 191, 61, 61)
    console = Console(width=200, record=True)
    console.print(tier_table(run))
    text = console.export_text()
    assert ("tiers (cheapest first; p99s, util and KV peak simulated on the step times below; "
            "cost $ = provisioned, attrib. $ = busy GPU time; reqs = answered there, passes = "
            "run there)") in " ".join(text.split())
    assert "┃ tier  ┃ reqs ┃ passes ┃ share  ┃" in text
    assert "│ nvfp4 │ 130  │ 191    │ 68.1 % │" in text
    page = html.unescape(re.sub(r"<[^>]+>", "|", (tmp_path / "out" / "report.html").read_text()))
    assert "|tier||requests||passes run||share|" in page
    assert "|nvfp4||130||191||68.1 %|" in page


def test_analytic_says_its_provisioned_prices_are_per_hour_on_the_cheap_fleets_duration(
        tmp_path, capsys):
    """`tiersim analytic --scenario` of the DeepSeek-V3 cascade printed the uniform BF16
    fleet at 38.1542 USD "as tiersim run prices them", where run's uniform fleets table read
    38.0 for it: under provisioned cost each fleet's USD/hour is applied to the cheap fleet's
    duration (c0 16.6925 x 448 / 196), as the run report's dc says, and the command did not
    say so. Its first line now does."""
    from conftest import tiny_doc, write_yaml

    from tiersim.cli import main

    doc = tiny_doc(cost_model="provisioned")
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0  # bf16 dearer: a trade to model
    path = write_yaml(tmp_path / "s.yaml", doc)
    capsys.readouterr()
    assert main(["analytic", "--scenario", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert ("costs in USD of all requests on uniform fleets sized by simulation (provisioned "
            "cost: each fleet's USD/hour on all w4a16's duration), as tiersim run prices them, "
            "step times from w4a16: ") in first


def test_the_frontiers_sets_note_names_accuracy_among_what_an_axis_changes():
    """A sweep of workload.difficulty.p_easy drew 3 sets of uniform fleets, captioned as
    changing "their price, load or fleet": p_easy changes none of those, only their accuracy
    (the uniform fleets' cost was the same at every point)."""
    from tiersim.report.figures import _sets_note

    assert _sets_note(3) == (
        " The sweep's axes change the uniform fleets and static split (their price, accuracy, "
        "load or fleet), so each set is drawn with the axis values of its points (3 sets); "
        "compare each point with its own set.")


def test_the_plan_prints_the_router_settings_it_chose():
    """`tiersim plan --choose router.policy=cascade --choose
    router.cascade.threshold=0.3,0.5,0.7` printed the fleet, its margins and saving, but not
    the threshold it chose (plan.json and the report's plan table had it). A line now gives
    the chosen router's settings, its policy first."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.results_plan import PlanResult

    chosen = {"design": "fp8c@8+bf16@16", "tiers": ["fp8c", "bf16"],
              "replicas": {"fp8c": 10, "bf16": 2}, "gpus_per_replica": {"fp8c": 8, "bf16": 16},
              "cost_usd": 33.5, "cost_per_hour_usd": 392.0, "cost_model": "provisioned",
              "router": {"cascade.threshold": 0.5, "policy": "cascade"}}
    lines = format_plan(PlanResult(scenario="s", constraints={}, plan=chosen)).splitlines()
    assert "  router: policy cascade, cascade.threshold 0.5" in lines
    chosen.update(router={}, design="bf16@16", tiers=["bf16"], replicas={"bf16": 8},
                  gpus_per_replica={"bf16": 16})
    text = format_plan(PlanResult(scenario="s", constraints={}, plan=chosen))
    assert "router:" not in text  # a uniform fleet routes nothing
