"""``tiersim plan --check-seeds N``: whether the planned fleet, and the saving quoted for it,
hold at other seeds (:func:`check_seeds`), and that check in a few lines of text
(:func:`tiersim.results_seeds.seed_check_lines`).

A plan is sized at the scenario's ``seed``; the seed draws the correctness of each request on
each tier, the router's training and calibration sample (the floor router fits its cuts on it)
and its own draws. A routed saving sized at one seed may not survive another: the floor
router's share to the cheaper tier moves with its calibration sample's accuracy estimate. The
check simulates the planned fleet (the planned scenario.yaml with only ``seed`` changed) and the
uniform fleet its saving is quoted against, at each of seeds ``seed + 1 .. seed + N``, with the
plan's own evaluator (:class:`tiersim.plan.evaluate.SimEvaluator`, which wires a run as
:func:`tiersim.runner.run_scenario` does), and holds them to the plan's constraints as the plan
held its designs (:func:`tiersim.plan.constraints.margins`). Nothing is sized again. A
``--robust`` plan already simulated both fleets at those very seeds (plan.json
``robust.per_seed``): the check reads them from there (:data:`REUSE_ROBUST_RUNS`), the same
figures to the byte, and simulates nothing.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from tiersim.errors import Note

# the text of the check lives beside the results it reads: tests import it from here
from tiersim.results_seeds import DEFAULT_CHECK_SEEDS as DEFAULT_CHECK_SEEDS
from tiersim.results_seeds import seed_check_lines as seed_check_lines

SOURCE = ("modelled: simulated by the plan's evaluator, the planned scenario with only its "
          "seed changed")
"""Where every figure of the seed check comes from, as plan.json's ``seed_check.source`` and
the printed block say it, where every checked seed was simulated for the check
(:func:`check_source`)."""

REUSED_SOURCE = ("modelled: read from the --robust search's own runs at each seed, the planned "
                 "fleet in the scenario with only its seed changed")
"""The seed check's source where every checked seed's figures are the ``--robust`` search's own
runs there (:data:`REUSE_ROBUST_RUNS`): nothing was simulated for the check."""

LARGEST_SEED = 2**63 - 1
"""The largest ``seed`` a scenario takes (:class:`tiersim.scenario_models.Scenario`)."""


MAX_CHECK_SEEDS = 1_000
"""The most seeds ``--check-seeds`` checks: each costs an evaluator build and two or three
simulations, so ``--check-seeds 1e9`` (or a digit too many) started a check that no plan would
finish, after the whole search; the same bound as ``--choose``'s combinations
(:data:`tiersim.cli.plan_choose.MAX_CHOOSE_COMBINATIONS`), each sized by simulation too."""


REUSE_ROBUST_RUNS = True
"""Under ``--robust``, the seed check reads the planned fleet and its saving's baseline at each
seed from the search's own runs there (plan.json ``robust.per_seed`` and ``baseline_per_seed``,
:func:`_reused_row`) rather than simulating the planned scenario.yaml at those seeds again: the
same figures, to the byte, from 2 x N fewer simulations (N the seeds checked). False: simulate
them again (the other path to the same figures, which tests compare it against)."""


class DefaultCount(int):
    """``--check-seeds`` left at its default (:data:`DEFAULT_CHECK_SEEDS`), not typed: a
    scenario too near the largest seed for it is checked at the seeds there are
    (:func:`check_count`), not refused for a flag its user never gave."""


def check_count(scenario, count: int, source: str, robust: bool = False) -> int:
    """Refuse, before the search, a ``--check-seeds`` of more than :data:`MAX_CHECK_SEEDS`
    seeds, or whose last seed is past the largest seed a scenario takes (the scenario's
    ``seed`` + ``count``): found after the search, it stopped a plan minutes in. ``count`` is
    quoted as typed (``1e9``: :class:`~tiersim.numbers.WrittenWhole`). Under ``robust``
    (``--robust``, which needs one seed or more after the scenario's) a scenario at the largest
    seed is told to lower it, not to give ``--check-seeds 0``, which ``--robust`` refuses.
    The seeds to check: ``count``, or for a default one (:class:`DefaultCount`) the seeds
    there are after the scenario's, with a note (a plain ``plan`` at seed 2**63 - 3 was
    refused "--check-seeds 3: ... give at most --check-seeds 2", a flag not typed)."""
    from tiersim.errors import Note, TiersimError
    from tiersim.numbers import shown

    if count > MAX_CHECK_SEEDS:  # a 400-digit count as its first digits, as other flags show it
        typed = shown(getattr(count, "text", None) or f"{count}")
        raise TiersimError(f"--check-seeds {typed}: more than the {MAX_CHECK_SEEDS:,} seeds a "
                           "plan checks (each is an evaluator build and two or three "
                           f"simulations, after the search); give at most {MAX_CHECK_SEEDS:,}")
    if count and scenario.seed + count > LARGEST_SEED:
        room = LARGEST_SEED - scenario.seed
        if isinstance(count, DefaultCount) and (room or not robust):
            seeds = (f"the {room} seed{'s' * (room > 1)} after it only" if room else
                     "no other seed (none follows it)")
            warnings.warn(f"{source} has seed {scenario.seed}, and seed {scenario.seed} + "
                          f"{count} is past the largest seed, {LARGEST_SEED}: the plan is "
                          f"{'sized for it and' if robust else 'checked at'} {seeds}, not the "
                          f"{count} seeds --check-seeds defaults to; lower its seed for "
                          f"{count}", Note, stacklevel=3)
            return room
        fix = (f"give at most --check-seeds {room}" if room or not robust else
               "lower its seed (--robust sizes for seeds after it too), or leave out --robust")
        raise TiersimError(f"--check-seeds {count}: {source} has seed {scenario.seed}, and seed "
                           f"{scenario.seed} + {count} is past the largest seed, {LARGEST_SEED}; "
                           f"{fix}")
    return count


def check_robust(scenario, count: int, source: str) -> None:
    """Refuse, before the search, ``--robust`` with no seed besides the scenario's
    (``--check-seeds 0``): it would size for the scenario's seed alone, the plan without
    ``--robust``, under a name that says otherwise."""
    from tiersim.errors import TiersimError

    if not count:
        raise TiersimError(f"--robust with --check-seeds 0: {source} would be sized at its seed "
                           f"{scenario.seed} alone, as without --robust; give --check-seeds 1 "
                           f"or more (the seeds after {scenario.seed} to size for too), or leave "
                           "out --robust")


def check_seeds(scenario, result, source: str, max_replicas: int | None, count: int,
                today=None) -> dict[str, Any] | None:
    """plan.json's ``seed_check``: the plan's fleet and its saving's uniform baseline at the
    plan's seed (its own figures) and simulated at each of the ``count`` seeds after it; None
    with ``count`` 0 or no plan. ``scenario`` is the scenario planned (its cost model the
    plan's), ``max_replicas`` the limit the plan sized under (written into the planned
    scenario as :func:`tiersim.cli.plan.write_plan` writes it). ``today``: today's fleet
    (:class:`tiersim.cli.plan_current.Today`), checked at the same seeds too
    (:func:`today_check`), except under ``--robust``, where its figures are already the worst
    over them."""
    from tiersim.cli.plan_scenario import planned_doc
    from tiersim.plan.constraints import Constraints

    chosen = result.plan
    if not count or chosen is None:
        return None
    c = Constraints(**result.constraints)
    doc = planned_doc(scenario, result, max_replicas)  # the scenario.yaml the plan writes
    saving = chosen.get("savings") or {}
    base = _baseline(result, saving.get("baseline_uniform_tier"))
    same = base is not None and base["replicas"] == chosen["replicas"] \
        and base["gpus_per_replica"] == chosen["gpus_per_replica"]
    t0 = time.perf_counter()
    robust = getattr(result, "robust", None)
    rows = [_planned_row(scenario.seed, chosen, base, result.cost_model, robust)]
    plan_costs: dict[int, tuple[float, float]] = {}  # the plan's costs at each checked seed
    reusable = REUSE_ROBUST_RUNS and robust and not result.splits
    reused, simulated = [], []
    for k in range(1, count + 1):
        seed = scenario.seed + k
        row = _reused_row(seed, robust, base, result.cost_model, plan_costs) if reusable \
            else None
        (reused if row is not None else simulated).append(seed)
        if row is None:  # not sized for this seed (or a split chosen after the search)
            row = _seed_row(scenario, doc, source, seed, c, base, same, result.cost_model,
                            plan_costs)
        rows.append(row)
    out = {**_summary(rows, chosen, base, same, saving),
           "source": check_source(reused, simulated),
           "accuracy_basis": (chosen.get("accuracy_sources") or {}).get("basis"),
           "accuracy_floor": c.accuracy_floor}
    if not robust:  # a robust plan's rejected designs missed at one of these very seeds
        rejected = rejected_check(scenario, result, source, c, base, plan_costs)
        if rejected:
            out["rejected"] = rejected
    if today is not None and not robust:
        out["current"] = today_check(scenario, result, source, c, today,
                                     [r["seed"] for r in rows[1:]])
    return {**out, "wall_s": time.perf_counter() - t0}


def today_check(scenario, result, source: str, c, today, seeds: list[int]) -> dict[str, Any]:
    """plan.json's ``seed_check.current``: today's fleet simulated at each checked seed by an
    evaluator of the scenario searched with only its seed changed (as
    :func:`rejected_check` simulates the fleets the plan turned away), a disaggregated tier
    at the split its scenario gives it (as plan.json ``current``; before, at its best split
    there, review56), held to the plan's constraints: its p99s (end-to-end and task latency
    where held, as the plan's rows give them), accuracy, drops and what it missed there
    (``per_seed``), and the seeds where it met every constraint (``met_seeds``). The plan's
    own seed is plan.json's ``current``. Asks whether today's fleet, as the plan, holds at
    other draws: a saving against a fleet that misses at them is part the price of meeting
    the constraints."""
    from tiersim.cli.plan_current import design_of
    from tiersim.plan.constraints import held_figures, margins
    from tiersim.plan.evaluate import SimEvaluator

    design, replicas = design_of(today)
    settings = [tuple(sorted((d.get("router") or {}).items()))
                for d in [result.plan, *result.runners_up] if len(d.get("tiers") or ()) > 1]
    rows = []
    for seed in seeds:
        with warnings.catch_warnings():  # the plan's own notes again, once a seed: said already
            warnings.simplefilter("ignore", Note)
            evaluator = SimEvaluator(scenario.model_copy(update={"seed": seed}), source,
                                     cost_model=result.cost_model)
            evaluator.slo = (c.ttft_p99_s, c.tpot_p99_s, c.e2e_p99_s)
            evaluator.score_realised_if_read(settings)  # the plan's basis (realised or not)
            with evaluator.as_configured():  # at today's split, as plan.json current runs it
                o = evaluator.evaluate(design, dict(replicas))
        rows.append({"seed": seed, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
                     **held_figures(o, c), "accuracy": o.accuracy, "dropped": o.dropped,
                     "missed": [k for k, m in _ordered(margins(o, c)) if not m["met"]]})
    return {"met_seeds": [r["seed"] for r in rows if not r["missed"]], "per_seed": rows}


def check_source(reused: list[int], simulated: list[int]) -> str:
    """The seed check's ``source``: :data:`SOURCE` where every checked seed was simulated,
    :data:`REUSED_SOURCE` where every one was read from the ``--robust`` search's runs, and
    which seeds were which where both. Before, it read "simulated by the plan's evaluator"
    where, under ``--robust``, nothing was simulated for the check."""
    if not reused:
        return SOURCE
    if not simulated:
        return REUSED_SOURCE

    def seeds(which: list[int]) -> str:
        return f"seed{'s' * (len(which) > 1)} {', '.join(str(s) for s in which)}"

    return (f"modelled: {seeds(reused)} read from the --robust search's own runs there, "
            f"{seeds(simulated)} simulated by the plan's evaluator, the planned fleet in the "
            "scenario with only its seed changed")


def _baseline(result, tier: str | None) -> dict[str, Any] | None:
    """The plan's uniform fleet of ``tier`` (the one its saving is quoted against), or None."""
    if tier is None:
        return None
    for other in result.uniform:
        if list(other.get("replicas") or {}) == [tier]:
            return other
    return None


