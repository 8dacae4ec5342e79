"""Today's fleet beside a plan, in words (plan.json ``current``,
:class:`tiersim.results_plan.CurrentFleet`): ``tiersim plan``'s console lines
(:func:`current_lines`) and the report's paragraph say it alike; its USD/hour, p99s against
the SLOs and accuracy against the floor, then the plan's saving against it per hour and per
month (the month's hours always said), and that saving split into right-sizing and the plan's
design (:func:`split_record`, :func:`split_words`).
"""

from __future__ import annotations

from typing import Any

from tiersim.results_plan import SPLIT_KEYS  # read there; the reader may not import this


def current_lines(current: dict[str, Any] | None, constraints: dict[str, Any]) -> list[str]:
    """Today's fleet in the plan's console (and the words the report uses): its USD/hour, its
    p99s against the SLOs and its accuracy against the floor (met or not), then the plan's
    saving against it per hour and per month, worded as a run's saving is
    (:func:`~tiersim.results.saving_verdict`: "saves 40.0 %", "costs 5.88 % more"), the
    month's hours and load said; where today's fleet misses a constraint, said beside the
    saving. No line without ``current``."""
    if not current:
        return []
    return ["  " + today_words(current, constraints), *(
        ["  " + words] if (words := saving_words(current)) else []), *(
        ["  " + words] if (words := split_words(current)) else [])]


def today_words(current: dict[str, Any], constraints: dict[str, Any]) -> str:
    """"today's fleet (plan.current: bf16 5 x 2 GPU), simulated on the plan's trace at seed 0:
    35.0 USD/hour provisioned; p99 TTFT / TPOT (SLOs 2.00 s / 100 ms) 0.528 s / 73.0 ms;
    expected accuracy 95.31% vs floor 92.50%: meets the SLOs and the accuracy floor"."""
    from tiersim.results import accuracy_name, percent_as_given, percent_text
    from tiersim.results import figure_text as fmt

    fleet = fleet_words(current)
    p99 = (f"p99 TTFT / TPOT (SLOs {fmt(constraints.get('ttft_p99_s'), ' s')} / "
           f"{fmt(constraints.get('tpot_p99_s'), ' ms', 1e3)}) "
           f"{fmt(current.get('ttft_p99_s'), ' s')} / {fmt(current.get('tpot_p99_s'), ' ms', 1e3)}")
    if constraints.get("e2e_p99_s") is not None:  # the end-to-end limit, where one is held
        p99 += (f"; p99 end-to-end (SLO {fmt(constraints['e2e_p99_s'], ' s')}) "
                f"{fmt(current.get('e2e_p99_s'), ' s')}")
    if constraints.get("session_p99_s") is not None:  # the task limit, where one is held
        p99 += (f"; p99 task latency (SLO {fmt(constraints['session_p99_s'], ' s')}) "
                f"{fmt(current.get('session_p99_s'), ' s')}")
    floor = constraints.get("accuracy_floor")
    accuracy = current.get("accuracy")
    acc = (f"{accuracy_name(current.get('accuracy_basis'))} "
           f"{'-' if accuracy is None else percent_text(accuracy, 2)}")
    if floor is not None:
        acc += f" vs floor {percent_as_given(floor)}"
    return (f"today's fleet ({current.get('given')}: {fleet}), simulated on the plan's trace "
            f"{_seeds_words(current.get('seeds') or [])}: "
            f"{fmt(current.get('cost_per_hour_usd'))} USD/hour provisioned; {p99}; "
            f"{acc}: {_met_words(current, floor)}")


def fleet_words(current: dict[str, Any]) -> str:
    """Today's fleet as the plan's line and the report name it: "bf16 5 x 2 GPU", each tier's
    replicas and GPUs per replica, and a disaggregated tier's prefill/decode split as it ran
    (plan.json ``current.prefill``, the scenario's split): "bf16 5 x 2 GPU (1P 4D)", as the
    plan's own line gives its split (:func:`tiersim.results_savings.split_words`). Before
    round 56 the split was named nowhere."""
    from tiersim.results_savings import split_words as split_of

    prefill = current.get("prefill") or {}
    return " + ".join(f"{t} {current['replicas'][t]} x {current['gpus_per_replica'][t]} GPU"
                      f"{split_of(current['replicas'][t], prefill.get(t))}"
                      for t in current["tiers"])


def prefill_record(split: dict[str, int | None]) -> dict[str, Any]:
    """plan.json ``current.prefill``: ``split``, each tier's prefill replicas as today's fleet
    ran it (None for a tier served aggregated); ``{}`` where no tier of today's fleet is split,
    so the key is written only where one is and a plain fleet's ``current`` is as before."""
    return {"prefill": dict(split)} if any(p is not None for p in split.values()) else {}


def _seeds_words(seeds: list[int]) -> str:
    """"at seed 0", the plan's; "at seeds 0, 1, 2 (each figure the worst over them)" under
    ``--robust``, as the plan's own figures are."""
    if len(seeds) == 1:
        return f"at seed {seeds[0]}"
    return f"at seeds {', '.join(map(str, seeds))} (each figure the worst over them)"


def _met_words(current: dict[str, Any], floor: float | None) -> str:
    """Whether today's fleet meets the SLOs (no request dropped) and the floor, in words."""
    slos, meets_floor = current.get("meets_slos"), current.get("meets_floor")
    if floor is None:
        return "meets the SLOs" if slos else f"misses the SLOs ({current.get('missed')})"
    if slos and meets_floor:
        return "meets the SLOs and the accuracy floor"
    missed = [w for w, ok in (("the SLOs", slos), ("the accuracy floor", meets_floor)) if not ok]
    return f"misses {' and '.join(missed)} ({current.get('missed')})"


