"""``tiersim sweep SCENARIO --out DIR``: run every point of a scenario's sweep grid."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


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


__all__ = ["sweep"]
