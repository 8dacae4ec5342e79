"""Today's fleet beside the plan (``plan.current`` in the scenario, or ``tiersim plan
--current``): simulated on the plan's trace and seed, held to the same SLOs and floor, and
the plan's saving against it per hour and per month (docs/planning.md, "Reading a plan
against today's fleet").

:func:`today_fleet` reads the fleet (each tier's name, replicas and GPUs per replica);
:func:`check_today` refuses, before the search, a fleet that does not fit its GPUs or that
the scenario's router cannot route; :func:`current_record` simulates it once the plan is
found and gives plan.json's ``current``; :func:`tiersim.results_current.current_lines` words
it for the console and the report.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from tiersim.errors import TiersimError, yaml_written
from tiersim.numbers import shown

FLAG = "--current"
"""The flag that names today's fleet on the command line, in place of ``plan.current``."""

HOURS_FLAG = "--hours-per-month"
"""The flag that sets ``plan.hours_per_month`` on the command line."""

_FLAG_VALUE = re.compile(r"^\s*([^=\s]+)\s*=\s*([0-9]+)\s*(?:[xX]\s*([0-9]+))?\s*$")


@dataclass(frozen=True)
class TodayTier:
    """One tier of today's fleet: the scenario's tier by name, its replicas and GPUs per
    replica, and where it was given (``plan.current[0]``, or ``--current 'bf16=5x2'``)."""

    tier: str
    replicas: int
    gpus_per_replica: int
    where: str


@dataclass(frozen=True)
class Today:
    """Today's fleet (its tiers in the scenario's order) and the hours a month is paid for;
    ``given``: where it was given (``plan.current`` or ``--current``)."""

    tiers: tuple[TodayTier, ...]
    hours_per_month: float
    given: str


def parse_current(values: list[str] | None) -> list[tuple[str, int, int | None, str]] | None:
    """``--current TIER=REPLICAS[xGPUS]`` values as (tier, replicas, GPUs or None, the value as
    typed); one line naming the value and the form where one is not it (several tiers in one
    value, comma-separated, are told to repeat the flag). None: no flag."""
    if not values:
        return None
    out = []
    for value in values:
        m = _FLAG_VALUE.match(value)
        parts = [part.strip() for part in value.split(",")]
        if not m and len(parts) > 1 and all(_FLAG_VALUE.match(part) for part in parts):
            # several tiers in one value, as --choose lists its values: the flag repeats
            raise TiersimError(f"{FLAG} {yaml_written(value)}: one tier a flag; repeat {FLAG} "
                               "for each tier: " + " ".join(f"{FLAG} {part}" for part in parts))
        if not m:
            _other_digits(value)
            raise TiersimError(f"{FLAG} {yaml_written(value)}: write TIER=REPLICAS or "
                               "TIER=REPLICASxGPUS (a tier of the scenario, its replicas today "
                               "and GPUs per replica), e.g. --current bf16=5x2")
        gpus = None if m.group(3) is None else int(m.group(3))
        out.append((m.group(1), int(m.group(2)), gpus, value))
    return out


def _other_digits(value: str) -> None:
    """Refuse a ``--current`` value whose counts are written in digits other than 0-9
    (``bf16=５ｘ２``), with the value to type; it was told only the form, which it seemed to
    have."""
    from tiersim.numbers import ascii_digits, other_digits_words

    name, _, counts = value.partition("=")
    written = ascii_digits(counts)
    if written != counts and _FLAG_VALUE.match(f"{name}={written}"):
        raise TiersimError(f"{FLAG} {yaml_written(value)}: {other_digits_words(counts.strip())}"
                           f"; type {FLAG} {name.strip()}={written.strip()}")


