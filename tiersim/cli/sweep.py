"""``tiersim sweep SCENARIO --out DIR``: run every point of a scenario's sweep grid."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from tiersim.cli.usage import expand_home, number_flag, scenario_help


def sweep(
    scenario: Annotated[Path, typer.Argument(
        help=scenario_help("Scenario YAML with a `sweep:` map"), parser=expand_home)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Sweep folder (resumable).",
                                          parser=expand_home)],
    workers: Annotated[int | None, typer.Option(
        "--workers", "-w", **number_flag(int, 1, flag="--workers"),
        help="Points run at once: local worker processes, or with "
        "--executor ray the CPUs of the local Ray it starts (default: CPU count; not read "
        "with --address).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(
        help="Ray cluster address (default: a local Ray).")] = None,
    report: Annotated[bool, typer.Option(help="Write report.html when done.")] = True,
    baselines: Annotated[bool, typer.Option(
        help="Size each point's uniform fleets by simulation so its savings are simulated "
        "(--no-baselines: estimated from the point's per-token costs, labelled as such).")] = True,
    max_points: Annotated[int | None, typer.Option(
        "--max-points", **number_flag(int, 1, 1_000_000, flag="--max-points"),
        help="Allow a grid of up to this many points "
        "(default: the scenario's limits.max_sweep_points, 10,000; never above 1,000,000).")]
        = None,
) -> None:
    """Run every point of a scenario's sweep grid; rerun to resume a killed sweep.

    Failed points do not stop the others; once every point is stored, the command names them on
    one line and exits with status 1 (:class:`tiersim.sweep.run.SweepFailed`)."""
    from tiersim.cli.interrupted import say_interrupted, stopped_by_signal
    from tiersim.errors import TiersimError, shown

    if address is not None and executor != "ray":
        raise TiersimError(f"--address {shown(address, 64)}: a Ray cluster's address; give "
                           "--executor ray with it, or drop it to run on local processes")
    if address is not None and workers is not None:
        raise TiersimError(f"--workers {workers}: a Ray cluster joined at --address runs as "
                           "many points at once as it has CPUs, so it is not read; drop it, or "
                           "drop --address to start a local Ray of that many CPUs")

    tally = None
    try:  # a stop while its modules load (seconds) is said too: it stored nothing
        from tiersim.cli.run import scenario_path
        from tiersim.sweep.points import default_runner, estimate_runner
        from tiersim.sweep.run import Tally, run_sweep

        tally = Tally()
        run_sweep(scenario_path(scenario), out, workers=workers, executor=executor,
                  address=address, report=report, max_points=max_points,
                  runner=default_runner if baselines else estimate_runner, tally=tally,
                  table=False)  # the table is in sweep.parquet: not read back whole
    except (KeyboardInterrupt, SystemExit) as stop:
        if stopped_by_signal(stop):
            # the grid and the folder read, or a point this sweep stored
            known = tally is not None and (tally.total > 0 or tally.stored > 0)
            say_interrupted(interrupted_line(out, *((
                tally.stored_on_disk(), tally.earlier, tally.total) if known else (0,)),
                found=0 if known else point_files(out)))
        raise


def point_files(out: Path) -> int:
    """The point files (``points/*.json``) in the sweep folder ``out``; 0 where it has none."""
    try:
        return sum(entry.name.endswith(".json") and not entry.name.startswith(".")
                   for entry in os.scandir(out / "points"))
    except OSError:
        return 0


def interrupted_line(out: Path, stored: int, earlier: int = 0, total: int = 0,
                     found: int = 0) -> str:
    """What an interrupted sweep left: the ``stored`` points it finished, beside the
    ``earlier`` ones a sweep before it stored (of ``total``), and how to go on: a resumed
    sweep stopped again says its earlier points are kept too, lest its count read as all the
    folder holds. ``found``: the point files in the folder where the sweep was stopped before
    it read them (its modules loading): the line said "stored nothing in DIR/points" of a
    folder holding a finished sweep's points, as if there were none."""
    points = out / "points"
    kept = (f" (kept with the {earlier:,} an earlier sweep stored: {stored + earlier:,} of "
            f"{total:,} points done)") if earlier else (
        f" (it holds {found:,} point file{'s' if found != 1 else ''} an earlier sweep stored, "
        f"as {'it was' if found == 1 else 'they were'})") if found else ""
    if not stored:
        return (f"interrupted: no point finished, so this sweep stored nothing in {points}"
                f"{kept}; run the same command again to resume")
    return (f"interrupted: {stored:,} finished point{'s' if stored != 1 else ''} stored in "
            f"{points}{kept}; run the same command again to resume (they are kept, not "
            "rerun)")


__all__ = ["sweep"]