def saving_words(current: dict[str, Any]) -> str | None:
    """The plan's saving against today's fleet: "the plan saves 40.0 % per hour against today's
    fleet: 14.0 USD/hour less, 10,220 USD less a month of 730 hours (24/7, ...)"; "costs ...
    more than" where the plan is the dearer; the constraints today's fleet misses said after
    it. None without a plan (no saving)."""
    from tiersim.results import as_given, figure_text, saving_verdict
    from tiersim.results_savings import costs_more

    per_hour = current.get("vs_current_per_hour_usd")
    if per_hour is None:
        return None
    frac = current.get("vs_current_frac")
    verdict, shown = saving_verdict(frac, per_hour)
    per = " per hour" if frac is not None else ""
    words = (f"the plan costs the same{per} as" if verdict == "same" else
             f"the plan {costs_more(shown, per)} than" if verdict == "costs" else
             f"the plan saves {shown}{per} against")
    hours = current.get("hours_per_month")  # said as set: to 3 figures, 730.5 read "730"
    month = current.get("vs_current_per_month_usd")  # beside 730.5 hours' USD
    gap = "more" if verdict == "costs" else "less"
    amounts = "" if verdict == "same" else (
        f": {figure_text(abs(per_hour))} USD/hour {gap}, "
        f"{figure_text(abs(month))} USD {gap} a month of {as_given(hours)} hours "
        f"({month_words(hours)}both fleets provisioned for the trace's load; modelled)")
    text = f"{words} today's fleet{amounts}"
    if not (current.get("meets_slos") and current.get("meets_floor") is not False):
        text += (f"; today's fleet misses {current.get('missed')}, so this compares the plan "
                 "with a fleet that does not meet the constraints")
    return text


def month_words(hours: float | None) -> str:
    """"24/7, " before the month's words where it is the default 730 hours (else the hours,
    given beside it, are the ones set)."""
    from tiersim.scenario_models import HOURS_PER_MONTH

    return "24/7, " if hours == HOURS_PER_MONTH else ""




def split_record(tiers: list[str], rate: float, per_hour: float | None,
                 uniform: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> dict[str, Any]:
    """The plan's saving per hour against today's fleet split in two, from plan.json figures:
    right-sizing (today's USD/hour less the sized uniform fleet of today's one tier, plan.json
    ``uniform``) and the plan's design (the saving less that: the uniform fleet's USD/hour less
    the plan's); the two sum to ``vs_current_per_hour_usd``. Not given, with the reason, where
    today's fleet has several tiers, the plan sized no uniform fleet of its tier, or that
    fleet misses a constraint (it is then no right size of today's tier); every key null
    without a plan (no saving to split)."""
    record = dict.fromkeys(SPLIT_KEYS)
    if per_hour is None:
        return record
    if len(tiers) != 1:
        record["split_not_given"] = (
            f"today's fleet is not uniform ({' + '.join(tiers)}): the plan sizes uniform "
            "fleets of one tier, so there is no right-sized fleet of today's mix to split at")
        return record
    sized = [u for u in uniform if list(u.get("tiers") or ()) == tiers]
    met = [u for u in sized if u.get("feasible")]
    if not met:
        record["split_not_given"] = (
            f"the sized uniform {tiers[0]} fleet misses a constraint ({sized[0].get('missed')})"
            ", so it is no right size of today's tier" if sized else
            f"the plan sized no uniform {tiers[0]} fleet")
        return record
    best = min(met, key=lambda u: u["cost_per_hour_usd"])
    right = rate - best["cost_per_hour_usd"]
    record.update(split_uniform_design=best["design"], right_sizing_per_hour_usd=right,
                  design_vs_uniform_per_hour_usd=per_hour - right)
    return record


def split_words(current: dict[str, Any]) -> str | None:
    """The saving per hour split: "the saving per hour split: right-sizing today's fleet (42.0
    USD/hour) to the sized uniform bf16 fleet (21.0 USD/hour) saves 21.0 USD/hour, and the
    plan's design against that uniform fleet saves nothing: 21.0 + 0 = 21.0 USD/hour, today's
    less the plan's (plan.json current and uniform; modelled)"; where not given, the reason.
    None without a plan, or in a plan.json written before the split was recorded."""
    from tiersim.results import figure_text as fmt

    per_hour = current.get("vs_current_per_hour_usd")
    if per_hour is None:
        return None
    if current.get("split_not_given"):
        return ("the saving against today's fleet is not split into right-sizing and the "
                f"plan's design: {current['split_not_given']}")
    right = current.get("right_sizing_per_hour_usd")
    design = current.get("design_vs_uniform_per_hour_usd")
    if right is None or design is None:
        return None
    rate = current.get("cost_per_hour_usd")
    return (f"the {'gap' if per_hour < 0 else 'saving'} per hour split: right-sizing today's "
            f"fleet ({fmt(rate)} USD/hour) to the sized uniform "
            f"{current.get('split_uniform_design')} fleet ({fmt(rate - right)} USD/hour) "
            f"{_part(right)}, and the plan's design against that uniform fleet "
            f"{_part(design)}: {fmt(right)} + {fmt(design)} = {fmt(per_hour)} USD/hour, "
            "today's less the plan's (plan.json current and uniform; modelled)")


def _part(saved: float) -> str:
    """One part of the split: "saves 21.0 USD/hour", "costs 3.50 USD/hour more", "saves
    nothing"."""
    from tiersim.results import figure_text

    if figure_text(saved) == "0":
        return "saves nothing"
    if saved < 0:
        return f"costs {figure_text(-saved)} USD/hour more"
    return f"saves {figure_text(saved)} USD/hour"


__all__ = ["SPLIT_KEYS", "current_lines", "fleet_words", "prefill_record", "saving_words",
           "split_record", "split_words", "today_words"]
