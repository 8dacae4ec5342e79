"""``tiersim run [SCENARIO] [--out DIR]``: replay a scenario and print its summary
(:func:`tiersim.cli.run_summary.print_summary`).

Every number printed says where it comes from (a measured profile, public measured data, or
the roofline). The tables read the typed :class:`~tiersim.results.RunResult`, never string keys.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from tiersim.cli.interrupted import _changed as _changed
from tiersim.cli.interrupted import _folder_state as _folder_state
from tiersim.cli.interrupted import interrupted_line as interrupted_line
from tiersim.cli.interrupted import said_if_interrupted as said_if_interrupted
from tiersim.cli.interrupted import say_interrupted as say_interrupted
from tiersim.cli.interrupted import stopped_by_signal as stopped_by_signal

# the names imported "as" themselves: tests import them from here
from tiersim.cli.run_summary import _request_counts as _request_counts
from tiersim.cli.run_summary import agentic_tables as agentic_tables
from tiersim.cli.run_summary import baseline_table as baseline_table
from tiersim.cli.run_summary import fmt as fmt
from tiersim.cli.run_summary import headline_table as headline_table
from tiersim.cli.run_summary import model_lines as model_lines
from tiersim.cli.run_summary import prefix_lines as prefix_lines
from tiersim.cli.run_summary import prefix_source_lines as prefix_source_lines
from tiersim.cli.run_summary import print_summary
from tiersim.cli.run_summary import router_rows as router_rows
from tiersim.cli.run_summary import saving_row as saving_row
from tiersim.cli.usage import echo, expand_home, scenario_help


def default_scenario() -> Path:
    """The bundled ``scenarios/default.yaml``."""
    from tiersim.paths import bundled

    return bundled("scenarios", "default.yaml")


def scenario_path(given: Path) -> Path:
    """``given``, or, when no such file exists and it is a bare name or ``scenarios/NAME`` (as in
    the README, run outside the checkout), the bundled scenario of that name, said on stderr. A
    folder is never a scenario: ``tiersim run tiny --out tiny`` run twice reads the bundled
    ``tiny`` both times, not the first run's output folder. Such a name found in neither place
    is refused with the bundled scenarios' names. A path elsewhere (absolute, as ``/tiny.yaml``
    or ``~/tiny.yaml`` with HOME empty, or ``x/scenarios/NAME``) names the user's own file and
    is never replaced."""
    from tiersim.errors import ScenarioError
    from tiersim.paths import available, find_bundled

    folder = given.is_dir()
    if ((given.exists() and not folder) or given.is_absolute()
            or given.parent not in (Path("."), Path("scenarios"))):
        return given
    found = find_bundled("scenarios", given.name)
    if found is None and not folder and not given.is_symlink():
        _no_blank_around(given)
        raise ScenarioError(str(given), "", "file not found, in this folder or among the bundled "
                            f"scenarios ({', '.join(available('scenarios'))}); give a scenario "
                            "YAML path or a bundled name")
    if found is None:
        return given
    where = "is a folder" if folder else "is not in this folder"
    echo(f"note: {given} {where}; using the bundled scenarios/{found.name} ({found})",
               err=True)
    return found


def _no_blank_around(given: Path) -> None:
    """Refuse a scenario ``given`` not found that is a file's or a bundled scenario's name but
    for a space (or tab) at its start or end, saying so: the refusal listed the bundled
    scenario it missed as there ("file not found, in this folder or among the bundled
    scenarios (..., tiny.yaml)"), the blank that made the difference unseen."""
    from tiersim.errors import ScenarioError
    from tiersim.paths import find_bundled
    from tiersim.scenario_yaml import blank_around

    stripped = Path(str(given).strip())
    if str(stripped) in ("", ".", str(given)):
        return
    if stripped.is_file():
        what = f"the file {stripped}"
    elif stripped.parent in (Path("."), Path("scenarios")) and (
            found := find_bundled("scenarios", stripped.name)) is not None:
        what = f"the bundled scenario {found.name}"
    else:
        return
    raise ScenarioError(str(given), "", blank_around(str(given), what))


def provenance_lines(path: Path) -> list[str]:
    """Where a plan's or split comparison's latencies come from, as ``run`` says it: each
    tier's step-time sources (at the scenario's own layout) and the profile's fidelity line."""
    from tiersim import fidelity
    from tiersim.errors import TiersimError
    from tiersim.fleet import build_fleet
    from tiersim.scenario import load_scenario
    from tiersim.summary import latency_assumptions, profile_used, source_label

    try:
        scenario = load_scenario(path)
        fleet = build_fleet(scenario)
    except (TiersimError, ValueError):  # a tier that fits only at a layout the plan chose
        return ["latencies simulated; `tiersim run` on the planned scenario.yaml lists each "
                "tier's step-time sources and the profile's fidelity"]
    steps = "; ".join(" + ".join([f"{t.name}: {source_label(t)}",
                                   *latency_assumptions([t])]) for t in fleet.tiers)
    return [f"latencies simulated, step times from {steps}",
            fidelity.describe(profile_used(scenario, fleet).checked)]


def run(
    scenario: Annotated[
        Path | None, typer.Argument(help=scenario_help("Scenario YAML",
                                                       "the bundled default.yaml"),
                                    parser=expand_home)
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write requests/summary/timeseries here.",
                                  parser=expand_home)
    ] = None,
    report: Annotated[
        bool | None, typer.Option(help="With --out, also write DIR/report.html (default).")
    ] = None,
    baselines: Annotated[
        bool, typer.Option(help="Size a uniform fleet per tier by simulation and quote savings "
                           "against them (--no-baselines: a labelled per-token estimate).")
    ] = True,
) -> None:
    """Replay a scenario's trace through its tiers and print the summary."""
    with said_if_interrupted(out, "run"):
        _run(scenario, out, report, baselines)