def _planned_row(seed: int, chosen: dict, base: dict | None, cost_model: str | None,
                 robust: dict | None = None) -> dict:
    """The plan's own seed, from the plan's figures (simulated by the search); of a plan sized
    for several seeds (``robust``, plan.json's), whose figures are the worst over them, that
    seed's own figures from its record."""
    from tiersim.results import paid_share

    if robust and robust.get("per_seed"):
        return _robust_row(seed, robust, base is not None, cost_model)
    row = {"seed": seed, "planned": True, "ttft_p99_s": chosen.get("ttft_p99_s"),
           "tpot_p99_s": chosen.get("tpot_p99_s"), "accuracy": chosen.get("accuracy"),
           "dropped": chosen.get("dropped"),
           **_held(chosen, chosen.get("margins") or {}),
           "missed": [k for k, m in _ordered(chosen.get("margins") or {}) if not m.get("met")],
           "shares": _shares(chosen.get("per_tier") or {})}
    if base is not None:  # chosen as the baseline for meeting every constraint there
        row["baseline_missed"] = []
        row["vs_uniform_frac"] = paid_share(cost_model, (chosen["cost_usd"],
                                                         chosen["cost_per_hour_usd"]),
                                            (base["cost_usd"], base["cost_per_hour_usd"]))
    return row


