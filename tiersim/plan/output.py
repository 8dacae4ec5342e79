"""``tiersim plan`` end to end: load the scenario, plan, write plan.json, the planned
scenario, its run and the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tiersim.plan.planner import GPU_OPTIONS, Constraints, Planner
from tiersim.results import PlanResult, dumps


def plan_capacity(scenario_path: str | Path, ttft: float | None = None,
                  tpot: float | None = None, floor: float | None = None,
                  out_dir: str | Path | None = None, choose: dict[str, list] | None = None,
                  max_replicas: int = 256, gpu_options: tuple[int, ...] = GPU_OPTIONS,
                  cost_model: str | None = None, report: bool = True) -> PlanResult:
    """Plan the scenario at ``scenario_path`` (limits default to the scenario's); with
    ``out_dir``, write plan.json, scenario.yaml (the plan as a scenario), the planned run's files
    and report.html."""
    from tiersim.plan.evaluate import SimEvaluator
    from tiersim.scenario import load_scenario

    scenario = load_scenario(scenario_path)
    if cost_model is not None:
        scenario = scenario.model_copy(update={"cost_model": cost_model})
    constraints = Constraints.of(scenario, ttft, tpot, floor)
    planner = Planner(scenario, constraints, SimEvaluator(scenario, str(scenario_path)),
                      gpu_options=gpu_options, max_replicas=max_replicas, choose=choose)
    result = planner.plan()
    if out_dir is not None:
        write_plan(Path(out_dir), scenario, result, str(scenario_path), report)
    return result


def planned_scenario(scenario, plan: dict[str, Any], floor: float | None) -> dict[str, Any]:
    """The scenario as the plan sizes it: the kept tiers at their replicas and GPUs per
    replica, the planned router, and the floor and SLOs planned for."""
    doc = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.pop("sweep", None)
    tiers = []
    for tier in doc["tiers"]:
        if tier["name"] in plan["replicas"]:
            tier["replicas"] = plan["replicas"][tier["name"]]
            tier["gpus_per_replica"] = plan["gpus_per_replica"][tier["name"]]
            tiers.append(tier)
    doc["tiers"] = tiers
    if len(tiers) == 1:
        doc["router"] = {"policy": "uniform"}
    elif plan["router"]:
        router = {k: v for k, v in doc.get("router", {}).items()
                  if k in ("classifier", "confusion")}
        doc["router"] = {**router, **plan["router"]}
    if floor is not None:
        doc["accuracy_floor"] = floor
    return doc


def write_plan(out: Path, scenario, result: PlanResult, source: str, report: bool) -> None:
    """plan.json, the planned scenario.yaml and its run (with report.html when asked)."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import scenario_from_dict

    out.mkdir(parents=True, exist_ok=True)
    if result.plan is not None:
        doc = planned_scenario(scenario, result.plan, result.constraints.get("accuracy_floor"))
        doc["slo"] = {"ttft_p99_s": result.constraints["ttft_p99_s"],
                      "tpot_p99_s": result.constraints["tpot_p99_s"]}
        run_scenario(scenario_from_dict(doc, source), out_dir=out, scenario_path=source,
                     report=False)
        (out / "scenario.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (out / "plan.json").write_text(dumps(result.to_json()))
    if report:
        from tiersim.report import write_report

        write_report(out)
