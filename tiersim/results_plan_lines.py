"""The plan's own lines in words, one source for ``tiersim plan``'s console
(:func:`tiersim.cli.plan_text.format_plan`) and the report's plan section
(:func:`tiersim.report.page.plan_section`): the plan's accuracy against the floor with its 95 %
interval and source (:func:`accuracy_line`), its notes of a router floor above the fleet's
accuracy (:func:`floor_notes`) and of a planned tier over an SLO the fleet's p99 meets
(:func:`tiers_over_slo`), and the p99 TTFT / TPOT of the plan and its sized uniform fleets
(:func:`p99_line`), the plan's saving a month and accuracy against its baseline
(:func:`baseline_line`), and what the head line's time covers (:func:`time_words`).
Each returns its lines unindented; the console indents them. The report
may not import the command line, so these live here, beside :mod:`tiersim.results_current` and
:mod:`tiersim.results_seeds`.
"""

from __future__ import annotations

from typing import Any


def accuracy_line(chosen: dict[str, Any]) -> str:
    """The chosen design's accuracy against the floor (with none, the uniform baselines are
    held to it: :func:`tiersim.results.baseline_floor`), with its 95 % interval
    (:func:`interval_words`), named and sourced as ``tiersim run`` names and sources its own:
    "expected accuracy: 80.11% (95% CI 79.38% - 80.81%, the floor inside it) vs floor 80.00%;
    source: prior". No indent: the console indents it, the report does not."""
    from tiersim.results import RunResult, accuracy_name, percent_as_given, percent_text

    sources = chosen.get("accuracy_sources") or {}
    label = accuracy_name(sources.get("basis"))
    floor = (chosen.get("margins") or {}).get("accuracy")
    against = (f" vs floor {percent_as_given(floor['limit'])}" if floor else
               " (no floor: the uniform baselines must reach it)")
    where = f"; source: {sources['source']}" if sources.get("source") else ""
    accuracy = chosen.get("accuracy")  # 0.99996 is not "100.00%" (percent_text)
    if accuracy is None:  # no request reached the fleet: there is no floor to hold either
        return f"{label}: {RunResult.NO_ACCURACY} (a response cache answered every one){where}"
    return f"{label}: {percent_text(accuracy, 2)}{interval_words(chosen)}{against}{where}"


def interval_words(chosen: dict[str, Any]) -> str:
    """The plan's accuracy interval beside its accuracy, " (95% CI 93.16% - 95.77%)", as the
    planned run's ``router.accuracy_ci95`` (plan.json ``accuracy_ci95``), with ", the floor
    inside it" where the floor is above the interval's low end: the margin to the floor is
    within the accuracy's sampling noise. Nothing where plan.json has no interval (``--robust``:
    its accuracy is the worst seed's; a plan.json written before it was recorded)."""
    from tiersim.results import percent_text, reaches_floor

    interval = chosen.get("accuracy_ci95")
    if not isinstance(interval, list | tuple) or len(interval) != 2 or any(
            not isinstance(v, int | float) or isinstance(v, bool) for v in interval):
        return ""
    lo, hi = interval
    floor = ((chosen.get("margins") or {}).get("accuracy") or {}).get("limit")
    inside = (", the floor inside it" if isinstance(floor, int | float)
              and not reaches_floor(lo, floor) else "")
    return f" (95% CI {percent_text(lo, 2)} - {percent_text(hi, 2)}{inside})"


