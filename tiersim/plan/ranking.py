"""The order sized designs are chosen in and how one compares with the plan: the order itself
(:func:`_plan_order`), the rule that kept the plan at a tie, in words (:func:`_simpler`,
:func:`_tie`), a cost gap to the plan in words (:func:`_dearer`, :func:`_over_trace`), and the
plan's saving against the sized uniform fleets (:func:`compare`, :func:`drain_gap`)."""

from __future__ import annotations

import math
from typing import Any

from tiersim.plan.designs import DesignResult, _latency_met
from tiersim.plan.evaluate import Outcome
from tiersim.results import (
    baseline_floor,
    digits_apart,
    drain_words,
    figure_text,
    floor_digits,
    paid_order,
    paid_share,
    reaches_floor,
    saved_share,
    saving_basis,
    share_text,
    without_noise,
)


def _plan_order(r: DesignResult, cost_model: str | None = "provisioned") -> tuple:
    """The order feasible designs are chosen in: the cost the operator pays first (under
    ``provisioned`` cost the fleet's USD/hour, else the cost over the trace), as plan.json
    writes it (10 significant digits, so sums of one price in another order tie; an infinite
    cost after every finite one and NaN last, :func:`~tiersim.results.sig_order`); at a tie the
    fewer tiers, then the fewer replicas, then the cost over the trace, then the higher
    accuracy (and last, the design found first): :func:`tiersim.results.paid_order`, by which
    a saving's uniform baseline is chosen too. Two provisioned fleets of one USD/hour differ
    over the trace only by their drain after the last arrival, which is no saving per hour: a
    routed design that was "cheaper" by that alone was the plan (FP8 8 + BF16 9 over uniform
    BF16 17 on plan_default.yaml, both 59.5 USD/hour, "0.00850 % cheaper")."""
    o = r.outcome
    return paid_order(cost_model, o.cost_usd, o.cost_per_hour_usd, len(r.design.tiers),
                      sum(r.replicas.values()), o.accuracy)


def _simpler(r: DesignResult, plan: DesignResult) -> str | None:
    """Why the plan won a tie with ``r`` on its size, in words (:func:`_plan_order`): ``"kept
    as the simpler design, 1 tier against 2"`` or ``"kept as the smaller fleet, 17 replicas
    against 18"``; None where both have as many tiers and replicas."""
    tiers, theirs = len(plan.design.tiers), len(r.design.tiers)
    if tiers < theirs:
        return f"kept as the simpler design, {tiers} tier{'s' * (tiers > 1)} against {theirs}"
    count, their_count = sum(plan.replicas.values()), sum(r.replicas.values())
    if tiers == theirs and count < their_count:
        replicas = f"{count} replica{'s' * (count > 1)}"
        return f"kept as the smaller fleet, {replicas} against {their_count}"
    return None


def _tie(accuracy: float | None, plans: float | None, simpler: str | None = None,
         gap: str | None = None, baseline: bool = False,
         floored: bool = True) -> str:
    """A fleet meeting every constraint at the plan's cost, in words, with the rule that kept
    the plan (:func:`_plan_order`), or with ``baseline``, that the fleet's tier is a
    baseline-only tier (:data:`BASELINE_ONLY`: never a plan, so no rule ranked the plan before
    it; it read "kept as found first (fewer tiers first, ...)" beside a more accurate
    baseline of as many tiers); the rule: the simpler design or smaller fleet (``simpler``, from
    :func:`_simpler`; with both accuracies where the other is the more accurate, to 4 figures
    or as many more as print them apart, the accuracy given up for it and the rule, fewer
    tiers or fewer replicas, that ranked the plan first), else with ``gap`` (the two cost the
    same per hour but not over the trace: why, the drain after the last arrival) the cost over
    the trace (with the accuracy given up likewise: it read "kept as found first" beside a more
    accurate fleet found first, "kept for its higher accuracy" beside a less accurate one,
    though the cost over the trace ranks before either), else the higher accuracy, else the
    design found first (fewer tiers first, then the scenario's order of tiers). ``floored``:
    whether the plan has an accuracy floor (without one the accuracy given up is said against
    none: it read "the floor is met"). Before, it read "0.0% dearer than the plan"."""
    if accuracy is None or plans is None:  # no request reached the fleet: no accuracy to rank
        accuracy = plans = 0.0
    if simpler or gap:  # the ranks before the accuracy (_plan_order)
        kept = simpler or "kept as the cheaper over the trace"
        first = ("fewer tiers rank" if kept.startswith("kept as the simpler design") else
                 "fewer replicas rank" if simpler else "the cost over the trace ranks")
        n = digits_apart(plans, accuracy, 4)  # 85.00% against 85.00% read as no accuracy lost
        why = kept if accuracy <= plans else (
            f"{kept} (the plan's accuracy {figure_text(plans, '%', 100, n)} against its "
            f"{figure_text(accuracy, '%', 100, n)}: "
            f"{'the floor is met' if floored else 'no accuracy floor is set'}, {first} first)")
    elif plans > accuracy:
        places = max(2, floor_digits(plans, accuracy, 4) - 2)  # the plan's percent decimals
        while places < 10 and f"{100 * plans:.{places}f}" == f"{100 * accuracy:.{places}f}":
            places += 1  # more where they print alike (below 10%, or within the tolerance)
        why = (f"kept for its higher accuracy, {100 * plans:.{places}f}% against "
               f"{100 * accuracy:.{places}f}%")
    else:
        why = "kept as found first (fewer tiers first, then the scenario's order of tiers)"
    rule = BASELINE_ONLY if baseline else f"the plan is {why}"
    if gap:
        return f"meets every constraint at the plan's cost per hour (a tie): {gap}; {rule}"
    return f"meets every constraint at the plan's cost (a tie); {rule}"


