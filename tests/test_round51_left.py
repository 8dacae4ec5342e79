"""Round 51 (helper left51): items earlier rounds noticed and left alone."""

from __future__ import annotations

from test_hostile_inputs import one_error_line, run_cli

SESSIONS = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def _session_trace(tmp_path):
    """Two sessions, starting at 0 and 3501.72 s, each with later steps."""
    path = tmp_path / "sess.csv"
    path.write_text(SESSIONS + "0,1000,100,1,0\n10,50,100,1,1\n20,50,100,1,2\n"
                    "3501.72,800,100,2,0\n3600,10,10,2,1\n")
    return path


def test_a_session_window_in_a_gap_reads_as_a_request_window_does(tmp_path, capsys):
    """The line read "...; the sessions start from 0 to 3501.72 s": no fix, every digit. Now
    the span of the sessions' starts as `trace inspect` prints it, the gap and the fix."""
    path = _session_trace(tmp_path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "5", "100"))
    assert line == (f"Error: {path}: window [5, 100) s holds no session's first step (a window "
                    "keeps whole sessions by their first step's arrival): the sessions start "
                    "from 0 to 3,501.7 s, with no session starting from 0 to 3501.72 s; choose a "
                    "window that holds one")


def test_a_session_window_past_the_last_start_names_the_span(tmp_path, capsys):
    path = _session_trace(tmp_path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "4000", "5000"))
    assert line == (f"Error: {path}: window [4000, 5000) s holds no session's first step (a "
                    "window keeps whole sessions by their first step's arrival): the sessions "
                    "start from 0 to 3,501.7 s; choose a window inside 0 - 3,501.7 s")


def test_a_session_window_from_a_scenario_names_its_file_and_line(tmp_path, capsys):
    """Through `tiersim run`, the scenario's file, line and key come first (the place)."""
    trace = _session_trace(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\ngpu: H200\ntrace:\n"
                        "  path: sess.csv\n  window: [5, 100]\nworkload:\n"
                        "  sessions: {source: trace}\ntiers:\n  - name: bf16\n"
                        "    precision: bf16\n    replicas: 1\n    cost_per_gpu_hour: 3.5\n"
                        "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n")
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "out"))
    assert line == (f"Error: {scenario}: line 7: trace.window: {trace}: window [5, 100) s holds "
                    "no session's first step (a window keeps whole sessions by their first "
                    "step's arrival): the sessions start from 0 to 3,501.7 s, with no session "
                    "starting from 0 to 3501.72 s; choose a window that holds one")


# --- sweep axis and --choose values quoted as written (1e30, not 1e+30) ---------------------


def _tiny_sweep(tmp_path, sweep_text: str):
    """tiny.yaml with ``sweep_text`` (a ``sweep:`` block as written) added at its end."""
    from conftest import TINY

    path = tmp_path / "s.yaml"
    path.write_text(TINY.read_text() + sweep_text)
    return path


def test_a_sweep_value_listed_twice_is_quoted_as_written(tmp_path, capsys):
    """It read "value 1e+30 is listed twice", a spelling the file has nowhere."""
    path = _tiny_sweep(tmp_path, "sweep:\n  tiers.bf16.cost_per_gpu_hour: [3.5, 1e30, 1.0e+30]\n")
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "out",
                                   "--no-baselines"))
    assert line == (f"Error: {path}: line 31: sweep: 'tiers.bf16.cost_per_gpu_hour': value "
                    "1.0e+30 is listed twice (items 1 and 2); list each value once")


def test_a_sweep_value_the_scenario_refuses_is_quoted_as_written_in_both_places(tmp_path,
                                                                                capsys):
    """It read "must be <= 10000.0 (got 1e+30) (value 1e30)": the point's check quoted the
    number as Python writes it, the sweep's own part as the file does."""
    path = _tiny_sweep(tmp_path, "sweep:\n  tiers.bf16.cost_per_gpu_hour: [3.5, 1e30]\n")
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "out",
                                   "--no-baselines"))
    assert line == (f"Error: {path}: line 31: sweep: 'tiers.bf16.cost_per_gpu_hour': "
                    "tiers[1].cost_per_gpu_hour: must be <= 10000.0 (got 1e30) (value 1e30)")