def today_fleet(scenario, source: str, flag: list[tuple[str, int, int | None, str]] | None,
                hours: float | None) -> Today | None:
    """Today's fleet: ``--current`` where given (it replaces ``plan.current``), else the
    scenario's ``plan.current`` (checked as the scenario loaded: names, replicas), each tier on
    its own ``gpus_per_replica`` as the scenario writes it where none is given (call before the
    planner refits the tiers). ``hours``: :func:`month_hours`. None where neither names a
    fleet: the hours then stand alone, the month of the saving against the baseline (before
    round 56 they were refused there, "there is no month to price")."""
    from tiersim.scenario_models import HOURS_PER_MONTH

    order = [t.name for t in scenario.all_tiers]
    by_name = {t.name: t for t in scenario.all_tiers}
    keys = scenario.plan
    if flag is None and (keys is None or keys.current is None):
        return None
    if hours is None:
        hours = HOURS_PER_MONTH
    if flag is None:
        tiers = [TodayTier(t.tier, t.replicas, t.gpus_per_replica
                           or by_name[t.tier].gpus_per_replica, f"plan.current[{k}]")
                 for k, t in enumerate(keys.current)]
        given = "plan.current"
    else:
        tiers = [_flag_tier(scenario, source, name, replicas, gpus, typed, flag)
                 for name, replicas, gpus, typed in flag]
        given = FLAG
    tiers.sort(key=lambda t: order.index(t.tier))
    return Today(tuple(tiers), float(hours), given)


def month_hours(scenario, typed: float | None) -> float | None:
    """The hours a month is paid for where given: ``--hours-per-month`` (``typed``), else the
    scenario's ``plan.hours_per_month`` where its ``plan`` block writes it (not its default);
    None otherwise."""
    if typed is not None:
        return typed
    keys = scenario.plan
    return None if keys is None or "hours_per_month" not in keys.model_fields_set \
        else keys.hours_per_month


def _flag_tier(scenario, source: str, name: str, replicas: int, gpus: int | None, typed: str,
               flag: list) -> TodayTier:
    """One ``--current`` value checked as ``plan.current`` is (a tier of the scenario, given
    once, a baseline-only one alone; 1 to ``limits.max_replicas`` replicas; 1 to 64 GPUs)."""
    from tiersim.scenario_models import MAX_GPUS_PER_REPLICA

    routed = [t.name for t in scenario.tiers]
    only = [t.name for t in scenario.baselines]
    at = f"{FLAG} {yaml_written(shown(typed))}"  # a 400-digit count as its first digits
    if name not in routed and name not in only:
        known = ", ".join(repr(n) for n in [*routed, *only])
        raise TiersimError(f"{at}: {yaml_written(name)} names no tier of {source}; write one "
                           f"of {known}")
    if sum(1 for other, *_ in flag if other == name) > 1:
        raise TiersimError(f"{at}: {yaml_written(name)} is given twice; give each tier once, "
                           "with all its replicas")
    if name in only and len(flag) > 1:
        raise TiersimError(f"{at}: {yaml_written(name)} is a baseline-only tier of {source}, "
                           "which no router sends requests beside other tiers; name it alone")
    limit = scenario.limits.max_replicas
    if not 1 <= replicas <= limit:
        why = " serve nothing" if replicas < 1 else f" is above limits.max_replicas ({limit})"
        raise TiersimError(f"{at}: {shown(str(replicas))} replicas{why}; give the replicas the "
                           f"tier runs today, 1 to {limit} (set limits: {{max_replicas: N}} in "
                           "the scenario to allow more)")
    by_name = {t.name: t for t in scenario.all_tiers}
    gpus = by_name[name].gpus_per_replica if gpus is None else gpus
    if not 1 <= gpus <= MAX_GPUS_PER_REPLICA:
        raise TiersimError(f"{at}: {shown(str(gpus))} GPUs per replica; give 1 to "
                           f"{MAX_GPUS_PER_REPLICA}")
    return TodayTier(name, replicas, gpus, at)


def design_of(today: Today):
    """Today's fleet as the planner's :class:`~tiersim.plan.evaluate.Design` (the scenario's
    router as written, every request on its one tier where it has one) and its replicas."""
    from tiersim.plan.evaluate import Design

    design = Design(tuple(t.tier for t in today.tiers),
                    tuple(t.gpus_per_replica for t in today.tiers))
    return design, {t.tier: t.replicas for t in today.tiers}


