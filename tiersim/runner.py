"""Run one scenario end to end: trace -> workload -> routing -> engine -> summary -> files.

:func:`run_scenario` is the only public entry point; it is wiring only. The inputs (trace,
prepared workload, routing) come from :mod:`tiersim.inputs`, the fleet from
:mod:`tiersim.fleet`, costs from the one ledger in :mod:`tiersim.costs`, the request table and
the typed :class:`~tiersim.results.RunResult` from :mod:`tiersim.summary`, savings from
:mod:`tiersim.savings`, and the files are written by :mod:`tiersim.outputs`.

Determinism: the scenario seed feeds one ``numpy.random.SeedSequence`` whose children drive the
workload draws and the router, so the same scenario gives the same ``summary.json`` byte for byte
(keys sorted, floats rounded to :data:`tiersim.results.SIG_DIGITS` significant digits, no
timestamps or machine-specific paths in it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from tiersim import fleet as fleet_mod
from tiersim import outputs, savings, summary
from tiersim.fleet import build_fleet
from tiersim.inputs import (  # noqa: F401 - re-exported: scripts and tests call runner.<name>
    REFERENCE_STEP,
    cost_weight,
    load_scenario_trace,
    prepare,
    route,
    step_model,
    tier_infos,
    tier_specs,
)
from tiersim.results import RunResult, dumps
from tiersim.scenario import Scenario

REQUEST_COLUMNS = summary.REQUEST_COLUMNS
"""Columns of requests.parquet, in order."""


def run_scenario(scenario: Scenario, out_dir: str | Path | None = None,
                 scenario_path: str | Path | None = None, baselines: bool = False,
                 report: bool = False) -> RunResult:
    """Simulate ``scenario`` and return its summary; write the result files into ``out_dir``.

    ``baselines=True`` also sizes, per tier, a uniform fleet (every request on that tier) by
    simulation to the fewest replicas meeting the SLOs (:func:`tiersim.savings.
    sized_uniform_runs`); savings are then simulated (in the scenario's cost model) instead of
    estimated. The files are written atomically
    (:func:`tiersim.outputs.write_run`), with ``report.html`` when ``report`` is true.
    """
    source = str(scenario_path) if scenario_path is not None else scenario.source
    if out_dir is not None:
        outputs.make_out_dir(Path(out_dir))
    workload_rng, train_rng, router_rng, score_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(scenario.seed).spawn(4))
    fleet = build_fleet(scenario)
    infos = tier_infos(scenario, fleet)
    trace = load_scenario_trace(scenario, source)
    prepared = prepare(trace, infos, scenario, workload_rng, source)
    df = prepared.df
    assignment = route(scenario, df, infos, (train_rng, router_rng), source)
    result = fleet_mod.simulate(fleet.specs(), df, assignment)
    requests = summary.request_table(df, result, scenario, fleet, infos, assignment.basis)
    router = summary.router_result(scenario, df, result, infos, score_rng, assignment.basis)
    uniform = savings.sized_uniform_runs(scenario, source, fleet, df) if baselines else None
    saved = savings.savings_result(scenario.cost_model, fleet, df, result, infos,
                                   scenario.accuracy_floor, assignment.basis, uniform)
    analytic = summary.analytic_summary(df, infos, saved, assignment.basis)
    run = summary.run_result(scenario, fleet, requests, result, prepared.accuracy_source, router,
                             saved, analytic)
    if out_dir is not None:
        outputs.write_run(Path(out_dir), run, requests, summary.timeseries_table(result, fleet),
                          scenario_yaml(scenario), report=report)
    return run


def scenario_yaml(scenario: Scenario) -> str:
    """The scenario as run, as YAML: the keys its file set (defaults left implicit, so reading
    it back gives the same scenario), without a ``sweep:`` map (a run is one point)."""
    doc = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.pop("sweep", None)
    return yaml.safe_dump(doc, sort_keys=False)


def summary_json(run: RunResult | dict) -> str:
    """The summary as stable JSON text: sorted keys, rounded floats, NaN as null."""
    return run.dumps() if isinstance(run, RunResult) else dumps(run)