def p99_line(chosen: dict[str, Any], uniform: list[dict[str, Any]],
             constraints: dict[str, Any]) -> str | None:
    """The sized uniform fleets' p99 TTFT and TPOT beside the plan's, in the words ``tiersim
    run`` prints under its uniform-fleets table (:func:`tiersim.results.p99_words`): the
    latency a planner gives up or gains for the saving. A uniform fleet counts where it met
    every constraint and plan.json records its p99 TTFT (not one that missed at every size:
    its p99s are those of the last size tried); None where none does or the plan has no p99
    TTFT. No indent: the console indents it, the report does not."""
    from tiersim.results import p99_words

    sized = [(f"uniform {u.get('design')}", u["ttft_p99_s"], u.get("tpot_p99_s"), _held(u),
              _held(u, "session_p99_s"))
             for u in uniform if u.get("feasible", True) and u.get("ttft_p99_s") is not None]
    if not sized or chosen.get("ttft_p99_s") is None:
        return None
    pairs = [*sized, ("plan", chosen["ttft_p99_s"], chosen.get("tpot_p99_s"), _held(chosen),
                      _held(chosen, "session_p99_s"))]
    return p99_words(pairs, constraints.get("ttft_p99_s"), constraints.get("tpot_p99_s"),
                     constraints.get("e2e_p99_s"), constraints.get("session_p99_s"))


def baseline_line(chosen: dict[str, Any], uniform: list[dict[str, Any]],
                  current: dict[str, Any] | None = None,
                  hours: float | None = None) -> str | None:
    """What the plan's saving against its baseline (the sized uniform fleet it is quoted
    against) is worth a month, and what it costs in accuracy: "against the saving's baseline
    (uniform bf16): 3.50 USD/hour less, 2,555 USD less a month of 730 hours (24/7, both fleets
    provisioned for the trace's load; modelled); expected accuracy 94.62% against 94.90%, 0.28
    points lower". The month is ``hours`` (the plan's ``hours_per_month``, given with or
    without today's fleet) where given, else ``current``'s ``hours_per_month`` where today's
    fleet is named, else 730 (the default); the money is given only where the saving is per hour
    (provisioned cost). Before, the console gave the saving as a share per hour alone and the
    baseline's accuracy nowhere (plan.json held it), and a USD-a-month figure only against
    today's fleet. None where the plan has no baseline, is its baseline (a uniform plan), or
    either accuracy is unknown. No indent."""
    from tiersim.scenario_models import HOURS_PER_MONTH

    design = (chosen.get("savings") or {}).get("baseline_uniform_design")
    if design is None or design == chosen.get("design"):  # the plan is its baseline
        return None
    base = next((u for u in uniform if u.get("design") == design), None)
    mine = chosen.get("accuracy")
    theirs = None if base is None else base.get("accuracy")
    if not isinstance(mine, int | float) or not isinstance(theirs, int | float):
        return None
    month = hours or (current or {}).get("hours_per_month") or HOURS_PER_MONTH
    money = _money_words(chosen.get("savings") or {}, month)
    return (f"against the saving's baseline (uniform {design}): {money}"
            f"{_accuracy_gap(chosen, mine, theirs)}")


def class_line(chosen: dict[str, Any], uniform: list[dict[str, Any]]) -> str | None:
    """The plan's accuracy per difficulty class against its saving's baseline's (plan.json's
    ``accuracy_by_class``), on the plan's basis: "expected accuracy by difficulty class, plan
    vs uniform bf16 (modelled): easy 99.98% vs 99.98%; hard 74.36% vs 77.09%; source: prior"
    (the source as :func:`accuracy_line` gives it). The plan's alone where it is its own
    baseline or has none; None where the requests have no class. No indent."""
    from tiersim.results import accuracy_name, percent_text

    mine = chosen.get("accuracy_by_class")
    if not isinstance(mine, dict) or not mine:
        return None
    design = (chosen.get("savings") or {}).get("baseline_uniform_design")
    base = None if design is None or design == chosen.get("design") else next(
        (u for u in uniform if u.get("design") == design), None)
    theirs = (base or {}).get("accuracy_by_class") or {}
    parts = []
    for name, entry in mine.items():
        other = (theirs.get(name) or {}).get("accuracy")
        shown = percent_text(entry.get("accuracy"), 2)
        parts.append(f"{name} {shown}" if other is None else
                     f"{name} {shown} vs {percent_text(other, 2)}")
    sources = chosen.get("accuracy_sources") or {}
    against = f"plan vs uniform {design}" if theirs else "plan"
    where = f"; source: {sources['source']}" if sources.get("source") else ""
    return (f"{accuracy_name(sources.get('basis'))} by difficulty class, {against} (modelled): "
            f"{'; '.join(parts)}{where}")