def _label(today: Today) -> str:
    """``bf16 5 x 2 GPU`` (``fp8 10 x 1 GPU + bf16 7 x 1 GPU``): today's fleet as the plan's
    lines give a fleet's replicas and GPUs."""
    return " + ".join(f"{t.tier} {t.replicas} x {t.gpus_per_replica} GPU" for t in today.tiers)


def check_today(evaluator, today: Today, source: str) -> None:
    """One line where a tier of today's fleet does not fit its GPUs per replica (weights and
    some KV cache, or a split vLLM refuses), or the scenario's router cannot route the fleet
    (a cascade naming a tier it lacks); checked before the search, so no search is wasted."""
    for t in today.tiers:
        gpus = t.gpus_per_replica
        why = None
        if evaluator.built(t.tier, gpus) is None:
            why = _said(evaluator.refusals.get((t.tier, gpus)))
        elif evaluator.split_problem(t.tier, gpus):
            why = evaluator.split_problem(t.tier, gpus)
        if why is not None:
            fix = ("give gpus_per_replica the GPUs one replica runs on today (a count it fits "
                   "on)")
            _refuse(source, t, "gpus_per_replica",
                    f"tier {t.tier!r} on {gpus} GPU{'s' if gpus > 1 else ''} per replica is "
                    f"refused ({why}); {fix}")
    design, _ = design_of(today)
    if len(design.tiers) > 1:
        try:
            evaluator.routing(design)
            _forget_routing(evaluator, design)
        except (TiersimError, ValueError) as err:
            words = (f"the scenario's router cannot route today's fleet {_label(today)} "
                     f"({_said(err)}); name the tiers the router reads, or set router as "
                     "today's fleet routes")
            if today.given == FLAG:
                raise TiersimError(f"{FLAG}: {words}") from None
            raise _located(source, "plan.current", words) from None


def _forget_routing(evaluator, design) -> None:
    """Drop the routing :func:`check_today` made of today's fleet from the evaluator's cache
    (at every seed's, under ``--robust``): it was made before the planner told the evaluator
    the router settings it tries (:meth:`~tiersim.plan.evaluate.SimEvaluator.
    score_realised_if_read`), so it may be on another accuracy basis than the plan's; routed
    again after the search, today's fleet is scored on the plan's basis."""
    for e in getattr(evaluator, "evaluators", None) or [evaluator]:
        cache = getattr(e, "_routing", None)
        if isinstance(cache, dict):
            cache.pop(design, None)


def _refuse(source: str, t: TodayTier, key: str, message: str) -> None:
    """Raise one line for ``t``: at its key in the scenario file (with its line), or after the
    ``--current`` value it was typed as."""
    if t.where.startswith(FLAG):
        raise TiersimError(f"{t.where}: {message.replace(' give gpus_per_replica', ' give')}")
    raise _located(source, f"{t.where}.{key}", message)


def _located(source: str, where: str, message: str):
    """A :class:`~tiersim.errors.ScenarioError` at ``where`` in the scenario file ``source``,
    with the line of its deepest part the file writes
    (:func:`tiersim.scenario_explain.located`)."""
    from tiersim.errors import ScenarioError
    from tiersim.scenario_explain import located

    return located(ScenarioError(source, where, message))


def _said(err: Exception | None) -> str:
    """An error's own words for a line that names the file itself: without the file (and
    line) it names first."""
    if err is None:
        return "refused"
    text = getattr(err, "message", None) or str(err)
    return str(text).strip().rstrip(".")


