"""``tiersim plan --robust``: size for several seeds at once (:class:`SeedsEvaluator`).

A plan is sized at the scenario's ``seed``, which draws each request's correctness on each
tier, the router's training and calibration sample (the floor router fits its cuts there) and
the router's own draws; on the default scenario the fleet planned at seed 0 misses p99 TPOT at
seeds 1, 2 and 3 (docs/planning.md, "Checking the plan at other seeds"). ``--robust`` plans
for the scenario's seed and the ``--check-seeds`` seeds after it together.

The design is the plainest one that reuses everything: one
:class:`tiersim.plan.evaluate.SimEvaluator` per seed (the scenario with only its ``seed``
changed, so each routes and simulates as a run at that seed would), behind one evaluator that
answers the planner's questions with the *worst* over the seeds (:func:`worst_outcome`): the
highest p99s (fleet and per tier), the most dropped requests, the lowest accuracy, the highest
cost. A fleet's worst case meets a limit exactly when every seed's figure does, so the planner,
its replica search, its floor margins and its comparison with the uniform fleets run unchanged
and a design is feasible only if it meets the SLOs and the accuracy floor at every seed; the
uniform fleets the saving is quoted against are sized through the same evaluator, so the saving
compares like with like. Each seed's simulations are cached by its own evaluator, as before,
and an engine run another seed's evaluator already made of the same input (the same specs on
the same workload: a uniform fleet's tier sees every request at every seed) is reused from a
store they share (:func:`tiersim.plan.evaluate.run_key`), not simulated again: the engine is
deterministic, so the plan is the same to the byte, with fewer ``simulations``. What the seed
does not change is held once for every seed, read-only: the trace (read once,
:func:`seeds_evaluator`; the seeds' tables share its columns) and each tier built on a GPU
count (:meth:`tiersim.plan.evaluate.SimEvaluator._peer_built`: its step model, whose operator
tables grow as it is asked). Each had been held once a seed: ``--check-seeds 50`` on tiny
peaked at 199 MB, 170 MB with them shared (measured, /usr/bin/time -v, 2026-12-07).
"""

from __future__ import annotations

import collections
import contextlib
from dataclasses import replace
from typing import Any

from tiersim.errors import TiersimError
from tiersim.plan.evaluate import Design, Outcome, TierOutcome
from tiersim.results_plan import costliest_key, costliest_seed

SOURCE = ("modelled: simulated by the plan's evaluator at each seed, the scenario with only its "
          "seed changed; each figure of the plan is the worst over the seeds")
"""Where the figures of a robust plan come from, as plan.json's ``robust.source`` says it."""

WORST = {"ttft_p99_s": max, "tpot_p99_s": max, "dropped": max, "accuracy": min,
         "cost_usd": max}
"""The figures a robust plan states as the worst over its seeds, and which way is worse."""


def _worst(values: list, pick) -> Any:
    """``pick`` (max or min) of the known ``values``; None when none is known (a p99 of no
    finished request: :func:`tiersim.plan.constraints._measured` reads it; the accuracy of a
    fleet no request reached)."""
    known = [v for v in values if v is not None]
    return pick(known) if known else None


def _worst_tier(tiers: list[TierOutcome]) -> TierOutcome:
    """One tier's worst over the seeds: the highest p99s and drops, the most requests and the
    highest utilisation (so a tier that served requests at any seed is held to the SLOs, under
    ``slo_scope: tier`` too); its split and techniques as at the first seed."""
    return replace(tiers[0], requests=max(t.requests for t in tiers),
                   ttft_p99_s=_worst([t.ttft_p99_s for t in tiers], max),
                   tpot_p99_s=_worst([t.tpot_p99_s for t in tiers], max),
                   dropped=max(t.dropped for t in tiers),
                   utilization=_worst([t.utilization for t in tiers], max),
                   e2e_p99_s=_worst([t.e2e_p99_s for t in tiers], max))


