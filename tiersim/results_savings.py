"""Savings: a fleet's cost against the uniform fleets and the static split it is compared with.

:class:`UniformBaseline` and :class:`SavingsResult` (a run summary's ``savings``), the basis
fleets are compared and ranked on (:func:`saving_basis`, :func:`paid`, :func:`paid_order`),
the share saved (:func:`saved_share`, :func:`paid_share`) and how a saving reads in words
(:func:`share_text`, :func:`saving_without_share`, :func:`drain_words`). Every name here is
importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from tiersim.results_accuracy import reaches_floor
from tiersim.results_figures import (
    _fields,
    _unknown,
    digits_apart,
    figure_text,
    percent_text,
    sig_order,
)


@dataclass(frozen=True)
class UniformBaseline:
    """Every request on one tier: its accuracy and cost under the run's cost model.

    ``replicas`` is the simulated fleet's size (None for an estimate, or when no size met the
    SLOs) of ``gpus_per_replica`` GPUs each; ``slo_met``: whether that fleet met the SLOs (None
    when not simulated); ``prefill_replicas``: a disaggregated tier's split, its prefill
    replicas of ``replicas`` (absent from the JSON for an aggregated tier); ``infeasible``: why
    no size of the fleet meets the SLOs (absent from the JSON when one does);
    ``cost_per_hour_usd``: the sized fleet's provisioned rate, replicas x GPUs x USD per
    GPU-hour, what a saving per hour compares (absent from the JSON where there is none: an
    estimate, no size met the SLOs, or a summary written before it). ``accuracy_source``:
    where the tier's correctness comes from (``labels``, ``scenario``, ``prior``), as
    ``tiers.<name>.accuracy_source`` gives a routed tier's: a baseline-only tier's is in no
    other field (absent from the JSON for an estimate, or a summary written before it).
    ``techniques``: the tier's serving techniques the fleet keeps (``spec decode k=3``,
    ``KV offload host``: :func:`techniques_words`; absent for a plain tier or an estimate),
    shown with its size as its split is. ``ttft_p99_s``/``tpot_p99_s``: the sized fleet's
    p99s, what the routed fleet's are compared with (absent from the JSON where no size met
    the SLOs, for an estimate, or in a summary written before them); ``e2e_p99_s`` its
    end-to-end p99, given only where the scenario sets ``slo.e2e_p99_s``, and
    ``session_p99_s`` its task latency p99 only where it sets ``slo.session_p99_s``.
    ``task_success``: where the run has agent sessions, the fleet's task success (mean over
    tasks of the product of their steps' correctness, on the run's accuracy basis, as
    ``sessions.task_success``): a simulated fleet's from its tier's correctness (its own run's
    where it drops requests), an estimate's from each step's correctness on the tier (absent
    from the JSON without sessions, or in a summary written before it).
    """

    tier: str
    accuracy: float
    cost_usd: float | None
    replicas: int | None = None
    slo_met: bool | None = None
    gpus_per_replica: int | None = None
    prefill_replicas: int | None = None
    infeasible: str | None = None
    cost_per_hour_usd: float | None = None
    accuracy_source: str | None = None
    techniques: str | None = None
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    e2e_p99_s: float | None = None  # only where the run holds an end-to-end limit
    session_p99_s: float | None = None  # only where the run holds a task limit
    task_success: float | None = None  # only where the run has agent sessions

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the tier is the key it sits under in ``savings.uniform``)."""
        out = _fields(self)
        out.pop("tier")
        for key in ("prefill_replicas", "infeasible", "cost_per_hour_usd", "accuracy_source",
                    "techniques", "ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s",
                    "task_success"):
            if out[key] is None:
                out.pop(key)
        return out

    def size(self) -> str:
        """``replicas x GPUs``, with a split tier's ``(nP mD)``; ``infeasible`` when no size
        meets the SLOs; ``-`` for an estimate."""
        if self.infeasible is not None:
            return "infeasible"
        if self.replicas is None:
            return "-"
        return fleet_size(self.replicas, self.gpus_per_replica or 1, self.prefill_replicas,
                          self.techniques)


