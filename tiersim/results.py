"""Typed results: one run's summary, its tiers, router and savings, and a capacity plan.

Every result is a frozen dataclass with ``to_json()``, which returns plain JSON values (dicts,
lists, str, int, float rounded to :data:`SIG_DIGITS` significant digits, ``None`` for NaN). The
run summary written as ``summary.json`` is :meth:`RunResult.to_json` and nothing else: this
module is the one place that dict is assembled. :meth:`RunResult.from_json` reads it back (the
report does) and names the file and key in a one-line :class:`~tiersim.errors.TiersimError`
when it is malformed.

JSON shape (flat-friendly for sweep tables): scalars at the top level; ``tiers`` is a map tier
name -> tier fields and ``tier_order`` lists the names cheapest first (sorted JSON keys lose the
order); ``router`` and ``savings`` are maps; ``savings`` is
``null`` when not computed. Key names are stable: sweeps, the report and the golden test read
them.

This module holds :class:`RunResult` and reads it back; the rest is in seven modules, and every
name they define that callers import is importable from here as well:

- :mod:`tiersim.results_figures`: plain JSON values, :data:`SIG_DIGITS` rounding,
  :func:`within_limit` and the printed figure (:func:`figure_text`);
- :mod:`tiersim.results_accuracy`: the accuracy floor (:data:`FLOOR_TOLERANCE`,
  :func:`reaches_floor`, :func:`baseline_floor`) and the digits it is printed with;
- :mod:`tiersim.results_parts`: a summary's parts (:class:`TierResult`,
  :class:`RouterResult`, :class:`Sources`, :class:`ProfileUsed`, :class:`SessionResult` ...);
- :mod:`tiersim.results_classes`: :class:`ClassAccuracy`, the accuracy per difficulty class;
- :mod:`tiersim.results_savings`: :class:`SavingsResult`, :class:`UniformBaseline` and the
  basis and share of a saving (:func:`paid_order`, :func:`paid_share`, :func:`share_text`);
- :mod:`tiersim.results_read`: the checks a results file is read back with
  (:func:`range_problem`, :func:`check_finite`);
- :mod:`tiersim.results_plan`: :class:`PlanResult` and how a plan's designs read
  (:func:`design_verdict`, :func:`in_margin_order`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tiersim.errors import TiersimError, shown_json
from tiersim.jsonio import parse_json
from tiersim.results_accuracy import (  # noqa: F401 - re-exported
    FLOOR_TOLERANCE,
    accuracy_name,
    accuracy_words,
    baseline_floor,
    floor_digits,
    floor_pair,
    percent_as_given,
    reaches_floor,
)
from tiersim.results_classes import (  # noqa: F401 - re-exported
    ClassAccuracy,
    classes_from,
    classes_json,
    classes_line,
)
from tiersim.results_figures import (  # noqa: F401 - re-exported
    SIG_DIGITS,
    _fields,
    _unknown,
    as_given,
    digits_apart,
    dumps,
    figure_text,
    missed_figure,
    over_digits,
    p99_words,
    percent_text,
    plain,
    round_sig,
    share_digits,
    sig_order,
    tier_over_slo_note,
    within_limit,
)
from tiersim.results_parts import (  # noqa: F401 - re-exported
    NOTHING_SERVED_WORDS,
    OFFLOAD_FIELDS,
    ModelRead,
    ProfileUsed,
    ResponseCacheResult,
    RouterQuality,
    RouterResult,
    SessionResult,
    Sources,
    StepTypeResult,
    TierResult,
    TraceRead,
)
from tiersim.results_plan import (  # noqa: F401 - re-exported
    MARGIN_ORDER,
    PlanResult,
    baseline_design,
    by_planned_tier,
    design_verdict,
    in_margin_order,
    source_words,
    whose_p99,
)
from tiersim.results_read import (  # noqa: F401 - re-exported
    ANALYTIC_PARTS,
    FIGURES,
    FRACTIONS,
    FRONTIER,
    SIGNED,
    _analytic_from,
    _build,
    _checked_from,
    _in_range,
    _interval,
    _object,
    _oneline,
    _sessions_from,
    _structured,
    _tier_data,
    check_finite,
    check_spec_steps,
    range_problem,
)
from tiersim.results_savings import (  # noqa: F401 - re-exported
    OVER_THE_TRACE,
    PER_HOUR,
    SHARE_NOISE,
    SavingsResult,
    UniformBaseline,
    basis_words,
    dearer_words,
    drain_words,
    fleet_size,
    mix_rows,
    mix_words,
    paid,
    paid_order,
    paid_share,
    saved_share,
    saving_basis,
    saving_verdict,
    saving_without_share,
    share_text,
    split_words,
    techniques_words,
    without_noise,
)

CostModel = Literal["attributed", "provisioned", "fixed_per_request"]


ATTRIBUTED_WORDS = "modelled busy GPU time x $/GPU-hour"
"""Where a run's attributed cost comes from, as the console and the report say it."""