def _robust_row(seed: int, robust: dict, based: bool, cost_model: str | None) -> dict:
    """The plan's own seed of a plan sized for several seeds: its figures there, from plan.json's
    ``robust.per_seed`` (and ``baseline_per_seed`` for the saving). ``based`` (a saving is
    quoted) with no baseline row at ``seed``: a RuntimeError, not the plan's own row as its
    baseline (which read a 0 % saving there, from no baseline figure)."""
    from tiersim.results import paid_share

    own = next(r for r in robust["per_seed"] if r["seed"] == seed)
    row = {"seed": seed, "planned": True,
           **{k: own[k] for k in ("ttft_p99_s", "tpot_p99_s", "accuracy", "dropped", "missed",
                                  "shares")}, **_held(own)}
    if based:  # the baseline's own row there, never the plan's (a saving of 0 % from nowhere)
        b = next((r for r in robust.get("baseline_per_seed") or [] if r["seed"] == seed), None)
        if b is None:
            raise RuntimeError(f"plan.robust has no baseline_per_seed row for seed {seed}, "
                               "but the plan quotes a saving against a uniform fleet there: "
                               "its saving at that seed has no baseline figure to come from")
        row["baseline_missed"] = list(b["missed"])
        row["vs_uniform_frac"] = paid_share(cost_model, (own["cost_usd"],
                                                         own["cost_per_hour_usd"]),
                                            (b["cost_usd"], b["cost_per_hour_usd"]))
    return row