def task_line(chosen: dict[str, Any], uniform: list[dict[str, Any]]) -> str | None:
    """The plan's task success against its saving's baseline's, then the other uniform fleets'
    (plan.json's ``task_success``, each design's, as a run's ``sessions.task_success`` on the
    plan's basis): "task success: plan 69.15% vs uniform bf16 80.20%; uniform fp8 60.88%
    (modelled)". A plan that is its own baseline, or has none, gives the uniform fleets after
    its own ("plan 60.88%; uniform bf16 80.20%"); a fleet with no figure (none sized) is left
    out. None where the traffic has no agent sessions. Before, no plan line gave task success:
    with no floor, a plan that dropped it from 80.20 % (all bf16) to 69.15 % said it met every
    constraint. No indent."""
    from tiersim.results import percent_text

    mine = chosen.get("task_success")
    if not isinstance(mine, int | float) or isinstance(mine, bool):
        return None
    design = (chosen.get("savings") or {}).get("baseline_uniform_design")
    known = {u.get("design"): u["task_success"] for u in uniform
             if isinstance(u.get("task_success"), int | float)
             and u.get("design") != chosen.get("design")}
    words = f"task success: plan {percent_text(mine, 2)}"
    if design in known:
        words += f" vs uniform {design} {percent_text(known.pop(design), 2)}"
    others = "".join(f"; uniform {name} {percent_text(v, 2)}" for name, v in known.items())
    return f"{words}{others} (modelled)"


def _money_words(saving: dict[str, Any], hours: float) -> str:
    """"3.50 USD/hour less, 2,555 USD less a month of 730 hours (...); " where the saving is
    per hour (a month of ``hours``); "" otherwise."""
    from tiersim.results import as_given, figure_text
    from tiersim.results_current import month_words

    plan = saving.get("routed_cost_per_hour_usd")
    base = saving.get("baseline_uniform_cost_per_hour_usd")
    if saving.get("saving_basis") != "per_hour" or not all(
            isinstance(v, int | float) for v in (plan, base)):
        return ""
    gap = base - plan
    if round(gap, 9) == 0:
        return "the same USD/hour; "
    word = "less" if gap > 0 else "more"
    return (f"{figure_text(abs(gap))} USD/hour {word}, {figure_text(abs(gap) * hours)} USD "
            f"{word} a month of {as_given(hours)} hours ({month_words(hours)}both fleets "
            "provisioned for the trace's load; modelled); ")


def _accuracy_gap(chosen: dict[str, Any], mine: float, theirs: float) -> str:
    """"expected accuracy 94.62% against 94.90%, 0.28 points lower"."""
    from tiersim.results import accuracy_name, percent_text

    gap = round(100 * (theirs - mine), 2)
    words = ("the same to 0.01 points" if gap == 0 else
             f"{abs(gap):.2f} points {'lower' if gap > 0 else 'higher'}")
    label = accuracy_name((chosen.get("accuracy_sources") or {}).get("basis"))
    return f"{label} {percent_text(mine, 2)} against {percent_text(theirs, 2)}, {words}"


def _held(design: dict[str, Any], key: str = "e2e_p99_s") -> float | None:
    """A design's p99 end-to-end latency (or, ``key`` ``session_p99_s``, its task latency
    p99), the fleet's, as its p99 TTFT and TPOT are, where the plan holds that limit; of a
    plan.json written before round 56, as its ``margins`` hold it (under ``slo.scope: tier``
    the worst of the fleet's and each tier's own); None otherwise."""
    if key in design:
        return design[key]
    margin = (design.get("margins") or {}).get(key)
    return margin.get("value") if isinstance(margin, dict) else None


