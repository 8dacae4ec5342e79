"""Round 35: what a capacity planner reads from ``tiersim analytic`` and ``tiersim plan``.

1. ``tiersim analytic --scenario``'s cheapest uniform fleet at the floor is chosen among every
   tier of the scenario, as ``tiersim run`` chooses its baseline (it read bf16 at 0.306 USD, the
   dearer of the two compared tiers, where the run's baseline was fp8 at 0.188 USD); where only
   the two compared tiers are priced it says so.
3. ``tiersim plan``'s console and report.html give each runner-up's replicas per tier, where
   only plan.json had them.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tiersim.cli.analytic import analytic_app
from tiersim.cli.plan import format_plan
from tiersim.report.page import plan_section
from tiersim.results import PlanResult

runner = CliRunner()

THREE_TIERS = """\
name: e_bund
seed: 5
model: Llama-3.1-70B
gpu: B200
trace: {path: azure2023_conv.parquet, window: [0, 120], time_scale: 2}
workload:
  difficulty: {kind: two_type, p_easy: 0.65}
accuracy_values: illustrative
tiers:
  - {name: nvfp4, precision: nvfp4, replicas: 2, gpus_per_replica: 2, cost_per_gpu_hour: 5.0,
     accuracy: {easy: 0.97, hard: 0.5}}
  - {name: fp8, precision: fp8, replicas: 1, gpus_per_replica: 2, cost_per_gpu_hour: 5.0,
     accuracy: {easy: 0.99, hard: 0.7}}
  - {name: bf16, precision: bf16, replicas: 1, gpus_per_replica: 4, cost_per_gpu_hour: 5.0,
     accuracy: {easy: 0.995, hard: 0.78}}
router: {policy: floor}
slo: {ttft_p99_s: 1.5, tpot_p99_s: 0.06}
accuracy_floor: 0.84
cost_model: attributed
"""


def _three_tiers(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(THREE_TIERS)
    return path


def test_analytic_cheapest_uniform_is_the_scenarios_not_the_pairs(tmp_path):
    """nvfp4 misses the floor; fp8 (not compared) meets it cheaper than bf16 (the top)."""
    res = runner.invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path))])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == (
        "at floor 0.8400: oracle 0.103798, cheapest uniform of the scenario's 3 tiers (fp8) "
        "0.178873, static split 0.126711; saving vs uniform 0.0750754, vs static 0.0229131")


def test_analytic_json_names_the_uniform_fleet_and_what_it_was_chosen_among(tmp_path):
    res = runner.invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path)), "--json"])
    at = json.loads(res.output)["at_floor"]
    assert (at["uniform_tier"], at["uniform_among"], at["uniform_among_every_tier"]) == (
        "fp8", ["nvfp4", "fp8", "bf16"], True)
    assert at["vs_uniform"] == at["uniform_cost"] - at["oracle_cost"]


def test_analytic_with_own_prices_names_the_two_compared_tiers(tmp_path):
    """--c0/--dc price the compared pair alone: the line cannot be read as the fleet's."""
    res = runner.invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path)),
                                       "--c0", "1", "--dc", "2"])
    assert res.exit_code == 0, res.output
    assert ", cheaper uniform of the two compared tiers (bf16) 3, static split " in res.output


def test_analytic_out_of_reach_names_no_tier(tmp_path):
    res = runner.invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path)),
                                       "--floor", "0.95"])
    assert ("oracle out of reach, cheapest uniform of the scenario's 3 tiers out of reach, "
            in res.output)


PLAN = {"design": "nvfp4+bf16", "tiers": ["nvfp4", "bf16"], "replicas": {"bf16": 1, "nvfp4": 3},
        "gpus_per_replica": {"bf16": 1, "nvfp4": 1}, "cost_usd": 0.376, "cost_model": "provisioned",
        "cost_per_hour_usd": 20.0, "accuracy": 0.8467, "margins": {}}
RUNNERS_UP = (
    {"design": "nvfp4+fp8", "tiers": ["nvfp4", "fp8"], "replicas": {"fp8": 2, "nvfp4": 3},
     "gpus_per_replica": {"fp8": 1, "nvfp4": 1}, "feasible": True, "cost_usd": 0.479,
     "missed": "meets every constraint; 25.0 % dearer than the plan per hour"},
    {"design": "fp8+bf16", "tiers": ["fp8", "bf16"], "replicas": {"bf16": 4, "fp8": 8},
     "gpus_per_replica": {"fp8": 1, "bf16": 1}, "feasible": False, "cost_usd": 0.347,
     "missed": "latency: misses the SLOs at any size"},
    {"design": "nvfp4+fp8+bf16@2", "tiers": ["nvfp4", "fp8", "bf16"], "replicas": None,
     "feasible": False, "missed": "accuracy < floor 84.50%"},
)
UNIFORM = ({"design": "nvfp4", "tiers": ["nvfp4"], "replicas": {"nvfp4": 3},
            "gpus_per_replica": {"nvfp4": 1}, "feasible": False, "cost_usd": 0.284,
            "missed": "accuracy 80.41% vs limit 84.50%"},)


def _plan_result() -> PlanResult:
    return PlanResult(scenario="s", constraints={}, plan=PLAN, runners_up=RUNNERS_UP,
                      uniform=UNIFORM, simulations=57, wall_s=14.2)


def test_plan_console_gives_each_runner_ups_replicas_in_its_tier_order():
    lines = format_plan(_plan_result()).splitlines()
    assert [line for line in lines if "runner-up" in line] == [
        "  runner-up nvfp4+fp8 (nvfp4 3 + fp8 2 replicas): meets every constraint; 25.0 % "
        "dearer than the plan per hour",
        "  runner-up fp8+bf16 (fp8 8 + bf16 4 replicas, the last size tried): latency: misses "
        "the SLOs at any size",
        "  runner-up nvfp4+fp8+bf16@2: accuracy < floor 84.50%"]


def test_plan_report_other_designs_has_a_replicas_column():
    page = plan_section(_plan_result())
    other = page[page.index("<h3>Other designs</h3>"):]
    assert other.startswith("<h3>Other designs</h3><table><tr><th>design</th><th>replicas</th>"
                            "<th>cost (USD)</th><th>missed / compared</th></tr>")
    assert "<tr><td>nvfp4+fp8</td><td>nvfp4 3 + fp8 2</td>" in other
    assert "<tr><td>fp8+bf16</td><td>fp8 8 + bf16 4, the last size tried</td>" in other
    assert "<tr><td>nvfp4+fp8+bf16@2</td><td>-</td>" in other
    assert "<tr><td>nvfp4</td><td>nvfp4 3</td>" in other  # sized to its SLOs, misses the floor
