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

Parts of it are in these modules, and every name they define that callers import is
importable from here as well:

- :mod:`tiersim.results_figures`: plain JSON values, :data:`SIG_DIGITS` rounding,
  :func:`within_limit` and the printed figure (:func:`figure_text`);
- :mod:`tiersim.results_accuracy`: the accuracy floor (:data:`FLOOR_TOLERANCE`,
  :func:`reaches_floor`, :func:`baseline_floor`) and the digits it is printed with;
- :mod:`tiersim.results_parts`: a summary's parts (:class:`TierResult`,
  :class:`RouterResult`, :class:`Sources`, :class:`ProfileUsed`, :class:`SessionResult` ...);
- :mod:`tiersim.results_savings`: :class:`SavingsResult`, :class:`UniformBaseline` and the
  basis and share of a saving (:func:`paid_order`, :func:`paid_share`, :func:`share_text`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from tiersim.errors import TiersimError, shown
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
from tiersim.results_figures import (  # noqa: F401 - re-exported
    SIG_DIGITS,
    _fields,
    _unknown,
    as_given,
    digits_apart,
    dumps,
    figure_text,
    over_digits,
    plain,
    round_sig,
    sig_order,
    within_limit,
)
from tiersim.results_parts import (  # noqa: F401 - re-exported
    NOTHING_SERVED_WORDS,
    OFFLOAD_FIELDS,
    ModelRead,
    ProfileUsed,
    ResponseCacheResult,
    RouterResult,
    SessionResult,
    Sources,
    StepTypeResult,
    TierResult,
    TraceRead,
)
from tiersim.results_savings import (  # noqa: F401 - re-exported
    OVER_THE_TRACE,
    PER_HOUR,
    SHARE_NOISE,
    SavingsResult,
    UniformBaseline,
    basis_words,
    drain_words,
    fleet_size,
    paid,
    paid_order,
    paid_share,
    saved_share,
    saving_basis,
    saving_without_share,
    share_text,
    split_words,
    without_noise,
)

CostModel = Literal["attributed", "provisioned", "fixed_per_request"]


MARGIN_ORDER = ("ttft_p99_s", "tpot_p99_s", "dropped", "accuracy")
"""The constraints of a plan's ``margins``, in the order ``tiersim plan`` prints them (its
accuracy on a line of its own, last); plan.json writes them with sorted keys."""


def in_margin_order(margins: dict[str, Any]) -> list[tuple[str, Any]]:
    """A plan's ``margins`` as (constraint, margin) pairs in :data:`MARGIN_ORDER` (any other,
    after them): the report's margins table read them from plan.json alphabetically (accuracy,
    dropped, tpot, ttft) beside the plan's lines (ttft, tpot, dropped, accuracy)."""
    rank = {name: k for k, name in enumerate(MARGIN_ORDER)}
    return sorted(margins.items(), key=lambda item: rank.get(item[0], len(rank)))


def by_planned_tier(design: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """A planned design's map by tier (``design[key]``: its replicas, one-fewer checks, ...) as
    (tier, value) pairs in the scenario's order of tiers, as the design lists them
    (``tiers``), and as ``tiersim run`` lists them. plan.json writes its maps with sorted keys,
    so a report read from it listed bf16 before fp8 where the plan and its run list fp8 first."""
    mapping = design.get(key) or {}
    order = [t for t in design.get("tiers") or [] if t in mapping]
    return [(t, mapping[t]) for t in [*order, *(t for t in mapping if t not in order)]]


def design_verdict(design: dict[str, Any]) -> str | None:
    """What a plan says of one design it judged (a runner-up or a sized uniform fleet): the
    constraint it missed or how it compares with the plan (``missed``), or, for a fleet that
    meets every constraint with no comparison (the plan's own uniform fleet), "meets every
    constraint". ``tiersim plan``'s lines and the report's "Other designs" table both read it;
    before, the report showed a bare "-" where the console printed "meets every constraint"."""
    if design.get("missed"):
        return design["missed"]
    return "meets every constraint" if design.get("feasible", True) else None


ATTRIBUTED_WORDS = "modelled busy GPU time x $/GPU-hour"
"""Where a run's attributed cost comes from, as the console and the report say it."""

GPU_HOURS_WORDS = "scenario's GPUs x simulated duration"
"""Where a run's provisioned GPU-hours come from, as the console and the report say it."""


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
    format it was read as and its SHA-256 (:class:`TraceRead`). Every formula:
    ``docs/metrics.md``.
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

    @property
    def accuracy_label(self) -> str:
        """The accuracy's name: expected, or realised where the router reads the realised
        draws and accuracy is scored on them (:mod:`tiersim.routing.accuracy`). The uniform
        fleets' accuracies are scored on the same basis (:func:`tiersim.savings.same_basis`),
        so their column takes this name too."""
        return accuracy_name(None if self.router is None else self.router.basis)

    @property
    def served_scope(self) -> str:
        """What the headline's latencies, SLO attainment, throughput and accuracy cover, as
        their label's tail: " (requests the fleet served)" where a response cache answered
        some (its own table's latencies cover every request), else nothing."""
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

    def missed_words(self) -> str | None:
        """What the run's fleet missed of what its uniform baselines are held to (its savings'
        ``missed``), with the figures that missed: each p99 over its SLO at summary.json's
        precision (the console's 3 digits can print a p99 equal to the SLO it missed), the
        requests dropped, the accuracy under the floor. None when nothing was missed."""
        missed = None if self.savings is None else self.savings.missed
        if missed is None:
            return None
        return " and ".join(f"{what} ({'; '.join(why)})" if why else what
                            for what, why in self._misses() if what in missed)

    def no_baseline_words(self) -> str | None:
        """Why there is no saving to show where no uniform fleet is its baseline, in words (the
        console's "saved vs uniform" row and the report's "saved vs that tier" give the same
        reason); None where a baseline exists or there are no savings."""
        s = self.savings
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
                why.append("no other reaches this run's accuracy (or the floor)" if why else
                           "no uniform fleet's estimate reaches this run's accuracy (or the "
                           "floor)")
            return f"{'; '.join(why)}: none to compare with (estimate; --baselines simulates)"
        if s.uniform:
            return ("no uniform fleet meets the SLOs and this run's accuracy (or the floor): "
                    "none to compare with (uniform fleets table)")
        return None

    def _misses(self) -> list[tuple[str, list[str]]]:
        """(what, the figures that missed it) for the SLOs and the accuracy floor."""
        slo = [f"{name} p99 {p99:.10g} s over its {limit:.10g} s"
               for name, p99, limit in (("TTFT", self.ttft_p99_s, self.slo_ttft_p99_s),
                                        ("TPOT", self.tpot_p99_s, self.slo_tpot_p99_s))
               if not (limit is None or p99 is None or within_limit(p99, limit))]
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


def _oneline(err: Exception) -> str:
    """An exception's detail on one line; a KeyError says which key is missing."""
    if isinstance(err, KeyError):
        key = str(err.args[0] if err.args else "").strip("'")
        return f"missing key '{key}'"
    return " ".join(str(err).split())


def _build(cls, data: dict, at: str | None = None, **nested) -> Any:
    """A dataclass from a dict: required fields must be present, defaults may be absent. ``at``
    names where ``data`` sits in the summary in messages (default: the class's key)."""
    at = at or _where(cls)
    if not isinstance(data, dict):
        raise TypeError(f"'{at}' must be a JSON object, got {shown(data)}")
    kwargs = {}
    kinds = _scalar_kinds(cls)
    for f in dataclasses.fields(cls):
        if f.name in nested:
            kwargs[f.name] = nested[f.name]
        elif f.name in data and f.name in kinds:
            kwargs[f.name] = _scalar(data[f.name], kinds[f.name], f"{at}.{f.name}")
        elif f.name in data:
            kwargs[f.name] = _structured(data[f.name], cls, f.name, f"{at}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f"'{at}.{f.name}'")
    return cls(**kwargs)


_SCALARS = {"float": (float,), "int": (int,), "str": (str,), "bool": (bool,)}


def _where(cls) -> str:
    """The summary key a result dataclass is written under (``router``, ``profile`` ...)."""
    name = cls.__name__.removesuffix("Result").removesuffix("Used")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()  # ResponseCache -> response_cache


@functools.cache
def _scalar_kinds(cls) -> dict[str, tuple[str, bool]]:
    """``{field: (scalar type name, None allowed)}`` for a result dataclass's plain fields
    (``float``, ``int | None`` ...); other fields (tuples, dicts, nested results) are absent."""
    kinds = {}
    for f in dataclasses.fields(cls):
        parts = [p.strip() for p in str(f.type).split("|")]
        names = [p for p in parts if p != "None"]
        if len(names) == 1 and names[0] in _SCALARS:
            kinds[f.name] = (names[0], len(parts) > 1)
    return kinds


def _scalar(value: Any, kind: tuple[str, bool] | None, where: str) -> Any:
    """``value`` if it is of its field's scalar kind (a number for ``float``, a whole number
    for ``int``, text for ``str``; None where allowed, and for every ``float``, as a NaN is
    written as null), else a ValueError naming the field. A whole number of a ``float`` field
    is read as a float: kept whole, one past 64 bits (``"duration_s": 100000000000000000000``,
    hand-edited) reached numpy as an object and the report ended in a casting traceback."""
    if kind is None or (value is None and (kind[1] or kind[0] == "float")):
        return value
    type_name = kind[0]
    ok = isinstance(value, _SCALARS[type_name])
    if type_name in ("float", "int"):
        ok = (ok or (type_name == "float" and isinstance(value, int))) and not isinstance(
            value, bool)
        if ok and type_name == "float" and isinstance(value, int) and abs(value) > 1e300:
            ok = False  # beyond what a float holds
    if not ok:
        raise ValueError(f"'{where}' must be "
                         f"{'a number' if type_name in ('float', 'int') else type_name}, "
                         f"got {shown(value)}")
    if type_name == "int" and value < 0:  # every whole number of a summary is a count
        raise ValueError(f"'{where}' must be a count >= 0, got {shown(value)}")
    problem = range_problem(value, where) if type_name == "float" else None
    if problem:
        raise ValueError(f"'{where}' {problem}, got {shown(value)}")
    return float(value) if type_name == "float" else value  # 10**20 is no int64 for numpy


SIGNED = frozenset({"vs_uniform_usd", "vs_uniform_frac", "vs_uniform_over_trace_frac",
                    "vs_static_split_usd", "vs_static_split_frac",
                    "vs_static_split_over_trace_frac", "success_misjudged_by",
                    "gpu_hours_saved", "cost_saved_usd", "attributed_saved_usd", "margin",
                    "margin_frac"})
"""Number fields of a summary or plan that may be below 0: a saving (a loss is a negative one)
and a difference of two figures (a plan's constraint margin). Every other number is a time,
cost, size, count or fraction."""

FRACTIONS = frozenset({"accuracy", "accuracy_floor", "per_request_accuracy", "task_success",
                       "share", "utilization", "kv_peak_frac", "slo_attainment", "fpr", "fnr",
                       "escalation_rate", "escalation_refused_rate", "silent_failure_rate",
                       "hit_rate", "prefix_hit_rate", "prefix_hit_bound", "prefix_recompute_rate",
                       "accuracy_ci95", "first_tier_shares", "final_tier_shares",
                       "prefix_hit_by_level"})
"""Number fields of a summary that are fractions, between 0 and 1 (shown as percents); for a
map or a pair (``first_tier_shares``, ``accuracy_ci95``), every number in it."""


def range_problem(value: float, name: str) -> str | None:
    """Why ``value`` is no figure a run writes under the summary field ``name`` (the last part of
    a dotted key): ``must be >= 0`` (only a saving may be below 0), ``must be a fraction between
    0 and 1``; None when it may be."""
    name = name.rsplit(".", 1)[-1]
    if name in FRACTIONS and not 0 <= value <= 1 + FLOOR_TOLERANCE:
        return "must be a fraction between 0 and 1"
    if name not in SIGNED and value < 0:
        return "must be >= 0"
    return None


def check_finite(data: Any, where: str) -> None:
    """A ValueError naming the first NaN or infinite number in a parsed results file (``where``:
    the path to ``data`` in it): tiersim writes a missing figure as null and never writes
    another, so one is a hand edit the page would show as a figure."""
    if isinstance(data, float) and not math.isfinite(data):
        raise ValueError(f"'{where}' is {data!r}, a number tiersim never writes: a missing "
                         "figure is null")
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(
        data, list) else ()
    for key, value in items:
        check_finite(value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")


def _structured(value: Any, cls, name: str, where: str) -> Any:
    """``value`` validated against field ``name``'s annotation (a tuple of two numbers, a map
    of names to numbers...) by pydantic, strictly as JSON (no text read as a number, no flag as
    one) with null allowed wherever a float is (NaN is written as null); a ValueError naming
    ``where`` and the first thing wrong otherwise."""
    checked = _validated(_adapter(cls, name), value, where)
    _in_range(checked, name, where)
    return checked


def _in_range(value: Any, name: str, where: str) -> None:
    """A ValueError naming the first number nested in ``value`` (the field ``name``, at
    ``where``) that :func:`range_problem` refuses: a share or interval bound of a map or a
    pair is a fraction as a top-level one is. Under a free-form field (a plan's ``plan``), a
    key of :data:`SIGNED` (a saving, a margin) may hold a number below 0, as it may at the top
    level; a fraction map's keys are names (tiers), never field names."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        problem = range_problem(value, name)
        if problem:
            raise ValueError(f"'{where}' {problem}, got {shown(value)}")
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list | tuple) else ()
    for key, item in items:
        child = key if name not in FRACTIONS and key in SIGNED else name
        _in_range(item, child, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")


def _validated(adapter, value: Any, where: str) -> Any:
    """``value`` through ``adapter`` in strict JSON mode; a ValueError naming ``where``."""
    from pydantic import ValidationError

    try:
        return adapter.validate_json(json.dumps(value), strict=True)
    except ValidationError as err:
        raise ValueError(_first_error(err, where)) from None


@functools.cache
def _adapter(cls, name: str):
    """A pydantic TypeAdapter for field ``name`` of dataclass ``cls``, floats nullable."""
    import typing

    return _type_adapter(_nullable(typing.get_type_hints(cls)[name]))


@functools.cache
def _type_adapter(hint: Any):
    """A pydantic TypeAdapter for ``hint``, built once."""
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _nullable(hint: Any) -> Any:
    """``hint`` with ``float`` replaced by ``float | None`` throughout."""
    import operator
    import types
    import typing

    if hint is float:
        return float | None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        return dict[args[0], _nullable(args[1])]
    if origin is tuple:
        return tuple[tuple(a if a is Ellipsis else _nullable(a) for a in args)]
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, [_nullable(a) for a in args])
    return hint


def _first_error(err, where: str) -> str:
    """``'where.loc': message`` for the first error of a pydantic ValidationError."""
    first = err.errors()[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    if first["type"] == "missing":
        return f"'{where}{loc}': missing"
    return f"'{where}{loc}': {first['msg'].lower()}, got {shown(first.get('input'))}"


@with_config(ConfigDict(extra="allow"))
class _AnalyticParams(TypedDict, total=False):
    """The ``params`` of a summary's ``analytic`` block, as the report reads them (other keys
    pass)."""

    cheap: str
    top: str
    p: float | None
    eps: float | None
    delta: float | None
    c0_usd: float | None
    dc_usd: float | None
    dC_star_usd: float | None


ANALYTIC_PARTS = {"note": str, "params": _AnalyticParams}
"""The keys of a summary's ``analytic`` block the report reads as they are, and their types."""

FRONTIER = list[tuple[float | None, float | None]]
"""Any other key of the block that holds a list: a frontier of ``[cost, accuracy]`` points."""

FIGURES = dict[str, float | str | None] | float | str
"""Any other key that holds no list: a figure or a map of figures (``tiersim analytic``'s dC*,
kink, at_floor)."""


def _analytic_from(data: Any) -> dict[str, Any]:
    """The ``analytic`` block, each part validated (:data:`ANALYTIC_PARTS`, else
    :data:`FRONTIER` or :data:`FIGURES`); ``{}`` when absent."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TypeError(f"'analytic' must be a JSON object, got {shown(data)}")
    out = {}
    for key, value in data.items():
        hint = ANALYTIC_PARTS.get(key, FRONTIER if isinstance(value, list) else FIGURES)
        out[key] = _validated(_type_adapter(hint), value, f"analytic.{key}")
    return out


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
    router_data = _object(data["router"], "router")
    router = _build(RouterResult, router_data, accuracy_ci95=_interval(_structured(
        router_data.get("accuracy_ci95") or (None, None), RouterResult, "accuracy_ci95",
        "router.accuracy_ci95")))
    savings = None
    if data.get("savings") is not None:
        s = _object(data["savings"], "savings")
        fleets = s.get("uniform") or {}
        if not isinstance(fleets, dict):
            raise TypeError(f"'savings.uniform' must map tier names to objects, got "
                            f"{shown(fleets)}")
        uniform = tuple(_build(UniformBaseline, {**_object(u, f"savings.uniform.{name}"),
                                                 "tier": name}, at=f"savings.uniform.{name}")
                        for name, u in fleets.items())
        savings = _build(SavingsResult, s, uniform=uniform)
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
                  else _build(TraceRead, data["trace"], at="trace"))


def _interval(interval: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """The accuracy's 95% interval as a run writes it: two fractions, the low end first (or
    no end, where there is none); a ValueError otherwise."""
    lo, hi = interval
    if _unknown(lo) or _unknown(hi):
        return interval
    if not 0 <= lo <= hi <= 1 + FLOOR_TOLERANCE:
        raise ValueError("'router.accuracy_ci95' must be two fractions between 0 and 1, the low "
                         f"end first, got {[lo, hi]}")
    return interval


def _object(data: Any, where: str) -> dict:
    """``data`` when it is a JSON object; a TypeError naming ``where`` and what it holds
    otherwise (a list or text read as one failed with "'list' object has no attribute")."""
    if not isinstance(data, dict):
        raise TypeError(f"'{where}' must be a JSON object, got {shown(data)}")
    return data


def _tier_data(data: Any, name: str) -> dict:
    """A tier's JSON object with its name added and its cache levels top first (in its
    ``prefix_level_order``, where it has one)."""
    if not isinstance(data, dict):
        raise TypeError(f"'tiers.{name}' must be a JSON object, got {shown(data)}")
    data = {**data, "name": name}
    order, levels = data.pop("prefix_level_order", None), data.get("prefix_hit_by_level")
    if order is not None:
        if not isinstance(levels, dict) or sorted(map(str, order)) != sorted(levels):
            raise ValueError(f"'tiers.{name}.prefix_level_order' must name every level of "
                             "its 'prefix_hit_by_level' once")
        data["prefix_hit_by_level"] = {level: levels[level] for level in order}
    return data


def _checked_from(data: Any) -> dict[str, Any] | None:
    """A profile's fidelity record as the report reads it (:class:`tiersim.fidelity.Checked`),
    or None."""
    from pydantic import ValidationError

    from tiersim.fidelity import Checked

    if data is None:
        return None
    try:
        Checked.model_validate(data)
    except ValidationError as err:
        raise ValueError(_first_error(err, "profile.checked")) from None
    return data


def _sessions_from(data: dict | None) -> SessionResult | None:
    """SessionResult from its JSON form (None when the run had no sessions)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise TypeError(f"'sessions' must be a JSON object, got {shown(data)}")
    step_types = data.get("step_types") or {}
    if not isinstance(step_types, dict):
        raise TypeError(f"'sessions.step_types' must map step types to objects, got "
                        f"{shown(step_types)}")
    kinds = tuple(_build(StepTypeResult, {**v, "step_type": k}, at=f"sessions.step_types.{k}")
                  for k, v in step_types.items())
    return _build(SessionResult, data, at="sessions", step_types=kinds)


@dataclass(frozen=True)
class PlanResult:
    """A capacity plan: the cheapest design meeting the SLOs and the accuracy floor, the
    runner-up designs with the constraint each missed, and the best uniform fleets beside them.

    Designs are plain JSON maps (replicas per tier, settings, cost per hour, margins);
    ``simulations`` counts the runs the search made and ``wall_s`` how long they took.
    """

    scenario: str
    constraints: dict[str, Any]
    plan: dict[str, Any] | None
    runners_up: tuple[dict[str, Any], ...] = ()
    uniform: tuple[dict[str, Any], ...] = ()
    reason: str | None = None
    simulations: int = 0
    wall_s: float = 0.0
    evaluated: tuple[dict[str, Any], ...] = ()
    disaggregation: dict[str, Any] | None = None
    """For a planned tier with a ``disaggregation`` block: every prefill/decode split of its
    planned replicas and aggregated serving on the same GPUs (``splits``, best first) and the
    ``chosen`` one, which the planned scenario uses; the first such tier's."""
    other_splits: tuple[dict[str, Any], ...] = ()
    """The same for each later planned tier with a ``disaggregation`` block, in the scenario's
    order (each chosen with the tiers before it at their chosen splits)."""
    cost_model: str | None = None
    """The ledger every cost in the plan is priced in (``provisioned``, ``attributed`` or
    ``fixed_per_request``), whether or not a fleet qualified; None in a plan.json written
    before it was recorded."""

    @property
    def splits(self) -> list[dict[str, Any]]:
        """Every prefill/decode split the plan chose: ``disaggregation``, then
        ``other_splits``."""
        first = [self.disaggregation] if self.disaggregation else []
        return [*first, *self.other_splits]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the content of plan.json)."""
        return _fields(self)

    @classmethod
    def from_json(cls, data: dict, source: str = "plan.json") -> PlanResult:
        """Read a plan back; a one-line TiersimError naming ``source`` when malformed."""
        try:
            if not isinstance(data, dict):
                raise TypeError("the top level must be a JSON object")
            for key, value in data.items():
                check_finite(value, key)
            lists = {k: tuple(data.get(k) or ()) for k in ("runners_up", "uniform", "evaluated",
                                                           "other_splits")}
            return _build(cls, data, **lists)
        except (KeyError, TypeError, ValueError) as err:
            raise TiersimError(f"{source}: malformed plan ({_oneline(err)}); rerun "
                               "`tiersim plan` to rewrite it") from None