def _run(scenario: Path | None, out: Path | None, report: bool | None, baselines: bool) -> None:
    """:func:`run` of its options."""
    from tiersim.cli import return_freed_arrow_memory
    from tiersim.outputs import out_folder
    from tiersim.runner import run_into
    from tiersim.scenario import load_scenario

    return_freed_arrow_memory()
    if report and out is None:  # asked for by name, and nothing would write it
        echo("note: --report writes report.html only with --out DIR; this run writes no "
                   "files", err=True)
    report = report is not False
    path = scenario_path(scenario) if scenario is not None else default_scenario()
    loaded = load_scenario(path)
    check_scenario_keys(loaded, path)  # before --out is made: a refused scenario leaves no folder
    with out_folder(out, "run", loaded, path):  # run_scenario's claim, before the note
        if loaded.sweep:
            echo(f"note: {base_point_only(path, 'runs')}", err=True)
        with _status(f"simulating {loaded.name} ..."):
            result = run_into(loaded, out, path, baselines=baselines, report=report)
    print_summary(result, out, report)


def check_scenario_keys(loaded, path: Path | str) -> None:
    """Refuse what a command reading one scenario (``run``, ``disagg``, ``analytic``) would
    quietly not read: a ``max_model_len`` above a tier's model's context, a ``router:`` key no
    policy in play reads, a ``workload.sessions`` key its source does not read; each one line
    naming the file and the key."""
    from tiersim.fleet import check_contexts
    from tiersim.routing.config import check_router_keys
    from tiersim.workload.sessions import check_session_keys

    check_contexts(loaded)
    check_router_keys(loaded.router, str(path))
    check_session_keys(loaded.workload.sessions, str(path))


def base_point_only(path: Path | str, does: str) -> str:
    """The note of a command that ``does`` one scenario (``runs``, ``plans``) given one with a
    ``sweep:`` map: it reads the base point only, not the grid."""
    return (f"{path} has a sweep: map; this {does} its base point only (use `tiersim sweep` "
            "for the grid)")


def _status(message: str):
    """A spinner on stderr while the simulation runs (only when stderr is a terminal)."""

    from rich.console import Console

    console = Console(stderr=True, markup=False)  # names and paths are the user's text
    return console.status(message) if console.is_terminal else contextlib.nullcontext()
