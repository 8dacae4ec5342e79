"""The planned scenario: the scenario as a plan sizes it (:func:`planned_scenario`), each
disaggregated tier's prefill/decode split chosen (:func:`with_disaggregation`) and applied
(:func:`apply_split`), written as the plan folder's scenario.yaml and run there.
"""

from __future__ import annotations

from typing import Any

from tiersim.results import PlanResult


def with_disaggregation(scenario, result: PlanResult, source: str,
                        seeds: tuple[int, ...] = ()) -> PlanResult:
    """For each planned tier with a ``disaggregation`` block and two replicas or more, in the
    scenario's order, choose its prefill/decode split: every split of its planned replicas and
    aggregated serving on the same GPUs are simulated (:func:`tiersim.disagg.compare_splits`),
    the tiers before it at the splits chosen for them and those after at their configured
    proportion, as the planner sized them (:meth:`tiersim.plan.evaluate.SimEvaluator._whole`);
    the best by SLO score is kept. The first tier's choice is ``disaggregation``, the others'
    ``other_splits``. Before, only the first tier's split was chosen, and a second one, sized
    at its best split, was written at all but one replica prefilling, which its run did not
    meet. ``seeds``: the other seeds a ``--robust`` plan was sized for; each split is then
    ranked by its worst over the plan's seed and those (:func:`_split_choice`), as the search
    chose it (:meth:`tiersim.plan.evaluate.SimEvaluator._worst_score`), not at the plan's seed
    alone, which could write a split that a seed it was sized for ranks below another. Each
    split record gives the seconds its comparison took (``wall_s``, round 56), which the plan's
    head line names beside the search's (:func:`tiersim.results_plan_lines.time_words`)."""
    import dataclasses
    import time

    from tiersim.scenario import scenario_from_dict

    if result.plan is None:
        return result
    doc = planned_scenario(scenario, result.plan, result.constraints.get("accuracy_floor"))
    doc["slo"] = planned_slo(result.constraints)
    chosen = []
    for tier in [t["name"] for t in doc["tiers"] if t.get("disaggregation")]:
        t0 = time.perf_counter()
        split = _split_choice(scenario_from_dict(as_searched(doc, scenario), source), tier,
                              [scenario_from_dict(as_searched({**doc, "seed": seed}, scenario),
                                                  source) for seed in seeds])
        split["wall_s"] = time.perf_counter() - t0  # the head line names it beside the search
        doc = apply_split(doc, [split])
        chosen.append(split)
    if not chosen:
        return result
    return dataclasses.replace(result, disaggregation=chosen[0],
                               other_splits=tuple(chosen[1:]))


def _split_choice(scenario, tier: str, others: list | None = None) -> dict[str, Any]:
    """Every split of one planned tier and aggregated serving, simulated, and the best by SLO
    score, as plan.json's ``disaggregation`` writes them (the figures at the plan's seed).
    ``others``: the scenario at the other seeds of a ``--robust`` plan; the splits are then
    ranked by their worst rank over every seed (a seed where the tier serves no request has no
    latency to rank by, and is left out)."""
    from tiersim.disagg import compare_splits, split_limits
    from tiersim.errors import TiersimError
    from tiersim.metrics import split_rank

    rows = compare_splits(scenario, tier)
    if others:
        limits = split_limits(scenario)
        worst = {r.label: split_rank(r.ttft_p99_s, r.tpot_p99_s, limits, r.dropped,
                                     r.e2e_p99_s) for r in rows}
        for other in others:
            try:
                seen = compare_splits(other, tier)
            except TiersimError:  # serves no request at that seed: nothing to rank by
                continue
            for r in seen:
                worst[r.label] = max(worst[r.label], split_rank(r.ttft_p99_s, r.tpot_p99_s,
                                                                limits, r.dropped,
                                                                r.e2e_p99_s))
        rows = sorted(rows, key=lambda r: worst[r.label])  # ties: as ranked at the plan's seed
    best = rows[0]
    return {"tier": tier,
            "chosen": {"prefill_replicas": best.prefill, "decode_replicas": best.decode,
                       "label": best.label, "score": best.score},
            "splits": [{"label": r.label, "prefill_replicas": r.prefill,
                        "decode_replicas": r.decode, "ttft_p99_s": r.ttft_p99_s,
                        "tpot_p99_s": r.tpot_p99_s, "score": r.score,
                        # scored too where the end-to-end limit is held (its score reads it)
                        **({} if r.e2e_p99_s is None else {"e2e_p99_s": r.e2e_p99_s})}
                       for r in rows]}


