"""Run one scenario end to end: trace -> workload -> routing -> engine -> summary -> files.

:func:`run_scenario` is the public entry point (:func:`run_with_requests` the same run, with
its request table, for callers that need figures the summary does not hold); it is wiring
only. The inputs (trace, prepared workload, routing) come from :mod:`tiersim.inputs`, the fleet from
:mod:`tiersim.fleet`, costs from the one ledger in :mod:`tiersim.costs`, the request table and
the typed :class:`~tiersim.results.RunResult` from :mod:`tiersim.summary`, savings from
:mod:`tiersim.savings`, and the files are written by :mod:`tiersim.outputs`.

Determinism: the scenario seed feeds one ``numpy.random.SeedSequence`` whose children drive the
workload draws and the router, so the same scenario gives the same ``summary.json`` byte for byte
(keys sorted, floats rounded to :data:`tiersim.results.SIG_DIGITS` significant digits, no
timestamps or machine-specific paths in it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from tiersim import costs, outputs, response_cache, savings, session_metrics, summary
from tiersim import fleet as fleet_mod
from tiersim.class_accuracy import run_classes
from tiersim.engine.request import sequences_held
from tiersim.errors import IdleConfusion, Note, TiersimError, UnreachableFloor, notes_of
from tiersim.fleet import build_fleet, draft_tokens
from tiersim.hardware.models import is_local_path
from tiersim.inputs import (  # noqa: F401 - re-exported: scripts and tests call runner.<name>
    PRICE_SAMPLE,
    baseline_infos,
    check_fleet_memory,
    check_run_memory,
    cost_weight,
    fleet_replicas,
    load_scenario_trace,
    prepare,
    prepare_all,
    price_sample,
    priced,
    route,
    step_model,
    tier_infos,
    tier_specs,
    trace_read,
)
from tiersim.results import RunResult, dumps, figure_text, reaches_floor, within_limit
from tiersim.results_figures import percent_text
from tiersim.routing import Assignment, TierInfo
from tiersim.routing.capability import output_on_tier
from tiersim.scenario import (
    Scenario,
    check_layouts,
    dump_yaml,
    model_places,
    resolve_file_ref,
    resolve_model_ref,
)
from tiersim.workload import sessions

REQUEST_COLUMNS = summary.REQUEST_COLUMNS
"""Columns of requests.parquet, in order."""


def run_scenario(scenario: Scenario, out_dir: str | Path | None = None,
                 scenario_path: str | Path | None = None, baselines: bool = False,
                 report: bool = False, extra: dict[str, str] | None = None) -> RunResult:
    """Simulate ``scenario`` and return its summary; write the result files into ``out_dir``.

    ``baselines=True`` also sizes, per tier, a uniform fleet (every request on that tier) by
    simulation to the fewest replicas meeting the SLOs (:func:`tiersim.savings.
    sized_uniform_runs`); savings are then simulated (in the scenario's cost model) instead of
    estimated. ``out_dir`` is claimed and locked as ``tiersim run --out`` claims it
    (:func:`tiersim.outputs.out_folder`: never the root or home folder, a folder of other
    files or another command's results; a refusal is the command's one-line
    :class:`~tiersim.errors.TiersimError`, before anything is simulated or written). The files
    are written atomically (:func:`tiersim.outputs.write_run`), with ``report.html`` when
    ``report`` is true and the ``extra`` files (name -> text) in the same set. Without
    ``out_dir`` (a sweep's point) the engine keeps no load series: only ``timeseries.parquet``
    reads it.
    """
    source = scenario_path if scenario_path is not None else scenario.source
    with outputs.out_folder(out_dir, "run", scenario, source):
        return run_into(scenario, None if out_dir is None else Path(out_dir), source,
                        baselines=baselines, report=report, extra=extra)


def run_into(scenario: Scenario, out: Path | None, source: str | Path, baselines: bool = False,
             report: bool = False, extra: dict[str, str] | None = None) -> RunResult:
    """:func:`run_scenario` for a caller that already holds ``out`` (claimed and locked:
    ``tiersim run``, a plan writing its planned run), read from ``source``."""
    if out is not None:
        outputs.make_out_dir(out)
    run, requests, result, fleet = _noted(scenario, str(source), baselines,
                                          series=out is not None)
    if out is not None:
        outputs.write_run(out, run, requests, summary.timeseries_table(result, fleet),
                          scenario_yaml(scenario), report=_page_writer() if report else None,
                          extra=extra)
    return run


def _page_writer():
    """The report page writer, imported only for a run that writes one: the page's plotly
    figures cost 0.3 s to import, 5% of a 100,000-request ``--no-report`` run."""
    from tiersim.report.page import write_report

    return write_report


def run_with_requests(scenario: Scenario) -> tuple[RunResult, summary.RequestTable]:
    """``scenario`` run as :func:`run_scenario` runs it (nothing written, no baselines), with
    its request table (the rows of ``requests.parquet``: ``final_tier`` names the tier that
    answered each request): one tier's p50 latencies, which the summary does not hold. A
    response cache's comparison with the same run without it is not simulated (its
    ``response_cache`` is None): the caller (``tiersim disagg``) shows none of it."""
    run, requests, _, _ = _noted(scenario, scenario.source, False, saving_shown=False,
                                 series=False)
    return run, requests


def _noted(scenario: Scenario, source: str, baselines: bool, saving_shown: bool = True,
           series: bool = True):
    """:func:`_simulated` with the run's notes (a trace's dropped rows ...) in its summary."""
    with _notes_kept() as notes:
        run, requests, result, fleet = _simulated(scenario, source, baselines, saving_shown,
                                                  series)
    run = dataclasses.replace(run, notes=_portable(notes, scenario, source))
    return run, requests, result, fleet


@contextlib.contextmanager
def _notes_kept():
    """The distinct texts of tiersim's notes raised inside, in order (a list filled when the
    block ends); each is raised again, so the command still shows it, and any other warning
    is shown as Python shows it."""
    kept: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        yield kept
    kept.extend(notes_of(caught))
    for note in kept:
        warnings.warn(note, Note, stacklevel=3)


def _portable(notes: list[str], scenario: Scenario, source: str) -> tuple[str, ...]:
    """The notes as the summary keeps them: the scenario's and its trace's paths by file name,
    so the same scenario and seed write the same bytes from any folder."""
    from tiersim.inputs import scenario_trace_path

    paths = {source}
    with contextlib.suppress(TiersimError):  # a trace that cannot be found raised already
        paths.add(str(scenario_trace_path(scenario, source)))
    out = []
    for note in notes:
        for path in sorted(paths, key=len, reverse=True):
            if path and path != Path(path).name:
                note = note.replace(path, Path(path).name)
        out.append(note)
    return tuple(out)


def _simulated(scenario: Scenario, source: str, baselines: bool, saving_shown: bool = True,
               series: bool = True):
    """The run's summary, request table, engine result and fleet (nothing written); ``source``
    is the scenario's path as given, named in notes and errors. ``saving_shown`` False: the
    caller shows no saving (``tiersim disagg``), so no note speaks of an estimated one, and
    shows no response cache comparison, so the run without the cache is not simulated.
    ``series`` False: the engine result keeps no load series (no ``timeseries.parquet`` is
    written from it; the summary and request table do not read it)."""
    fleet = build_fleet(scenario)
    unpriced = tier_infos(scenario, fleet)  # priced over the served requests, once drawn
    ordered = _note_price_order(scenario, source)
    if not baselines and saving_shown:
        _note_unsized_baselines(scenario, source)
    check_layouts(scenario, source)  # notes on tiers as configured (with the run's other notes)
    workload_rng, train_rng, router_rng = _rngs(scenario)
    extra = baseline_infos(scenario)  # baseline-only tiers: drawn and sized, never routed to
    check_fleet_memory(scenario, source)  # before the trace is read: refused at once
    loaded = load_scenario_trace(scenario, source)
    prepared = prepare_all(loaded, [*unpriced, *extra], scenario, workload_rng,
                           source)  # the raw trace is not kept: the table is
    df, cache, end_s = served_requests(scenario, prepared.df, source)
    check_run_memory(scenario, loaded, len(df))
    infos = priced(unpriced, scenario, fleet, df)
    if ordered:
        _note_weight_order(scenario, infos, source)
    assignment, result, requests = _serve(scenario, fleet, df, infos, (train_rng, router_rng),
                                          source, end_s, series=series)
    _note_rerouted(assignment, infos, source)
    _note_fragile_cuts(assignment.fit, infos, source)
    _note_refit_on_draws(scenario, assignment, infos, source)
    _note_dropped(fleet, df, result, source, scenario.trace.skip_longer_than)
    _note_thrashing(fleet, df, result, source)
    with _quiet_if_empty(df):  # no request left (the response cache answered all): "-"s
        router = summary.router_result(
            scenario, df, result, infos, assignment.basis, assignment.fit, assignment.score,
            labelled=set(prepared.accuracy_source.values()) == {"labels"})
        uniform = (savings.sized_uniform_runs(scenario, source, fleet, df, end_s) if baselines
                   else None)
        saved = savings.savings_result(scenario.cost_model, fleet, df, result, infos,
                                       scenario.accuracy_floor, assignment.basis, uniform, end_s,
                                       extra)
        analytic = summary.analytic_summary(df, infos, saved, assignment.basis,
                                            summary.gpu_hour_prices(scenario))
    run = summary.run_result(scenario, fleet, requests, result, prepared.accuracy_source, router,
                             saved, analytic, end_s, trace_acceptance(df))
    run = dataclasses.replace(run, sessions=session_metrics.session_result(df, requests,
                                                                          run.cost_usd))
    run = dataclasses.replace(run, accuracy_by_class=run_classes(  # none without classes
        df, result, infos, extra, assignment.basis, run.savings, uniform))
    run = dataclasses.replace(run, savings=_with_slo_check(run.savings, scenario, run),
                              trace=trace_read(loaded.origin))
    _note_idle_tiers(run, scenario, source, infos)
    if cache is not None and saving_shown:
        run = dataclasses.replace(run, response_cache=_cache_effect(
            scenario, fleet, prepared, infos, cache, (run, requests), router, source,
            assignment))
    return run, requests, result, fleet


def served_requests(scenario: Scenario, df, source: str):
    """The requests the tiers serve (those a ``router.response_cache`` does not answer), the
    cache's answers (None without one) and the least the run lasts (its last answer, else 0)."""
    if scenario.router.response_cache is None:
        return df, None, 0.0
    cache = response_cache.answered(scenario, df, source)
    end_s = response_cache.last_answer_s(df, cache[0], scenario.router.response_cache.lookup_s)
    return df[~cache[0]].reset_index(drop=True), cache, end_s