def _reused_row(seed: int, robust: dict, base: dict | None, cost_model: str | None,
                plan_costs: dict) -> dict | None:
    """The planned fleet (and the saving's baseline) at ``seed`` as a ``--robust`` search
    already simulated it there (plan.json's ``robust.per_seed`` and ``baseline_per_seed``), in
    the row :func:`_seed_row` would simulate: the same engine runs, the same figures (the
    planned scenario.yaml at ``seed`` is the scenario searched with only its seed changed and
    the plan's fleet; ``tests/test_round54_speed54_reuse.py`` holds the two to the byte). None
    where the record has no row at ``seed`` (or none of the baseline, where a saving is
    quoted): the caller simulates it as before. The planned fleet's costs go into
    ``plan_costs`` under ``seed``."""
    from tiersim.results import paid_share

    own = next((r for r in robust.get("per_seed") or [] if r["seed"] == seed), None)
    if own is None:
        return None
    b = None
    if base is not None:
        b = next((r for r in robust.get("baseline_per_seed") or [] if r["seed"] == seed), None)
        if b is None:
            return None
    row = {"seed": seed, **{k: own[k] for k in ("ttft_p99_s", "tpot_p99_s", "accuracy",
                                                "dropped")}, **_held(own),
           "missed": list(own["missed"]), "shares": dict(own["shares"])}
    plan_costs[seed] = (own["cost_usd"], own["cost_per_hour_usd"])
    if b is not None:
        row["baseline_missed"] = list(b["missed"])
        row["vs_uniform_frac"] = paid_share(cost_model, (own["cost_usd"],
                                                         own["cost_per_hour_usd"]),
                                            (b["cost_usd"], b["cost_per_hour_usd"]))
    return row