def fleet_size(replicas: int, gpus: int, prefill: int | None = None,
               techniques: str | None = None) -> str:
    """``replicas x GPUs``, with a split tier's ``(nP mD)`` and the serving ``techniques`` it
    keeps (``1 x 2 (spec decode k=3)``)."""
    return f"{replicas} x {gpus}{split_words(replicas, prefill, techniques)}"


def techniques_words(tier, levels: Sequence[str] | None = None) -> str | None:
    """The serving techniques a tier's config (``tier``: a scenario's tier) runs beyond plain
    serving, in the words a fleet's size carries them (``spec decode k=3``, ``KV offload
    host+ssd``); None for a plain tier. A uniform fleet of the tier keeps them, so its size
    says so where it shows a split (:func:`fleet_size`): "all fp8 1 x 2" read as a plain fleet
    where it decoded speculatively. ``levels``: the names of the offload levels the tier runs
    (:func:`tiersim.fleet.tier_techniques` leaves out one that holds no block, as the run
    does); None: every level its config lists."""
    said = []
    spec = getattr(tier, "speculative", None)
    if spec is not None:
        said.append(f"spec decode k={spec.k}")
    if levels is None:
        listed = getattr(getattr(tier, "scheduler", None), "kv_offload", None) or []
        levels = [level.name for level in listed]
    if levels:
        said.append("KV offload " + "+".join(levels))
    return ", ".join(said) or None


def split_words(replicas: int, prefill: int | None, techniques: str | None = None) -> str:
    """`` (nP mD)`` for a split tier of ``replicas`` with ``prefill`` prefill replicas; ``""``
    for an aggregated one; the serving ``techniques`` it keeps (:func:`techniques_words`) in
    the same brackets (`` (2P 2D, KV offload host)``, `` (spec decode k=3)``)."""
    said = [f"{prefill}P {replicas - prefill}D"] if prefill is not None else []
    said += [techniques] if techniques else []
    return f" ({', '.join(said)})" if said else ""


def saved_share(cost: float | None, baseline: float | None) -> float | None:
    """The share of ``baseline`` saved at ``cost``, ``1 - cost / baseline`` (below 0 when
    ``cost`` is dearer), float noise aside (:func:`without_noise`: 0.1 + 0.2 USD against 0.3
    saved -2.2e-16, a loss beside the 0 of the same comparison on the plan's basis); None where
    either is missing or the baseline costs nothing, which takes in a baseline so near 0 USD
    that the share is no finite number (a price of 1e-320 USD per GPU-hour: the console read
    "-inf %" where summary.json held null)."""
    if cost is None or baseline is None or not baseline > 0:
        return None
    share = 1.0 - cost / baseline
    return without_noise(float(share)) if math.isfinite(share) else None


PER_HOUR = "per_hour"
"""``saving_basis`` of a saving under ``provisioned`` cost: shares of USD/hour."""

OVER_THE_TRACE = "over_the_trace"
"""``saving_basis`` under any other cost model: shares of the cost over the trace."""


def saving_basis(cost_model: str | None) -> str:
    """What fleets are compared on, as the planner ranks them (:func:`paid_order`): under
    ``provisioned`` cost their USD/hour (:data:`PER_HOUR`: two fleets of one rate differ over
    the trace only by their drain after the last arrival), else their cost over the trace
    (:data:`OVER_THE_TRACE`: what is paid there)."""
    return PER_HOUR if cost_model == "provisioned" else OVER_THE_TRACE


def basis_words(basis: str | None, share: float | None) -> str:
    """" per hour" after a ``share`` (a saving, "% dearer") compared per hour (``basis``:
    :func:`saving_basis`), else "": also where no share is given (a free baseline's gap, in USD
    over the trace, or none)."""
    return " per hour" if basis == PER_HOUR and share is not None else ""


def paid(cost_model: str | None, cost_usd: float | None, rate: float | None) -> float | None:
    """What a fleet is compared on (:func:`saving_basis`): ``rate`` (USD/hour) under
    ``provisioned`` cost, else ``cost_usd`` over the trace."""
    return rate if saving_basis(cost_model) == PER_HOUR else cost_usd


