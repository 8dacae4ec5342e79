"""Run one scenario end to end: trace -> workload -> routing -> engine -> summary -> files.

:func:`run_scenario` is the only public entry point; it is wiring only. The fleet is built by
:mod:`tiersim.fleet`, costs come from the one ledger in :mod:`tiersim.costs`, the request table
and the typed :class:`~tiersim.results.RunResult` from :mod:`tiersim.summary`, savings from
:mod:`tiersim.savings`, and the files are written by :mod:`tiersim.outputs`.

Determinism: the scenario seed feeds one ``numpy.random.SeedSequence`` whose children drive the
workload draws and the router, so the same scenario gives the same ``summary.json`` byte for byte
(keys sorted, floats rounded to :data:`tiersim.results.SIG_DIGITS` significant digits, no
timestamps or machine-specific paths in it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from tiersim import fleet as fleet_mod
from tiersim import outputs, savings, summary
from tiersim.fleet import BuiltTier, Fleet, build_fleet
from tiersim.paths import resolve_trace_path
from tiersim.perf.base import StepShape
from tiersim.results import RunResult, dumps
from tiersim.routing import Assignment, Prepared, TierInfo, build_router, prepare_workload
from tiersim.routing.constrained import with_scenario_floor
from tiersim.scenario import Scenario
from tiersim.trace import load_trace

REQUEST_COLUMNS = summary.REQUEST_COLUMNS
"""Columns of requests.parquet, in order."""

REFERENCE_STEP = {"prefill_tokens": 512, "decode_seqs": 32, "decode_context": 32 * 2048}
"""The iteration whose cost ranks tiers for routing (one prefill chunk beside 32 decodes)."""


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


# ---------------------------------------------------------------------------------------------
# Inputs


def load_scenario_trace(scenario: Scenario, source: str) -> pd.DataFrame:
    """The scenario's trace as the canonical table; a relative path starts at the scenario's
    folder, then the bundled ``traces/``."""
    cfg = scenario.trace
    folder = Path(source).parent if Path(source).is_file() else None
    path = resolve_trace_path(cfg.path, folder)
    window = tuple(cfg.window) if cfg.window is not None else None
    return load_trace(path, format=cfg.format, window=window, time_scale=cfg.time_scale)


def step_model(scenario: Scenario, tier) -> Any:
    """The step-time model of one engine replica of a tier (:func:`tiersim.fleet.step_model`)."""
    return fleet_mod.step_model(scenario, tier)


def tier_specs(scenario: Scenario, models: list | None = None) -> list:
    """One engine TierSpec per scenario tier (``models`` are ignored: the fleet builds them)."""
    return build_fleet(scenario).specs()


def tier_infos(scenario: Scenario, fleet: Fleet | list | None = None) -> list[TierInfo]:
    """What routing needs per tier; ``cost_weight`` is the tier's price for a reference step.

    ``fleet``: the built fleet (built here when None; a list of step models is accepted too)."""
    if not isinstance(fleet, Fleet):
        fleet = build_fleet(scenario)
    return [
        TierInfo(name=t.name, precision=t.config.precision, accuracy=t.config.accuracy,
                 cost_weight=cost_weight(t),
                 output_length_multiplier=t.config.output_length_multiplier)
        for t in fleet.tiers
    ]


def cost_weight(tier: BuiltTier) -> float:
    """Relative cost of serving a request on a tier: its fixed price per request when set, else
    engine-replica price x the time of :data:`REFERENCE_STEP` on the tier's step model."""
    if tier.config.cost_per_request_usd is not None:
        return tier.config.cost_per_request_usd
    shape = StepShape(prefill_chunks=((REFERENCE_STEP["prefill_tokens"], 0),),
                      decode_seqs=REFERENCE_STEP["decode_seqs"],
                      decode_context=REFERENCE_STEP["decode_context"])
    return 3600.0 * tier.usd_per_replica_second * tier.step_model.step_time(shape)


def prepare(trace: pd.DataFrame, infos: list[TierInfo], scenario: Scenario,
            rng: np.random.Generator, source: str) -> Prepared:
    """Per-tier correctness (labels, or drawn from the workload's difficulty model) and where
    each tier's accuracy comes from."""
    return prepare_workload(trace, infos, scenario.workload, rng=rng, source=source)


def route(scenario: Scenario, df: pd.DataFrame, infos: list[TierInfo],
          rngs: tuple[np.random.Generator, np.random.Generator], source: str) -> Assignment:
    """The router's per-request first tier, escalation tier and accuracy basis (decided before
    simulating).

    ``rngs``: one generator for training the router's classifier, one for its decisions.
    """
    cfg = with_scenario_floor(scenario.router, scenario.accuracy_floor)  # the floor policy's
    router = build_router(cfg, infos, train_df=df, rng=rngs[0], source=source)
    return router.assign(df, rngs[1])