RESUMED = ("sweep:\n  tiers.bf16.cost_per_gpu_hour: [3.5, 0.000_01]\n  zip:\n"
           "    slo.ttft_p99_s: [2.0, 1.0e+1]\n    slo.tpot_p99_s: [0.1, 1e-1]\n")


def test_values_kept_as_written_leave_the_point_ids_and_digests_as_they_were(tmp_path):
    """The ids and digests a sweep folder's points are found by are those of the numbers
    (``json`` writes a float as ``float.__repr__`` does, whatever its text): a folder run
    before this change resumes (the tiersim build is digested too, so that is checked here by
    the ids of the plain numbers, as the earlier build computed them)."""
    import yaml

    from tiersim.numbers import WrittenNumber
    from tiersim.sweep import axes as ax
    from tiersim.sweep.plan import load_raw
    from tiersim.sweep.provenance import base_digest, sweep_digest

    path = _tiny_sweep(tmp_path, RESUMED)
    base = load_raw(path)
    written = [v for v in base["sweep"]["tiers.bf16.cost_per_gpu_hour"] +
               list(base["sweep"]["zip"].values())[0] + list(base["sweep"]["zip"].values())[1]
               if isinstance(v, WrittenNumber)]
    assert [v.text for v in written] == ["0.000_01", "1.0e+1", "1e-1"]
    plain = yaml.safe_load(path.read_text().replace("0.000_01", "0.00001"))
    plain["sweep"]["zip"] = {"slo.ttft_p99_s": [2.0, 10.0], "slo.tpot_p99_s": [0.1, 0.1]}
    assert [p.id for p in ax.expand(base["sweep"], str(path))] == [
        p.id for p in ax.expand(plain["sweep"], str(path))]
    assert (base_digest(base), sweep_digest(base)) == (base_digest(plain), sweep_digest(plain))