def paid_order(cost_model: str | None, cost_usd: float, rate: float, tiers: int,
               replicas: int, accuracy: float | None) -> tuple:
    """The order fleets meeting every constraint are chosen in, by ``tiersim plan`` for its
    plan and both ``tiersim plan`` and ``tiersim run`` for the uniform baseline of a saving:
    what is paid first (:func:`paid`, as the JSON files write it: 10 significant digits, so
    sums of one price in another order tie); at a tie the fewer tiers, then the fewer
    replicas, then the cost over the trace, then the higher accuracy. A fleet whose rate is
    not known (none given) comes after every fleet whose rate is, as an infinite one does
    (:func:`sig_order`: NaN last)."""
    basis = paid(cost_model, cost_usd, rate)
    return (sig_order(math.inf if basis is None else basis), tiers, replicas,
            sig_order(cost_usd), 0.0 if accuracy is None else -accuracy)


def paid_share(cost_model: str | None, fleet: tuple[float | None, float | None],
               baseline: tuple[float | None, float | None]) -> float | None:
    """The share of ``baseline`` saved by ``fleet``, each ``(cost over the trace, USD/hour)``,
    on the basis they are ranked on (:func:`paid`; :func:`saved_share`, float noise aside)."""
    return saved_share(paid(cost_model, *fleet), paid(cost_model, *baseline))


SHARE_NOISE = 1e-12
"""A share of one cost in another within this of 0 is 0 (:func:`without_noise`), and only such
a share prints as 0 (:func:`share_text`)."""


def without_noise(share: float | None) -> float | None:
    """A share of one cost in another, 0 within :data:`SHARE_NOISE`: two sums of one set of
    prices may differ in their last bits (fp8 3 + bf16 1 at 14 USD/hour was -1.11e-16 dearer
    than bf16 4 in plan.json, and a share's sign picks "saves" or "costs ... more")."""
    return 0.0 if share is not None and abs(share) < SHARE_NOISE else share


def share_text(share: float) -> str:
    """A share (a saving, "% dearer") as a percentage, as :func:`figure_text` prints one (3
    significant figures, ``" %"``), but in plain digits however small (a share of 2.86e-08
    reads "0.00000286 %", where it read "2.86e-06 %"), and "0 %" only where
    :func:`without_noise` makes it 0: the word its sign picks ("saves", "dearer") never stands
    beside a 0 (a share of -5e-12 read "costs 0 % more", figure_text's 0 being 1e-9)."""
    share = without_noise(share)
    if share == 0:
        return "0 %"
    text = f"{share * 100:#.3g}"
    if "e-" not in text:  # from 1e-4 % up figure_text's digits are plain
        return figure_text(share, " %", 100)
    return f"{Decimal(text):f} %"  # 2.86e-06 as 0.00000286, the same 3 figures


def saving_without_share(frac: float | None, usd: float | None) -> str | None:
    """A saving whose baseline costs 0 USD (a free tier, prices of 0) has no share to save
    (1 - cost / 0): its USD gap in words instead, negative when this fleet costs more; None
    where the share exists, or no gap is known (no baseline). The console and the report
    print it in place of the percentage, which would otherwise be a bare dash."""
    if frac is not None or usd is None:
        return None
    gap = 0.0 if abs(usd) < 1e-12 else usd
    return f"{gap:.3g} USD (the baseline costs 0 USD: no percentage)"


def saving_verdict(frac: float | None, usd: float | None) -> tuple[str, str | None]:
    """How a fleet compares with its baseline, as ``tiersim plan``, ``tiersim run`` and the
    report word it: ``(verdict, shown)``, the verdict "saves", "costs" (the fleet is the
    dearer: ``shown`` is by how much, unsigned) or "same" (a share of 0, :func:`without_noise`),
    ``shown`` the share (:func:`share_text`), or against a free baseline, which has none
    (``frac`` None), the USD gap (:func:`saving_without_share`, 0 within 1e-12); ``shown`` is
    None where neither is known."""
    frac = without_noise(frac)
    gap = frac if frac is not None else usd
    if not isinstance(gap, int | float):
        return "saves", None
    costs = gap < (0 if frac is not None else -1e-12)
    shown = saving_without_share(frac, abs(usd) if costs and usd is not None else usd) or (
        share_text(abs(frac) if costs else frac))
    return ("same" if frac == 0 else "costs" if costs else "saves"), shown


