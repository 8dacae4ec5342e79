"""``tiersim plan SCENARIO``: the cheapest fleet meeting the SLOs and the accuracy floor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tiersim.errors import TiersimError

if TYPE_CHECKING:
    from tiersim.results import PlanResult


def _parse_choose(items: list[str] | None) -> dict[str, list]:
    """``PATH=v1,v2`` options -> {path: [values]} with YAML-typed values."""
    import yaml

    chosen = {}
    for item in items or []:
        path, sep, values = item.partition("=")
        if not sep or not path or not values:
            raise TiersimError(f"--choose {item!r}: write PATH=VALUE1,VALUE2 "
                               "(e.g. router.lambda_=0.1,0.2)")
        chosen[path] = [yaml.safe_load(v) for v in values.split(",")]
    return chosen


def plan(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML to size.")],
    slo_ttft_p99: Annotated[float | None, typer.Option(
        "--slo-ttft-p99", min=0, help="p99 TTFT limit, seconds (default: the scenario's).")] = None,
    slo_tpot_p99: Annotated[float | None, typer.Option(
        "--slo-tpot-p99", min=0, help="p99 TPOT limit, seconds (default: the scenario's).")] = None,
    accuracy_floor: Annotated[float | None, typer.Option(
        "--accuracy-floor", min=0, max=1, help="Least expected accuracy (default: the "
        "scenario's accuracy_floor).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Plan folder.")] = Path("plan"),
    choose: Annotated[list[str] | None, typer.Option(
        "--choose", help="Router setting to choose too: PATH=V1,V2 (repeatable).")] = None,
    max_replicas: Annotated[int, typer.Option(min=1, help="Largest tier to try.")] = 256,
    report: Annotated[bool, typer.Option(help="Write report.html too.")] = True,
) -> None:
    """Cheapest fleet (replicas and GPUs per tier, router setting) meeting the SLOs and the
    accuracy floor, with the runner-up designs and the best uniform fleets beside it."""
    from tiersim.plan.output import plan_capacity

    result = plan_capacity(scenario, slo_ttft_p99, slo_tpot_p99, accuracy_floor, out,
                           _parse_choose(choose), max_replicas=max_replicas, report=report)
    typer.echo(format_plan(result))
    wrote = ["plan.json", "scenario.yaml"] + (["report.html"] if report else [])
    typer.echo("wrote " + ", ".join(str(out / name) for name in wrote))


def _num(value, pattern: str = "{:.4g}") -> str:
    """A number for a line of text; '-' when missing."""
    return "-" if value is None else pattern.format(value)


def format_plan(result: PlanResult) -> str:
    """The plan in a few lines of text: the chosen design, its saving against the sized uniform
    fleets, and what each other design missed."""
    head = f"{result.simulations} simulations in {result.wall_s:.1f} s"
    chosen = result.plan
    if not chosen:
        return f"no fleet meets the constraints ({head}): {result.reason}"
    sizes = ", ".join(f"{t}={r}x{chosen.get('gpus_per_replica', {}).get(t, 1)} GPU"
                      for t, r in chosen.get("replicas", {}).items())
    lines = [f"plan ({head}): {chosen.get('design')}: {sizes}; cost "
             f"{_num(chosen.get('cost_usd'))} USD ({chosen.get('cost_model', '-')}), "
             f"{_num(chosen.get('cost_per_hour_usd'))} USD/hour"]
    for name, m in (chosen.get("margins") or {}).items():
        lines.append(f"  {name}: {_num(m.get('value'))} vs limit {_num(m.get('limit'))}")
    saving = chosen.get("savings") or {}
    if saving.get("baseline_uniform_tier") is not None:
        lines.append(f"  saves {_num(saving.get('vs_uniform_frac'), '{:.1%}')} against the "
                     f"cheapest sized uniform fleet ({saving['baseline_uniform_tier']}), "
                     f"simulated")
    for tier, check in (chosen.get("one_fewer") or {}).items():
        lines.append(f"  one fewer {tier}: {check.get('verdict')}")
    for other in result.runners_up:
        lines.append(f"  runner-up {other.get('design')}: {other.get('missed')}")
    for other in result.uniform:
        lines.append(f"  uniform {other.get('design')}: {other.get('missed') or 'meets all'}"
                     f", cost {_num(other.get('cost_usd'))} USD")
    return "\n".join(lines)


__all__ = ["plan", "format_plan"]