GPU_HOURS_WORDS = "scenario's GPUs x simulated duration"
"""Where a run's provisioned GPU-hours come from, as the console and the report say it."""

PER_HOUR_WORDS = "provisioned: GPUs x $/GPU-hour (the scenario's prices)"
"""Where a run's cost per hour comes from, as the console and the report say it."""


OPTIONAL_SECTIONS = ("sessions", "response_cache", "trace")
"""RunResult sections written only when the run has them (agentic sessions, a response cache;
the trace read, absent from a summary written before it was recorded)."""


@dataclass(frozen=True)
class RunResult:
    """The summary of one simulated run (DESIGN.md §6); written as ``summary.json``.

    Cost: ``cost_usd`` is the headline under ``cost_model``: "provisioned" (every replica for
    the whole run: GPUs x duration x $/GPU-hour), "fixed_per_request" (the tier's price per
    pass run) or "attributed" (busy replica time x price). ``attributed_cost_usd`` (busy time
    only), ``provisioned_cost_usd`` and ``fixed_per_request_cost_usd`` (None without prices) are
    always given beside it. ``gpu_hours`` are provisioned (GPUs x duration), ``gpu_hours_busy``
    the GPU time spent running iterations. ``accuracy`` scores dropped requests as wrong.
    ``slo_attainment``: share of all requests finished within both SLO targets. ``tiers`` are
    cheapest first; ``router`` scores the routing; ``sources`` says where latency, accuracy and
    cost come from and ``profile`` which step-time tables each tier used; ``savings`` compares
    the fleet with uniform ones (None when not computed); ``analytic`` is the two-type closed
    form for the cheapest and top tiers. ``sessions`` (agentic runs: per-task figures) and
    ``response_cache`` (runs with one: hits and savings) are None, and absent from the JSON,
    otherwise; with a response cache every other figure covers the requests the fleet served.
    ``notes``: the run's notes as the command printed them (a trace's dropped rows, shifted
    times ...), absent from the JSON when there are none. ``trace``: the trace file read, the
    format it was read as and its SHA-256 (:class:`TraceRead`). ``slo_scope``: what the
    SLOs hold, the p99 of the ``fleet``'s requests or each ``tier``'s too (a summary written
    before it reads ``fleet``). ``cost_per_hour_usd``: the fleet's provisioned price per hour
    (every replica's GPUs x its $/GPU-hour), whatever ``cost_model`` and whether or not uniform
    fleets were sized (None in a summary written before it). ``accuracy_by_class``: the
    accuracy per difficulty class of the workload (:class:`ClassAccuracy`), routed and per
    uniform fleet; empty, and absent from the JSON, where requests have no class. Every
    formula: ``docs/metrics.md``.
    """

    scenario: str
    seed: int
    model: str
    gpu: str
    requests: int
    completed: int
    dropped: int
    duration_s: float
    cost_model: str
    cost_usd: float | None
    attributed_cost_usd: float
    provisioned_cost_usd: float
    fixed_per_request_cost_usd: float | None
    gpu_hours: float
    gpu_hours_busy: float
    input_tokens: int
    output_tokens: int
    cost_per_1m_output_tokens: float | None
    accuracy: float | None
    accuracy_floor: float | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    tpot_p50_s: float | None
    tpot_p99_s: float | None
    e2e_p50_s: float | None
    e2e_p99_s: float | None
    queue_p50_s: float | None
    queue_p99_s: float | None
    throughput_tok_s: float | None
    throughput_req_s: float | None
    slo_ttft_p99_s: float
    slo_tpot_p99_s: float
    slo_attainment: float | None
    tiers: tuple[TierResult, ...]
    router: RouterResult
    sources: Sources
    profile: ProfileUsed
    savings: SavingsResult | None = None
    analytic: dict[str, Any] = field(default_factory=dict)
    sessions: SessionResult | None = None
    response_cache: ResponseCacheResult | None = None
    notes: tuple[str, ...] = ()
    trace: TraceRead | None = None
    slo_scope: str = "fleet"  # the scenario's slo.scope ("tier": each tier's own p99 held too)
    cost_per_hour_usd: float | None = None  # provisioned: GPUs x $/GPU-hour (None: older file)
    slo_e2e_p99_s: float | None = None  # the scenario's slo.e2e_p99_s: absent when not set
    slo_session_p99_s: float | None = None  # the scenario's slo.session_p99_s: likewise
    accuracy_by_class: tuple[ClassAccuracy, ...] = ()  # per difficulty class: absent if none

    @property
    def accuracy_label(self) -> str:
        """The accuracy's name: expected, or realised where the router reads the realised
        draws and accuracy is scored on them (:mod:`tiersim.routing.accuracy`). The uniform
        fleets' accuracies are scored on the same basis (:func:`tiersim.savings.same_basis`),
        so their column takes this name too."""
        return accuracy_name(None if self.router is None else self.router.basis)

    NO_ACCURACY = "n/a: no request reached the fleet"
    """The accuracy's text where no request reached the fleet (a response cache answered every
    one): summary.json, sweep rows and the results then hold None, not NaN or 1.0."""

    def accuracy_text(self, show, accuracy: float | None | str = "run") -> Any:
        """``show(accuracy)`` (the run's own by default; the router's passed in), or
        :attr:`NO_ACCURACY` where no request reached the fleet and so none was scored."""
        value = self.accuracy if accuracy == "run" else accuracy
        return self.NO_ACCURACY if value is None and not self.requests else show(value)

    @property
    def served_scope(self) -> str:
        """What the headline's latencies, SLO attainment, throughput, cost per output token
        and accuracy cover, as their label's tail: " (requests the fleet served)" where a
        response cache answered some (its own table's latencies cover every request), else
        nothing."""
        cache = self.response_cache
        return " (requests the fleet served)" if cache is not None and cache.hits else ""

    def tier(self, name: str) -> TierResult:
        """The tier called ``name``."""
        for t in self.tiers:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """The summary as plain JSON values (the content of summary.json)."""
        out = _fields(self)
        out["tiers"] = {t.name: t.to_json() for t in self.tiers}
        out["tier_order"] = [t.name for t in self.tiers]  # JSON objects lose their order
        if not self.notes:  # the run's notes (a trace's dropped rows ...): absent when none
            out.pop("notes")
        if self.accuracy_by_class:  # keyed by class; absent without difficulty classes
            out["accuracy_by_class"] = classes_json(self.accuracy_by_class)
        else:
            out.pop("accuracy_by_class")
        for key in ("slo_e2e_p99_s", "slo_session_p99_s"):  # not set: absent, as before
            if out[key] is None:
                out.pop(key)
        for key in OPTIONAL_SECTIONS:  # present only in runs that have them
            section = getattr(self, key)
            if section is None:
                out.pop(key)
            else:
                out[key] = section.to_json()
        return out

    def dumps(self) -> str:
        """summary.json text: sorted keys, rounded floats, NaN as null, byte-stable."""
        return dumps(self.to_json())

    @classmethod
    def from_json(cls, data: dict | str, source: str = "summary.json") -> RunResult:
        """Read a summary back (a dict or JSON text); a one-line TiersimError naming ``source``
        and the key when it is malformed."""
        if isinstance(data, str):
            try:  # a key twice, or nesting too deep for the parser, is one line too
                data = parse_json(data, source, "a run summary")
            except TiersimError as err:
                raise TiersimError(f"{err}; rerun `tiersim run` to rewrite it") from None
        try:
            return _run_from(data)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise TiersimError(f"{source}: malformed summary ({_oneline(err)}); rerun "
                               "`tiersim run` to rewrite it") from None

    def routing_source(self) -> str:
        """Where the correctness the router's FPR and FNR are judged on comes from: every
        routed tier's, as each request is judged against the tier it needed, answering or not
        (the headline accuracy's source names only the tiers that answered)."""
        found = {t.name: t.accuracy_source for t in self.tiers if t.accuracy_source}
        return " + ".join(accuracy_words(found)) if found else self.sources.accuracy

    def tier_dropped_words(self) -> str | None:
        """What the tier tables' request counts hold besides the answered requests: a tier's
        requests are those whose last tier it was, answered or dropped, so the tiers sum to the
        run's requests, and its p99s are over those it answered. "requests include the 50
        dropped (w4a16 22, bf16 28); each tier's p99s are over those it answered" where a tier
        dropped any (the console's tier table and the report's put it under the table: before,
        a tier of 91 requests, 22 of them dropped, read 91 beside the headline's "317 (267 /
        50)" and said nothing of them); None where none was."""
        dropped = [(t.name, t.dropped) for t in self.tiers if t.dropped]
        if not dropped:
            return None
        each = ", ".join(f"{name} {count:,}" for name, count in dropped)
        return (f"requests include the {sum(count for _, count in dropped):,} dropped ({each}); "
                "each tier's p99s are over those it answered")

    def missed_words(self) -> str | None:
        """What the run's fleet missed of what its uniform baselines are held to (its savings'
        ``missed``), with the figures that missed: each p99 over its SLO at 3 significant
        digits, or as many more as print it apart from the SLO it missed
        (:func:`over_digits`, as ``tiersim plan`` prints its misses; before, every p99 was
        printed at summary.json's 10 digits: "TTFT p99 2.151577072 s over its 2 s"), the
        requests dropped, the accuracy under the floor. None when nothing was missed."""
        missed = None if self.savings is None else self.savings.missed
        if missed is None:
            return None
        return " and ".join(f"{what} ({'; '.join(why)})" if why else what
                            for what, why in self._misses() if what in missed)

    def passes_differ(self) -> bool:
        """Whether a tier ran passes other than the requests it answered (a cascade's first
        passes that escalated; requests refused at admission), so the per-tier tables of the
        console and the report show its ``passes`` beside its requests: a cascade's cheap tier
        read 893 requests where it had run all 1,091 first passes, at 95 % utilisation."""
        return any(t.passes != t.requests for t in self.tiers)

    def no_baseline_words(self) -> str | None:
        """Why there is no saving to show where no uniform fleet is its baseline, in words (the
        console's "saved vs uniform" row and the report's "saved vs that tier" give the same
        reason); None where a baseline exists or there are no savings. A uniform fleet no size
        makes feasible is named with why ("all fp8 drops 9 requests longer (prompt + output)
        than fp8's max_model_len 163,840 at any size"), in simulated savings as in estimated
        ones; before, the simulated row read only "no uniform fleet meets the SLOs and this
        run's accuracy (or the floor)", though its table said every fleet met the floor. The
        accuracy a fleet is held to is named as the one in force (:func:`~tiersim.
        results_accuracy.baseline_floor`): "the accuracy floor" where the scenario sets one,
        else "this run's accuracy"; before, both were named ("this run's accuracy (or the
        floor)"), and a run at 79.84 % under a floor of 80 % read that no uniform fleet met
        its accuracy beside a uniform BF16 fleet that met the SLOs at 79.84 %."""
        s = self.savings
        held = "the accuracy floor" if self.accuracy_floor is not None else "this run's accuracy"
        if s is None or s.baseline_uniform_tier is not None:
            return None
        if s.uniform and self.requests == 0:
            return ("the response cache answered every request: no fleet served one, so there "
                    "is no saving to compare")
        if s.estimated and self.completed == 0:
            return ("no request was answered: no per-token cost to scale the uniform fleets "
                    "from (--baselines simulates)")
        if s.estimated and s.uniform:  # no SLO is checked and no table printed for estimates
            why = [f"all {b.tier} {b.infeasible}" for b in s.uniform if b.infeasible]
            if len(why) < len(s.uniform):
                why.append(f"no other reaches {held}" if why else
                           f"no uniform fleet's estimate reaches {held}")
            return f"{'; '.join(why)}: none to compare with (estimate; --baselines simulates)"
        if s.uniform:  # a fleet infeasible at any size says why, as an estimate's row does
            why = [f"all {b.tier} {b.infeasible}" for b in s.uniform if b.infeasible]
            if why and len(why) < len(s.uniform):
                why.append(f"no other meets the SLOs and {held}")
            return (f"{'; '.join(why)}: none to compare with (uniform fleets table)" if why else
                    f"no uniform fleet meets the SLOs and {held}: none to compare with "
                    "(uniform fleets table)")
        return None

    def _misses(self) -> list[tuple[str, list[str]]]:
        """(what, the figures that missed it) for the SLOs and the accuracy floor."""
        held = [("", self), *((f"tier {t.name}'s ", t) for t in self.tiers
                              if self.slo_scope == "tier")]
        slo = [f"{whose}{name} p99 {missed_figure(p99, limit)} s over its "
               f"{limit:.10g} s"
               for whose, r in held
               for name, p99, limit in (("TTFT", r.ttft_p99_s, self.slo_ttft_p99_s),
                                        ("TPOT", r.tpot_p99_s, self.slo_tpot_p99_s),
                                        ("end-to-end", r.e2e_p99_s, self.slo_e2e_p99_s))
               if not (limit is None or p99 is None or within_limit(p99, limit))]
        task = None if self.sessions is None else self.sessions.task_latency_p99_s
        limit = self.slo_session_p99_s
        if not (limit is None or task is None or within_limit(task, limit)):
            slo.append(f"task latency p99 {missed_figure(task, limit)} s over its "
                       f"{limit:.10g} s")
        if self.dropped:
            slo.append(f"{self.dropped:,} request{'s' if self.dropped != 1 else ''} dropped")
        s = self.savings
        floor = ([] if _unknown(s.accuracy) or _unknown(s.accuracy_floor) else
                 [f"accuracy {100 * s.accuracy:.{n}g} % under {100 * s.accuracy_floor:.{n}g} %"
                  for n in [floor_digits(s.accuracy_floor, s.accuracy, 4)]])
        return [("its SLOs", slo), ("its accuracy floor", floor)]

    @property
    def duration_source(self) -> str:
        """Where the duration comes from: the latency's source, or where no request was served
        (every one dropped, or answered by a response cache) the trace's last arrival."""
        if self.sources.latency == NOTHING_SERVED_WORDS:
            return "trace (the last arrival: no request was served)"
        return self.sources.latency

    def fleet_label(self) -> str:
        """How the uniform-fleets tables name this run's fleet: "routed (this run)", or, for a
        fleet of one tier, which routes nothing, "this run (one tier)"."""
        return "routed (this run)" if len(self.tiers) > 1 else "this run (one tier)"

    def floor_words(self) -> str:
        """The accuracy floor the uniform fleets are held to, and where it comes from."""
        floor = None if self.savings is None else self.savings.accuracy_floor
        if _unknown(floor):  # nothing reached the fleet, so there is no accuracy to hold
            return "no accuracy floor: no request was served"
        where = ("the scenario's accuracy_floor" if self.accuracy_floor is not None else
                 "this run's accuracy, the scenario sets no accuracy_floor")
        # to the digits that tell it from every accuracy the table beside it judges by it;
        # this run's accuracy with its zeros, as the accuracies are printed (94.40 %, not 94.4)
        shown = [self.savings.accuracy, *(u.accuracy for u in self.savings.uniform)]
        n = max(floor_digits(floor, a, 4) for a in shown)
        zeros = "" if self.accuracy_floor is not None else "#"  # a given floor as given
        return f"floor {f'{100 * floor:{zeros}.{n}g}'.removesuffix('.')} %: {where}"

    def uniform_accuracy_words(self) -> str | None:
        """Where the uniform fleets' accuracies come from: "accuracy from scenario", or per
        source where their tiers differ ("accuracy from fp8, bf16: scenario; w4_only: prior":
        a baseline-only tier with no accuracy table reads the precision prior); None where a
        fleet's source is not known (an estimate, or a summary written before it was kept: a
        baseline-only tier's would be left out)."""
        if self.savings is None or self.savings.estimated or not self.savings.uniform:
            return None
        routed = {t.name: t.accuracy_source for t in self.tiers}
        found = {}
        for u in self.savings.uniform:
            source = u.accuracy_source or routed.get(u.tier)
            if not source:
                return None
            found.setdefault(source, []).append(u.tier)
        if len(found) == 1:
            return f"accuracy from {next(iter(found))}"
        return "accuracy from " + "; ".join(f"{', '.join(names)}: {source}"
                                            for source, names in found.items())

    @classmethod
    def read(cls, path: str | Path) -> RunResult:
        """Read ``summary.json`` from ``path``."""
        path = Path(path)
        if path.exists() and not path.is_file():  # a FIFO would hang the read
            raise TiersimError(f"{path}: not a regular file; rerun `tiersim run`")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise TiersimError(f"{path}: cannot read ({getattr(err, 'strerror', None) or err})"
                               "; rerun `tiersim run`") from None
        return cls.from_json(text, str(path))


