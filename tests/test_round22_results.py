"""Round 22 (results): printed and written numbers checked against each other and their inputs,
each a mismatch found from outside and fixed."""

from __future__ import annotations

from pathlib import Path

from tiersim.report.figures import frontier
from tiersim.report.load import load_dir
from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner


def _replicas_runner(doc: dict, source: str = "scenario") -> dict:
    """A synthetic point whose fleet of ``synthetic.replicas`` replicas costs that many USD at
    one accuracy; one replica misses the SLOs its uniform baselines are held to."""
    summary = synthetic_runner(doc, source)
    replicas = int(doc["synthetic"]["replicas"])
    summary.update(cost_usd=float(replicas), accuracy=0.9)
    summary["savings"] = {
        "cost_model": "provisioned", "routed_cost_usd": float(replicas), "accuracy": 0.9,
        "routed_slo_met": replicas > 1, "routed_floor_met": None,
        "uniform": {"w4a16": {"cost_usd": 1.5, "accuracy": 0.7},
                    "bf16": {"cost_usd": 2.5, "accuracy": 0.9}}}
    return summary


def test_sweep_pareto_front_leaves_out_points_that_miss_their_slos(tmp_path):
    """The sweep's Pareto front, under a caption calling points off it 'never worth choosing',
    ran through the cheapest point though its fleet missed the SLOs (the table beside it said
    not comparable): a 1-replica point missing them was drawn as the front, the 2-replica point
    that met them as off it."""
    doc = {"name": "reps", "seed": 0, "synthetic": {"replicas": 1},
           "sweep": {"synthetic.replicas": [1, 2, 3]}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=_replicas_runner, validator=None, report=False,
              source="reps.yaml")
    traces = {t.name: list(t.x) for t in frontier(load_dir(out)).fig.data}
    assert traces["Pareto front of the sweep"] == [2.0]
    assert traces["sweep points missing their SLOs or floor (not on the front)"] == [1.0]
    assert traces["sweep points"] == [2.0, 3.0]


ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"


ONE_TIER = "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"


def _one_request_scenario(tmp_path: Path, body: str, tiers: str = ONE_TIER):
    """A scenario of ``tiers`` (one bf16 tier) on a trace of one request, loaded with its
    path."""
    import pandas as pd

    from tiersim.scenario import load_scenario

    pd.read_parquet(TRACE).iloc[:1].to_csv(tmp_path / "one.csv", index=False)
    path = tmp_path / "s.yaml"
    path.write_text(f"""name: s
seed: 0
model: Qwen3-Coder-30B-A3B
gpu: H200
profile: null
trace: {{path: one.csv}}
slo: {{ttft_p99_s: 2.0, tpot_p99_s: 0.1}}
tiers:
{tiers}{body}""")
    return load_scenario(path), path


def test_one_request_gives_a_wide_accuracy_interval(tmp_path):
    """A trace of one request gave the accuracy a 95% interval of zero width (95.0 % - 95.0 %),
    and 'floor met by the interval's low end: yes', from a sample of one: every resample of one
    value is that value. Round 22 gave it no interval (the bootstrap needs two requests);
    round 26's interval (Agresti and Coull's, bounded scores) gives one request a wide one,
    whose low end does not meet a floor of 0.9."""
    from rich.console import Console

    from tiersim.cli.run import headline_table
    from tiersim.runner import run_scenario

    scenario, path = _one_request_scenario(tmp_path, "accuracy_floor: 0.9\n")
    out = tmp_path / "out"
    run = run_scenario(scenario, out, scenario_path=path, report=True)
    assert run.requests == 1 and run.router.floor_met is True
    lo, hi = run.router.accuracy_ci95
    assert 0.0 <= lo < 0.9 < run.router.accuracy < hi <= 1.0
    assert run.router.floor_met_ci95 is False
    console = Console(width=300, record=True)
    console.print(headline_table(run))
    assert "met (95% CI " in console.export_text()
    assert "none: fewer than two requests" not in (out / "report.html").read_text()