def _seed_row(scenario, doc: dict, source: str, seed: int, c, base: dict | None, same: bool,
              cost_model: str | None, plan_costs: dict | None = None) -> dict:
    """The planned fleet (and the saving's baseline) simulated at ``seed``; the planned
    fleet's (cost over the trace, USD/hour) there go into ``plan_costs`` under ``seed``. The
    planned fleet's disaggregated tiers run at the split the planned scenario writes
    (:meth:`~tiersim.plan.evaluate.SimEvaluator.as_configured`), as a run of it at ``seed``
    does; before, at the best split at ``seed``, which the plan may not write (review55)."""
    from tiersim.plan.constraints import held_figures, margins
    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.results import paid_share
    from tiersim.scenario import scenario_from_dict

    with warnings.catch_warnings():  # the plan's own notes again, once a seed: said already
        warnings.simplefilter("ignore", Note)
        seeded = scenario_from_dict(as_searched_seed(doc, scenario, seed), source)
        evaluator = SimEvaluator(seeded, source, cost_model=cost_model)
        # a split chosen as the plan chose it
        evaluator.slo = (c.ttft_p99_s, c.tpot_p99_s, c.e2e_p99_s)
        design = Design(tuple(t.name for t in seeded.tiers),
                        tuple(t.gpus_per_replica for t in seeded.tiers))
        # at the split the planned scenario writes, as a run of it does (not its best here)
        with evaluator.as_configured():
            o = evaluator.evaluate(design, {t.name: t.replicas for t in seeded.tiers})
        row = {"seed": seed, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
               "accuracy": o.accuracy, "dropped": o.dropped, **held_figures(o, c),
               "missed": [k for k, m in _ordered(margins(o, c)) if not m["met"]],
               "shares": _shares({n: {"requests": t.requests} for n, t in o.tiers.items()})}
        if plan_costs is not None:
            plan_costs[seed] = (o.cost_usd, o.cost_per_hour_usd)
        if base is None:
            return row
        if same:  # the plan is its own baseline: nothing more to simulate
            b = o
        else:
            tier = next(iter(base["replicas"]))
            b = evaluator.evaluate(Design((tier,), (base["gpus_per_replica"][tier],)),
                                   dict(base["replicas"]))
    row["baseline_missed"] = [k for k, m in _ordered(margins(b, c)) if not m["met"]]
    row["vs_uniform_frac"] = paid_share(cost_model, (o.cost_usd, o.cost_per_hour_usd),
                                        (b.cost_usd, b.cost_per_hour_usd))
    return row


def _order(design: dict, cost_model: str | None) -> tuple:
    """A plan.json design's place in the order fleets are chosen in
    (:func:`tiersim.results.paid_order`, as the planner ranks its plan and the saving's
    baseline)."""
    from tiersim.results import paid_order

    return paid_order(cost_model, design["cost_usd"], design["cost_per_hour_usd"],
                      len(design.get("tiers") or design["replicas"]),
                      sum(design["replicas"].values()), design.get("accuracy"))


def cheaper_rejected(scenario, result, base: dict | None) -> list[tuple[dict, str]]:
    """The sized designs the plan turned away at its seed that rank before the plan (``plan``:
    had they met every constraint there, one of them would be the plan) or, for a uniform
    fleet, before the saving's baseline (``baseline``: the saving would be quoted against it),
    each with that role, in the order fleets are chosen in. A design turned away unsized (its
    routing missed the floor or sent a tier nothing) has no fleet to check and no cost to rank
    by, and a baseline-only tier's fleet is never a plan."""
    chosen, model = result.plan, result.cost_model
    only = {t.name for t in getattr(scenario, "baselines", ())}
    plan_rank = _order(chosen, model)
    base_rank = None if base is None or base is chosen else _order(base, model)
    found = []
    for d in [*result.runners_up, *result.uniform]:
        if d.get("feasible") or not d.get("replicas") or d.get("cost_usd") is None \
                or d.get("cost_per_hour_usd") is None:
            continue
        rank = _order(d, model)
        single = len(d["replicas"]) == 1
        if rank < plan_rank and not (single and set(d["replicas"]) <= only):
            found.append((rank, d, "plan"))
        elif single and base_rank is not None and rank < base_rank:
            found.append((rank, d, "baseline"))
    return [(d, role) for _, d, role in sorted(found, key=lambda x: x[0])]