def worst_outcome(outcomes: list[Outcome]) -> Outcome:
    """The worst of one fleet's outcomes at several seeds, figure by figure (the module
    docstring): it meets a limit exactly when each of them does. The cost over the trace, the
    run's length (``duration_s``) and its attributed cost are one seed's, the costliest
    (:func:`costliest_key`), so "cost X over the run's N s" is the cost of that run: a worst
    cost beside another seed's longer run (under the attributed cost model, where a run's cost
    is its busy time, not its length) paired two runs. Under provisioned cost, one USD/hour at
    every seed, the costliest run is the longest, as before."""
    first = outcomes[0]
    if len(outcomes) == 1:
        return first
    names = list(first.tiers)
    costliest = max(outcomes, key=costliest_key)  # its cost and the run it is the cost of
    return Outcome(
        ttft_p99_s=_worst([o.ttft_p99_s for o in outcomes], max),
        tpot_p99_s=_worst([o.tpot_p99_s for o in outcomes], max),
        dropped=max(o.dropped for o in outcomes),
        accuracy=_worst([o.accuracy for o in outcomes], min),  # None: no request reached
        cost_usd=costliest.cost_usd,
        cost_per_hour_usd=max(o.cost_per_hour_usd for o in outcomes),
        duration_s=costliest.duration_s,
        tiers={n: _worst_tier([o.tiers[n] for o in outcomes if n in o.tiers]) for n in names},
        attributed_cost_usd=costliest.attributed_cost_usd,
        e2e_p99_s=_worst([o.e2e_p99_s for o in outcomes], max),
        session_p99_s=_worst([o.session_p99_s for o in outcomes], max),
        task_success=_worst([o.task_success for o in outcomes], min))


class SeedsEvaluator:
    """The planner's evaluator for ``--robust``: one evaluator per seed (``evaluators``, the
    plan's own seed first), answering with the worst over them (the module docstring). What
    does not depend on the seed (which GPU counts fit, the tiers, the cost model, where the
    accuracy comes from) is the first evaluator's."""

    def __init__(self, evaluators: list, seeds: list[int]):
        self.evaluators = list(evaluators)
        shared: collections.OrderedDict = collections.OrderedDict()
        for e in self.evaluators:  # a disaggregated tier at one split at every seed
            if hasattr(e, "peers"):
                e.peers = [p for p in self.evaluators if p is not e]
            if hasattr(e, "shared_runs"):  # a run another seed made of the same input: reused
                e.shared_runs = shared
        self.sized_seeds = list(seeds)
        """The seeds every design is sized for, the plan's own first."""

    def __getattr__(self, name: str):
        """What does not depend on the seed: the first seed's evaluator's."""
        if name == "evaluators":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.evaluators[0], name)

    @property
    def slo(self):
        """The p99 limits a disaggregated tier's split is chosen against, at every seed."""
        return self.evaluators[0].slo

    @slo.setter
    def slo(self, limits) -> None:
        for e in self.evaluators:
            e.slo = limits

    @property
    def simulations(self) -> int:
        """Engine runs at every seed together."""
        return sum(e.simulations for e in self.evaluators)

    @property
    def sim_wall_s(self) -> float:
        """Seconds spent simulating, at every seed together."""
        return sum(getattr(e, "sim_wall_s", 0.0) for e in self.evaluators)

    def score_realised_if_read(self, settings) -> None:
        """One basis for every seed (:meth:`SimEvaluator.score_realised_if_read`)."""
        for e in self.evaluators:
            mark = getattr(e, "score_realised_if_read", None)
            if mark is not None:
                mark(settings)

    def routing(self, design: Design):
        """The first seed's routing (its tier infos and assignment; which tiers get traffic and
        which requests are too long for a tier are read from every seed's, :meth:`routings`)
        with the lowest accuracy over the seeds, so a design
        whose routing misses the floor at any seed is routed at the next raised floor (None
        where no seed's has one: a response cache answered every request). A router refused at
        a later seed only (a budget under the cheapest tier's price over that seed's sample of
        the requests) is refused naming that seed: its verdict quoted a price the scenario's
        own seed never gives."""
        infos, assignment, accuracy = self.evaluators[0].routing(design)
        rest = []
        for seed, e in zip(self.sized_seeds[1:], self.evaluators[1:], strict=True):
            try:
                rest.append(e.routing(design)[2])
            except TiersimError as err:  # the design's verdict names the seed it failed at
                raise TiersimError(f"at seed {seed} (--robust sizes for it too): {err}"
                                   ) from None
        return infos, assignment, _worst([accuracy, *rest], min)

    def routings(self, design: Design) -> list:
        """Each seed's routing of ``design`` (tier infos, assignment, accuracy), the plan's own
        seed first: the planner reads which tiers get traffic from every one of them
        (:meth:`tiersim.plan.planner.Planner._idle`), and which requests are too long for a
        tier too (:meth:`tiersim.plan.feasibility.FeasibilityChecks._routed_tokens`), so a
        tier the plan's own seed sends nothing, but another seed does, is sized, not turned
        away as idle."""
        return [e.routing(design) for e in self.evaluators]

    @contextlib.contextmanager
    def as_configured(self):
        """Every seed's evaluator at its split tiers' own splits
        (:meth:`tiersim.plan.evaluate.SimEvaluator.as_configured`), not the first seed's alone
        (what the class's other attributes read)."""
        with contextlib.ExitStack() as stack:
            for e in self.evaluators:
                stack.enter_context(e.as_configured())
            yield self

    def outcomes(self, design: Design, replicas: dict[str, int]) -> list[Outcome]:
        """The fleet simulated at each seed (each evaluator caches its own)."""
        return [e.evaluate(design, replicas) for e in self.evaluators]

    def evaluate(self, design: Design, replicas: dict[str, int]) -> Outcome:
        """The worst over the seeds (:func:`worst_outcome`)."""
        return worst_outcome(self.outcomes(design, replicas))