def test_a_sweep_of_values_written_so_resumes_its_finished_points(tmp_path, capsys):
    """Run, then run again into the same folder: every point is found done, and the table
    holds the numbers (float columns), not their text."""
    import pandas as pd

    path = _tiny_sweep(tmp_path, RESUMED)
    out = tmp_path / "out"
    args = ["sweep", path, "--out", out, "--workers", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    code, err = run_cli(capsys, *args)
    assert code == 0
    assert err.splitlines()[-1] == (f"sweep: 4 points (0 run, 4 already done, 0 failed) -> "
                                    f"{out / 'sweep.parquet'}")
    table = pd.read_parquet(out / "sweep.parquet")
    assert str(table["tiers.bf16.cost_per_gpu_hour"].dtype) == "float64"
    assert sorted(table["tiers.bf16.cost_per_gpu_hour"].unique()) == [0.00001, 3.5]


def test_a_choose_value_refused_is_quoted_as_typed(capsys):
    """It read "--choose router.floor=1e+30: router.floor: must be <= 1.0 (got 1e+30)"."""
    from conftest import TINY

    line = one_error_line(*run_cli(capsys, "plan", TINY, "--accuracy-floor", "0.9",
                                   "--choose", "router.floor=1e30"))
    assert line == "Error: --choose router.floor=1e30: router.floor: must be <= 1.0 (got 1e30)"


def test_a_choose_value_given_twice_is_named_as_first_typed():
    """The note named the value as JSON writes it ("0.5"; a policy as "\\"floor\\"")."""
    import pytest

    from tiersim.cli.plan import _parse_choose
    from tiersim.errors import Note

    with pytest.warns(Note) as seen:
        chosen = _parse_choose(["router.floor=5e-1,0.5,0.6", "router.policy=floor,'floor'"])
    assert chosen == {"router.floor": [0.5, 0.6], "router.policy": ["floor"]}
    assert [str(w.message) for w in seen] == [
        "--choose router.floor: 5e-1 given more than once; each value is tried once",
        "--choose router.policy: 'floor' given more than once; each value is tried once"]


def test_choose_values_reach_the_planner_as_plain_numbers():
    """Checked, the values lose their text: what the plan writes holds numbers."""
    from tiersim.numbers import WrittenNumber, plain_numbers

    chosen = {"router.thresholds": [[WrittenNumber(0.2, "2e-1"), 0.5]],
              "router.floor": [WrittenNumber(1e-5, "0.000_01")]}
    plain = plain_numbers(chosen)
    assert plain == chosen
    assert [type(v) for v in (plain["router.thresholds"][0][0], plain["router.floor"][0])] == [
        float, float]


# --- tiersim plan: a floor printed above the fleet's accuracy is named -----------------------


def _default_plan(router_floor: float | None, accuracy_floor: float | None = 0.8) -> str:
    """`tiersim plan default`'s answer (its figures as plan.json wrote them on 2026-12-07:
    FP8 10 + BF16 7 behind the floor router fitted to 0.8025, expected accuracy 80.11%), the
    router's floor and the accuracy floor as given, in text."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.results import PlanResult

    margins = {} if accuracy_floor is None else {"accuracy": {
        "limit": accuracy_floor, "value": 0.8010840231, "met": True}}
    plan = {"design": "fp8+bf16", "replicas": {"fp8": 10, "bf16": 7},
            "gpus_per_replica": {"fp8": 1, "bf16": 1}, "cost_usd": 5.74,
            "cost_per_hour_usd": 59.5, "cost_model": "provisioned", "accuracy": 0.8010840231,
            "accuracy_sources": {"basis": "expected", "source": "scenario (illustrative)"},
            "margins": margins, "router": {"policy": "floor", "floor": router_floor}}
    uniform = [{"design": "fp8", "accuracy": 0.7942306384, "replicas": {"fp8": 18},
                "gpus_per_replica": {"fp8": 1}, "feasible": False,
                "missed": "accuracy 79.42% < floor 80.00%", "cost_usd": 6.07},
               {"design": "bf16", "accuracy": 0.8043542352, "replicas": {"bf16": 18},
                "gpus_per_replica": {"bf16": 1}, "feasible": True, "cost_usd": 6.07}]
    constraints = {} if accuracy_floor is None else {"accuracy_floor": accuracy_floor}
    return format_plan(PlanResult.from_json({
        "scenario": "default", "plan": plan, "constraints": constraints, "uniform": uniform,
        "simulations": 89, "wall_s": 53.2}))


def test_a_router_floor_above_the_fleets_accuracy_is_explained_in_one_line():
    """The plan printed "router: policy floor, floor 0.8025" under "expected accuracy: 80.11%
    vs floor 80.00%", a floor above the estimate, and said nothing of it."""
    lines = _default_plan(0.8025).splitlines()
    at = lines.index("  router: policy floor, floor 0.8025")
    assert lines[at + 1] == (
        "  note: router floor 0.8025 is above the fleet's expected accuracy (80.11%): it is the "
        "target the floor router fits its cuts to on the classifier's calibration split, not the "
        "accuracy over all requests, which meets the accuracy floor 80.00%")
    assert sum("note:" in line for line in lines) == 1


def test_a_router_floor_no_fleet_reaches_without_an_accuracy_floor_says_what_would():
    lines = [line for line in _default_plan(0.9, None).splitlines() if "note:" in line]
    assert lines == [
        "  note: router floor 0.9 is above the fleet's expected accuracy (80.11%): it is the "
        "target the floor router fits its cuts to on the classifier's calibration split, not the "
        "accuracy over all requests, and with no accuracy floor the plan holds no fleet to it; "
        "to plan for it, give --accuracy-floor 0.9: no fleet sized reaches it (the most "
        "accurate, uniform bf16, 80.44%); lower it or add a more accurate tier"]


def test_a_router_floor_a_uniform_fleet_reaches_names_it():
    lines = [line for line in _default_plan(0.802, None).splitlines() if "note:" in line]
    assert lines == [
        "  note: router floor 0.802 is above the fleet's expected accuracy (80.11%): it is the "
        "target the floor router fits its cuts to on the classifier's calibration split, not the "
        "accuracy over all requests, and with no accuracy floor the plan holds no fleet to it; "
        "to plan for it, give --accuracy-floor 0.802: uniform bf16 (80.44%) reaches it"]


def test_an_accuracy_floor_above_the_chosen_fleets_accuracy_is_named_with_what_meets_it():
    """The planner never chooses such a fleet (it misses a constraint); a plan.json that holds
    one (edited, or from a build that did) is not read as meeting its floor in silence."""
    lines = [line for line in _default_plan(None, 0.803).splitlines() if "note:" in line]
    assert lines == ["  note: accuracy floor 80.30% is above the fleet's expected accuracy "
                     "(80.11%); uniform bf16 (80.44%) reaches it"]


def test_a_router_floor_at_or_below_the_accuracy_adds_no_line():
    assert "note:" not in _default_plan(0.8)
    assert "note:" not in _default_plan(0.8010840231)


# --- plan.json: one spelling of a design's label (fp8@2), the tier kept beside it ------------


def _fake_plan(tiers, floor, **kw):
    """A plan over the planner's closed-form fake evaluator (no simulation)."""
    from tiersim.plan.planner import Constraints, Planner
    from tiersim.plan.testing import FakeEvaluator, fake_scenario

    scenario = fake_scenario(tiers, ttft=1.0, tpot=0.05, floor=floor)
    return Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers, **kw)).plan()