def dearer_words(frac: float | None, usd: float | None, basis: str | None) -> str | None:
    """A saving where the fleet is the dearer, worded as ``tiersim plan`` words it ("costs
    100 % more per hour": :func:`saving_verdict`, :func:`basis_words`): the console's "saved vs
    uniform" row and the report's cell read "-100 % per hour" before, a saving of minus the
    fleet's whole cost; None where the fleet is not the dearer."""
    verdict, shown = saving_verdict(frac, usd)
    return costs_more(shown, basis_words(basis, frac)) if verdict == "costs" else None


def saving_text(frac: float | None, usd: float | None, basis: str | None,
                estimate: str | None = None) -> str:
    """A saving against the uniform baseline as the run's console row ("saved vs uniform
    bf16") and a sweep point's "saved vs uniform" cell both give it: "5.56 % per hour" on the
    saving's ``basis`` (:func:`basis_words`), "costs 3.20 % more per hour" where the fleet is
    the dearer (:func:`dearer_words`), the USD gap against a free baseline
    (:func:`saving_without_share`); an estimate without basis words, labelled by ``estimate``
    (:func:`estimate_label`: "estimate", or "per-request prices" for exact costs). One
    function, as the two copies drifted: a sweep's estimated point read "12.0 % per hour"."""
    shown = saving_without_share(frac, usd) or share_text(frac)
    if estimate is not None:
        return f"{dearer_words(frac, usd, None) or shown} ({estimate})"
    return dearer_words(frac, usd, basis) or f"{shown}{basis_words(basis, frac)}"


SIMULATED_WORDS = "uniform fleets simulated"
"""Where a simulated saving's baseline comes from, in the words ``tiersim run``'s source column
gives it and a sweep point's saving carries after it (an estimated one carries
:func:`estimate_label`'s)."""

TASK_SUCCESS_COLUMN = "task success"
"""The uniform-fleets tables' column (console and report), where the run has agent sessions, of
each fleet's task success (``savings.uniform.<tier>.task_success``; the routed fleet's is the
run's own ``sessions.task_success``)."""


def estimate_label(estimated: bool, priced_per_request: bool) -> str | None:
    """What an estimated saving is labelled with (:func:`saving_text`): "per-request prices"
    where its costs are exact (:attr:`SavingsResult.priced_per_request`), else "estimate";
    None for a simulated one."""
    if not estimated:
        return None
    return "per-request prices" if priced_per_request else "estimate"


def costs_more(shown: str | None, per: str = "") -> str:
    """"costs ``shown`` more``per``", a reason in brackets kept after the words: against a free
    baseline "costs 2 USD more (the baseline costs 0 USD: no percentage)", which read "costs 2
    USD (the baseline costs 0 USD: no percentage) more"."""
    amount, bracket, reason = str(shown).partition(" (")
    return f"costs {amount} more{per}" + (f" ({reason}" if bracket else "")


def drain_words(rates: tuple[float | None, float | None],
                durations: tuple[float | None, float | None], cost_model: str) -> str | None:
    """Why two provisioned fleets of one USD/hour (``rates``) cost differently, in words: each
    is paid until it finishes its last request (``durations``, seconds), so the whole gap is the
    drain after the last arrival, not a cheaper fleet (it fades as the trace lengthens); None
    for any other pair, for two free fleets (0 USD/hour: both cost 0, there is no gap), or
    where a rate or duration is not known; the durations at 4 significant digits, or as many
    more as print them apart (:func:`digits_apart`).
    ``tiersim plan`` and ``tiersim run`` both say it this way
    (:func:`tiersim.plan.planner.drain_gap`, :func:`tiersim.savings.savings_result`)."""
    if (cost_model != "provisioned" or None in (*rates, *durations)
            or durations[0] == durations[1] or not math.isclose(*rates, rel_tol=1e-9)
            or not rates[0] > 0):
        return None
    n = digits_apart(*durations, 4)  # 346.79 s against 346.82 s, not 346.8 against 346.8
    return (f"both {_plain(rates[0], 4)} USD/hour: the gap is the drain after the last arrival, "
            f"{_plain(durations[0], n)} s against {_plain(durations[1], n)} s, not a cheaper "
            "fleet")