def planned_scenario(scenario, plan: dict[str, Any], floor: float | None,
                     max_replicas: int | None = None) -> dict[str, Any]:
    """The scenario as the plan sizes it: the kept tiers at their replicas and GPUs per
    replica, the others under ``baselines:`` (with the scenario's own), so a run of it
    sizes the uniform fleets the plan measured its saving against; the planned router, the
    floor and SLOs planned for, and the replica limit the plan sized under
    (:func:`_carry_max_replicas`) (the user files it names made absolute, so that the copy
    reruns from the plan folder)."""
    from tiersim.plan.evaluate import design_router, scores_realised
    from tiersim.runner import portable_paths

    doc = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.pop("sweep", None)
    doc.pop("plan", None)  # today's fleet: what this plan is compared with, not the plan
    tiers, left = [], []
    for tier in doc["tiers"]:
        if tier["name"] not in plan["replicas"]:
            left.append(tier)
            continue
        tier["replicas"] = plan["replicas"][tier["name"]]
        tier["gpus_per_replica"] = plan["gpus_per_replica"][tier["name"]]
        if tier["gpus_per_replica"] % tier.get("data_parallel", 1):
            tier["data_parallel"] = 1  # as the planner sized it (SimEvaluator.tier_config)
        _resplit(tier)
        tiers.append(tier)
    doc["tiers"] = tiers
    if scenario.cost_model != "fixed_per_request":
        _drop_unread_prices(left)
    if left or doc.get("baselines"):
        doc["baselines"] = [*left, *doc.get("baselines", [])]
    # the plan scored every design on realised draws (the scenario's router, or a chosen
    # setting, reads them): the router written keeps that basis and routes as the plan did
    realised = ((plan.get("accuracy_sources") or {}).get("basis") == "realised"
                or scores_realised(scenario))
    router = doc.get("router", {})
    if len(tiers) == 1:
        kept = {k: v for k, v in router.items() if k == "response_cache"}
        doc["router"] = design_router({"policy": "uniform", **kept}, (), realised)
    else:
        doc["router"] = design_router(router, tuple(plan["router"].items()), realised,
                                      [t.name for t in scenario.tiers])
    if floor is not None:
        doc["accuracy_floor"] = floor
    _carry_max_replicas(doc, scenario, max_replicas)
    _baselines_within_limit(doc, scenario)
    return portable_paths(doc, scenario.source)


def planned_slo(constraints: dict[str, Any]) -> dict[str, Any]:
    """The planned scenario's ``slo``: the limits planned for and, where it is ``tier``, their
    scope (plan.json's ``constraints.slo_scope``). Without it the plan folder's scenario.yaml
    and its run read the default ``fleet`` scope: a plan sized every tier to the limits and
    its run, or a rerun of scenario.yaml, held only the fleet's p99."""
    slo = {"ttft_p99_s": constraints["ttft_p99_s"], "tpot_p99_s": constraints["tpot_p99_s"]}
    for key in ("e2e_p99_s", "session_p99_s"):  # the end-to-end and task limits, where set
        if constraints.get(key) is not None:
            slo[key] = constraints[key]
    if constraints.get("slo_scope"):
        slo["scope"] = constraints["slo_scope"]
    return slo


def _drop_unread_prices(left: list[dict[str, Any]]) -> None:
    """Drop ``cost_per_request_usd`` from the tiers a plan under a cost model other than
    fixed_per_request leaves out (written under ``baselines:``): a baseline-only tier's price
    is read only under fixed_per_request, so the planned scenario's run noted 'baseline w4a16:
    cost_per_request_usd ... changes nothing; remove it' of a tier the user's scenario lists
    as a tier, whose price was read there (``fixed_per_request_cost_usd``)."""
    for tier in left:
        tier.pop("cost_per_request_usd", None)