E2E_SLO_WORDS = ("scenario (slo.e2e_p99_s): the limit on the fleet's p99 end-to-end time per "
                 "request, arrival to last token; counted in SLO attainment")
"""Where the end-to-end SLO row of a run's headline (console and report) comes from."""

SESSION_SLO_WORDS = ("scenario (slo.session_p99_s): the limit on the p99 over agent tasks of a "
                     "task's latency, first step's arrival to last step's finish (the agentic "
                     "table's task latency p99); not counted in SLO attainment, which is per "
                     "request")
"""Where the task SLO row of a run's headline (console and report) comes from."""


def slo_attainment_label(slo_session_p99_s: float | None) -> str:
    """The headline's SLO attainment row name: "(per request)" where a task latency SLO is set,
    which the share does not count, so a fleet over that SLO does not read 100 % as meeting it."""
    return "SLO attainment" if slo_session_p99_s is None else "SLO attainment (per request)"


def _run_from(data: dict) -> RunResult:
    """RunResult from its JSON form."""
    if not isinstance(data, dict):
        raise TypeError("the top level must be a JSON object")
    for key, value in data.items():  # named as the rest are: run.cost_usd, tiers.bf16.share
        check_finite(value, f"{'' if isinstance(value, dict | list) else 'run.'}{key}")
    tiers = data["tiers"]
    if not isinstance(tiers, dict):
        raise TypeError("'tiers' must map tier names to objects")
    order = data.get("tier_order") or list(tiers)
    if sorted(order) != sorted(tiers):
        raise ValueError("'tier_order' must name every tier of 'tiers' once")
    tier_list = tuple(_build(TierResult, _tier_data(tiers[name], name), at=f"tiers.{name}")
                      for name in order)
    for tier in tier_list:
        check_spec_steps(tier, tiers[tier.name])
    router_data = _object(data["router"], "router")
    quality = router_data.get("quality")
    router = _build(RouterResult, router_data, accuracy_ci95=_interval(_structured(
        router_data.get("accuracy_ci95") or (None, None), RouterResult, "accuracy_ci95",
        "router.accuracy_ci95")), quality=None if quality is None else _quality_intervals(
        _build(RouterQuality, quality, at="router.quality")))
    savings = None
    if data.get("savings") is not None:
        s = _object(data["savings"], "savings")
        fleets = s.get("uniform") or {}
        if not isinstance(fleets, dict):
            raise TypeError(f"'savings.uniform' must map tier names to objects, got "
                            f"{shown_json(fleets)}")
        # the run's tiers first, cheapest first, as the run printed them (the JSON object's
        # keys are sorted: the report listed default's uniform bf16 above fp8, the console fp8
        # above bf16, and the routed row's "10 + 7" below them is fp8's 10, bf16's 7)
        rank = {name: k for k, name in enumerate(order)}
        named = sorted(fleets, key=lambda name: rank.get(name, len(rank)))
        uniform = tuple(_build(UniformBaseline, {**_object(fleets[name],
                                                           f"savings.uniform.{name}"),
                                                 "tier": name}, at=f"savings.uniform.{name}")
                        for name in named)
        savings = _build(SavingsResult, s, uniform=uniform)
        _check_uniform_p99s(savings, data)
    sources = _build(Sources, data["sources"])
    profile_data = data["profile"]
    profile = _build(ProfileUsed, profile_data, checked=_checked_from(
        profile_data.get("checked") if isinstance(profile_data, dict) else None))
    for key in ("requests", "completed", "dropped"):
        if not isinstance(data.get(key), int):
            raise TypeError(f"'{key}' must be an integer")
    return _build(RunResult, data, tiers=tier_list, router=router, savings=savings,
                  sources=sources, profile=profile, analytic=_analytic_from(data.get("analytic")),
                  sessions=_sessions_from(data.get("sessions")),
                  response_cache=None if data.get("response_cache") is None
                  else _build(ResponseCacheResult, data["response_cache"]),
                  trace=None if data.get("trace") is None
                  else _build(TraceRead, data["trace"], at="trace"),
                  accuracy_by_class=classes_from(data.get("accuracy_by_class")))