def _plain(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant figures, no zeros added (14, not 14.0), and from
    ``10 ** digits`` up a whole number with thousands separators, never in e-notation: a
    3-hour trace's drain read "1.08e+04 s against 1.081e+04 s", a 28,673 USD/hour fleet
    "2.867e+04 USD/hour"."""
    if abs(float(f"{value:.{digits}g}")) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def mix_words(mix: dict[str, float] | None) -> str:
    """A static split's fleets and shares in words, ``67.7% bf16 + 32.3% fp8``, in the order
    given (a summary's keys are sorted); empty where the split is unknown (a summary written
    before the mix was kept, or no split)."""
    if not mix:
        return ""
    return " + ".join(f"{'-' if share is None else percent_text(share, 1)} {name}"
                      for name, share in mix.items())  # a share unknown (null) reads "-"


MIX_ROW = "static split of equal accuracy (share of the requests)"
"""The report's row naming the uniform fleets a static split mixes (:func:`mix_words`)."""


def mix_rows(mix: dict[str, float] | None) -> list[list[str]]:
    """The report's :data:`MIX_ROW` for a static split ``mix``; none where it is unknown."""
    return [[MIX_ROW, mix_words(mix)]] if mix else []


@dataclass(frozen=True)
class SavingsResult:
    """The routed fleet's cost against the cheapest uniform fleet meeting the accuracy floor and
    against a static split of the uniform fleets at the routed accuracy.

    ``method``: "simulated" (every uniform fleet was run) or "estimated" (uniform costs scaled
    from this run's per-token costs: an estimate, never the headline; under per-request prices
    the costs are exact and only the uniform fleets' SLOs unsimulated,
    :attr:`priced_per_request`). ``cost_model``: the ledger the costs are in.
    ``vs_uniform_frac`` = 1 - routed / uniform baseline on
    ``saving_basis`` (:func:`saving_basis`: USD/hour under provisioned cost, as ``tiersim plan``
    ranks fleets, else the cost over the trace), the baseline chosen in the plan's order
    (:func:`paid_order`); ``vs_uniform_usd`` and ``vs_uniform_over_trace_frac`` are the gap and
    share over the trace (the costs this file gives), whatever the basis. The static split
    likewise (:func:`tiersim.routing.metrics.static_split_saving`): ``vs_static_split_frac`` on
    ``saving_basis`` (against ``static_split_cost_per_hour_usd`` under provisioned cost),
    ``static_split_cost_usd``, ``vs_static_split_usd`` and ``vs_static_split_over_trace_frac``
    over the trace; ``static_split_mix``: the uniform fleets the split mixes, each with its
    share of the requests. ``routed_cost_per_hour_usd``: the run's own fleet's provisioned
    rate (None for an estimate, or a summary written before it), beside each simulated uniform
    fleet's
    ``cost_per_hour_usd``: the two rates a saving per hour is the share of.
    ``routed_slo_met`` / ``routed_floor_met``: whether the run's own fleet met the SLOs (p99 TTFT
    and TPOT, nothing dropped) and the accuracy floor; when either is False the saving would
    compare unlike fleets (the uniform ones are held to both): it is shown as not comparable and
    ``vs_uniform_*`` / ``vs_static_split_*`` are None (the baselines' costs are kept).
    ``drain_gap``: where the run's fleet and its uniform baseline cost the same per hour, why
    their costs differ (:func:`drain_words`), as ``tiersim plan`` says it; else None.
    """

    method: Literal["simulated", "estimated"]
    cost_model: str
    routed_cost_usd: float
    accuracy: float
    accuracy_floor: float
    uniform: tuple[UniformBaseline, ...]
    baseline_uniform_tier: str | None
    vs_uniform_usd: float | None
    vs_uniform_frac: float | None
    static_split_cost_usd: float | None
    vs_static_split_usd: float | None
    vs_static_split_frac: float | None
    routed_slo_met: bool | None = None
    routed_floor_met: bool | None = None
    drain_gap: str | None = None
    saving_basis: str | None = None  # None: written before it (over the trace)
    vs_uniform_over_trace_frac: float | None = None
    static_split_cost_per_hour_usd: float | None = None
    vs_static_split_over_trace_frac: float | None = None
    routed_cost_per_hour_usd: float | None = None
    static_split_mix: dict[str, float] | None = None  # None: written before it, or no split

    @property
    def shows_rates(self) -> bool:
        """Whether the uniform fleets' tables give each fleet's USD per hour beside its cost
        over the run: where the saving is per hour (:data:`PER_HOUR`) and the summary holds the
        rates (one written before them does not)."""
        return self.saving_basis == PER_HOUR and self.routed_cost_per_hour_usd is not None

    @property
    def comparable(self) -> bool:
        """False when the run's own fleet missed the SLOs or the accuracy floor its uniform
        baselines were held to: the saving would then compare unlike fleets."""
        return self.routed_slo_met is not False and self.routed_floor_met is not False

    def meets_floor(self, baseline: UniformBaseline) -> bool | None:
        """Whether a uniform fleet's accuracy reaches the floor these savings hold it to (None
        when either is unknown: no request reached the fleet, so there is no accuracy)."""
        if _unknown(baseline.accuracy) or _unknown(self.accuracy_floor):
            return None
        return reaches_floor(baseline.accuracy, self.accuracy_floor)

    @property
    def missed(self) -> str | None:
        """What the run's own fleet missed, in words ("its SLOs", "its accuracy floor", both),
        or None."""
        missed = [what for what, met in (("its SLOs", self.routed_slo_met),
                                         ("its accuracy floor", self.routed_floor_met))
                  if met is False]
        return " and ".join(missed) or None

    @property
    def estimated(self) -> bool:
        """True when the uniform costs are estimates, not simulations."""
        return self.method == "estimated"

    PRICED_WORDS = ("every request at each uniform tier's cost_per_request_usd: exact at any "
                    "fleet size; its SLOs not simulated (--baselines simulates)")
    """Where an estimate under per-request prices comes from (``cost_model``
    ``fixed_per_request``: :func:`tiersim.savings.per_request_priced`)."""

    @property
    def priced_per_request(self) -> bool:
        """True for an estimate in per-request prices: its costs are exact, only the uniform
        fleets' SLOs are not simulated."""
        return self.estimated and self.cost_model == "fixed_per_request"

    def closed_form_prices(self, cheap: str, top: str) -> tuple[str, str]:
        """How the closed form's c0 and dc are priced from these uniform fleets (``cheap`` and
        ``top``: the two compared tiers), in words: how the fleets were costed ("sized by
        simulation"), and what dc is ("all bf16's USD/hour over all fp8's, on all fp8's
        duration" under provisioned cost, where the fleets are sized; else "all bf16's cost
        less all fp8's"). The report's closed-form row and summary.json's ``analytic.sources``
        both say them."""
        fleets = ("priced per request, every request once" if self.priced_per_request else
                  "estimated from this run's per-token cost" if self.estimated
                  else "sized by simulation")
        dc = (f"all {top}'s USD/hour over all {cheap}'s, on all {cheap}'s duration"
              if self.cost_model == "provisioned" and not self.estimated
              else f"all {top}'s cost less all {cheap}'s")
        return fleets, dc

    def closed_form_sources(self, cheap: str, top: str) -> dict[str, str]:
        """Where the closed form's figures in a summary's ``analytic.params`` come from, by
        key (summary.json's ``analytic.sources``): dC* is the two-type closed form
        (:func:`tiersim.results_figures.closed_form_words`) of p / eps / delta and dc; c0 and dc are
        priced from these uniform fleets (:meth:`closed_form_prices`), in their cost model."""
        from tiersim.results_figures import closed_form_words

        fleets, dc = self.closed_form_prices(cheap, top)
        basis = f"the uniform fleets {fleets} ({self.cost_model})"
        return {"dC_star_usd": closed_form_words("p / eps / delta and dc"),
                "c0_usd": f"all {cheap}'s cost; {basis}", "dc_usd": f"{dc}; {basis}"}

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields; ``uniform`` as a map tier name -> baseline."""
        out = _fields(self)
        out["uniform"] = {u.tier: u.to_json() for u in self.uniform}
        return out