@contextlib.contextmanager
def _quiet_if_empty(df):
    """Silence numpy's empty-mean warnings when no request reaches the tiers (every figure is
    then missing and shown as "-"); a no-op otherwise."""
    if len(df):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def within_slo(p99: float | None, limit: float | None) -> bool:
    """True when a p99 meets its limit. A p99 of None means no request had that interval (every
    output one token long: no TPOT; or a response cache answered every request: no GPU-served
    TTFT), so no request exceeded the limit; drops are judged separately."""
    return limit is None or p99 is None or within_limit(p99, limit)


def _with_slo_check(saved, scenario: Scenario, run):
    """The savings with whether the run's own fleet met the SLOs its uniform baselines were
    sized to (p99 TTFT and TPOT within them, nothing dropped; under ``slo.scope: tier`` each
    tier's own p99 too) and the accuracy floor they were held to (with the same tolerance)."""
    if saved is None:
        return None
    slo = scenario.slo
    held = [run, *run.tiers] if slo.scope == "tier" else [run]  # tier: each tier's own p99 too
    met = run.dropped == 0 and all(within_slo(r.ttft_p99_s, slo.ttft_p99_s)
                                   and within_slo(r.tpot_p99_s, slo.tpot_p99_s) for r in held)
    met = met and all(within_slo(r.e2e_p99_s, slo.e2e_p99_s) for r in held)  # as TTFT's
    task = None if run.sessions is None else run.sessions.task_latency_p99_s
    met = met and within_slo(task, slo.session_p99_s)  # over the agent tasks
    floor = scenario.accuracy_floor
    # no request reached the fleet (accuracy None): no floor to judge (it read "missed")
    floor_met = None if floor is None or saved.accuracy is None else \
        reaches_floor(saved.accuracy, floor)
    checked = dataclasses.replace(saved, routed_slo_met=bool(met), routed_floor_met=floor_met)
    if checked.comparable:
        return checked
    # a saving against fleets held to what this one missed compares unlike fleets: none is
    # given (the baselines' own costs stay, for whoever wants to compare them anyway)
    return dataclasses.replace(checked, vs_uniform_usd=None, vs_uniform_frac=None,
                               vs_uniform_over_trace_frac=None, vs_static_split_usd=None,
                               vs_static_split_frac=None, vs_static_split_over_trace_frac=None,
                               drain_gap=None)