def seeds_evaluator(scenario, source: str, seeds: list[int]) -> SeedsEvaluator:
    """A :class:`SeedsEvaluator` of ``scenario`` (planned as given: its cost model the plan's)
    at ``seeds``, the scenario's own first; each seed's evaluator draws the scenario with only
    its ``seed`` changed. The plan's notes are given once, at the first seed. The trace is
    read once and shared, read-only, by every seed's evaluator (the seed does not change it):
    each had read its own copy, so ``--check-seeds 1000`` held 1,001 copies of the trace."""
    import warnings

    from tiersim import inputs
    from tiersim.errors import Note
    from tiersim.plan.evaluate import SimEvaluator

    trace = inputs.load_scenario_trace(scenario, source)  # its notes and errors, as before
    evaluators = [SimEvaluator(scenario, source, trace=trace)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        for seed in seeds[1:]:
            evaluators.append(SimEvaluator(scenario.model_copy(update={"seed": seed}), source,
                                           trace=trace))
    return SeedsEvaluator(evaluators, seeds)


def robust_record(evaluator: SeedsEvaluator, result, c) -> dict[str, Any]:
    """plan.json's ``robust``: the seeds sized for and, with a plan, its fleet at each seed
    (from the search's cache: nothing is simulated again where the search judged it) and which
    seed gave each worst figure the plan states; the same per seed for the uniform fleet its
    saving is quoted against. The worst seed is found among the figures as plan.json writes
    them (rounded): two seeds' accuracies 1e-16 apart read 0.95 at both, and the line "the
    same at every seed", but ``worst_seed`` named the second."""
    from tiersim.plan.constraints import held_figures, margins
    from tiersim.results import in_margin_order
    from tiersim.results_figures import plain
    from tiersim.results_seeds import HELD_P99S

    seeds = evaluator.sized_seeds
    out: dict[str, Any] = {"source": SOURCE, "seeds": seeds, "planned_seed": seeds[0]}
    chosen = result.plan
    if chosen is None:
        return out

    def rows(design: Design, replicas: dict[str, int]) -> list[dict[str, Any]]:
        """The fleet at each seed, as ``per_seed`` writes it."""
        found = []
        for seed, o in zip(seeds, evaluator.outcomes(design, replicas), strict=True):
            total = sum(t.requests for t in o.tiers.values())
            found.append({"seed": seed, "ttft_p99_s": o.ttft_p99_s,
                          "tpot_p99_s": o.tpot_p99_s, **held_figures(o, c), "accuracy": o.accuracy,
                          "dropped": o.dropped, "cost_usd": o.cost_usd,
                          "duration_s": o.duration_s,
                          "cost_per_hour_usd": o.cost_per_hour_usd,
                          "missed": [k for k, m in in_margin_order(margins(o, c))
                                     if not m["met"]],
                          "shares": {n: t.requests / total for n, t in o.tiers.items()}
                          if total else {}})
        return found

    per_seed = rows(_searched(evaluator, chosen), chosen["replicas"])
    out["per_seed"] = per_seed
    written = plain(per_seed)  # the figures as plan.json holds them
    out["worst_seed"] = {key: _worst_at(written, key, pick) for key, pick in WORST.items()}
    out["worst_seed"]["cost_usd"] = costliest_seed(per_seed)  # the seed worst_outcome took
    out["worst_seed"].update({key: _worst_at(written, key, max) for key, _ in HELD_P99S
                              if key in per_seed[0]})  # held: where their limits are set
    base = _baseline(result)
    if base is not None:
        out["baseline_uniform_design"] = base["design"]
        out["baseline_per_seed"] = rows(_searched(evaluator, base), base["replicas"])
        out.update(_saving_seeds(per_seed, out["baseline_per_seed"], out["worst_seed"]["cost_usd"],
                                 getattr(evaluator, "cost_model", None)))
    return out


def _saving_seeds(per_seed: list[dict[str, Any]], base_rows: list[dict[str, Any]],
                  plan_seed: int, cost_model: str | None) -> dict[str, Any]:
    """Which runs the robust saving compares: the baseline's costliest seed
    (``baseline_cost_seed``; of costliest runs alike, the plan's own costliest seed, so a
    baseline that costs the same at every seed is compared at the plan's seed), and the seed
    where the plan saves least against the baseline at one seed (``least_saving_seed``,
    ``least_saving_frac``; :func:`tiersim.results.paid_share` on the plan's basis, as the seed
    check's ``vs_uniform_frac``). The saving itself is the plan's costliest run against the
    baseline's (each fleet's worst, as the designs are ranked), which can be two seeds' runs:
    the line names both, and the least one-seed saving beside it (plan57)."""
    from tiersim.results import paid_share

    shares = [(paid_share(cost_model, (p["cost_usd"], p["cost_per_hour_usd"]),
                          (b["cost_usd"], b["cost_per_hour_usd"])), p["seed"])
              for p, b in zip(per_seed, base_rows, strict=True)]
    known = [(share, seed) for share, seed in shares if share is not None]
    least = min(known, key=lambda s: s[0]) if known else (None, None)
    return {"baseline_cost_seed": costliest_seed(base_rows, prefer=plan_seed),
            "least_saving_seed": least[1], "least_saving_frac": least[0]}


def _design(entry: dict[str, Any]) -> Design:
    """A plan.json design as the planner sized it: its tiers, GPUs per replica and router
    setting (the setting as written: a multi-tier design's floor router reads them all)."""
    tiers = tuple(entry["tiers"])
    setting = tuple(sorted((entry.get("router") or {}).items())) if len(tiers) > 1 else ()
    return Design(tiers, tuple(entry["gpus_per_replica"][t] for t in tiers), setting)


def _searched(evaluator: SeedsEvaluator, entry: dict[str, Any]) -> Design:
    """The design the search simulated ``entry`` (a plan.json design) as, so that its fleet is
    the search's, from each seed's cache, not simulated again: its router setting as the
    search held it, keys its policy does not read included (a ``--choose
    router.policy=cascade`` design's floor, which plan.json leaves out:
    :func:`tiersim.plan.designs.read_setting`; rebuilt without it, the design missed every
    seed's cache and its fleet was simulated N + 1 more times, uncounted in ``simulations``).
    The design as plan.json writes it (:func:`_design`) where the search holds none such."""
    from tiersim.plan.designs import read_setting

    written = _design(entry)
    simulated = getattr(evaluator.evaluators[0], "simulated", None)  # a stand-in has none
    if not written.router or simulated is None:
        return written
    for design, replicas in simulated():
        if (design.tiers == written.tiers and design.gpus_per_replica
                == written.gpus_per_replica and replicas == entry["replicas"]
                and read_setting(design.router) == dict(written.router)):
            return design
    return written


def _baseline(result) -> dict[str, Any] | None:
    """The uniform fleet the plan's saving is quoted against, as plan.json lists it."""
    label = ((result.plan or {}).get("savings") or {}).get("baseline_uniform_design")
    return next((u for u in result.uniform if u.get("design") == label
                 and u.get("replicas")), None)


def _worst_at(rows: list[dict[str, Any]], key: str, pick) -> int | None:
    """The first seed whose ``key`` is the worst over ``rows`` (None where none is known)."""
    value = _worst([r[key] for r in rows], pick)
    return None if value is None else next(r["seed"] for r in rows if r[key] == value)
