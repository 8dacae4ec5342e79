"""What routing saves: the run's fleet against uniform fleets sized by simulation.

Two ways, labelled in :class:`~tiersim.results.SavingsResult` ``method``:

- **simulated** (``run_scenario(..., baselines=True)``, what ``tiersim run`` does): per tier
  (the scenario's ``baselines:``, tiers kept only for this comparison, included), a
  uniform fleet (every request on that tier) sized by the planner's search
  (:mod:`tiersim.plan`) to the fewest replicas meeting the scenario's SLOs with nothing dropped,
  trying larger ``gpus_per_replica`` before giving up, and costed in the run's ledger
  (:mod:`tiersim.costs`). The saving compares the run's fleet with the cheapest sized uniform
  fleet whose accuracy meets the floor (the run's own accuracy when the scenario sets none),
  chosen and compared as ``tiersim plan`` ranks fleets (:func:`tiersim.results.paid_order`:
  per hour under ``provisioned`` cost, else over the trace), and
  with a static split (a random share per request) of the sized uniform fleets at the run's
  accuracy, on the same basis (:func:`tiersim.routing.metrics.static_split_saving`). A
  uniform fleet that cannot meet the SLOs at any size is listed with ``slo_met: false``, no
  cost, no replica count (where its search stopped is no size) and
  ``infeasible``: why (``"drops 476 requests longer (prompt + output) than fp8's
  max_model_len 1,500 at any size"``); it is never a baseline.
- **estimated**: uniform costs scaled from this run's per-token attributed costs
  (:func:`tiersim.routing.metrics.uniform_cost_estimates`), on the attributed ledger whatever
  the cost model, except under per-request prices (``fixed_per_request``), where a uniform
  fleet's cost is its price per request at any size and the costs are exact, in the run's
  ledger (:func:`per_request_priced`). An estimate, labelled ``method: "estimated"`` (the
  uniform fleets' SLOs are not simulated), never the headline.

Sizing reuses the run's routed table and starts each search at the run's own GPU count, so it
typically costs ``log2(GPUs) + 1`` single-tier simulations per tier (docs/planning.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tiersim import costs, metrics
from tiersim.fleet import Fleet, tier_techniques
from tiersim.results import (
    SavingsResult,
    UniformBaseline,
    baseline_floor,
    drain_words,
    paid_order,
    paid_share,
    reaches_floor,
    saved_share,
    saving_basis,
)
from tiersim.routing import TierInfo
from tiersim.routing import savings as routing_savings
from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.metrics import STATIC_SPLIT_FIELDS, static_split_saving
from tiersim.session_metrics import task_success


@dataclasses.dataclass(frozen=True)
class UniformRun:
    """One uniform fleet sized by simulation: its size, cost in the run's ledger, p99s.

    ``replicas``/``gpus_per_replica`` are the smallest fleet found meeting the SLOs, or the
    largest tried when none did (``slo_met`` False, ``cost_usd`` None, ``infeasible`` why)."""

    tier: str
    replicas: int
    gpus_per_replica: int
    slo_met: bool
    cost_usd: float | None
    attributed_cost_usd: float | None
    accuracy: float
    dropped: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: float | None
    missed: str | None = None
    prefill_replicas: int | None = None  # a disaggregated tier's split: its prefill replicas
    infeasible: str | None = None  # why no size meets the SLOs (None when one does)
    cost_per_hour_usd: float | None = None  # provisioned rate (None when no size met the SLOs)
    duration_s: float | None = None  # how long it is paid for (as ``cost_usd``)
    techniques: str | None = None  # the tier's serving techniques it keeps (spec decode k=3)
    session_p99_s: float | None = None  # its task latency p99, where slo.session_p99_s is set
    task_success: float | None = None  # its agent tasks' success (None: no sessions)


def sized_uniform_runs(scenario, source: str, fleet: Fleet, df: pd.DataFrame,
                       end_s: float = 0.0) -> list[UniformRun]:
    """Per tier of the scenario, its baseline-only tiers (``baselines``) included, the cheapest
    uniform fleet meeting its SLOs, by simulation, paid for (provisioned) until at least
    ``end_s``, as the run is (:func:`stretched_cost`). ``df`` holds every such tier's
    correctness (:func:`tiersim.inputs.prepare_all`)."""
    from tiersim.plan import Constraints, Planner, SimEvaluator

    evaluator = SimEvaluator(scenario, source, df=df, end_s=end_s)
    constraints = Constraints(scenario.slo.ttft_p99_s, scenario.slo.tpot_p99_s,  # no floor:
                              e2e_p99_s=scenario.slo.e2e_p99_s,
                              session_p99_s=scenario.slo.session_p99_s)
    # every tier is sized; savings_result judges the floor
    start = {t.name: fleet.gpus for t in scenario.all_tiers}  # from the run's GPU count
    planner = Planner(scenario, constraints, evaluator, start=start,
                      gpu_options=tuple(sorted(set(scenario.limits.gpus_per_replica))),
                      max_replicas=baseline_replica_limit(scenario))
    configs = {t.name: t for t in scenario.all_tiers}
    out = []
    for sized in planner.uniform():
        name = sized.design.tiers[0]
        o = sized.outcome
        met = sized.feasible
        out.append(UniformRun(
            tier=name, replicas=(sized.replicas or {}).get(name, 0),
            gpus_per_replica=sized.design.gpus_per_replica[0], slo_met=met,
            cost_usd=stretched_cost(scenario.cost_model, o, end_s) if met else None,
            attributed_cost_usd=o.attributed_cost_usd if met else None,
            accuracy=o.accuracy if o is not None else evaluator.routing(sized.design)[2],
            task_success=o.task_success if o is not None else None,  # same_basis: unsized
            dropped=o.dropped if o is not None else 0,
            ttft_p99_s=o.ttft_p99_s if o else None, tpot_p99_s=o.tpot_p99_s if o else None,
            # kept where it is held (slo.e2e_p99_s set): summary.json gives it only then
            e2e_p99_s=o.e2e_p99_s if o and constraints.e2e_p99_s is not None else None,
            session_p99_s=o.session_p99_s if o and constraints.session_p99_s is not None
            else None,
            missed=sized.missed,
            prefill_replicas=o.tiers[name].prefill if o is not None else None,
            infeasible=None if met else sized.infeasible or sized.missed,
            cost_per_hour_usd=o.cost_per_hour_usd if met else None,
            duration_s=max(o.duration_s, end_s) if met else None,
            techniques=(o.tiers[name].techniques if o is not None  # at the size it ran
                        else tier_techniques(scenario, configs[name]))))
    return out


def baseline_replica_limit(scenario) -> int:
    """The most replicas a run's sized uniform baselines try: the scenario's
    ``limits.max_replicas``, set or default (1024), the largest tier the scenario allows. One
    number, so a limit written out at its default sizes as leaving it out does (the default
    once stopped the baselines at 256 and a written 1024 let them grow to 1024)."""
    return scenario.limits.max_replicas


def stretched_cost(cost_model: str, outcome, end_s: float) -> float:
    """A sized fleet's cost when the run lasts until ``end_s``, later than the requests it
    served (a response cache answered the last ones): provisioned GPUs are paid until then;
    busy time and per-request prices do not change."""
    if cost_model != "provisioned" or end_s <= outcome.duration_s:
        return outcome.cost_usd
    return outcome.cost_per_hour_usd * end_s / 3600.0


def savings_result(cost_model: str, fleet: Fleet, df: pd.DataFrame, result, infos: list[TierInfo],
                   accuracy_floor: float | None, basis: str,
                   uniform: list[UniformRun] | None = None, end_s: float = 0.0,
                   baseline_infos: list[TierInfo] | None = None) -> SavingsResult:
    """The run's fleet against the cheapest sized uniform fleet meeting the floor and the SLOs,
    and against a static split of the sized uniform fleets at the run's accuracy.

    The baseline and ``vs_uniform_frac`` are on the plan's basis (:func:`~tiersim.results.
    paid_order`, :func:`~tiersim.results.paid_share`: USD/hour under provisioned cost, so a
    run of a planned scenario quotes the plan's saving), ``vs_uniform_usd`` and
    ``vs_uniform_over_trace_frac`` over the run; the static split likewise
    (:func:`~tiersim.routing.metrics.static_split_saving`, as the plan's).

    With ``uniform`` (sized) runs the comparison is in the run's ledger and
    ``method="simulated"``; without, it is an estimate on the attributed ledger (of the routed
    tiers alone). The run lasts at least ``end_s`` (a response cache's last answer).
    ``baseline_infos``: the scenario's baseline-only tiers (``baselines``), whose uniform
    fleets are among ``uniform``. Where the run's fleet and its uniform baseline cost the same
    per hour, ``drain_gap`` says the gap is the drain after the last arrival, in ``tiersim
    plan``'s words (:func:`tiersim.results.drain_words`).
    """
    if uniform is None:
        return _estimated(fleet, df, result, infos, accuracy_floor, basis, cost_model)
    duration = max(duration_of(result), end_s)
    routed = costs.ledger(cost_model, fleet, result, duration).headline_usd
    accuracy = routed_accuracy(df, result, infos, basis)
    uniform = same_basis(uniform, df, [*infos, *(baseline_infos or [])], basis)
    floor = baseline_floor(accuracy_floor, accuracy)
    served = [u for u in uniform if u.slo_met and u.cost_usd is not None]
    base = cheapest_uniform(cost_model, served, floor)
    baselines = tuple(_baseline(u) for u in uniform)
    rate = float(costs.provisioned_totals(fleet, 3600.0).sum())
    priced = (base.cost_usd, base.cost_per_hour_usd) if base else (None, None)
    return SavingsResult(
        method="simulated", cost_model=cost_model, routed_cost_usd=routed,
        accuracy=_known(accuracy), accuracy_floor=_known(floor), uniform=baselines,
        baseline_uniform_tier=base.tier if base else None,
        vs_uniform_usd=_gap(base and base.cost_usd, routed),
        vs_uniform_frac=paid_share(cost_model, (routed, rate), priced),
        vs_uniform_over_trace_frac=saved_share(routed, priced[0]),
        saving_basis=saving_basis(cost_model), routed_cost_per_hour_usd=rate,
        **static_split_saving(cost_model, accuracy, (routed, rate),
                              [(u.cost_usd, u.cost_per_hour_usd, u.accuracy) for u in served],
                              [u.tier for u in served]),
        drain_gap=base and drain_words((rate, base.cost_per_hour_usd),
                                       (duration, base.duration_s), cost_model))


def cheapest_uniform(cost_model: str, uniform: list[UniformRun],
                     floor: float | None) -> UniformRun | None:
    """The uniform baseline: of the sized ``uniform`` fleets meeting the SLOs (a cost) and
    ``floor`` (:func:`~tiersim.results.reaches_floor`; any accuracy when None), the first in
    the order ``tiersim plan`` ranks fleets (:func:`~tiersim.results.paid_order`); None where
    none does. ``tiersim run``'s savings and ``tiersim analytic --scenario``'s cheapest uniform
    at the floor both choose it here."""
    meets = [u for u in uniform if u.slo_met and u.cost_usd is not None
             and (floor is None or reaches_floor(u.accuracy, floor))]
    return min(meets, key=lambda u: paid_order(cost_model, u.cost_usd, u.cost_per_hour_usd, 1,
                                               u.replicas, u.accuracy)) if meets else None


def _baseline(u: UniformRun) -> UniformBaseline:
    """A sized uniform fleet as ``savings.uniform`` gives it: no size when none met the SLOs
    (where the search stopped reads like one), the reason instead."""
    size = {"replicas": u.replicas, "gpus_per_replica": u.gpus_per_replica,
            "prefill_replicas": u.prefill_replicas, "ttft_p99_s": u.ttft_p99_s,
            "tpot_p99_s": u.tpot_p99_s, "e2e_p99_s": u.e2e_p99_s,
            "session_p99_s": u.session_p99_s} if u.infeasible is None else {}
    return UniformBaseline(tier=u.tier, accuracy=_known(u.accuracy), cost_usd=u.cost_usd,
                           slo_met=u.slo_met, infeasible=u.infeasible,
                           task_success=_known(u.task_success),
                           cost_per_hour_usd=u.cost_per_hour_usd, techniques=u.techniques,
                           **size)


def same_basis(uniform: list[UniformRun], df: pd.DataFrame, infos: list[TierInfo],
               basis: str) -> list[UniformRun]:
    """Uniform fleets' accuracy and task success scored on the run's basis (expected or
    realised), so the floor, the static split and the routed fleet's task success compare like
    with like (a sized fleet drops nothing); a fleet that drops keeps its own run's."""
    matrix = expected_matrix(df, infos, basis)
    index = {t.name: k for k, t in enumerate(infos)}
    return [dataclasses.replace(u, accuracy=float(matrix[:, index[u.tier]].mean()),
                                task_success=task_success(df, matrix[:, index[u.tier]]))
            if u.dropped == 0 else u for u in uniform]


def routed_accuracy(df: pd.DataFrame, result, infos: list[TierInfo], basis: str) -> float:
    """The run's accuracy: the final tier's correctness, a dropped request scored 0."""
    final = np.asarray(result.final_tier, dtype=np.int64)
    per = expected_matrix(df, infos, basis)[np.arange(len(df)), final]
    return float(np.where(np.asarray(result.dropped, bool), 0.0, per).mean()) if len(df) else \
        float("nan")


def _known(value: float | None) -> float | None:
    """``value``, or None for NaN: the accuracy of a run no request reached (a response cache
    answered all) is None in the results, as summary.json writes it, not NaN (a mean over no
    request) beside the run's own None."""
    return None if value is None or value != value else float(value)


def _gap(baseline: float | None, routed: float | None) -> float | None:
    """baseline - routed, None when either is missing."""
    return None if baseline is None or routed is None else float(baseline - routed)


def per_request_priced(cost_model: str | None, fleet: Fleet) -> bool:
    """Whether the run is costed by per-request prices (``fixed_per_request``, every tier
    priced): a uniform fleet then costs its tier's price per request at any size, so the
    estimate's costs are exact (:func:`_estimated`)."""
    return cost_model == "fixed_per_request" and all(
        t.config.cost_per_request_usd is not None for t in fleet.tiers)


def _estimated(fleet: Fleet, df: pd.DataFrame, result, infos: list[TierInfo],
               accuracy_floor: float | None, basis: str,
               cost_model: str | None = None) -> SavingsResult:
    """Uniform costs estimated from this run's per-token attributed costs (an estimate). A
    tier whose context cannot hold some request is no baseline, as its simulated uniform fleet
    is infeasible at any size (:func:`longer_than_context`).

    Under per-request prices (:func:`per_request_priced`) the costs are exact instead, in the
    run's own ledger: the run's passes at their tiers' prices against every request served
    once at a uniform tier's price, which a sized uniform fleet (nothing dropped, no
    escalation) pays at any size. Before, the estimate quoted the attributed ledger there too:
    8.61 % saved where the simulated baselines gave 39 % (check51); tiny.yaml priced 0.001 /
    0.004 USD per request read 0.383 % against the simulated 34.1 %. Only whether a uniform
    fleet can meet the SLOs is not simulated (``--baselines`` sizes them)."""
    first, escalated = costs.passes_run(result)
    longer, why = longer_than_context(fleet, df)
    exact = per_request_priced(cost_model, fleet)
    if exact:
        routed = costs.fixed_costs(fleet, result)
        uniform = np.array([len(df) * t.config.cost_per_request_usd for t in fleet.tiers],
                           dtype=np.float64)
    else:
        routed, uniform = costs.attributed_costs(fleet, result), None
    out = routing_savings(df, result.final_tier, routed, infos, accuracy_floor=accuracy_floor,
                          first_tier=first, escalated=escalated,
                          uniform_costs=uniform, dropped=result.dropped, basis=basis,
                          unservable=longer)
    ledger = "fixed_per_request" if exact else "attributed"
    tasks = uniform_task_success(df, infos, basis, longer)
    baselines = tuple(UniformBaseline(tier=name, accuracy=_known(v["accuracy"]),
                                      cost_usd=v["cost_usd"],
                                      infeasible=why.get(name), task_success=tasks.get(name))
                      for name, v in out["uniform"].items())
    return SavingsResult(
        method="estimated", cost_model=ledger, routed_cost_usd=out["routed_cost_usd"],
        accuracy=_known(out["accuracy"]), accuracy_floor=_known(out["accuracy_floor"]),
        uniform=baselines,
        baseline_uniform_tier=out["baseline_uniform_tier"],
        vs_uniform_usd=out["vs_uniform_usd"], vs_uniform_frac=out["vs_uniform_frac"],
        **{k: out[k] for k in STATIC_SPLIT_FIELDS},
        saving_basis=saving_basis(ledger), vs_uniform_over_trace_frac=out["vs_uniform_frac"])


def uniform_task_success(df: pd.DataFrame, infos: list[TierInfo], basis: str,
                         unservable: np.ndarray) -> dict[str, float]:
    """Per tier, its uniform fleet's estimated task success, from each step's correctness on
    that tier as the estimate's uniform accuracy is (:func:`tiersim.routing.metrics.savings`:
    a step longer than the tier's context, ``unservable``, scored 0); empty where ``df`` has
    no sessions."""
    matrix = np.where(unservable, 0.0, expected_matrix(df, infos, basis))
    out = {t.name: task_success(df, matrix[:, k]) for k, t in enumerate(infos)}
    return {name: float(v) for name, v in out.items() if v is not None}


def longer_than_context(fleet: Fleet, df: pd.DataFrame) -> tuple[np.ndarray, dict[str, str]]:
    """Per request and tier of ``fleet``, whether its prompt + output (the tier's multiplier
    applied, at least 1) is longer than the tier's ``max_model_len``: a uniform fleet of that
    tier drops it at any size. Also, per tier with such a request, why in the words of a sized
    baseline (``"drops 1 request longer (prompt + output) than fp8's max_model_len 1,500 at
    any size"``)."""
    prompt = df["input_tokens"].to_numpy(np.float64)
    output = df["output_tokens"].to_numpy(np.float64)
    longer = np.zeros((len(df), len(fleet.tiers)), dtype=bool)
    why = {}
    for k, tier in enumerate(fleet.tiers):
        context = tier.limits.max_model_len
        if not context:
            continue
        mult = tier.config.output_length_multiplier
        longer[:, k] = prompt + np.maximum(1, np.round(output * mult)) > context
        if longer[:, k].any():
            from tiersim.plan.planner import _drops_words  # the planner only to say so (0.08 s)
            from tiersim.workload.sessions import never_sent

            unsent = never_sent(df, longer[:, k])  # later task steps cut off: counted apart
            why[tier.name] = _drops_words([(tier.name, int((longer[:, k] & ~unsent).sum()),
                                            int(context))], int(unsent.sum()))
    return longer, why


def duration_of(result) -> float:
    """The run's duration: the later of the last arrival, the last finish and the end of the
    fleet's last step (``result.busy_until_s``: a pass that gave no answer still ran).
    Arrivals are the engine's (``result.arrival_s``), as in requests.parquet: a session step
    arrives when its predecessor finishes (or is dropped), not at the trace's ``arrival_s``,
    which is then a placeholder."""
    return max(metrics.span_s(np.asarray(result.arrival_s, dtype=np.float64),
                              np.asarray(result.finish_s, dtype=np.float64)),
               result.busy_until_s)
