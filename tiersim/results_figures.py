"""Figures as ``summary.json`` and ``plan.json`` write them and as tiersim prints them.

Plain JSON values (:func:`plain`, :func:`dumps`), floats rounded to :data:`SIG_DIGITS`
significant digits (:func:`round_sig`), a p99 compared with its limit at those digits
(:func:`within_limit`), and the one formatter of a printed figure (:func:`figure_text`). Every
name here is importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from typing import Any

import numpy as np

SIG_DIGITS = 10
"""Significant digits kept for floats in summary.json."""

CLOSED_FORM = "two-type closed form"
"""What every figure of the two-type model is, as ``tiersim analytic``'s lines and the run's
report name it (:func:`closed_form_words`)."""


def closed_form_words(inputs: str) -> str:
    """Where a closed-form figure comes from: :data:`CLOSED_FORM` and the inputs it was given,
    e.g. "two-type closed form of p / eps / delta and dc"."""
    return f"{CLOSED_FORM} of {inputs}"


MARGIN_SOURCE = "modelled"
"""Where a plan's margin figures come from, on each margin's line and in the report's margin
table's header: the plan's p99s and drops are simulated (its last lines name the step times).
"ttft_p99_s: 0.334 vs limit 2" said nothing of it, where the accuracy line beside it names its
source."""


def plain(value: Any) -> Any:
    """``value`` as plain JSON values: dataclasses and dicts to dicts, tuples to lists, numpy
    scalars to Python numbers, floats rounded to :data:`SIG_DIGITS` (NaN and inf to None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_json"):
            return value.to_json()
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return round_sig(float(value))
    return value


def round_sig(x: float) -> float | None:
    """``x`` to SIG_DIGITS significant digits; None for NaN or infinity."""
    if not math.isfinite(x):
        return None
    return float(f"{x:.{SIG_DIGITS}g}")


def sig_order(x: float) -> tuple[int, float]:
    """``x`` as a sort key at the digits :func:`round_sig` keeps, total over every float:
    finite values by their rounded value, then infinity, then NaN; minus infinity first.
    (:func:`round_sig` gives None for both, which no float compares with: a design of infinite
    cost made the plan's sort raise TypeError.)"""
    if math.isnan(x):
        return (2, 0.0)
    if math.isinf(x):
        return (1 if x > 0 else -1, 0.0)
    return (0, round_sig(x))


def within_limit(value: float, limit: float) -> bool:
    """``value <= limit`` as the written numbers read: ``value`` at the :data:`SIG_DIGITS`
    significant digits summary.json and plan.json keep. A limit copied from a written value
    is then met by the fleet that measured it, and a written value at or under a written
    limit reads as met (compared at full precision, a p99 copied as its SLO missed it by less
    than 1e-11). A value that is not finite is compared as it is."""
    shown = round_sig(value) if math.isfinite(value) else value
    return shown <= limit


def dumps(data: dict) -> str:
    """Stable JSON text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(plain(data), sort_keys=True, indent=2) + "\n"


def _fields(obj) -> dict[str, Any]:
    """A dataclass's fields as plain JSON values."""
    return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def over_digits(value: float, limit: float, digits: int) -> int:
    """Significant digits to print a p99 ``value`` beside its ``limit`` with: ``digits``, or
    more where ``digits`` print a value over the limit (:func:`within_limit`) as the limit
    itself ("tpot_p99_s 0.02219 vs limit 0.02219", missed); at most :data:`SIG_DIGITS`."""
    if not (math.isfinite(value) and math.isfinite(limit)) or within_limit(value, limit):
        return digits
    return digits_apart(value, limit, digits)


def missed_figure(value: float, limit: float) -> str:
    """A p99 ``value`` over its ``limit`` as the words of what a fleet missed print it: 3
    significant figures, or more where 3 print it as the limit (:func:`over_digits`), trailing
    zeros kept as every console figure keeps them (:func:`figure_text`). Before, "task latency
    p99 68 s over its 60 s" read beside "68.0" in the agentic table (fresh57b, review57)."""
    return figure_text(value, digits=over_digits(value, limit, 3))


def digits_apart(a: float, b: float, digits: int) -> int:
    """Significant digits to print two different numbers with so that they read apart:
    ``digits``, or more where ``digits`` print them alike; at most :data:`SIG_DIGITS`."""
    for n in range(digits, SIG_DIGITS + 1):
        if f"{a:.{n}g}" != f"{b:.{n}g}":
            return n
    return SIG_DIGITS


def share_digits(share: float, digits: int) -> int:
    """Significant figures to print a share (a fraction: an SLO attainment, an accuracy, a
    tier's share of the requests) with: ``digits``, or more where ``digits`` would print one
    that is not exactly 1 as 1: an SLO attainment of 0.9996 read "100 %" (a planner reads all
    met), now "99.96 %". (A share that is not 0 never prints as 0 at significant figures.) A
    share that is 1 at the :data:`SIG_DIGITS` digits summary.json keeps is 1 as written."""
    share = float(share)
    if not math.isfinite(share) or abs(round_sig(share)) == 1.0:
        return digits
    for n in range(digits, SIG_DIGITS + 1):
        if abs(float(f"{share:.{n}g}")) != 1.0:
            return n
    return SIG_DIGITS


def percent_text(share: float, places: int) -> str:
    """``share`` as a percent to ``places`` decimal places (``format(share, ".1%")``), or as
    many more as print one that is not exactly 0 or 1 apart from "0%" and "100%": a tier of
    0.3 % of the requests read "(0% of the requests go to it)", a static split of 99.96 % bf16
    "100.0% bf16 + 0.0% fp8". A share within :data:`SIG_DIGITS` digits of 0 or 1 (as
    summary.json writes it) is shown as that. The share itself is rounded, as :func:`shifted`
    rounds it for :func:`figure_text` and the report a fraction: ``format(share, ".2%")``
    rounds the float product, and an accuracy of 2,007 / 20,000 read "10.04%" in a plan's lines,
    "10.03 %" on ``tiersim run``'s console and 0.1003 in the report."""
    share = float(share)
    if not math.isfinite(share):
        return f"{share:.{places}%}"
    whole = abs(share) < 1e-12 or abs(round_sig(share)) == 1.0
    for n in range(places, places + SIG_DIGITS):
        text = f"{Decimal(f'{share:.{n + 2}f}').scaleb(2):.{n}f}%"
        if whole or abs(float(text.removesuffix("%"))) not in (0.0, 100.0):
            return text
    return f"{Decimal(f'{share:.{places + 2}f}').scaleb(2):.{places}f}%"


def figure_text(value: Any, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
    """A figure as tiersim prints it: ``value * scale`` to ``digits`` significant figures,
    trailing zeros kept (2.0018 s is "2.00 s", not "2 s"), from ``10 ** digits`` up a whole
    number with thousands separators, within 1e-9 of 0 as 0, with ``unit`` after; a whole
    number unscaled (a Python or numpy integer: a count taken from an array) as it is; '-' when
    missing (None, or NaN of any float type: a mean over no request). The one formatter of
    the console (``tiersim run``), a plan's lines and the planner's words, so a figure reads
    alike in each. A percent (``scale`` 100) that is not exactly 100 % is never shown as it:
    to more figures where ``digits`` would (:func:`share_digits`: "99.96 %", not "100 %")."""
    if value is None or (isinstance(value, float | np.floating) and math.isnan(value)):
        return "-"
    if isinstance(value, int | np.integer) and scale == 1.0:  # np.int64(17) read "17.0"
        return f"{int(value):,}{unit}"
    scaled = value * scale
    if abs(scaled) < 1e-9:
        return f"0{unit}"
    if scale == 100:  # a share: 0.9996 is not "100 %"
        digits = share_digits(value, digits)
    if abs(float(f"{scaled:.{digits}g}")) >= 10 ** digits:  # 999.7 to 3 figures is 1,000
        return f"{scaled:,.0f}{unit}"
    scaled = shifted(value, scale, digits)
    if abs(scaled) >= 10 ** digits:
        return f"{scaled:,.0f}{unit}"
    text = f"{scaled:#,.{digits}g}"  # 2.0018 s is "2.00 s", not "2 s": the digits are kept
    return f"{text.removesuffix('.')}{unit}"


def p99_words(pairs, slo_ttft_s, slo_tpot_s, slo_e2e_s=None, slo_session_s=None) -> str:
    """Each (fleet, p99 TTFT s, p99 TPOT s) of ``pairs`` after the SLOs, "p99 TTFT / TPOT
    (SLOs 2.00 s / 100 ms): all fp8 0.319 s / 92.1 ms; ...": the line ``tiersim run`` prints
    under its uniform-fleets table (:func:`tiersim.cli.run_summary.p99_line`), and ``tiersim
    plan`` and the report's plan section for the plan and its sized uniform fleets
    (:func:`tiersim.results_plan_lines.p99_line`). Where an end-to-end limit is held
    (``slo_e2e_s``), each pair's fourth member is its p99 end-to-end latency, and the line
    reads "p99 TTFT / TPOT / end-to-end (SLOs 2.00 s / 100 ms / 30.0 s): ... / 12.1 s".
    Where a task limit is held (``slo_session_s``), the fifth member is its p99 task latency,
    given after them all: "p99 TTFT / TPOT / task latency (SLOs 2.00 s / 100 ms / 60.0 s)"
    without an end-to-end limit, "... / end-to-end / task latency ..." with one."""
    held = [(k, name, limit) for k, name, limit in ((2, "end-to-end", slo_e2e_s),
                                                     (3, "task latency", slo_session_s))
            if limit is not None]

    def figures(p) -> str:
        extra = "".join(f" / {figure_text(p[k] if len(p) > k else None, ' s')}"
                        for k, _, _ in held)
        return f"{figure_text(p[0], ' s')} / {figure_text(p[1], ' ms', 1e3)}{extra}"

    said = "; ".join(f"{name} {figures(p)}" for name, *p in pairs)
    names = "".join(f" / {name}" for _, name, _ in held)
    limits = "".join(f" / {figure_text(limit, ' s')}" for _, _, limit in held)
    return (f"p99 TTFT / TPOT{names} (SLOs {figure_text(slo_ttft_s, ' s')} / "
            f"{figure_text(slo_tpot_s, ' ms', 1e3)}{limits}): {said}")


def shifted(value: float, scale: float, digits: int) -> float:
    """``value * scale`` for :func:`figure_text`: where ``scale`` is a power of ten (a percent,
    milliseconds), ``value`` rounded to ``digits`` significant figures and its decimal point
    moved, so the figure reads as ``value`` itself reads to those digits (the report's
    fraction, summary.json's seconds). The float product can fall on the other side of a tie:
    an SLO attainment of 213 / 2,000 (the float just under 0.1065) read "10.7 %" on the
    console (0.1065 * 100 is the float just over 10.65) and 0.106 in the report; now "10.6 %".
    Any other ``scale``: the product."""
    if not (math.isfinite(value) and scale > 0):
        return value * scale
    power = math.log10(scale)
    if power != round(power):
        return value * scale
    return float(Decimal(f"{value:.{digits - 1}e}").scaleb(round(power)))


def as_given(value: Any) -> Any:
    """A number the user gave (an SLO, a floor, a router setting) as text, as given: to the 10
    significant digits the JSON files keep, no zeros added (a limit of 0.01868 is not rounded
    to the 0.0187 a figure beside it reads); anything else as it is."""
    if isinstance(value, float):
        return f"{value:.10g}"
    return value


def _unknown(value: float | None) -> bool:
    """True for a missing figure: None, or NaN (a mean over no request)."""
    return value is None or value != value


def tier_over_slo_note(tier: str, metric: str, value: float, limit: float, share: float,
                       seeds: bool = False) -> str:
    """The note on a tier whose own p99 ``metric`` (``tpot_p99_s``) is over an SLO the fleet's
    p99 meets, as ``tiersim plan`` and ``tiersim run`` both print it: the SLOs hold the fleet's
    requests together, and the ``share`` of them sent to that tier may see worse. The value to
    more than 3 figures where 3 would print it as the limit (:func:`over_digits`). ``seeds``: a
    plan sized for several seeds (``--robust``), whose p99s are the worst over them and
    ``share`` the most any of them sent the tier ("up to ... at a seed sized for"). The value
    says it is modelled (:data:`MARGIN_SOURCE`), as the plan's margin lines
    beside it do: "is 0.110 s (modelled), over the 0.1 s SLO" (it read bare)."""
    shown = figure_text(value, " s", digits=over_digits(value, limit, 3))
    which = (f"up to {percent_text(share, 0)} of the requests go to it at a seed sized for"
             if seeds else f"{percent_text(share, 0)} of the requests go to it")
    return (f"note: tier {tier}'s own {metric} is {shown} ({MARGIN_SOURCE}), over the "
            f"{as_given(limit)} s SLO, which the fleet's p99 meets ({which})")