def test_normal_interval_of_many_requests_stays_within_the_values():
    """The normal approximation, mean +- 1.96 sd / sqrt(n), of 300,000 answers all right but
    one gave an accuracy interval reaching 100.0003 %, three right of 300,000 one below 0 %
    (round 22, then the bootstrap's stand-in above 200,000 requests). Round 26's interval of
    fractional scores is normal too, and held within [0, 1] as well."""
    import numpy as np

    from tiersim.routing.metrics import bounded_mean_ci

    values = np.ones(300_000)
    values[0] = 0.5
    lo, hi = bounded_mean_ci(values)
    assert lo < values.mean() < hi <= 1.0
    lo, hi = bounded_mean_ci(np.r_[np.full(3, 0.5), np.zeros(299_997)])
    assert 0.0 <= lo < hi


def test_plan_search_axis_names_the_cost_model_when_no_fleet_qualifies(tmp_path):
    """A plan priced under --cost-model attributed that found no fleet drew every fleet it
    simulated at its attributed cost on an axis labelled 'USD, provisioned': plan.json kept the
    cost model only inside the chosen plan, and the figure fell back to provisioned. plan.json
    now names it at its top level whatever the outcome."""
    import json

    from typer.testing import CliRunner

    from tiersim.cli import app
    from tiersim.report.figures import plan_search

    _, path = _one_request_scenario(tmp_path, "")
    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["plan", str(path), "--out", str(out), "--cost-model",
                                      "attributed", "--slo-ttft-p99", "0.001"])
    assert result.exit_code == 1
    assert json.loads((out / "plan.json").read_text())["cost_model"] == "attributed"
    fig = plan_search(load_dir(out)).fig
    assert fig.layout.xaxis.title.text == "cost of the trace on the fleet (USD, attributed)"


def test_plan_search_draws_a_baseline_only_fleet_apart_from_the_designs(tmp_path):
    """A tier listed under baselines: is sized as a uniform fleet but never planned; its fleet
    was drawn as 'meets every constraint' left of the star, under the caption 'The star is the
    cheapest fleet that meets every constraint'."""
    import json

    from typer.testing import CliRunner

    from tiersim.cli import app
    from tiersim.report.figures import plan_search

    _, path = _one_request_scenario(tmp_path, """baselines:
  - {name: cheap, precision: bf16, replicas: 1, cost_per_gpu_hour: 1.0}
""")
    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["plan", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    evaluated = json.loads((out / "plan.json").read_text())["evaluated"]
    assert [e.get("baseline_only", False) for e in evaluated] == [False, True]
    traces = {t.name: list(t.x) for t in plan_search(load_dir(out)).fig.data}
    star = traces["chosen plan"][0]
    assert all(x >= star for x in traces["meets every constraint"])
    assert traces["uniform baseline only (its tier is under baselines:, never planned)"] == [
        evaluated[1]["cost_usd"]]


def test_plan_search_caption_of_a_plan_without_a_fleet_names_no_star(tmp_path):
    """A plan that found no fleet drew no star, yet its caption read 'The star is the cheapest
    fleet that meets every constraint; red crosses left of it ...'."""
    from typer.testing import CliRunner

    from tiersim.cli import app
    from tiersim.report.figures import plan_search

    _, path = _one_request_scenario(tmp_path, "")
    out = tmp_path / "plan"
    result = CliRunner().invoke(app, ["plan", str(path), "--out", str(out),
                                      "--slo-ttft-p99", "0.001"])
    assert result.exit_code == 1
    panel = plan_search(load_dir(out))
    assert "chosen plan" not in {t.name for t in panel.fig.data}
    assert panel.caption == ("No fleet met every constraint, so there is no star: each red cross "
                             "is a fleet simulated that missed one (hover for the design and "
                             "replicas).")


def test_frontier_names_realised_accuracy_as_the_run_does(tmp_path):
    """A cascade scores accuracy on the realised draws: the console and the report's headline
    say "accuracy (realised draws)", while the report's frontier called its axis "expected
    accuracy"."""
    from tiersim.runner import run_scenario

    scenario, path = _one_request_scenario(
        tmp_path, "router: {policy: cascade}\n",
        "  - {name: w4a16, precision: w4a16, replicas: 1, cost_per_gpu_hour: 2.0}\n" + ONE_TIER)
    out = tmp_path / "out"
    run = run_scenario(scenario, out, scenario_path=path)
    assert run.accuracy_label == "accuracy (realised draws)"
    fig = frontier(load_dir(out)).fig
    assert fig.layout.yaxis.title.text == "accuracy (realised draws; fraction answered correctly)"
