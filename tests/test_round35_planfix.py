"""Round 35: what a capacity planner reads from ``tiersim analytic`` and ``tiersim plan``.

1. ``tiersim analytic --scenario``'s cheapest uniform fleet at the floor is chosen among every
   tier of the scenario, as ``tiersim run`` chooses its baseline (it read bf16 at 0.306 USD, the
   dearer of the two compared tiers, where the run's baseline was fp8 at 0.188 USD); where only
   the two compared tiers are priced it says so.
2. Every router routes by capability first: a request longer than the context of the tier it
   chose goes to a tier that holds it; only a request no tier holds is dropped (a plan's
   fp8+bf16 design dropped 137 such requests and was called infeasible).
3. ``tiersim plan``'s console and report.html give each runner-up's replicas per tier, where
   only plan.json had them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from conftest import tiny_doc, write_yaml
from test_round29_fzt import _scenario
from typer.testing import CliRunner

from tiersim.cli import main
from tiersim.cli.analytic import analytic_app
from tiersim.cli.plan import format_plan
from tiersim.report.page import plan_section
from tiersim.results import PlanResult
from tiersim.routing.capability import by_capability, capable
from tiersim.routing.types import Assignment, TierInfo
from tiersim.runner import run_with_requests
from tiersim.scenario import load_scenario

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
        "at floor 0.8400: oracle 0.103877, cheapest uniform of the scenario's 3 tiers (fp8) "
        "0.178966, static split of the two compared tiers (nvfp4, bf16) 0.12679; saving vs "
        "uniform 0.0750889, vs static 0.0229125; source: two-type closed form of p / eps / "
        "delta, c0 / dc and the top tier's accuracy; the uniform fleet's cost: the scenario's "
        "fleet sized by simulation, as run prices it")


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
    assert (", cheaper uniform of the two compared tiers (bf16) 3, static split of the two "
            "compared tiers (nvfp4, bf16) ") in res.output


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
            "missed": "accuracy 80.41% < floor 84.50%"},)


def _plan_result() -> PlanResult:
    return PlanResult(scenario="s", constraints={}, plan=PLAN, runners_up=RUNNERS_UP,
                      uniform=UNIFORM, simulations=57, wall_s=14.2)


def test_plan_console_gives_each_runner_ups_replicas_in_its_tier_order():
    lines = format_plan(_plan_result()).splitlines()
    assert [line for line in lines if "runner-up" in line] == [
        "  runner-up nvfp4+fp8 (nvfp4 3 x 1 GPU + fp8 2 x 1 GPU): meets every constraint; "
        "25.0 % dearer than the plan per hour",
        "  runner-up fp8+bf16 (fp8 8 x 1 GPU + bf16 4 x 1 GPU, the last size tried): latency: "
        "misses the SLOs at any size",
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


def _long_requests(tmp_path, router: dict) -> Path:
    """tiny.yaml's two tiers, w4a16 capped at max_model_len 1,000, over two requests of 2,010
    tokens (bf16 holds them, w4a16 does not), two of 10,000,010 (no tier holds them) and four
    of 110, under ``router``."""
    path = _scenario(tmp_path, pd.DataFrame({
        "request_id": range(8), "arrival_s": [float(i) for i in range(8)],
        "input_tokens": [2000, 10**7, 100, 100] * 2, "output_tokens": [10] * 8}))
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0]["scheduler"] = {"max_model_len": 1000}
    doc["router"] = router
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run_notes(path: Path, tmp_path, capsys) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-baselines"]) == 0
    err = capsys.readouterr().err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    return summary, " ".join(err.split())


def test_a_request_too_long_for_its_routed_tier_goes_to_one_that_holds_it(tmp_path, capsys):
    """Every request routed to w4a16: the two of 2,010 tokens were dropped there though bf16
    holds them; they now go to bf16, and only the two no tier holds are dropped, as such."""
    path = _long_requests(tmp_path, {"policy": "uniform", "tier": "w4a16"})
    summary, err = _run_notes(path, tmp_path, capsys)
    assert (summary["completed"], summary["dropped"]) == (6, 2)
    assert summary["tiers"]["bf16"]["requests"] == 2
    assert (f"{path}: 2 requests longer (prompt + output) than the context of a tier their "
            "router chose went to a tier that holds it (the cheapest above, else the dearest "
            "below; an escalation landing on the first tier is none), answered by bf16 2; "
            "routing is by capability first, and only a request no tier holds is dropped") in err
    assert (f"{path}: 2 of 8 requests were dropped, never served (2 longer (prompt + output) "
            "than every tier's context, up to 10,000,010 tokens)") in err


def test_every_router_routes_by_capability(tmp_path, capsys):
    """A static split and the floor router alike: no request of 2,010 tokens is dropped."""
    for router in ({"policy": "static_split", "fractions": [0.5, 0.5]},
                   {"policy": "floor", "floor": 0.5}):
        summary, _ = _run_notes(_long_requests(tmp_path, router), tmp_path, capsys)
        assert summary["dropped"] == 2, router


def test_capable_moves_up_first_then_down_and_keeps_what_no_tier_holds():
    fit = np.array([[False, True, True],    # cheap too short: the next tier up
                    [True, True, False],    # top too short: the dearest below
                    [False, False, False],  # none holds it: kept (dropped there)
                    [True, False, True]])   # middle too short: up to the top
    assert capable(np.array([0, 2, 1, 1]), fit).tolist() == [1, 1, 1, 2]


def test_by_capability_cancels_an_escalation_to_the_first_tier_and_keeps_a_cascades_refusal():
    df = pd.DataFrame({"input_tokens": [2000, 2000], "output_tokens": [10, 10]})
    tiers = [TierInfo("a", max_model_len=1000), TierInfo("b")]
    a = Assignment(tier=np.array([0, 0]), escalate_to=np.array([1, -1]))
    moved = by_capability(a, df, tiers)
    assert (moved.tier.tolist(), moved.escalate_to.tolist(), moved.rerouted.tolist()) == (
        [1, 1], [-1, -1], [True, True])
    cascade = dataclasses.replace(a, refused_to=np.array([1, 1]))  # refused on to b at once
    kept = by_capability(cascade, df, tiers)
    assert (kept.tier.tolist(), kept.escalate_to.tolist()) == ([0, 0], [1, -1])


def test_a_cascade_escalation_no_dearer_tier_holds_keeps_the_first_tiers_answer(tmp_path):
    """A perfect-verifier cascade escalates two requests of 1,100 tokens the cheap tier (1,200)
    holds and the top tier (1,000) does not: they were dropped after their first pass (answered
    by no tier); the escalation is now none and the cheap tier's answer stands."""
    pd.DataFrame({"request_id": range(3), "arrival_s": [0.0, 0.1, 0.2],
                  "input_tokens": [500, 500, 100], "output_tokens": [600, 600, 10],
                  "correct_w4a16": [0.0, 0.0, 1.0], "correct_bf16": [1.0] * 3}).to_csv(
        tmp_path / "t.csv", index=False)
    doc = tiny_doc(trace={"path": "t.csv", "format": "canonical"},
                   workload={"difficulty": {"kind": "labels"}},
                   router={"policy": "cascade", "cascade": {"signal_noise": 0.0}})
    doc["tiers"][0]["scheduler"] = {"max_model_len": 1200}
    doc["tiers"][1]["scheduler"] = {"max_model_len": 1000}
    run, requests = run_with_requests(load_scenario(write_yaml(tmp_path / "s.yaml", doc)))
    rows = requests.frame()
    assert (run.dropped, rows["escalated"].tolist(), rows["tier"].tolist()) == (
        0, [False, False, False], ["w4a16"] * 3)
    assert any("answered by w4a16 2; routing is by capability first" in n for n in run.notes)