BASELINE_ONLY = "its tier is listed under baselines:, never in a design"
"""Why a baseline-only tier's uniform fleet, cheaper than the plan or tied with it, is not the
plan."""


def _dearer(frac: float) -> str:
    """A cost gap to the plan in words: ``"2.00 % dearer than the plan"`` or, below it,
    ``"0.700 % cheaper than the plan"`` (never "-0.7% dearer"); the share as the plan's saving
    and ``tiersim run`` print one (:func:`~tiersim.results.figure_text`: 3 figures, where it
    read to one decimal place, 0.0756 % as "0.1%" and 0.0049 % as "0.0%"), in plain digits
    (:func:`~tiersim.results.share_text`); a share of 0 costs "the same as the plan" (it read
    "0 % dearer", and 5e-12 "0 % dearer" beside the plan's lower cost)."""
    frac = without_noise(frac)
    if frac == 0:
        return "costs the same as the plan"
    word = "dearer" if frac > 0 else "cheaper"
    return f"{share_text(abs(frac))} {word} than the plan"


def _dearer_share(theirs: float, plans: float) -> float | None:
    """How much dearer a fleet paying ``theirs`` is than the plan paying ``plans``
    (``theirs / plans - 1``, below 0 when cheaper); None where the plan pays nothing (no share
    is finite): the share the plan saves, negated."""
    saved = saved_share(theirs, plans)
    return None if saved is None else without_noise(-saved)


def _over_trace(frac: float, over: float | None) -> str:
    """Where a fleet is dearer than the plan per hour but cheaper over the trace, or the other
    way round, the share over the trace and why, in words: ``"1.80 % cheaper than the plan
    over the trace: its drain after the last arrival is shorter"``; "" where both agree (or
    the basis is the trace itself: ``over`` is ``frac``)."""
    if over is None or over == frac or (frac < 0) == (over < 0) or not (frac and over):
        return ""
    drain = "shorter" if over < 0 else "longer"
    return f"{_dearer(over)} over the trace: its drain after the last arrival is {drain}"


def compare(routed: DesignResult, uniform: list[DesignResult], floor: float | None,
            cost_model: str = "provisioned") -> dict[str, Any]:
    """Routed design against the cheapest uniform fleet meeting the SLOs and the floor (with
    none, the routed design's own accuracy, as a run's savings: :func:`baseline_floor`), and
    against a static split of the sized uniform fleets at the routed accuracy.

    The baseline is the first such fleet in the plan's order (:func:`_plan_order`) and
    ``vs_uniform_frac`` is on the basis that order ranks by (``saving_basis``: USD/hour under
    provisioned cost, else over the trace); ``vs_uniform_usd`` and
    ``vs_uniform_over_trace_frac`` are over the trace. Before, the baseline and the share were
    over the trace under provisioned cost too: a plan printed "saves 0.0657 %" against a
    baseline-only fleet it cost 2.56 % more per hour than, the share being the baseline's
    longer drain after the last arrival. The static split is on that basis too, the share
    over the trace beside it (:func:`~tiersim.routing.metrics.static_split_saving`, as a
    run's)."""
    from tiersim.routing.metrics import static_split_saving

    sized = [u for u in uniform if u.outcome is not None and _latency_met(u)]
    cost = routed.outcome.cost_usd
    floor = baseline_floor(floor, routed.outcome.accuracy)
    # no request reached the fleet (None: a response cache answered all): no floor to hold
    meets = [u for u in sized if floor is None or u.outcome.accuracy is None
             or reaches_floor(u.outcome.accuracy, floor)]
    base = min(meets, key=lambda u: _plan_order(u, cost_model)) if meets else None
    return {
        "routed_cost_usd": cost,
        "baseline_uniform_tier": base.design.tiers[0] if base else None,
        # the fleet as every design is labelled (fp8@2), beside its tier (fp8) above
        "baseline_uniform_design": base.design.label if base else None,
        "baseline_uniform_cost_usd": base.outcome.cost_usd if base else None,
        "vs_uniform_usd": base.outcome.cost_usd - cost if base else None,
        "vs_uniform_frac": paid_share(cost_model, _costs(routed), _costs(base)) if base
        else None,
        "vs_uniform_over_trace_frac": saved_share(cost, base.outcome.cost_usd) if base else None,
        "saving_basis": saving_basis(cost_model),
        "routed_cost_per_hour_usd": routed.outcome.cost_per_hour_usd,
        **static_split_saving(cost_model, _nan(routed.outcome.accuracy), _costs(routed),
                              [(*_costs(u), _nan(u.outcome.accuracy)) for u in sized],
                              [u.design.tiers[0] for u in sized]),
        "accuracy_floor": floor,
        "baseline_uniform_cost_per_hour_usd": base.outcome.cost_per_hour_usd if base else None,
        "drain_gap": drain_gap(routed.outcome, base.outcome, cost_model) if base else None,
    }


def _nan(accuracy: float | None) -> float:
    """An accuracy as the static split takes it: NaN (no split reaches it) for None, where no
    request reached the fleet."""
    return math.nan if accuracy is None else accuracy


def _costs(r: DesignResult) -> tuple[float, float]:
    """A sized design's cost over the trace and USD/hour, as :func:`paid_share` takes them."""
    return r.outcome.cost_usd, r.outcome.cost_per_hour_usd


def drain_gap(o: Outcome, other: Outcome, cost_model: str) -> str | None:
    """Why two provisioned fleets of one USD/hour cost differently, in words
    (:func:`tiersim.results.drain_words`); None for any other pair."""
    return drain_words((o.cost_per_hour_usd, other.cost_per_hour_usd),
                       (o.duration_s, other.duration_s), cost_model)