def floor_notes(chosen: dict[str, Any], constraints: dict[str, Any],
                uniform: list[dict[str, Any]]) -> list[str]:
    """One line where a floor the plan prints is above the accuracy it gives the fleet: the
    floor router's ``floor`` (the target its cuts are fitted to on the classifier's calibration
    split; the planner raises it above the accuracy floor until the accuracy over all requests
    meets that), or the accuracy floor itself; with the floor, the estimate and what would meet
    it (among the sized ``uniform`` fleets). Before, `tiersim plan default` printed "router:
    policy floor, floor 0.8025" under "expected accuracy: 80.11% vs floor 80.00%" and said
    nothing of the gap; the report's plan section, its rows "router floor 0.8025" and
    "expected accuracy 0.8011", said nothing of it until round 54. No indent."""
    from tiersim.errors import setting_written
    from tiersim.results import FLOOR_TOLERANCE, accuracy_name, percent_as_given, percent_text

    accuracy, router = chosen.get("accuracy"), chosen.get("router") or {}
    fitted, floor = router.get("floor"), constraints.get("accuracy_floor")
    if not isinstance(accuracy, int | float) or isinstance(accuracy, bool):
        return []
    label = accuracy_name((chosen.get("accuracy_sources") or {}).get("basis"))
    shown = percent_text(accuracy, 2)
    if floor is not None and accuracy < floor - FLOOR_TOLERANCE:  # never chosen so; if it is
        return [f"note: accuracy floor {percent_as_given(floor)} is above the fleet's "
                f"{label} ({shown}); {_meets_it(uniform, floor)}"]
    if not isinstance(fitted, int | float) or isinstance(fitted, bool) or accuracy >= fitted:
        return []
    head = (f"note: router floor {setting_written(fitted)} is above the fleet's {label} "
            f"({shown}): it is the target the floor router fits its cuts to on the classifier's "
            "calibration split, not the accuracy over all requests")
    if floor is not None:
        return [f"{head}, which meets the accuracy floor {percent_as_given(floor)}"]
    return [f"{head}, and with no accuracy floor the plan holds no fleet to it; to plan for it, "
            f"give --accuracy-floor {setting_written(fitted)}: "
            f"{_meets_it(uniform, fitted)}"]


def _meets_it(uniform: list[dict[str, Any]], floor: float) -> str:
    """What would meet an accuracy ``floor``, in words: the sized uniform fleets that reach it,
    or none, with the most accurate one's accuracy."""
    from tiersim.results import FLOOR_TOLERANCE, percent_text

    sized = [u for u in uniform if isinstance(u.get("accuracy"), int | float)]
    if not sized:
        return "no uniform fleet was sized to compare"
    meeting = [u for u in sized if u["accuracy"] >= floor - FLOOR_TOLERANCE]
    if meeting:
        return "uniform " + ", ".join(f"{u.get('design')} ({percent_text(u['accuracy'], 2)})"
                                      for u in meeting) + (" reach it" if len(meeting) > 1
                                                           else " reaches it")
    best = max(sized, key=lambda u: u["accuracy"])
    return (f"no fleet sized reaches it (the most accurate, uniform {best.get('design')}, "
            f"{percent_text(best['accuracy'], 2)}); lower it or add a more accurate tier")