def _quality_intervals(quality: RouterQuality) -> RouterQuality:
    """``quality`` where each AUROC interval is as a run writes it, null or two fractions, the
    low end first; a ValueError otherwise. ``[null, null]`` (as ``router.accuracy_ci95`` is
    written where there is none) was read, and the report ended in a TypeError traceback
    comparing the AUROC asked with a null end; ``[0.9, 0.2]`` read "95% CI 0.900 - 0.200".
    An interval must hold its AUROC, as every one a run writes does
    (:func:`tiersim.routing.quality.auroc_interval`): ``auroc 0.7`` beside ``[0.8, 0.9]`` was
    shown, and the AUROC asked judged against it (review54b)."""
    from tiersim.errors import json_written

    for key, of in (("auroc_ci95", "auroc"), ("auroc_wrong_ci95", "auroc_wrong")):
        interval = getattr(quality, key)
        if interval is None:
            continue
        lo, hi = interval
        if _unknown(lo) or _unknown(hi) or not 0 <= lo <= hi <= 1:
            raise ValueError(f"'router.quality.{key}' must be two fractions between 0 and 1, "
                             f"the low end first, or null, got {json_written([lo, hi])}")
        value = getattr(quality, of)
        if not _unknown(value) and not lo <= value <= hi:
            raise ValueError(f"'router.quality.{key}' must hold the AUROC it is the interval "
                             f"of ('router.quality.{of}' {json_written(value)}), got "
                             f"{json_written([lo, hi])}")
    return quality