def test_the_baseline_fleet_is_labelled_as_its_uniform_line_labels_it():
    """bf16 decodes within the TPOT SLO only on 2 GPUs per replica, so its uniform fleet is
    bf16@2: plan.json named it so in `uniform` and `design`, but "bf16" in the saving
    (`baseline_uniform_tier`), and the plan's line read "... (bf16), simulated" under "uniform
    bf16@2 (...)". The saving now names the design too (`baseline_uniform_design`), and the
    tier stays for the readers that key per-tier maps by it."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.plan.testing import FakeTier

    tiers = [FakeTier("w4", accuracy=0.80, capacity_rps=3.0),
             FakeTier("bf16", accuracy=0.90, capacity_rps=1.0, base_tpot_s=0.08)]
    result = _fake_plan(tiers, floor=0.82, rate_rps=20.0)
    saving = result.plan["savings"]
    assert [u["design"] for u in result.uniform] == ["w4", "bf16@2"]
    assert (saving["baseline_uniform_tier"], saving["baseline_uniform_design"]) == (
        "bf16", "bf16@2")
    text = format_plan(result)
    assert "the cheapest sized uniform fleet (bf16@2), simulated" in text
    assert "  uniform bf16@2 (" in text


def test_a_plan_json_written_before_the_design_label_reads_with_its_tier():
    from tiersim.cli.plan_text import _saving_line
    from tiersim.results import baseline_design

    old = {"baseline_uniform_tier": "bf16", "vs_uniform_frac": 0.25, "vs_uniform_usd": 1.0,
           "saving_basis": "per_hour"}
    assert baseline_design(old) == "bf16"
    assert _saving_line(old) == ("  saves 25.0 % per hour against the cheapest sized uniform "
                                 "fleet (bf16), simulated")


# --- a run's cost per hour, with or without uniform baselines --------------------------------


def test_a_run_without_simulated_baselines_gives_its_cost_per_hour(tmp_path):
    """tiny.yaml (w4a16 1 + bf16 1, one GPU each at 3.50 USD/GPU-hour) with `baselines: []`
    and --no-baselines: the summary and the console gave the cost over the run and per 1M
    tokens, no USD/hour. Now 7.00 USD/hour in each, sourced; the report's headline row too."""
    import json
    import os
    import subprocess
    import sys

    import pytest
    from conftest import TINY

    path = tmp_path / "s.yaml"
    path.write_text(TINY.read_text() + "baselines: []\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "tiersim", "run", str(path), "--out", str(out),
                           "--no-baselines"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_per_hour_usd"] == 7.0
    assert summary["savings"]["routed_cost_per_hour_usd"] is None  # estimated: none there
    assert summary["provisioned_cost_usd"] == pytest.approx(
        7.0 * summary["duration_s"] / 3600, rel=1e-9)
    rows = [[" ".join(cell.split()) for cell in line.split("│")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("│ cost per hour")]
    assert rows == [["cost per hour (provisioned)", "7.00 USD/hour",
                     "provisioned: GPUs x $/GPU-hour (the scenario's prices)"]]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert ("<td>cost per hour (provisioned)</td><td class=\"num\">7.00</td><td>USD/hour</td>"
            "<td>provisioned: GPUs x $/GPU-hour (the scenario&#x27;s prices)</td>") in page


def test_a_summary_written_before_the_cost_per_hour_still_reads(tmp_path):
    """An older summary.json has no cost_per_hour_usd: it reads, with none (the console and
    the report then leave the row out rather than print a figure the run never gave)."""
    import json

    from conftest import REPO

    from tiersim.results import RunResult

    doc = json.loads((REPO / "tests" / "golden" / "tiny_summary.json").read_text())
    doc.pop("cost_per_hour_usd", None)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    assert RunResult.read(path).cost_per_hour_usd is None
