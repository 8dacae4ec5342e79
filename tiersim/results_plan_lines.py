"""The plan's own lines in words, one source for ``tiersim plan``'s console
(:func:`tiersim.cli.plan_text.format_plan`) and the report's plan section
(:func:`tiersim.report.page.plan_section`): the plan's accuracy against the floor with its 95 %
interval and source (:func:`accuracy_line`), and the p99 TTFT / TPOT of the plan and its sized
uniform fleets (:func:`p99_line`). The report may not import the command line, so these live
here, beside :mod:`tiersim.results_current` and :mod:`tiersim.results_seeds`.
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

    sized = [(f"uniform {u.get('design')}", u["ttft_p99_s"], u.get("tpot_p99_s"))
             for u in uniform if u.get("feasible", True) and u.get("ttft_p99_s") is not None]
    if not sized or chosen.get("ttft_p99_s") is None:
        return None
    pairs = [*sized, ("plan", chosen["ttft_p99_s"], chosen.get("tpot_p99_s"))]
    return p99_words(pairs, constraints.get("ttft_p99_s"), constraints.get("tpot_p99_s"))


__all__ = ["accuracy_line", "interval_words", "p99_line"]