def _baselines_within_limit(doc: dict[str, Any], scenario) -> None:
    """Lower each ``baselines:`` entry of the planned scenario ``doc`` to its
    ``limits.max_replicas`` (a lower ``--max-replicas`` is written there): a tier the plan
    leaves out keeps the replicas the scenario gave it, which a run refuses above that limit,
    and a baseline's own count is never used (a run sizes it by simulation)."""
    limit = (doc.get("limits") or {}).get("max_replicas", scenario.limits.max_replicas)
    for tier in doc.get("baselines") or []:
        if tier.get("replicas", 1) > limit:
            tier["replicas"] = limit
            _resplit(tier)


def as_searched(doc: dict[str, Any], scenario) -> dict[str, Any]:
    """A copy of the planned scenario ``doc`` whose trace path is the scenario's own, as the
    search read it (resolved from the same scenario file, so the same file): a simulation of
    the plan then names the trace as the search did, and each of the trace's notes prints
    once, not again under its absolute path."""
    return {**doc, "trace": {**doc["trace"], "path": scenario.trace.path}}


def _carry_max_replicas(doc: dict[str, Any], scenario, max_replicas: int | None) -> None:
    """Write ``--max-replicas`` into the planned scenario's ``limits`` when it differs from the
    limit a run of that scenario sizes its uniform baselines under
    (:func:`tiersim.savings.baseline_replica_limit`: the scenario's ``limits.max_replicas``),
    below it: the run's baselines are then sized as the plan's were, and the two
    agree on the saving."""
    from tiersim.savings import baseline_replica_limit

    if max_replicas is not None and max_replicas != baseline_replica_limit(scenario):
        doc.setdefault("limits", {})["max_replicas"] = max_replicas


def _resplit(tier: dict[str, Any]) -> None:
    """Keep a tier's ``disaggregation`` block valid at its planned replica count: its
    configured proportion carried to that count, as the planner runs a split it has not chosen
    yet (:func:`tiersim.fleet.proportional_prefill`), until :func:`with_disaggregation`
    replaces it with the chosen one; none when one replica cannot be split. Before, all but
    one replica prefilling, a split the planner never ran."""
    from tiersim.fleet import proportional_prefill

    split = tier.get("disaggregation")
    if not split:
        return
    count = tier["replicas"]
    if count < 2:
        tier.pop("disaggregation")
    elif split["prefill_replicas"] + split["decode_replicas"] != count:
        prefill = proportional_prefill(split["prefill_replicas"], split["decode_replicas"],
                                       count)
        tier["disaggregation"] = {**split, "prefill_replicas": prefill,
                                  "decode_replicas": count - prefill}


def apply_split(doc: dict[str, Any], splits: list[dict[str, Any]]) -> dict[str, Any]:
    """The planned scenario with each chosen prefill/decode split (aggregated: no block)."""
    by_tier = {split["tier"]: split["chosen"] for split in splits}
    for tier in doc["tiers"]:
        chosen = by_tier.get(tier["name"])
        if chosen is not None:
            if not chosen["prefill_replicas"]:
                tier.pop("disaggregation", None)
            else:
                tier["disaggregation"] = {**tier["disaggregation"],
                                          "prefill_replicas": chosen["prefill_replicas"],
                                          "decode_replicas": chosen["decode_replicas"]}
    return doc


def planned_doc(scenario, result: PlanResult, max_replicas: int | None) -> dict[str, Any]:
    """The planned ``scenario.yaml`` of a plan with a fleet, as a map: the planned scenario
    (:func:`planned_scenario`) at each chosen split (:func:`apply_split`) and the SLOs planned
    for (:func:`planned_slo`). :func:`tiersim.cli.plan.write_plan` writes and runs it; the seed
    check (:func:`tiersim.cli.plan_seeds.check_seeds`) simulates it at other seeds."""
    doc = apply_split(planned_scenario(scenario, result.plan,
                                       result.constraints.get("accuracy_floor"), max_replicas),
                      result.splits)
    doc["slo"] = planned_slo(result.constraints)
    return doc
