"""Command-line functions ``tiersim sweep`` and ``tiersim plan`` (mounted by tiersim.cli).

Both are plain typer-annotated functions; ``app`` bundles them for use on their own
(``python -m tiersim.sweep.cli sweep ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiersim.errors import TiersimError


def sweep(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML with a `sweep:` map.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Sweep folder (resumable).")],
    workers: Annotated[int | None, typer.Option(
        "--workers", "-w", min=1, help="Local worker processes (default: CPU count).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(
        help="Ray cluster address (default: a local Ray).")] = None,
    report: Annotated[bool, typer.Option(help="Write report.html when done.")] = True,
) -> None:
    """Run every point of a scenario's sweep grid; rerun to resume a killed sweep."""
    from tiersim.sweep.run import run_sweep

    frame = run_sweep(scenario, out, workers=workers, executor=executor, address=address,
                      report=report)
    if "status" in frame and (frame["status"] != "ok").any():
        bad = frame[frame["status"] != "ok"]
        typer.echo(f"{len(bad)} point(s) failed; first: {bad.iloc[0]['point_id']}: "
                   f"{bad.iloc[0]['error']} (details in {out}/points/)", err=True)


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
) -> None:
    """Cheapest replicas per tier (and router setting) meeting the SLOs and accuracy floor."""
    from tiersim.sweep.plan import constraints_from, plan_capacity
    from tiersim.sweep.run import load_raw

    limits = constraints_from(load_raw(scenario), slo_ttft_p99, slo_tpot_p99, accuracy_floor)
    result = plan_capacity(scenario, limits, out, _parse_choose(choose),
                           max_replicas=max_replicas)
    typer.echo(format_plan(result))
    typer.echo(f"wrote {out / 'plan.json'}, {out / 'scenario.yaml'}, {out / 'report.html'}")


def format_plan(result: dict) -> str:
    """The plan in a few lines of text."""
    chosen = result.get("plan")
    if not chosen:
        return f"no fleet meets the constraints: {result.get('reason')}"
    lines = [f"plan ({result['runs']} simulations): "
             + ", ".join(f"{t}={r}" for t, r in chosen["replicas"].items())
             + "".join(f", {k}={v}" for k, v in chosen["settings"].items())
             + f"  cost {chosen['cost_per_hour_usd']:.4g} USD/hour"]
    for name, m in chosen["margins"].items():
        lines.append(f"  {name}: {m['value']:.4g} vs limit {m['limit']:.4g} "
                     f"(margin {m['margin']:+.4g}, {100 * m['margin_frac']:+.1f}%)")
    for tier, check in result["one_fewer"].items():
        lines.append(f"  one fewer {tier}: {check['verdict']}")
    return "\n".join(lines)


app = typer.Typer(help="Sweeps and capacity planning.", add_completion=False)
app.command("sweep")(sweep)
app.command("plan")(plan)

if __name__ == "__main__":  # pragma: no cover
    app()

__all__ = ["sweep", "plan", "format_plan", "app"]