def tiers_over_slo(chosen: dict[str, Any], constraints: dict[str, Any],
                   robust: dict[str, Any] | None = None) -> list[str]:
    """A line per planned tier whose own p99 is over an SLO the fleet's p99 meets: the SLOs
    hold the fleet's requests together, and a tier's share of them may see worse. Over as the
    plan judges it (:func:`~tiersim.results.within_limit`): a p99 equal to the SLO at the
    digits plan.json keeps is not over it; one over it by less than 3 figures show, to more
    (:func:`~tiersim.results.over_digits`: 1.0004 s, not 1.00 s, over a 1 s SLO). Of a plan
    sized for several seeds (``robust``, plan.json's), the tier's share is the most any seed
    sent it (``robust.per_seed``): its ``requests`` are the most any seed sent it, each tier's
    at its own seed, so their sum is no count of the trace (a share of 55 % read where the
    seeds' were 90 % and 100 %). No indent."""
    from tiersim.results import by_planned_tier, tier_over_slo_note, within_limit

    lines = []
    total = sum(int(t.get("requests") or 0) for t in (chosen.get("per_tier") or {}).values())
    rows = (robust or {}).get("per_seed") or []
    for tier, t in by_planned_tier(chosen, "per_tier"):
        for metric in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s"):  # the last where held
            limit, value = constraints.get(metric), t.get(metric)
            if limit is None or value is None or within_limit(value, limit):
                continue
            if rows:
                share = max(float((r.get("shares") or {}).get(tier) or 0.0) for r in rows)
            else:
                share = int(t.get("requests") or 0) / total if total else 0.0
            lines.append(tier_over_slo_note(tier, metric, value, limit, share,
                                            seeds=bool(rows)))
    return lines


__all__ = ["accuracy_line", "floor_notes", "interval_words", "p99_line", "tiers_over_slo"]


def time_words(simulations: int, wall_s: float, seed_check: dict[str, Any] | None,
               current: dict[str, Any] | None, splits: list[dict[str, Any]] | None = None
               ) -> str:
    """The plan's head line's time, in its brackets: the search's simulations and seconds
    (plan.json ``simulations``, ``wall_s``), and, where the command simulated more, each part
    named with its seconds and their sum, in the order they ran: the prefill/decode split
    comparison of the planned split tiers (``splits``: plan.json ``disaggregation`` and
    ``other_splits``, each's ``wall_s`` summed; round 56), the seed check
    (``seed_check.wall_s``) and today's fleet (``current.wall_s``): "138 simulations in 75.2 s
    of search; split comparison 1.3 s; seed check 4.7 s; today's fleet 0.4 s; 81.6 s in all"
    (no colon: a reader of the line splits the design off at its first ": "). Before round 55
    the line gave the search's alone, and read as the whole command's; before round 56 it left
    the split comparison out. The planned fleet's own run that DIR gets (with its uniform
    baselines and report) is in none of them: it runs after plan.json and the report are
    made, which are written with it."""
    search = f"{simulations} simulation{'' if simulations == 1 else 's'} in {wall_s:.1f} s"
    timed = [w for w in (s.get("wall_s") for s in splits or ()) if isinstance(w, int | float)]
    split = {"wall_s": sum(timed)} if timed else None  # a plan.json before round 56: none
    parts = [(name, part.get("wall_s")) for name, part in (("split comparison", split),
                                                            ("seed check", seed_check),
                                                            ("today's fleet", current))
             if part and isinstance(part.get("wall_s"), int | float)]
    if not parts:
        return search
    total = wall_s + sum(w for _, w in parts)
    return (f"{search} of search; " + "; ".join(f"{name} {w:.1f} s" for name, w in parts)
            + f"; {total:.1f} s in all")


def left_out_words(design: dict[str, Any]) -> str | None:
    """The GPU counts a design's tier was not sized at for a refused layout (plan.json
    ``gpus_per_replica_left_out``: a split vLLM does not load, a MoE kernel, heads that do not
    divide), as one clause for its line, the first count's refusal cut to its first clause:
    "not sized on 4 or 8 GPUs per replica: its W4A16 expert width 768 over 4 GPUs is 192 per
    GPU, not whole 128-wide quantisation groups: vLLM's Marlin MoE kernel refuses that split";
    a multi-tier design names the tier. None where nothing was left out. Before, ``tiersim plan
    plan_default.yaml`` printed "uniform w4a16 (20 x 1 GPU)" beside "uniform nvfp4@4 (4 x 4
    GPU)" and nothing said W4A16 was never sized on 4 or 8."""
    left = design.get("gpus_per_replica_left_out") or {}
    parts = []
    for tier, counts in left.items():
        gpus = sorted(counts, key=int)
        why = counts[gpus[0]].split("; ")[0].split(" (")[0]
        who = f"{tier} " if len(design.get("tiers") or ()) > 1 else ""
        plural = "" if gpus == ["1"] else "s"
        parts.append(f"{who}not sized on {' or '.join(gpus)} GPU{plural} per replica: {why}")
    return "; ".join(parts) or None