def current_record(evaluator, today: Today, constraints, result) -> dict[str, Any]:
    """plan.json's ``current``: today's fleet simulated by the plan's evaluator (the same
    trace, seed and draws; under ``--robust`` the worst over its seeds, as every design's; a
    disaggregated tier at the scenario's split, as a run of it, not the best of its splits:
    :meth:`~tiersim.plan.evaluate.SimEvaluator.as_configured`),
    its cost per hour provisioned, p99s, accuracy and drops against the constraints, and the
    plan's saving against it per hour and per month of ``hours_per_month`` hours (None
    without a plan), split into right-sizing and the plan's design
    (:func:`tiersim.results_current.split_record`), and how long it took (``wall_s``, which
    the plan's head line gives beside the search's: :func:`tiersim.results_plan_lines.
    time_words`)."""
    from tiersim.plan.constraints import _missed, missed_keys, verdict
    from tiersim.results import reaches_floor
    from tiersim.results_current import prefill_record, split_record

    t0 = time.perf_counter()
    design, replicas = design_of(today)
    configured = getattr(evaluator, "as_configured", None)  # a split tier at today's split
    if configured is None:
        o = evaluator.evaluate(design, replicas)
    else:
        with configured():
            o = evaluator.evaluate(design, replicas)
    floor = constraints.accuracy_floor
    meets_floor = None if floor is None else (o.accuracy is None
                                              or reaches_floor(o.accuracy, floor))
    rate = o.cost_per_hour_usd
    chosen = result.plan
    plan_rate = None if chosen is None else chosen.get("cost_per_hour_usd")
    per_hour = None if plan_rate is None else rate - plan_rate
    frac = None if per_hour is None or not rate > 0 else per_hour / rate
    return {
        "given": today.given,
        "seeds": [int(k) for k in getattr(evaluator, "sized_seeds", None)
                  or [evaluator.scenario.seed]],
        "design": design.label,
        "tiers": list(design.tiers),
        "replicas": dict(replicas),
        "gpus_per_replica": {t.tier: t.gpus_per_replica for t in today.tiers},
        **prefill_record({t.tier: today_prefill(evaluator, t) for t in today.tiers}),
        "cost_usd": o.cost_usd,
        "cost_per_hour_usd": rate,
        "duration_s": o.duration_s,
        "ttft_p99_s": o.ttft_p99_s,
        "tpot_p99_s": o.tpot_p99_s,
        **({} if constraints.e2e_p99_s is None else {"e2e_p99_s": o.e2e_p99_s}),
        **({} if constraints.session_p99_s is None else {"session_p99_s": o.session_p99_s}),
        "accuracy": o.accuracy,
        "accuracy_basis": evaluator.basis(evaluator.routing(design)[1]),
        "dropped": o.dropped,
        "meets_slos": verdict(o, constraints).ok,
        "meets_floor": meets_floor,
        "missed": _missed(o, constraints),
        "missed_keys": missed_keys(o, constraints),
        "hours_per_month": today.hours_per_month,
        "vs_current_frac": frac,
        "vs_current_per_hour_usd": per_hour,
        "vs_current_per_month_usd": None if per_hour is None
        else per_hour * today.hours_per_month,
        **split_record(list(design.tiers), rate, per_hour, result.uniform),
        "wall_s": time.perf_counter() - t0,  # the plan's head line adds it to the search's
    }


def today_prefill(evaluator, tier: TodayTier) -> int | None:
    """The prefill replicas ``tier`` of today's fleet runs at: the scenario's split, carried
    in proportion where today's replicas differ (:meth:`tiersim.fleet.BuiltTier.spec`, the
    split :meth:`tiersim.plan.evaluate.SimEvaluator.as_configured` simulates it at); None for
    a tier served aggregated (no ``disaggregation`` block, or one replica), and for an
    evaluator that builds no tiers (a test's stand-in)."""
    built = getattr(evaluator, "built", None)
    if built is None:
        return None
    split = built(tier.tier, tier.gpus_per_replica).spec(tier.replicas).disagg
    return None if split is None else split.prefill


__all__ = ["FLAG", "HOURS_FLAG", "Today", "TodayTier", "check_today", "current_record",
           "design_of", "parse_current", "today_fleet", "today_prefill"]
