"""A plan put together from its sized designs (:class:`PlanAssembly`, mixed into
:class:`tiersim.plan.planner.Planner`): the design of least cost, what it saves against the
uniform fleets and what one replica fewer in each tier misses, and each runner-up and uniform
fleet against it, in the order designs are chosen in."""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

from tiersim.errors import Note
from tiersim.plan.constraints import _missed
from tiersim.plan.designs import DesignResult, _by_cost, raised_floors
from tiersim.plan.ranking import (
    BASELINE_ONLY,
    _costs,
    _dearer,
    _dearer_share,
    _over_trace,
    _plan_order,
    _simpler,
    _tie,
    compare,
    drain_gap,
)
from tiersim.results import (
    PlanResult,
    basis_words,
    figure_text,
    paid,
    percent_text,
    saving_basis,
)


class PlanAssembly:
    """The planner's plan, runner-ups and uniform fleets from its sized designs. A mixin of
    :class:`tiersim.plan.planner.Planner`: it calls the planner's ``best`` and ``subsets`` and
    reads its ``scenario``, ``evaluator``, ``c``, ``choose``, ``baseline_names`` and
    ``judged``."""

    # ---- the plan ----------------------------------------------------------------------------
    def uniform(self) -> list[DesignResult]:
        """Every single-tier fleet, sized (whether or not it meets the floor), the
        baseline-only tiers' last."""
        return [self.best(s) for s in self.subsets((1,))] + self._baseline_fleets()

    def _baseline_fleets(self) -> list[DesignResult]:
        """The baseline-only tiers' uniform fleets, sized."""
        return [self.best((name,)) for name in self.baseline_names]

    def plan(self, sizes: tuple[int, ...] | None = None) -> PlanResult:
        """Size every design; the cheapest feasible one is the plan."""
        t0 = time.perf_counter()
        results = [self.best(s) for s in self.subsets(sizes)]
        feasible = sorted((r for r in results if r.feasible), key=self._ranked)
        best = feasible[0] if feasible else None
        self._note_floors_not_raised(feasible)
        uniform = [r for r in results if len(r.design.tiers) == 1] + self._baseline_fleets()
        others = [r for r in results if r is not best and len(r.design.tiers) > 1]
        return PlanResult(
            scenario=self.scenario.name, constraints=self.c.as_dict(),
            plan=self._plan_dict(best, uniform) if best else None,
            runners_up=tuple(self._runner_up(r, best) for r in self._in_plan_order(others)),
            uniform=tuple(self._sourced(self._runner_up(r, best), r) for r in uniform),
            reason=None if best else "; ".join(f"{r.design.label}: {r.missed}" for r in results)
            + self._floor_unreached(results),
            simulations=self.evaluator.simulations, wall_s=time.perf_counter() - t0,
            evaluated=tuple(self.judged), cost_model=getattr(self.evaluator, "cost_model", None),
            sources=self._figure_sources(),
        )

    def _figure_sources(self) -> dict[str, str] | None:
        """plan.json ``sources``: where the designs' latencies and costs come from
        (:func:`tiersim.plan.sources.plan_sources`); None for a stand-in evaluator, which
        simulates nothing."""
        if not hasattr(self.evaluator, "simulated"):
            return None
        from tiersim.plan.sources import plan_sources

        return plan_sources(self.evaluator)

    def _floor_unreached(self, results: list[DesignResult]) -> str:
        """The fix when every design missed the accuracy floor (a routed design may miss it
        unsimulated, its routing's accuracy judged first): the most accurate design simulated
        and the floor it would meet. Before, the reason listed each design's miss and left the
        user to see that no replica count could meet it (a 300 s window of Azure conv on
        Llama-3.1-70B FP8 + BF16 at the illustrative tables: BF16 alone 79.42%, the floor
        80%)."""
        floor = self.c.accuracy_floor
        judged = [r for r in results if r.outcome is not None and r.outcome.accuracy is not None]
        if floor is None or not judged or any(r.outcome.accuracy >= floor for r in judged) or \
                not all((r.missed or "").startswith("accuracy") for r in results):
            return ""
        top = max(judged, key=lambda r: r.outcome.accuracy)
        reach = math.floor(top.outcome.accuracy * 10_000) / 10_000
        return (f"; every design misses the accuracy floor {floor:.2%} (the most accurate "
                f"simulated, {top.design.label}, {top.outcome.accuracy:.2%}): lower it to at "
                f"most {reach:g} (--accuracy-floor or the scenario's accuracy_floor), or add a "
                "more accurate tier")

    def _in_plan_order(self, results: list[DesignResult]) -> list[DesignResult]:
        """Designs meeting every constraint in the order designs are chosen in
        (:meth:`_ranked`), then the rest by cost over the trace (:func:`_by_cost`). Before,
        all were listed by cost over the trace, so under provisioned cost a runner-up with a
        shorter drain was listed before one it ranks after per hour."""
        feasible = sorted((r for r in results if r.feasible), key=self._ranked)
        return feasible + _by_cost([r for r in results if not r.feasible])

    def _ranked(self, r: DesignResult) -> tuple:
        """``r``'s place in the order designs are chosen in (:func:`_plan_order`) under this
        plan's cost model."""
        return _plan_order(r, getattr(self.evaluator, "cost_model", None))

    def _note_floors_not_raised(self, feasible: list[DesignResult]) -> None:
        """A note where a multi-tier design met every constraint, could still cost less than
        the plan (:meth:`_could_cost_less`; ``feasible``: the plan first) and no ``--choose
        router.floor`` was given: the router was fitted to the lowest of :func:`raised_floors`
        that met the floor, and a higher one (more traffic to the dearer tiers, so other
        replica counts) was not tried, though it may cost less (a routed fleet's replicas round
        up per tier; on one scenario a floor of 0.835 planned cheaper than the 0.8 fitted).
        Only designs the floor router routes count: one a ``--choose router.policy=cascade``
        routes does not read the floor, so no floor would route it otherwise (before, such a
        plan said higher floors "may cost less")."""
        chosen = any(path.removeprefix("router.") == "floor" for path in self.choose)
        if self.c.accuracy_floor is None or chosen or not any(
                len(r.design.tiers) > 1 and dict(r.design.router).get("policy") == "floor"
                and self._could_cost_less(r, feasible[0]) for r in feasible):
            return
        floors = raised_floors(self.c.accuracy_floor)
        warnings.warn(Note(
            f"each multi-tier design was routed at the lowest floor of {floors[0]:g} to "
            f"{floors[-1]:g} its accuracy met; higher floors were not tried and may cost less "
            "(replicas round up per tier): try them with --choose router.floor=F1,F2"),
            stacklevel=3)

    def _could_cost_less(self, r: DesignResult, plan: DesignResult) -> bool:
        """Whether another routing of a sized design might undercut the plan: the plan itself
        unless every tier is at one replica; another design where one replica per kept tier
        costs less per hour than the plan (provisioned cost; any other ledger: always)."""
        if r is plan:
            return any(count > 1 for count in r.replicas.values())
        if getattr(self.evaluator, "cost_model", None) != "provisioned":
            return True
        least = sum(r.design.gpus(n) * self.evaluator.by_name[n].cost_per_gpu_hour
                    for n in r.design.tiers)
        return least < plan.outcome.cost_per_hour_usd

    def _plan_dict(self, best: DesignResult, uniform: list[DesignResult]) -> dict[str, Any]:
        """The plan's JSON, with what it saves against the sized uniform fleets and the proof
        that one replica fewer in any tier misses."""
        out = best.as_dict(self.c)
        self._with_left_out(out, best)
        out["cost_model"] = self.evaluator.cost_model
        interval = getattr(best.outcome, "accuracy_ci95", None)
        if interval is not None:  # the accuracy's 95% interval, as the planned run's
            out["accuracy_ci95"] = list(interval)
        sources = getattr(self.evaluator, "accuracy_sources", None)  # None: a fake evaluator
        if sources is not None:
            out["accuracy_sources"] = sources(best.design)
        out["savings"] = compare(best, uniform, self.c.accuracy_floor, self.evaluator.cost_model)
        out["one_fewer"] = self.one_fewer(best)
        return out

    def one_fewer(self, best: DesignResult) -> dict[str, dict[str, Any]]:
        """Per kept tier: what one replica fewer misses (simulated; usually cached). At one
        replica, fewer means dropping the tier, which is another design."""
        out = {}
        for name in best.design.tiers:
            r = best.replicas[name]
            if r <= 1:
                out[name] = {"replicas": 0, "misses": None,
                             "verdict": "at 1 replica; zero drops the tier (another design)"}
                continue
            fewer = self.evaluator.evaluate(best.design, {**best.replicas, name: r - 1})
            missed = _missed(fewer, self.c)
            out[name] = {"replicas": r - 1, "misses": missed is not None,
                         "verdict": (f"misses: {missed}" if missed else
                                     "still meets every constraint (latency was not monotone "
                                     "here)") + self._split_kept(name, r - 1, fewer)}
        return out

    def _split_kept(self, name: str, replicas: int, fewer: Any) -> str:
        """For a tier with a ``disaggregation`` block, the split the one-fewer fleet ran at,
        the best the planner found there (``fewer``, its simulated ``Outcome``): " (at 2P 1D,
        its best split)", " (served aggregated, its best split)", or at one replica " (one
        replica: served aggregated)"; "" for any other tier.
        Before, the line named no split, and a plan of 4 x 1 GPU at 2P 2D read "one fewer
        fp8: misses: ..." without saying that 3 replicas ran aggregated there."""
        tier = (getattr(self.evaluator, "by_name", None) or {}).get(name)
        if getattr(tier, "disaggregation", None) is None:
            return ""
        ran = fewer.tiers.get(name)
        prefill = None if ran is None else ran.prefill
        if prefill is None:
            return (" (one replica: served aggregated)" if replicas == 1 else
                    " (served aggregated, its best split)")
        return f" (at {prefill}P {replicas - prefill}D, its best split)"

    def _sourced(self, out: dict[str, Any], r: DesignResult) -> dict[str, Any]:
        """A uniform fleet's entry with where its accuracy comes from (``accuracy_source``, as
        the plan's ``accuracy_sources.source``): a baseline-only tier with no accuracy table
        reads the precision prior beside tiers reading the scenario's table."""
        sources = getattr(self.evaluator, "accuracy_sources", None)  # None: a fake evaluator
        return out if sources is None else {**out, "accuracy_source": sources(r.design)["source"]}

    def _with_left_out(self, out: dict[str, Any], r: DesignResult) -> None:
        """Add ``gpus_per_replica_left_out`` to a design's JSON where a tier of it was not
        sized at some GPU count for a refused layout (:meth:`FeasibilityChecks._left_out`:
        W4A16 at 4 and 8 GPUs per replica, whose groups would split into partial ones); the
        key is absent where none was, so plan.json is otherwise as it was."""
        left = self._left_out(r.design)
        if left:
            out["gpus_per_replica_left_out"] = left

    def _runner_up(self, r: DesignResult, best: DesignResult | None) -> dict[str, Any]:
        """A design beside the plan: what it missed, the rule that kept the plan at a tie on
        what is paid (:func:`_plan_order`; two free fleets tie too; a baseline-only tier's fleet
        is named so, :data:`BASELINE_ONLY`), or how much dearer it is on the basis designs are
        ranked by (``dearer_by_frac``, ``dearer_basis``: per hour under provisioned cost, else
        over the trace), with the share over the trace beside it (``dearer_over_trace_frac``).
        Before, the share was over the trace under provisioned cost too: a runner-up ranked
        after the plan could read "cheaper than the plan"."""
        out = r.as_dict(self.c)
        self._with_left_out(out, r)
        if not (r.feasible and best is not None and r is not best):
            return out
        model = getattr(self.evaluator, "cost_model", None)
        frac = _dearer_share(paid(model, *_costs(r)), paid(model, *_costs(best)))
        over = _dearer_share(r.outcome.cost_usd, best.outcome.cost_usd)
        if frac is not None:
            out.update(dearer_by_frac=frac, dearer_basis=saving_basis(model),
                       dearer_over_trace_frac=over)
        baseline = self._baseline_only(r)
        if self._ranked(r)[0] == self._ranked(best)[0]:
            drain = drain_gap(r.outcome, best.outcome, model)
            gap = f"{_dearer(over)} over the trace, but {drain}" if drain and over else None
            out["missed"] = _tie(r.outcome.accuracy, best.outcome.accuracy,
                                 _simpler(r, best), gap, baseline,
                                 self.c.accuracy_floor is not None)
            return out
        if frac is None:  # a free plan (or one so near 0 USD that no share is finite)
            cost = figure_text(r.outcome.cost_usd)
            out["missed"] = f"meets every constraint; costs {cost} USD against the plan's 0"
            return out
        notes = [n for n in (BASELINE_ONLY if baseline and frac <= 0 else "",
                             self._cascade_note(r) if frac > 0 else "",
                             _over_trace(frac, over)) if n]
        out["missed"] = (f"meets every constraint; {_dearer(frac)}"
                         f"{basis_words(saving_basis(model), frac)}"
                         + (f" ({'; '.join(notes)})" if notes else ""))
        return out

    def _cascade_note(self, r: DesignResult) -> str:
        """Why a design that escalates (a cascade) is dearer, in one clause: "a cascade: the
        30.6% of requests it escalates pay for nvfp4's answer, then wait through bf16's", so
        both its tiers are sized for the SLO on requests served twice (fresh54b: a cascade
        "1,767 % dearer" said no why). The tiers are the commonest first and second tier of
        its escalated requests; "" for a design that escalates none (or an evaluator that
        routes none: a stand-in)."""
        import numpy as np

        routing = getattr(self.evaluator, "routing", None)
        a = None if routing is None else routing(r.design)[1]
        if a is None or not a.escalated.any():
            return ""
        escalated, tiers = a.escalated, r.design.tiers
        first = tiers[int(np.bincount(a.tier[escalated]).argmax())]
        second = tiers[int(np.bincount(a.escalate_to[escalated]).argmax())]
        share = percent_text(float(escalated.mean()), 1)
        return (f"a cascade: the {share} of requests it escalates pay for {first}'s answer, "
                f"then wait through {second}'s")

    def _baseline_only(self, r: DesignResult) -> bool:
        """Whether ``r`` is the uniform fleet of a tier listed under ``baselines:`` (sized for
        the saving, never a plan)."""
        return set(r.design.tiers) <= set(self.baseline_names)