def baseline_gap_words(design: dict[str, Any], saving: dict[str, Any]) -> str:
    """After the verdict of the uniform fleet the plan's saving is against ("21.4 % dearer
    than the plan", a share of the plan's cost), the same gap as a share of that fleet's own
    cost, which is the saving line's "saves 17.6 %": " (the saving's baseline: the same gap is
    17.6 % of this fleet's cost, the share the plan saves)", "USD/hour" for "cost" per hour.
    Before, the two lines gave two numbers for one gap on two bases without naming either
    (plan57). Nothing for any other design, a tie or a gap with no share."""
    from tiersim.results_plan import baseline_design
    from tiersim.results_savings import PER_HOUR, share_text, without_noise

    dearer, saved = design.get("dearer_by_frac"), without_noise(saving.get("vs_uniform_frac"))
    if (design.get("design") != baseline_design(saving) or not design.get("replicas")
            or dearer is None or not saved or not without_noise(dearer)):
        return ""
    what = "USD/hour" if design.get("dearer_basis") == PER_HOUR else "cost"
    share = "the share the plan saves" if saved > 0 else "the share the plan costs more"
    return (f" (the saving's baseline: the same gap is {share_text(abs(saved))} of this "
            f"fleet's {what}, {share})")


SPLIT_TIER_WORDS = ("its p99s those of the requests that end on this tier, held to the fleet's "
                    "limits (a request it escalates is scored under the tier it ends on, both "
                    "passes there)")
"""What a split's score is of in a plan of several tiers: the split tier's own requests in the
whole fleet's run, by the tier each ends on (:meth:`tiersim.plan.evaluate.SimEvaluator._whole`),
so a cascade's cheap tier is scored without the requests it escalates, whose first pass it
served."""

SPLIT_TASK_WORDS = ("the task latency limit is not in the score (the fleet as a whole is held "
                    "to it)")
"""Where the plan holds ``session_p99_s``: the split's score leaves it out."""


def split_score_words(constraints: dict[str, Any], chosen: dict[str, Any] | None) -> str:
    """What a planned split tier's score covers, as ``tiersim plan``'s split line and the
    report's split section say it: :func:`tiersim.metrics.score_words` (the worse or worst of
    the tier's p99s over the plan's limits), then where the ``chosen`` design (plan.json's
    ``plan``) has several tiers, which requests those p99s are of (:data:`SPLIT_TIER_WORDS`),
    and where a task latency limit is held, that the score leaves it out
    (:data:`SPLIT_TASK_WORDS`). Before, a cascade's cheap tier's split read "worst of p99
    TTFT, TPOT and end-to-end over their SLOs", as if of the fleet's requests, and no word of
    the task limit (plan57). The score itself is as ``tiersim disagg`` and the planned
    scenario rank splits; scoring a split on the whole fleet's p99s would change which split
    every plan keeps, and is left for a later round."""
    from tiersim.metrics import score_words

    words = score_words(constraints.get("e2e_p99_s"))
    if len((chosen or {}).get("replicas") or (chosen or {}).get("tiers") or ()) > 1:
        words += f", {SPLIT_TIER_WORDS}"
    if constraints.get("session_p99_s") is not None:
        words += f"; {SPLIT_TASK_WORDS}"
    return words