def rejected_check(scenario, result, source: str, c, base: dict | None,
                   plan_costs: dict[int, tuple[float, float]]) -> list[dict[str, Any]]:
    """plan.json's ``seed_check.rejected``: each fleet :func:`cheaper_rejected` finds, at its
    size from the search, simulated at each checked seed by an evaluator of the scenario
    searched with only its seed changed (as ``--robust`` would simulate it there) and held to
    the plan's constraints, so the check can say where the plan's choice, or its saving's
    baseline, hinges on the plan's own seed (a uniform FP8 fleet missing the floor at seed 0
    only left the saving quoted against BF16). Nothing is sized again; no evaluator is built
    where there is no such fleet. ``plan_costs``: the planned fleet's (cost over the trace,
    USD/hour) at each checked seed."""
    from tiersim.errors import TiersimError
    from tiersim.plan.constraints import held_figures, margins
    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.results import paid, paid_share

    found = cheaper_rejected(scenario, result, base)
    if not found:
        return []
    model, chosen = result.cost_model, result.plan
    settings = [tuple(sorted((d.get("router") or {}).items()))
                for d in [chosen, *result.runners_up] if len(d.get("tiers") or ()) > 1]

    def design_of(d: dict) -> Design:
        tiers = tuple(d.get("tiers") or d["replicas"])
        setting = tuple(sorted((d.get("router") or {}).items())) if len(tiers) > 1 else ()
        return Design(tiers, tuple(d["gpus_per_replica"][t] for t in tiers), setting)

    records = []
    for d, role in found:
        missed = [k for k, m in _ordered(d.get("margins") or {}) if not m.get("met")]
        record = {"design": d["design"], "tiers": list(d.get("tiers") or d["replicas"]),
                  "router": dict(d.get("router") or {}), "replicas": dict(d["replicas"]),
                  "gpus_per_replica": dict(d["gpus_per_replica"]), "ranks_before": role,
                  "missed_at_planned_seed": missed or ["other"],
                  "dearer_than_plan_frac": _dearer(paid(model, d["cost_usd"],
                                                        d["cost_per_hour_usd"]),
                                                   paid(model, chosen["cost_usd"],
                                                        chosen["cost_per_hour_usd"])),
                  "met_seeds": [], "per_seed": []}
        if role == "baseline":
            record["dearer_than_baseline_frac"] = _dearer(
                paid(model, d["cost_usd"], d["cost_per_hour_usd"]),
                paid(model, base["cost_usd"], base["cost_per_hour_usd"]))
        records.append(record)
    for seed, costs in plan_costs.items():
        with warnings.catch_warnings():  # the plan's own notes again, once a seed: said already
            warnings.simplefilter("ignore", Note)
            evaluator = SimEvaluator(scenario.model_copy(update={"seed": seed}), source,
                                     cost_model=model)
            # a split chosen as the plan chose it
            evaluator.slo = (c.ttft_p99_s, c.tpot_p99_s, c.e2e_p99_s)
            evaluator.score_realised_if_read(settings)  # the plan's basis (realised or not)
            for (d, _), record in zip(found, records, strict=True):
                try:  # routed first (kept for evaluate): its refusal alone is the "router"
                    evaluator.routing(design_of(d))  # verdict, as in Planner._size
                except (TiersimError, ValueError):  # its router refused at this seed
                    record["per_seed"].append({"seed": seed, "ttft_p99_s": None,
                                               "tpot_p99_s": None, "accuracy": None,
                                               "dropped": None, "missed": ["router"],
                                               "vs_fleet_frac": None})
                    continue
                o = evaluator.evaluate(design_of(d), dict(d["replicas"]))  # a fault: raised
                row_missed = [k for k, m in _ordered(margins(o, c)) if not m["met"]]
                record["per_seed"].append({
                    "seed": seed, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
                    **held_figures(o, c), "accuracy": o.accuracy, "dropped": o.dropped,
                    "missed": row_missed,
                    "vs_fleet_frac": paid_share(model, costs, (o.cost_usd, o.cost_per_hour_usd))})
                if not row_missed:
                    record["met_seeds"].append(seed)
    return records