def workload_rng(scenario: Scenario) -> np.random.Generator:
    """The generator a run of ``scenario`` draws its workload from (sessions, difficulty)."""
    return _rngs(scenario)[0]


def _rngs(scenario: Scenario) -> list[np.random.Generator]:
    """The run's generators (workload, classifier training, router) from its seed (the
    accuracy interval, which had a fourth, draws no random numbers; the first three are the
    same children of the seed as before)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(scenario.seed).spawn(3)]


def _serve(scenario: Scenario, fleet, df: pd.DataFrame, infos, rngs, source: str,
           end_s: float = 0.0, assignment: Assignment | None = None, series: bool = True):
    """Route and simulate ``df``: the assignment, the engine's result and the request table
    (costed over a run lasting at least ``end_s``). ``assignment``: routing already decided
    for ``df`` (then ``rngs`` are not used). ``series`` False: the engine keeps no load
    series (:func:`tiersim.engine.simulate`), for a run whose time series nobody writes."""
    if assignment is None:
        assignment = route(scenario, df, infos, rngs, source)
    result = fleet_mod.simulate(fleet.specs(), df, assignment, series=series)
    requests = summary.request_table(df, result, scenario, fleet, infos, assignment.basis,
                                     end_s)
    return assignment, result, requests


def note_tier_order(scenario: Scenario, infos: list[TierInfo], source: str) -> None:
    """A note when a tier costs more per replica-hour (GPU-hour price x GPUs per replica) than
    a later one, or the same and more per request (``infos``' ``cost_weight``, what the
    routers weigh): tiers are taken as listed, cheapest first (the routers, FPR/FNR and the
    closed form assume it), so there the order, not the price, makes it the cheap one; a
    scenario may list them so on purpose. Tiers alike in both costs get no note: no order
    would silence it (a free fleet, one tier listed twice)."""
    if _note_price_order(scenario, source, stacklevel=4):
        _note_weight_order(scenario, infos, source, stacklevel=4)


def _note_price_order(scenario: Scenario, source: str, stacklevel: int = 3) -> bool:
    """:func:`note_tier_order`'s note on the price per replica-hour, which needs no workload;
    False when it was given (then no note on the price per request follows)."""
    tiers = scenario.tiers
    price = [t.cost_per_gpu_hour * t.gpus_per_replica for t in tiers]
    for i, j in itertools.combinations(range(len(tiers)), 2):
        if price[i] > price[j]:
            warnings.warn(f"{source}: tier {tiers[i].name!r} costs {price[i]:g} USD per "
                          f"replica-hour (cost_per_gpu_hour x gpus_per_replica), more than the "
                          f"later tier {tiers[j].name!r} ({price[j]:g} USD); tiers are taken as "
                          "listed, cheapest first (the routers and the closed form assume it): "
                          "list them cheapest first unless this is on purpose", Note,
                          stacklevel=stacklevel)
            return False
    return True


def _note_weight_order(scenario: Scenario, infos: list[TierInfo], source: str,
                       stacklevel: int = 3) -> None:
    """:func:`note_tier_order`'s note on tiers of one price per replica-hour, the first listed
    costing more per request (``infos``' ``cost_weight``, priced over the served requests)."""
    tiers = scenario.tiers
    price = [t.cost_per_gpu_hour * t.gpus_per_replica for t in tiers]
    weight = [info.cost_weight for info in infos]
    for i, j in itertools.combinations(range(len(tiers)), 2):
        if price[i] == price[j] and weight[i] > weight[j]:
            words = (PRICE_WORDS if scenario.cost_model != "fixed_per_request" or any(
                t.cost_per_request_usd is None for t in tiers) else
                "their cost_per_request_usd, as the cost model is fixed_per_request")
            warnings.warn(_equal_price_words(tiers[i].name, tiers[j].name, price[i],
                                             (weight[i], weight[j]), source, words), Note,
                          stacklevel=stacklevel)
            return


PRICE_WORDS = (f"priced over up to {PRICE_SAMPLE} of the served requests, each by the "
               "replica-seconds it takes on the tier's step model, its prompt in the engine's "
               "chunks and its output at the decode batch the run's load gives a replica of "
               "its fleet (Little's law)")
"""What the routers' price per request of a tier (``cost_weight``) is, as notes name it where
no tier is priced per request (:func:`tiersim.inputs.cost_weight`)."""


def _equal_price_words(first: str, later: str, price: float, weights: tuple[float, float],
                       source: str, words: str = PRICE_WORDS) -> str:
    """The order note for tiers ``first`` and ``later`` of one ``price`` per replica-hour, the
    first listed costing more per request (``weights``: their ``cost_weight``, which
    ``words`` say what it is)."""
    return (f"{source}: tiers {first!r} and {later!r} cost the same per replica-hour "
            f"({price:g} USD, cost_per_gpu_hour x gpus_per_replica) and {first!r}, listed "
            f"first, costs more per request ({weights[0]:.3g} against {weights[1]:.3g} USD, "
            f"{words}); tiers are taken as listed, cheapest first (the "
            "routers, FPR/FNR and the closed form assume it), so only the order makes "
            f"{first!r} the cheap one: list the tier you mean as cheaper first unless this is "
            "on purpose")


def _note_unsized_baselines(scenario: Scenario, source: str) -> None:
    """A note when the scenario lists baseline-only tiers and the run's savings are estimated
    (``--no-baselines``): an estimate scales this run's per-token costs, so a tier that served
    nothing is left out of it; and when it sets ``limits.gpus_per_replica``, which only that
    sizing (and a plan) reads."""
    if scenario.baselines:
        names = ", ".join(t.name for t in scenario.baselines)
        warnings.warn(f"{source}: baselines ({names}) are left out of the estimated saving: "
                      "it scales this run's per-token costs, and they served nothing; run with "
                      "simulated baselines (without --no-baselines) to size and compare them",
                      Note, stacklevel=3)
    if "gpus_per_replica" in scenario.limits.model_fields_set:
        warnings.warn(f"{source}: limits.gpus_per_replica sizes the uniform baselines (and "
                      "tiersim plan's designs), and --no-baselines sizes none, so it changes "
                      "nothing here; run without --no-baselines to use it", Note, stacklevel=3)


IDLE_TIER_NOTE = r".*: tier \S+ ran no request"
"""The start of the note for a paid tier that ran no request (:func:`_note_idle_tiers`): a
note on the run's bill, which ``tiersim disagg`` (no cost in its table) leaves out."""


def _note_idle_tiers(run, scenario: Scenario, source: str,
                     infos: list[TierInfo] | None = None) -> None:
    """A note for each tier that ran no pass while its provisioned replicas are paid (cost
    model ``provisioned``): its GPUs are part of the bill and serve nobody. Before, a
    scenario with FP8 and BF16 tiers, no accuracy floor and the default ``uniform`` router
    (every request to the top tier) ran silent, FP8's 4 GPUs half its cost. A tier whose
    requests were all dropped (its ``requests`` count them) was routed to: the dropped
    requests' own lines say why, and "route to it" would be no fix. ``infos``: the tiers'
    routing inputs, whose ``cost_weight`` says why a router that weighs it (``floor``,
    ``budget``, ``lagrangian``) sent a tier nothing, where a later (more accurate) tier
    costs no more per request; before, such a note told a ``floor`` scenario with an
    accuracy floor to route to it "(router.policy: floor with an accuracy_floor, say)", the
    setting it had."""
    if run.cost_model != "provisioned" or not any(t.passes for t in run.tiers):
        return  # no tier ran a request (a response cache answered all): no tier stands out
    policy = scenario.router.policy
    weighs = weighs_cost(scenario.router)
    for index, tier in enumerate(run.tiers):
        if tier.passes or tier.requests or not tier.cost_usd:
            continue
        why, fix = _idle_reason(index, run.tiers, policy, infos if weighs else None)
        # "its 1 GPU is", "its 2 x 1 GPUs are" (the fleet as the tables write it, 2 x 1);
        # it read "its 2 x 1 GPU are"
        gpus = ("1 GPU is" if tier.replicas * tier.gpus_per_replica == 1 else
                f"{tier.replicas} x {tier.gpus_per_replica} GPUs are")
        warnings.warn(f"{source}: tier {tier.name} ran no request{why}, yet its {gpus} "
                      "provisioned: "
                      f"{figure_text(tier.cost_usd)} of the run's {figure_text(run.cost_usd)} "
                      f"USD; remove the tier, or {fix}", Note, stacklevel=2)


COST_WEIGHING_POLICIES = ("floor", "budget", "lagrangian")
"""Routers that weigh each tier's cost per request (``cost_weight``) in their choice; the
``oracle`` does too where it has a ``lambda`` (:func:`weighs_cost`)."""


def weighs_cost(router) -> bool:
    """Whether a scenario's ``router`` config weighs each tier's cost per request: a policy
    of :data:`COST_WEIGHING_POLICIES`, or the ``oracle`` with a ``lambda`` (lagrangian on the
    truth; without one it takes the cheapest tier as good as the top, by list order)."""
    return router.policy in COST_WEIGHING_POLICIES or (
        router.policy == "oracle" and router.lambda_ is not None)


def _idle_reason(index: int, tiers, policy: str,
                 infos: list[TierInfo] | None) -> tuple[str, str]:
    """Why tier ``index`` of the run's ``tiers`` ran no request, and the fix beside removing
    it, for :func:`_note_idle_tiers`: the uniform router sends every request to one tier; a
    router weighing cost per request leaves out a tier a later (more accurate) tier serves for
    no more; a ``floor`` router's fitted routing sends the tier nothing. ``infos``: the tiers'
    routing inputs where the router weighs cost per request (:func:`weighs_cost`), else None."""
    if policy == "uniform":
        return (" (the router is uniform: every request to one tier)",
                "route to it (router.policy: floor with an accuracy_floor, say)")
    if infos is not None and index < len(infos):  # a router weighing cost (weighs_cost)
        own = infos[index].cost_weight
        cheaper = [(info.cost_weight, info.name) for info in infos[index + 1:]
                   if info.cost_weight <= own]  # a later tier, the more accurate one
        if cheaper and own > 0:
            weight, name = min(cheaper)
            return (f" (router {policy}, which weighs each tier's cost per request, "
                    f"{PRICE_WORDS}: {tiers[index].name}'s {own:.3g} USD is no less "
                    f"than {name}'s {weight:.3g}, so it gains nothing by sending it requests)",
                    f"make it cheaper per request than {name} (its gpus_per_replica or "
                    "cost_per_gpu_hour)")
    if policy == "floor":
        # the routing fitted for the floor: the cheapest that meets it, or the most accurate
        # where none does (a note of its own says so), sends the tier nothing
        return (" (router floor: the routing it fitted for the floor sends it nothing)",
                "route to it (another accuracy_floor or router.floor)")
    return (f" (router {policy})", "route to it (router.policy: floor with an "
            "accuracy_floor, say)")


def _note_fragile_cuts(fit: dict | None, infos: list[TierInfo], source: str) -> None:
    """A note when the ``floor`` router's cheapest tier's share moves by more than
    :data:`~tiersim.routing.constrained.FRAGILE_SHARE` across the 95% interval of its
    calibration accuracy estimate (``fit``: ``Assignment.fit``): where the tiers' accuracies lie
    that close to one another and to the floor, another draw of the same workload (another
    seed) fits another split, and the fleet sized to this one may miss its SLO or floor (the
    default job's FP8 share was 90% / 1% / 70% at seeds 1-3)."""
    from tiersim.routing.constrained import FRAGILE_SHARE, Z95

    ends = None if fit is None else fit.get("shares_at_floor_range")
    if not ends or not infos:
        return
    shares = [ends[0][0], fit["shares"][0], ends[1][0]]
    lo, hi = min(shares), max(shares)
    if hi - lo <= FRAGILE_SHARE:
        return
    # the floor the router cut at: router.floor, which the plan may raise above the
    # accuracy_floor (the interval is centred on it), so the note names it
    floor = round(sum(fit["floor_range"]) / 2, 9)
    warnings.warn(f"{source}: the floor router fitted its cuts on {fit['calibration_rows']:,} "
                  f"calibration rows, whose accuracy estimate is good to "
                  f"±{Z95 * fit['calibration_accuracy_se'] * 100:.2f} points (95%); cut at its "
                  f"floor ({floor:g}) ± that, its cheapest tier ({infos[0].name}) gets "
                  f"{lo * 100:.0f}-{hi * 100:.0f} % of the requests ({fit['shares'][0] * 100:.0f} "
                  "% as fitted), so the fleet's latency and floor hold for these draws only: "
                  "check the plan at other seeds (`tiersim plan --check-seeds`) or size it for "
                  "them (`tiersim plan --robust`), or fit on a larger labelled sample or set a "
                  "floor further from the tiers' accuracies", Note,
                  stacklevel=2)


def _note_refit_on_draws(scenario: Scenario, assignment: Assignment, infos: list[TierInfo],
                         source: str) -> None:
    """A note where ``router.confusion`` is set (zeros included) on a ``floor`` or ``budget``
    router: it then fits its cuts on the realised 0/1 correctness, not the expected one, and
    routes otherwise than the same scenario without ``confusion`` (fresh55a: a plan sized FP8
    1 x 2 + BF16 1 x 4 with 52 % to FP8; its scenario.yaml with a ``router.confusion.fpr``
    sweep sent FP8 100 % at every point, ``fpr: 0`` included, and missed the p99 TPOT SLO the
    plan met, with nothing saying why the sweep's fleet was not the plan's)."""
    router = scenario.router
    if router.policy not in ("floor", "budget") or "confusion" not in router.model_fields_set:
        return
    if not infos or not len(assignment.tier):
        return
    counts = np.bincount(assignment.tier, minlength=len(infos))
    shares = ", ".join(f"{info.name} {percent_text(count / counts.sum(), 0)}"
                       for info, count in zip(infos, counts))
    warnings.warn(f"{source}: router.confusion is set (zeros too), so the {router.policy} "
                  "router fits its cuts on the realised 0/1 correctness, not the expected "
                  f"one, and routes {shares} here: not as the scenario without "
                  "router.confusion routes (a sweep point at fpr 0 is not that scenario), nor "
                  "as a plan sized without it; compare a router.confusion sweep's points with "
                  "one another, or plan with the confusion set (README, router keys: "
                  "confusion)", Note,
                  stacklevel=2)


def _note_rerouted(assignment: Assignment, infos: list[TierInfo], source: str) -> None:
    """A note when requests longer (prompt + output) than the context of the tier their router
    chose went to a tier that holds them (:func:`tiersim.routing.capability.by_capability`),
    with how many each tier took: they are served, not dropped, as a gateway that routes by
    capability serves them."""
    moved = assignment.rerouted
    if moved is None or not moved.any():
        return
    final = assignment.final_tier[moved]
    took = ", ".join(f"{t.name} {int(np.sum(final == k)):,}" for k, t in enumerate(infos)
                     if np.any(final == k))
    count = int(moved.sum())
    warnings.warn(f"{source}: {count:,} request{'s' if count != 1 else ''} longer (prompt + "
                  f"output) than the context of a tier {'their' if count != 1 else 'its'} "
                  "router chose went to a tier that holds it (the cheapest above, else the "
                  "dearest below; an escalation landing on the first tier is none), answered "
                  f"by {took}; routing is by capability first, and only a request no tier "
                  "holds is dropped", Note, stacklevel=2)


def _note_dropped(fleet, df: pd.DataFrame, result, source: str,
                  skip: int | None = None) -> None:
    """A note when the fleet dropped requests it can never serve (prompt + output longer than
    the context of the tier it was sent to, or than one of its replicas' KV cache), and the
    session steps never sent because an earlier step of their task was dropped; the figures
    count them as dropped, as before. A cascade's escalation its second tier refused is told
    apart: its first pass ran (:func:`_dropped_after_first_pass`)."""
    dropped = np.asarray(result.dropped, dtype=bool)
    if not dropped.any():
        return
    unsent = _never_sent(df, dropped)
    tokens, too_long, tier = _dropped_sizes(fleet, df, result, dropped & ~unsent)
    reasons = []
    if too_long.any():  # routed by capability: none holds them where tiers could be chosen
        rows = np.flatnonzero(dropped & ~unsent)[too_long]
        whose = ("every tier's" if len(fleet.tiers) > 1 and not _held(fleet, df, rows).any()
                 else "their tier's")
        reasons.append(f"{int(too_long.sum()):,} longer (prompt + output) than {whose} "
                       "context")
    if not too_long.all():
        reasons.append(f"{int((~too_long).sum()):,} larger than one sequence may hold of a "
                       f"replica's KV cache ({_kv_room(fleet, tier[~too_long])})")
    why = f"{' and '.join(reasons)}, up to {int(tokens.max()):,} tokens"
    if unsent.any():
        why += (f", and {int(unsent.sum()):,} never sent: an earlier step of their session "
                "was dropped")
    head = f"{source}: {int(dropped.sum()):,} of {len(dropped):,} requests were dropped"
    first = _first_dropped(fleet, df, np.flatnonzero(dropped & ~unsent), tokens, too_long, tier)
    warnings.warn(f"{head}{_dropped_after_first_pass(result, dropped, why)}; they count as "
                  f"dropped in every figure{first}{_skip_hint(fleet, tokens[too_long], skip)}",
                  Note, stacklevel=2)


def _skip_hint(fleet, tokens: np.ndarray, skip: int | None) -> str:
    """The dropped note's last words where every request dropped for its length (``tokens``,
    prompt + output) is longer than any tier's model takes (its maximum context, else its
    ``max_model_len``): ``trace.skip_longer_than`` at that context leaves them out at load, as
    vLLM refuses them at its API whatever the fleet, so that a plan (which allows no drop)
    sizes the fleet for the rest; "" where some tier could hold one, or the key is set at or
    below it."""
    most = max(int(t.most_context or t.limits.max_model_len or 0) for t in fleet.tiers)
    if not len(tokens) or not most or int(tokens.min()) <= most or (
            skip is not None and skip <= most):
        return ""
    verb = "set trace.skip_longer_than:" if skip is None else "lower trace.skip_longer_than to"
    return (f"; vLLM refuses such a request at its API (HTTP 400) whatever the fleet: to plan "
            f"for the rest, {verb} {most} to leave them out at load")


def _held(fleet, df: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Which of the requests at ``rows`` some tier of ``fleet`` holds (prompt + output within
    its context: :func:`tiersim.routing.capability.fits`)."""
    from tiersim.routing.capability import fits

    tiers = [TierInfo(t.name, output_length_multiplier=t.config.output_length_multiplier,
                      max_model_len=int(t.limits.max_model_len or 0)) for t in fleet.tiers]
    return fits(df.iloc[rows], tiers).any(axis=1)


def _first_dropped(fleet, df: pd.DataFrame, rows: np.ndarray, tokens: np.ndarray,
                   too_long: np.ndarray, tier: np.ndarray) -> str:
    """The dropped note's tail: the first request the fleet could never serve (``rows``, its
    table rows, with their ``tokens``, ``too_long`` and ``tier`` from :func:`_dropped_sizes`),
    by its ``request_id``, and what would serve it; where the others do not all share its fix
    (another tier, or one beyond its model's maximum context where the first is within it),
    each fix with how many it serves (:func:`_each_fix`). "" when there is none."""
    if not len(rows):
        return ""
    kind = _drop_kind(fleet, tokens, too_long, tier)
    built = fleet.tiers[int(tier[0])]
    head = (f"; the first is request_id {int(df['request_id'].iloc[int(rows[0])])} "
            f"({int(tokens[0]):,} tokens on tier {built.name}")
    if too_long[0]:
        limit = "scheduler.max_model_len" if built.context_raisable else "model's context"
        head += f", which serves at most {built.limits.max_model_len:,}, its {limit}"
    if np.any((kind != kind[0]) | (tier != tier[0])):
        return f"{head}); by tier and fix: {_each_fix(fleet, tokens, kind, tier)}"
    return f"{head}){_FIRST_FIX[int(kind[0])].format(most=built.most_context)}"


_KV, _RAISE, _BEYOND, _FIXED = range(4)
"""Why a dropped request is served by no setting of its tier as it stands, by its fix
(:func:`_drop_kind`): larger than a replica's KV cache; longer than a ``max_model_len`` the
tier may raise; longer than its model's maximum context; longer than a tier at that context."""

_FIRST_FIX = {
    _KV: ": give the tier more KV-cache memory (gpu_memory_utilization, gpus_per_replica), or "
         "shorten or remove such rows",
    _RAISE: ": raise that (up to its model's context), or shorten or remove such rows",
    _BEYOND: ": it exceeds its model's maximum context ({most:,} tokens), which no "
             "max_model_len serves: shorten or remove such rows, or serve them on a model with "
             "a longer context",
    _FIXED: ": shorten or remove such rows, or serve them on a model with a longer context",
}
"""The fix the dropped note gives its first request, by :func:`_drop_kind`."""


def _drop_kind(fleet, tokens: np.ndarray, too_long: np.ndarray, tier: np.ndarray) -> np.ndarray:
    """Each dropped request's fix (:data:`_KV`, :data:`_RAISE`, :data:`_BEYOND`,
    :data:`_FIXED`), from its ``tokens``, whether it is ``too_long`` for its ``tier``'s
    context and that tier (indexes into ``fleet.tiers``)."""
    raisable = np.array([t.context_raisable for t in fleet.tiers])[tier]
    most = np.array([t.most_context or np.inf for t in fleet.tiers])[tier]
    kind = np.where(raisable, np.where(tokens > most, _BEYOND, _RAISE), _FIXED)
    return np.where(too_long, kind, _KV)


def _each_fix(fleet, tokens: np.ndarray, kind: np.ndarray, tier: np.ndarray) -> str:
    """The dropped requests' fixes, one per tier and :func:`_drop_kind`, in the order their
    first request was dropped: how many each serves, up to how many tokens, and what it is."""
    key = tier * 4 + kind
    keys, first = np.unique(key, return_index=True)
    parts = []
    for k in keys[np.argsort(first)]:
        mine = key == k
        built = fleet.tiers[int(k) // 4]
        count = int(mine.sum())
        size = (f"{int(tokens[mine].max()):,} tokens" if count == 1 else
                f"up to {int(tokens[mine].max()):,} tokens")
        parts.append(f"{count:,} on tier {built.name} ({size}) "
                     + _fix_words(built, int(k) % 4, count))
    return "; ".join(parts) + "; or shorten or remove such rows"


def _fix_words(built, kind: int, count: int) -> str:
    """:func:`_each_fix`'s words for ``count`` requests of one ``kind`` on tier ``built``."""
    them, s = ("it", "s") if count == 1 else ("them", "")
    if kind == _KV:
        return (f"exceed{s} a replica's KV cache: give the tier more KV-cache memory "
                "(gpu_memory_utilization, gpus_per_replica)")
    if kind == _RAISE:
        most = f", {built.most_context:,} tokens" if built.most_context else ""
        return (f"exceed{s} its scheduler.max_model_len ({built.limits.max_model_len:,}): "
                f"raise that (up to its model's context{most})")
    if kind == _BEYOND:
        return (f"exceed{s} its model's maximum context ({built.most_context:,} tokens), which "
                f"no max_model_len serves: serve {them} on a model with a longer context")
    return (f"exceed{s} its model's context ({built.limits.max_model_len:,} tokens): serve "
            f"{them} on a model with a longer context")


def _dropped_after_first_pass(result, dropped: np.ndarray, why: str) -> str:
    """The dropped note's account of ``dropped``: never served, or escalations their second
    tier refused after the first pass ran (and was paid for), or how many of each."""
    ran = int((dropped & np.asarray(result.escalated, dtype=bool)
               & ~costs.refused(result)).sum())
    if not ran:
        return f", never served ({why})"
    if ran == int(dropped.sum()):
        return (f" ({why}), each an escalation its second tier refused after its first pass "
                "ran: answered by no tier, that first pass paid for")
    what = ("an escalation its second tier refused after its first pass ran" if ran == 1 else
            "escalations their second tier refused after their first pass ran")
    return (f" ({why}): {ran:,} {what} (answered by no tier, that first pass paid for), "
            f"{int(dropped.sum()) - ran:,} never served")


def _never_sent(df: pd.DataFrame, dropped: np.ndarray) -> np.ndarray:
    """Which dropped requests are session steps whose predecessor was dropped: the engine
    never sends them (their prompt would hold an output never made), whatever their size."""
    follows, _ = sessions.links(df)
    if follows is None:
        return np.zeros(len(dropped), dtype=bool)
    has_parent = follows >= 0
    parent_dropped = np.zeros(len(dropped), dtype=bool)
    parent_dropped[has_parent] = dropped[follows[has_parent]]
    return dropped & parent_dropped


THRASHING_PREEMPTIONS = 10
"""Preemptions per request, on average over a tier's requests, from which a run notes that the
tier's KV cache thrashed."""


def _note_thrashing(fleet, df: pd.DataFrame, result, source: str) -> None:
    """A note per tier whose requests were preempted :data:`THRASHING_PREEMPTIONS` times or
    more on average: its KV cache holds too few of those sequences, so each is recomputed over
    and over (vLLM's recompute preemption of the newest request) and the run's latencies and
    runtime are dominated by that recomputation."""
    final = np.asarray(result.final_tier)
    preemptions = np.asarray(result.preemptions, dtype=np.float64)
    tokens = (df["input_tokens"].to_numpy(np.float64)
              + np.asarray(result.output_tokens, dtype=np.float64))
    for i, tier in enumerate(fleet.tiers):
        mine = final == i
        if not mine.any() or preemptions[mine].mean() < THRASHING_PREEMPTIONS:
            continue
        limits = tier.limits
        held = sequences_held(limits, tier.num_blocks, int(tokens[mine].mean()),
                              draft_tokens(tier.config))
        warnings.warn(f"{source}: tier {tier.name} preempted its requests "
                      f"{preemptions[mine].mean():,.0f} times on average (KV cache thrashing: "
                      f"a replica's KV cache holds {held:,} of these sequences at once); "
                      f"{_THRASH_COST[limits.enable_prefix_caching]}", Note, stacklevel=2)


_THRASH_COST = {
    False: "results are dominated by recomputation (with scheduler.enable_prefix_caching, "
           "vLLM's default, a preempted request's blocks stay cached until evicted)",
    True: "each re-admission recomputes the blocks evicted since its preemption",
}


def _dropped_sizes(fleet, df: pd.DataFrame, result, dropped: np.ndarray):
    """Prompt + output tokens of each dropped request on the tier that dropped it (its
    escalation tier when its second pass was the one dropped), whether that is longer than
    the tier's context (else it is larger than a replica's KV cache), and that tier's index."""
    escalated = np.asarray(result.escalated, dtype=bool)
    tier = np.where(escalated, result.final_tier, result.first_tier)[dropped].astype(np.int64)
    multiplier = np.array([t.config.output_length_multiplier for t in fleet.tiers])
    output = output_on_tier(df["output_tokens"].to_numpy(np.float64)[dropped], multiplier[tier])
    tokens = df["input_tokens"].to_numpy(np.float64)[dropped] + output
    context = np.array([t.limits.max_model_len or np.inf for t in fleet.tiers])
    return tokens, tokens > context[tier], tier


def _kv_room(fleet, tiers: np.ndarray) -> str:
    """The most tokens one sequence may hold on a replica of each of ``tiers`` (indexes into
    ``fleet.tiers``, each named once): what a request larger than its KV cache exceeded (its
    blocks above the watermark, less a delta-net state's and draft tokens';
    :attr:`tiersim.fleet.BuiltTier.longest_sequence`)."""
    built = [fleet.tiers[i] for i in sorted(set(tiers.tolist()))]
    return ", ".join(f"{max(t.longest_sequence, 0):,} tokens on {t.name}" for t in built)


def trace_acceptance(df: pd.DataFrame) -> tuple[int, int]:
    """(rows of ``df`` whose ``spec_acceptance`` is given, rows): a given rate replaces the
    scenario's on speculative tiers, and the run's latency source says so."""
    if "spec_acceptance" not in df.columns:
        return 0, len(df)
    return int(df["spec_acceptance"].notna().sum()), len(df)


def _cache_effect(scenario: Scenario, fleet, prepared, infos, cache, served, router,
                  source: str, assignment: Assignment):
    """The cache against the same run without it (every request routed and simulated): the
    requests the fleet served with the cache keep the routing they had (``assignment``), the
    hits are routed as the whole table routes them, so the two runs differ by the hits alone
    (routing every request afresh put a cascade's noise or a split's draws on other requests,
    and a handful of hits flipped hundreds of escalations)."""
    _, train_rng, router_rng = _rngs(scenario)
    with warnings.catch_warnings():  # its routing is the comparison's, not the run's: the run
        # noted its own (an idle confusion rate of 312 requests beside the run's 158 misses)
        warnings.simplefilter("ignore", IdleConfusion)
        warnings.simplefilter("ignore", UnreachableFloor)
        whole = route(scenario, prepared.df, infos, (train_rng, router_rng), source)
    _, result, requests = _serve(scenario, fleet, prepared.df, infos, (), source,
                                 assignment=_with_rows(whole, ~cache[0], assignment),
                                 series=False)  # compared by its summary alone
    without = summary.run_result(scenario, fleet, requests, result, prepared.accuracy_source,
                                 router, trace_acceptance=trace_acceptance(prepared.df))
    return response_cache.cache_result(scenario.router.response_cache, cache[1], cache[0],
                                       served, (without, requests), cache[2],
                                       prepared.df["arrival_s"].to_numpy(np.float64))


def _with_rows(whole: Assignment, rows: np.ndarray, part: Assignment) -> Assignment:
    """``whole`` with the decisions at ``rows`` (a mask) taken from ``part``, the assignment
    of those rows alone, in order (a ``refused_to`` of None is -1 for every request)."""
    def merged(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray:
        out = np.full(len(rows), -1, dtype=np.int64) if a is None else a.copy()
        out[rows] = -1 if b is None else b
        return out

    refused = (None if whole.refused_to is None and part.refused_to is None
               else merged(whole.refused_to, part.refused_to))
    return dataclasses.replace(whole, tier=merged(whole.tier, part.tier),
                               escalate_to=merged(whole.escalate_to, part.escalate_to),
                               refused_to=refused)


def scenario_yaml(scenario: Scenario) -> str:
    """The scenario as run, as YAML: the keys its file set (defaults left implicit, so reading
    it back gives the same scenario), without a ``sweep:`` map (a run is one point), with the
    user files it names made absolute (:func:`portable_paths`) so that the copy reruns from
    the folder it is written to."""
    doc = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.pop("sweep", None)
    return dump_yaml(portable_paths(doc, scenario.source))


def portable_paths(doc: dict, source: str) -> dict:
    """``doc`` (a scenario's YAML document) with each relative path of a user file it names
    (the trace, a model's config.json, a profile) made absolute, as the scenario file
    ``source`` resolves it. A copy of the scenario written elsewhere (a run's or a plan's
    ``scenario.yaml``) then names the same files; bundled names stay names."""
    folder = Path(source).parent if Path(source).is_file() else None
    trace = doc.get("trace")
    if isinstance(trace, dict) and isinstance(trace.get("path"), str):
        trace["path"] = _absolute(trace["path"], folder)
    for place, holder in model_places(doc):  # a baseline-only tier's, a draft's too
        if isinstance(holder[place[-1]], str):
            holder[place[-1]] = _model_path(holder[place[-1]], source)
    if isinstance(doc.get("profile"), str):
        doc["profile"] = _absolute(resolve_file_ref(doc["profile"], source), None)
    return doc


def _model_path(model: str, source: str) -> str:
    """A model text as an absolute path when it names a config file or folder the scenario
    ``source`` reads (beside it, else from the working folder, as ``get_model`` looks); a
    catalogue name as given."""
    ref = resolve_model_ref(model, source)
    if ref != model:
        return _as_absolute(ref)
    return _as_absolute(os.path.expanduser(model)) if is_local_path(model) else model


def _as_absolute(path: str | Path) -> str:
    """``path`` from the working folder, ``..`` kept as written: after a symbolic link it
    leads where the link's target is, which collapsing it as text would not."""
    return str(Path(path).absolute())


def _absolute(path: str, folder: Path | None) -> str:
    """A relative ``path`` that names a file beside ``folder``, else from the working folder,
    as an absolute path (symbolic links kept as named); anything else (absolute, a bundled
    name) as given."""
    try:
        p = Path(path).expanduser()
    except RuntimeError:  # "~user" names no user: not a file of ours to rewrite
        return path
    if p.is_absolute():
        return path
    beside = folder / p if folder is not None else p
    return _as_absolute(beside) if beside.is_file() else path


def summary_json(run: RunResult | dict) -> str:
    """The summary as stable JSON text: sorted keys, rounded floats, NaN as null."""
    return run.dumps() if isinstance(run, RunResult) else dumps(run)