def _check_uniform_p99s(savings, data: dict) -> None:
    """A ValueError where a uniform fleet's ``slo_met`` is true and its p99 (``ttft_p99_s``,
    ``tpot_p99_s``, and ``e2e_p99_s``, ``session_p99_s`` where the run holds their limits) is
    over the run's SLO: a fleet sized to meet the SLOs never writes that, and the page showed
    "meets SLOs: yes" beside a p99 over it (hand-edited; the last two unchecked until
    review56)."""
    from tiersim.errors import json_written
    from tiersim.results_figures import within_limit

    for fleet in savings.uniform:
        for key in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s"):
            slo, p99 = data.get(f"slo_{key}"), getattr(fleet, key)
            if fleet.slo_met and isinstance(slo, int | float) and not isinstance(slo, bool) \
                    and p99 is not None and not within_limit(p99, slo):
                said = data["savings"]["uniform"][fleet.tier][key]  # as written
                raise ValueError(f"'savings.uniform.{fleet.tier}.{key}' is {json_written(said)}, "
                                 f"over the run's SLO (slo_{key} {json_written(slo)}), where "
                                 "its slo_met says the fleet meets it")


def tier_slo_notes(r: RunResult) -> list[str]:
    """A note per tier whose own p99 is over an SLO the fleet's p99 meets, as ``tiersim plan``
    prints it for its plan (:func:`~tiersim.results.tier_over_slo_note`): the SLOs hold the
    fleet's requests together, so a tier's share of them may see worse (the default job's BF16
    tier, 110 ms p99 TPOT under a 0.1 s SLO the fleet meets at 94.7 ms, said nothing here)."""
    if len(r.tiers) < 2 or r.slo_scope == "tier":  # there a tier over is the fleet's miss
        return []
    notes = []
    for t in r.tiers:
        for metric in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s"):  # the last where held
            limit, fleet, own = (getattr(r, f"slo_{metric}"), getattr(r, metric),
                                 getattr(t, metric))
            if (limit is None or own is None or fleet is None or within_limit(own, limit)
                    or not within_limit(fleet, limit)):
                continue
            notes.append(tier_over_slo_note(t.name, metric, own, limit, t.share or 0.0))
    return notes