def _dearer(theirs: float | None, plans: float | None) -> float | None:
    """``theirs / plans - 1`` (below 0 where cheaper), float noise aside; None where either is
    unknown or ``plans`` is 0."""
    from tiersim.results_savings import saved_share, without_noise

    if theirs is None or plans is None:
        return None
    share = saved_share(theirs, plans)
    return None if share is None else without_noise(-share)


def as_searched_seed(doc: dict, scenario, seed: int) -> dict:
    """The planned scenario ``doc`` at ``seed``, its trace named as the search read it
    (:func:`tiersim.cli.plan_scenario.as_searched`)."""
    from tiersim.cli.plan_scenario import as_searched

    return as_searched({**doc, "seed": seed}, scenario)


def _ordered(margins: dict) -> list[tuple[str, Any]]:
    """A map by constraint in the order the plan prints its margins (TTFT, TPOT, drops,
    accuracy: :data:`tiersim.results.MARGIN_ORDER`)."""
    from tiersim.results import in_margin_order

    return in_margin_order(margins)


def _held(found: dict, margins: dict | None = None) -> dict[str, Any]:
    """The fleet's end-to-end and task p99s (:data:`tiersim.results_seeds.HELD_P99S`) that
    ``found`` (a design, or a robust row) gives: given only where the plan holds their limits.
    A design of a plan.json written before round 56 gives them only in its ``margins``, whose
    value under ``slo.scope: tier`` is the worst of the fleet's and each tier's own: read there
    only then (the planned seed's row read a tier's there, the other seeds' the fleet's,
    review56)."""
    from tiersim.results_seeds import HELD_P99S

    return {key: found[key] if key in found else margins[key].get("value")
            for key, _ in HELD_P99S if key in found or key in (margins or {})}


def _held_keys(rows: list[dict]) -> list[str]:
    """The end-to-end and task p99s the seed check's rows give (its ``ranges`` span them)."""
    from tiersim.results_seeds import HELD_P99S

    return [key for key, _ in HELD_P99S if any(key in r for r in rows)]


def _shares(per_tier: dict) -> dict[str, float]:
    """Each tier's share of the requests routed to it."""
    total = sum(int(t.get("requests") or 0) for t in per_tier.values())
    return {n: int(t.get("requests") or 0) / total for n, t in per_tier.items()} if total else {}


def _span(values: list) -> list | None:
    """[min, max] of the known ``values``; None when none is known."""
    known = [v for v in values if v is not None]
    return [min(known), max(known)] if known else None


def _summary(rows: list[dict], chosen: dict, base: dict | None, same: bool,
             saving: dict) -> dict[str, Any]:
    """plan.json's ``seed_check`` from its rows: counts, ranges and where it failed."""
    met = [r["seed"] for r in rows if not r["missed"]]
    failed: dict[str, list[int]] = {}
    for r in rows:
        for key in r["missed"]:
            failed.setdefault(key, []).append(r["seed"])
    failed_list = [{"constraint": k, "seeds": v} for k, v in _ordered(failed)]
    tiers = list(chosen.get("tiers") or [])
    out: dict[str, Any] = {
        "source": SOURCE,
        "seeds": [r["seed"] for r in rows],
        "planned_seed": rows[0]["seed"],
        "design": chosen.get("design"),
        "tiers": tiers,
        "met_seeds": met,
        "failed": failed_list,
        "ranges": {key: _span([r.get(key) for r in rows])
                   for key in ("ttft_p99_s", "tpot_p99_s", *_held_keys(rows), "accuracy",
                               "vs_uniform_frac")},
        "share_ranges": ({t: _span([r["shares"].get(t) for r in rows]) for t in tiers}
                         if len(tiers) > 1 else {}),
        "per_seed": rows,
        "baseline_uniform_tier": None if base is None else next(iter(base["replicas"])),
        "baseline_is_plan": same,
        "saving_basis": saving.get("saving_basis"),
    }
    if base is not None:
        out["baseline_met_seeds"] = [r["seed"] for r in rows if not r["baseline_missed"]]
    return out
