"""Summarise one simulated run: the request table, the time series and the typed RunResult.

Inputs are the built fleet (:mod:`tiersim.fleet`), the prepared trace, the router's
assignment and the engine's result; costs come from the one ledger (:mod:`tiersim.costs`),
latency and SLO figures from :mod:`tiersim.metrics`, router scores from
:func:`tiersim.routing.score`. The JSON form is :meth:`tiersim.results.RunResult.to_json`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pandas as pd

from tiersim import costs, fidelity, metrics
from tiersim.class_accuracy import request_classes
from tiersim.fleet import Fleet
from tiersim.model_read import model_read
from tiersim.results import (
    NOTHING_SERVED_WORDS,
    ProfileUsed,
    RouterResult,
    RunResult,
    SavingsResult,
    Sources,
    TierResult,
    accuracy_words,
    reaches_floor,
    techniques_words,
)
from tiersim.results_figures import _unknown, closed_form_words
from tiersim.results_parts import GENERATED_REQUESTS_WORDS
from tiersim.routing import TierInfo, score
from tiersim.routing.accuracy import expected_columns, expected_matrix, realised_matrix
from tiersim.scenario import Scenario

REQUEST_COLUMNS = [
    "request_id", "tier", "final_tier", "replica", "arrival_s", "first_token_s", "finish_s",
    "ttft_s", "tpot_s", "e2e_s", "queue_s", "preemptions", "escalated", "refused",
    "prefix_hit_tokens", "expected_accuracy", "cost_usd", "input_tokens", "output_tokens",
    "completed",
]
"""Columns of requests.parquet, in order (DESIGN.md §6 first, then tokens and status)."""

SESSION_COLUMNS = ("session_id", "step", "step_type")
"""Columns requests.parquet adds, after the others, when the traffic has agentic sessions."""

CLASS_COLUMNS = ("difficulty_class",)
"""The column requests.parquet adds last where requests have a difficulty class (a
``two_type`` or ``three_type`` workload): what ``accuracy_by_class`` groups by."""

TIMESERIES_COLUMNS = ["tier", "replica", "time_s", "running", "waiting", "kv_blocks",
                      "kv_capacity", "waiting_max", "interval_s"]
"""Columns of timeseries.parquet: one row per change of one replica's time-weighted means over
the engine's grid of ``interval_s`` seconds (docs/metrics.md)."""


def request_table(df: pd.DataFrame, result, scenario: Scenario, fleet: Fleet,
                  infos: list[TierInfo], basis: str = "expected",
                  end_s: float = 0.0) -> RequestTable:
    """One row per request: the columns of DESIGN.md §6 plus tokens, tier names and status.

    ``output_tokens`` are those emitted on the final tier (its length multiplier applied);
    ``expected_accuracy`` is the final tier's correctness on ``basis``, 0 for a dropped request;
    ``cost_usd`` is the request's cost under the scenario's cost model, over a run lasting at
    least ``end_s`` (the response cache's last answer: :func:`run_duration`). The table is a
    :class:`RequestTable`: its columns are computed from the run's arrays when read.
    """
    return RequestTable(df, result, scenario, fleet, infos, basis, end_s)


class RequestTable:
    """The rows of ``requests.parquet`` (:data:`REQUEST_COLUMNS`), computed from the trace and
    the engine's arrays when read, never held whole (issue 13: bounded memory).

    ``table[name]`` is one whole column (a Series, computed on each read); :meth:`rows` is a
    slice of rows with every column, as a DataFrame (what ``requests.parquet`` is written from,
    one row group at a time); :meth:`frame` is the whole table (for small runs and tests). Only
    ``cost_usd`` is kept once computed (the cost model prices every request at once).
    """

    def __init__(self, df: pd.DataFrame, result, scenario: Scenario, fleet: Fleet,
                 infos: list[TierInfo], basis: str = "expected", end_s: float = 0.0):
        self.df, self.result, self.scenario, self.fleet = df, result, scenario, fleet
        self.end_s = end_s
        self.names = np.array([t.name for t in scenario.tiers], dtype=object)
        self.expected_sources = expected_columns(df, infos, basis)
        self.columns = list(REQUEST_COLUMNS) + [c for c in SESSION_COLUMNS if c in df.columns]
        if request_classes(df) is not None:  # no column where no request has a class
            self.columns += list(CLASS_COLUMNS)
        self._cost: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.result.finish_s)

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def __getitem__(self, name: str) -> pd.Series:
        if name not in self.columns:
            raise KeyError(name)
        return pd.Series(self._column(name, 0, len(self)), name=name, copy=False)

    def rows(self, lo: int, hi: int) -> pd.DataFrame:
        """Rows ``lo`` to ``hi`` (exclusive) with every column, in the file's column order."""
        return pd.DataFrame(self.arrays(lo, hi))

    def arrays(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Rows ``lo`` to ``hi`` (exclusive) as one numpy array a column, in the file's column
        order: what :meth:`rows` makes its DataFrame of (``tiersim.outputs.write_parquet``
        writes a row group straight from them)."""
        return {name: self._column(name, lo, hi) for name in self.columns}

    def frame(self) -> pd.DataFrame:
        """The whole table as one DataFrame."""
        return self.rows(0, len(self))

    def _column(self, name: str, lo: int, hi: int) -> np.ndarray:
        """Column ``name`` for rows ``lo`` to ``hi``."""
        r, part = self.result, slice(lo, hi)
        if name in _RESULT_COLUMNS:
            return np.asarray(getattr(r, _RESULT_COLUMNS[name])[part],
                              dtype=_DTYPES.get(name, np.float64))
        if name in ("tier", "final_tier"):
            tiers = r.first_tier if name == "tier" else r.final_tier
            return self.names[np.asarray(tiers[part], dtype=np.int64)]
        if name in ("ttft_s", "tpot_s", "e2e_s"):
            return metrics.latency_columns(*self._times(part))[name]
        if name == "refused":
            return costs.refused(r)[part]
        done = ~np.asarray(r.dropped[part], dtype=bool)
        if name == "completed":
            return done
        if name == "queue_s":
            return np.where(done, np.asarray(r.queue_s[part], dtype=np.float64), np.nan)
        if name == "expected_accuracy":
            return np.where(done, self._expected(part), 0.0)
        if name == "cost_usd":
            return self._costs()[part]
        if name in ("request_id", "input_tokens"):
            return self.df[name].to_numpy(np.int64)[part]
        if name in CLASS_COLUMNS:  # names as text, a request without one missing
            column = self.df[name].iloc[part]
            return column.astype(object).where(column.notna(), None).to_numpy()
        return self.df[name].iloc[part].to_numpy()  # session columns: of these rows only

    def _times(self, part: slice) -> tuple[np.ndarray, ...]:
        """Arrival, first-token and finish times and output tokens of rows ``part``."""
        r = self.result
        return (np.asarray(r.arrival_s[part], dtype=np.float64),
                np.asarray(r.first_token_s[part], dtype=np.float64),
                np.asarray(r.finish_s[part], dtype=np.float64),
                np.asarray(r.output_tokens[part], dtype=np.int64))

    def _expected(self, part: slice) -> np.ndarray:
        """The final tier's correctness on the accuracy basis, per row of ``part``."""
        final = np.asarray(self.result.final_tier[part], dtype=np.int64)
        out = np.zeros(len(final))
        for k, column in enumerate(self.expected_sources):
            mine = final == k
            if mine.any():
                out[mine] = self.df[column].to_numpy()[part][mine].astype(np.float64)
        return out

    def _costs(self) -> np.ndarray:
        """Every request's cost under the scenario's cost model (computed once)."""
        if self._cost is None:
            r = self.result
            span = max(metrics.span_s(r.arrival_s, r.finish_s), run_end_s(r, self.end_s))
            self._cost = costs.request_costs(self.scenario.cost_model, self.fleet, r, span)
        return self._cost


_RESULT_COLUMNS = {
    "replica": "replica", "arrival_s": "arrival_s", "first_token_s": "first_token_s",
    "finish_s": "finish_s", "preemptions": "preemptions", "escalated": "escalated",
    "prefix_hit_tokens": "cache_hit_tokens", "output_tokens": "output_tokens",
}
"""Request-table columns copied from the engine's :class:`SimResult` fields."""
_DTYPES = {"replica": np.int64, "preemptions": np.int64, "escalated": bool,
           "prefix_hit_tokens": np.int64, "output_tokens": np.int64}
"""Their dtypes in requests.parquet (the others are float64)."""


def timeseries_table(result, fleet: Fleet) -> pd.DataFrame:
    """The engine's per-replica load series: from ``time_s`` until the replica's next row, the
    time-weighted means of running, waiting and KV blocks in use over each of the engine's
    intervals of ``interval_s`` seconds, and the most requests waiting in them."""
    parts = [(tier.name, replica, samples) for tier in fleet.tiers
             for replica, samples in enumerate(result.samples[tier.name]) if len(samples)]
    if not parts:
        return pd.DataFrame([], columns=TIMESERIES_COLUMNS)
    # NOTE (memory): column by column from each replica's stored arrays (a tuple a row took
    # about 200 bytes a row, and a burst at the 1 ms grid has a row or two a step)
    columns = [samples.columns() for _, _, samples in parts]
    sizes = [len(samples) for _, _, samples in parts]
    blocks = [result.num_blocks[name] for name, _, _ in parts]
    return pd.DataFrame({
        "tier": np.repeat(np.array([name for name, _, _ in parts], dtype=object), sizes),
        "replica": np.repeat(np.array([replica for _, replica, _ in parts], dtype=np.int64),
                             sizes),
        **{name: np.concatenate([c[k] for c in columns]) for k, name in enumerate(
            ("time_s", "running", "waiting", "kv_blocks"))},
        "kv_capacity": np.repeat(np.array(blocks, dtype=np.int64), sizes),
        "waiting_max": np.concatenate([c[4] for c in columns]),
        "interval_s": np.full(sum(sizes), result.interval_s, dtype=np.float64),
    }, columns=TIMESERIES_COLUMNS)


def tier_results(scenario: Scenario, fleet: Fleet, requests: pd.DataFrame, result,
                 ledger: costs.Ledger, duration: float,
                 accuracy_source: dict[str, str]) -> tuple[TierResult, ...]:
    """Per tier: size, traffic, p99 latencies, utilisation, KV peak, cost in the ledger, and
    what was read from its model's config (:func:`tiersim.model_read.model_read`)."""
    final = np.asarray(result.final_tier)
    ttft, tpot = requests["ttft_s"].to_numpy(), requests["tpot_s"].to_numpy()
    lost = ~requests["completed"].to_numpy(dtype=bool)
    scored = np.where(lost, 0.0, requests["expected_accuracy"].to_numpy(dtype=np.float64))
    out = []
    for i, tier in enumerate(fleet.tiers):
        stats = _tier_stats(final == i, ttft, tpot, scored)
        dropped = int((lost & (final == i)).sum())
        cost = ledger.tiers[tier.name]
        blocks = int(result.num_blocks[tier.name])
        out.append(TierResult(
            name=tier.name, model=tier.config.model, precision=tier.config.precision,
            replicas=tier.config.replicas,
            gpus_per_replica=tier.config.gpus_per_replica, gpus=tier.gpus,
            requests=stats.requests, share=stats.share, accuracy=stats.accuracy,
            passes=cost.passes,
            ttft_p99_s=stats.ttft_p99_s, tpot_p99_s=stats.tpot_p99_s,
            utilization=metrics.utilization(float(sum(result.busy_s[tier.name])),
                                            tier.engine_replicas, duration),
            kv_peak_frac=int(max(result.kv_peak_blocks[tier.name])) / blocks if blocks else None,
            kv_capacity_blocks=blocks, cost_usd=ledger.tier_headline(tier.name),
            attributed_cost_usd=cost.attributed_usd,
            step_time_source=source_label(tier),
            accuracy_source=accuracy_source.get(tier.name), dropped=dropped or None,
            prefill_replicas=(tier.config.disaggregation.prefill_replicas
                              if tier.config.disaggregation is not None else None),
            model_read=model_read(scenario, tier.config),
            cost_per_gpu_hour=tier.config.cost_per_gpu_hour,
            cost_per_request_usd=tier.config.cost_per_request_usd,
            techniques=techniques_words(tier.config,
                                        [level.name for level in tier.limits.kv_levels]),
            e2e_p99_s=(None if scenario.slo.e2e_p99_s is None else  # held: each tier's own
                       metrics.percentile(requests["e2e_s"].to_numpy()[final == i], 99)),
            **prefix_fields(result, tier.name),
            **spec_fields(result, tier.name),
        ))
    return tuple(out)


def _tier_stats(mine: np.ndarray, ttft: np.ndarray, tpot: np.ndarray,
                scored: np.ndarray | None = None) -> metrics.TierStats:
    """The figures (:class:`tiersim.metrics.TierStats`) of the rows ``mine`` (a tier's
    requests, those whose ``final_tier`` it is) among all the run's, from the latency arrays
    (no copy of the request table): their count, share of every request, p99 TTFT and TPOT
    over those rows alone, and, given ``scored`` (each request's expected accuracy, 0 for a
    dropped one, as the run's accuracy scores it), their mean accuracy."""
    n, count = len(mine), int(mine.sum())
    accuracy = float(scored[mine].mean()) if scored is not None and count else None
    return metrics.TierStats(requests=count, share=count / n if n else None,
                             ttft_p99_s=metrics.percentile(ttft[mine], 99),
                             tpot_p99_s=metrics.percentile(tpot[mine], 99), accuracy=accuracy)


def prefix_fields(result, tier: str) -> dict[str, Any]:
    """A tier's token-level prefix hit rate, its unbounded bound and the rate per cache level
    (empty without prefix caching); with offload levels, the load-or-recompute counts too."""
    stats = getattr(result, "prefix_stats", {}).get(tier)
    if stats is None:
        return {}
    rate, bound, by_level = stats.rates()
    out = {"prefix_hit_rate": rate, "prefix_hit_bound": bound,
           "prefix_hit_by_level": by_level or None}
    if len(stats.levels) > 1:  # offload levels beneath the GPU cache
        out.update(offload_loads=stats.offload_loads,
                   offload_recomputes=stats.offload_recomputes,
                   prefix_recompute_rate=stats.recompute_rate())
    return out


def spec_fields(result, tier: str) -> dict[str, Any]:
    """A speculative tier's realised draws (:class:`tiersim.engine.spec_decode.SpecStats`):
    verify steps, tokens per step beside the formula's expectation, and the share of drafted
    tokens accepted (empty for a tier without speculative decoding)."""
    stats = getattr(result, "spec_stats", {}).get(tier)
    if stats is None:
        return {}
    return {"spec_verify_steps": stats.verify_steps,
            "spec_tokens_per_step": stats.tokens_per_step,
            "spec_expected_tokens_per_step": stats.expected_per_step,
            "spec_draft_acceptance": stats.draft_acceptance}


def router_result(scenario: Scenario, df: pd.DataFrame, result, infos: list[TierInfo],
                  basis: str, fit: dict | None = None,
                  scores: np.ndarray | None = None, labelled: bool = False) -> RouterResult:
    """Policy; realised FPR/FNR against the tier each request needed; escalation and silent
    failure rates; accuracy with its 95% interval (routing.metrics.accuracy_ci); whether the
    floor was met; ``fit``: a constrained router's fitted cuts (``Assignment.fit``); the
    realised AUROC of the router's classifier ``scores`` (``Assignment.score``) beside what
    the scenario asked (:func:`tiersim.routing.quality.realised_quality`; ``labelled``: the
    trace carries ``correct_<tier>`` labels)."""
    from tiersim.routing.quality import realised_quality
    s = score(df, result.final_tier, result.first_tier, result.escalated, infos,
              dropped=result.dropped, basis=basis)
    sent_on = costs.refused(result) & np.asarray(result.escalated, dtype=bool)
    floor = scenario.accuracy_floor  # else the floor router's own: it is held to it
    if floor is None and scenario.router.policy == "floor":
        floor = scenario.router.floor
    # no request reached the fleet (a response cache answered all): no accuracy and no
    # interval, None as summary.json writes them (score gives NaN for a mean over none)
    lo, hi = (None if _unknown(v) else v for v in s["accuracy_ci95"])
    acc = None if _unknown(s["accuracy"]) else s["accuracy"]
    return RouterResult(
        policy=scenario.router.policy, basis=basis, accuracy=acc, accuracy_ci95=(lo, hi),
        fpr=s["fpr"], fnr=s["fnr"], fpr_among=s["fpr_among"], fnr_among=s["fnr_among"],
        escalation_rate=s["escalation_rate"],
        escalation_refused_rate=float(sent_on.mean()) if sent_on.any() else None,
        silent_failure_rate=s["silent_failure_rate"],
        first_tier_shares=s["first_tier_shares"], accuracy_floor=floor,
        floor_met=None if floor is None or acc is None else reaches_floor(acc, floor),
        floor_met_ci95=None if floor is None or lo is None else reaches_floor(lo, floor),
        fit=fit,
        quality=realised_quality(
            df, scores, infos[0].name, scenario.router.policy, labelled,
            (scenario.router.confusion.fpr, scenario.router.confusion.fnr)
            if "confusion" in scenario.router.model_fields_set else None,
            scenario.workload.difficulty.hint_auroc),
    )


def source_label(model) -> str:
    """Where a tier's step times come from (``model``: a built tier, whose sources include a
    speculative draft model's tables, or a step model), in words: "measured profile", "public
    measured", "roofline", or a mix with how many operator tables each, e.g.
    "public measured (7 ops) + roofline (1 op)"."""
    counts = source_counts(model)
    if not counts:
        return str(model.source)
    if len(counts) == 1:
        return next(iter(counts))
    return " + ".join(f"{k} ({n} op{'s' if n > 1 else ''})" for k, n in sorted(counts.items()))


#: A source label's kind by its origin (the first match wins).
SOURCE_ORIGINS = {"applied unchanged": "fitted on another GPU's serving rows",
                  "fitted": "fitted on measured serving rows", "harness": "measured profile",
                  "measured:": "public measured", "roofline": "roofline"}
#: How a table was read, added to its origin: every one the label carries.
SOURCE_READINGS = {"calibrated:": "calibrated on H200's measured tables",
                   "deepgemm:": "GEMM table at DeepGEMM's worst-case rows (vLLM 0.12 MoE)",
                   "anchored:": "rescaled to the shape",
                   "interpolated:": "interpolated between measured shapes",
                   "rescaled:": "rescaled to the weights' bits",
                   "graph-read:": "launch floor removed in CUDA graphs",
                   "roofline across": "roofline across nodes",
                   "below the physical limit": "points below the physical limit from the roofline",
                   "continued along the roofline": "continued along the roofline past its last "
                                                   "point"}


#: The device in a harness table's label (``harness on H200``, :meth:`Profile.harness_label`).
HARNESS_DEVICE = re.compile(r"harness on ([^(),]+?)(?= \(|,|\)|$)")


def source_kind(label: str) -> str:
    """A source label in words: where the table came from, then each way it was read (a
    table of the harness rescaled to another shape and read in CUDA graphs says all three).
    A harness table names the device that measured it: ``measured profile on H200``."""
    label = str(label)
    origin = next((w for key, w in SOURCE_ORIGINS.items() if key in label), label)
    device = HARNESS_DEVICE.search(label)
    if origin == SOURCE_ORIGINS["harness"] and device:
        origin += f" on {device.group(1)}"
    readings = [w for key, w in SOURCE_READINGS.items() if key in label]
    return ", ".join([origin, *readings])


def source_counts(model) -> dict[str, int]:
    """Operator tables of a built tier or a step model per kind of source
    (:func:`source_kind`)."""
    counts: dict[str, int] = {}
    for value in model.sources().values():
        kind = source_kind(value)
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def kinds_words(kinds) -> list[str]:
    """Source kinds (:func:`source_kind`) in words, each origin once with its readings in
    brackets; a reading not every table of that origin has follows "some tables:". E.g.
    {"public measured", "public measured, rescaled to the shape"} reads ["public measured
    (some tables: rescaled to the shape)"]."""
    readings: dict[str, list[set[str]]] = {}
    for kind in kinds:
        origin, read = _origin_and_readings(kind)
        readings.setdefault(origin, []).append(read)
    return [origin + _readings_words(readings[origin]) for origin in sorted(readings)]


def _origin_and_readings(kind: str) -> tuple[str, set[str]]:
    """A source kind split into its origin and the readings after it (a label none of
    :data:`SOURCE_ORIGINS` matches may hold commas of its own: it stays whole)."""
    read: set[str] = set()
    head, sep, tail = kind.rpartition(", ")
    while sep and tail in SOURCE_READINGS.values():
        read.add(tail)
        kind = head
        head, sep, tail = kind.rpartition(", ")
    return kind, read


def _readings_words(per_table: list[set[str]]) -> str:
    """The readings of one origin's kinds (one set per kind), bracketed: those every kind has,
    then "some tables:" and the rest; "" where none has any."""
    order = list(SOURCE_READINGS.values())
    every = set.intersection(*per_table)
    some = set.union(*per_table) - every
    parts = [", ".join(sorted(every, key=order.index))] if every else []
    if some:
        parts.append("some tables: " + ", ".join(sorted(some, key=order.index)))
    return f" ({'; '.join(parts)})" if parts else ""


def sources(scenario: Scenario, fleet: Fleet, tiers: tuple[TierResult, ...],
            accuracy_source: dict[str, str], trace_acceptance: tuple[int, int] = (0, 0)
            ) -> Sources:
    """One phrase per group of numbers: where latency, cost and accuracy come from
    (``trace_acceptance``: :func:`latency_assumptions`). Latency names the tiers that ran a
    pass, accuracy the tiers that answered a request (:func:`accuracy_words`)."""
    passes = {t.name: t.passes for t in tiers}
    used = [t for t in fleet.tiers if passes[t.name]]
    kinds = {kind for t in used for kind in source_counts(t)}
    latency = (kinds_words(kinds) + latency_assumptions(used, trace_acceptance)
               or [NOTHING_SERVED_WORDS])
    answered = {t.name for t in tiers if t.requests - (t.dropped or 0) > 0}
    accuracy = accuracy_words({k: v for k, v in accuracy_source.items() if k in answered}
                              or accuracy_source)
    generated = scenario.workload.sessions.source == "generate"
    return Sources(latency="; ".join(latency), accuracy=" + ".join(accuracy),
                   cost=costs.COST_WORDS[scenario.cost_model],
                   requests=GENERATED_REQUESTS_WORDS if generated else "trace")


def latency_assumptions(tiers, trace_acceptance: tuple[int, int] = (0, 0)) -> list[str]:
    """The scenario's own numbers that latency rests on beside the operator tables, for built
    ``tiers`` (:class:`tiersim.fleet.BuiltTier`): a speculative tier's acceptance and draft
    cost, the bandwidths of the KV offload levels it keeps (a level too small for one block is
    left out, so a tier keeping none reads none), a disaggregated tier's link.
    ``trace_acceptance``: (requests whose trace row sets ``spec_acceptance``, requests), as
    such a row's rate replaces the scenario's."""
    out = []
    for tier in tiers:
        config = tier.config
        if config.speculative is not None:
            words = _spec_words(config.speculative, trace_acceptance)
            out.append(f"scenario ({tier.name}: {words})")
        if tier.limits.kv_levels:
            out.append(f"scenario ({tier.name}: KV offload bandwidths)")
        if config.disaggregation is not None:
            out.append(f"scenario ({tier.name}: prefill-to-decode link)")
    return out


def _spec_words(spec, trace_acceptance: tuple[int, int]) -> str:
    """A speculative block's acceptance and draft cost, in words; the acceptance says when the
    trace's ``spec_acceptance`` column replaces it (for ``given`` of ``total`` requests), and
    when the draft head's cost is tiersim's default, not the scenario's."""
    given, total = trace_acceptance
    default = "" if "head_cost" in spec.model_fields_set else " (tiersim's default)"
    draft = (f"draft model {spec.draft_model}" if spec.draft_model
             else f"draft head cost {spec.head_cost:g}{default}")
    if not given:
        return f"speculative acceptance {spec.acceptance}, {draft}"
    if given == total:
        return f"speculative acceptance from the trace's spec_acceptance column, {draft}"
    return (f"speculative acceptance from the trace's spec_acceptance column for {given:,} of "
            f"{total:,} requests, else {spec.acceptance}, {draft}")


def profile_used(scenario: Scenario, fleet: Fleet) -> ProfileUsed:
    """The profile the scenario names, each tier's operator-table sources, and how that profile
    matched measured serving when a tier reads its tables (none read: its check says nothing
    about these step times); with no profile, how the roofline model matched the GPU's
    measured serving (:func:`fidelity.roofline_check_for`)."""
    sources = {t.name: dict(sorted(t.sources().items())) for t in fleet.tiers}
    every = {t.name: (scenario.tier_model_ref(t.config), t.config.precision,
                      t.config.moe_backend) for t in fleet.tiers}
    if scenario.profile is None:  # every step time is the roofline's, checked on this GPU's rows
        checked = fidelity.roofline_check_for(scenario.gpu, every)
    else:
        reads = {name: read for name, read in every.items()
                 if any(v != "roofline" and k != "overhead" for k, v in sources[name].items())}
        checked = fidelity.check_for(scenario.profile, reads) if reads else None
    return ProfileUsed(name=scenario.profile, sources=sources, checked=checked)


def gpu_hour_prices(scenario: Scenario) -> dict[str, float]:
    """Each routed tier's USD per GPU-hour, by name (what :func:`two_tier_prices` reads)."""
    return {t.name: t.cost_per_gpu_hour for t in scenario.tiers}


@dataclasses.dataclass(frozen=True)
class TwoTierPrices:
    """The two-type closed form's prices in the run's cost units (USD of all its requests):
    ``c0`` the cheap uniform fleet's cost, ``dc`` how much dearer the top one is; ``note``
    says why there is no trade to model (``dc`` <= 0, or no price: ``c0`` and ``dc`` None
    where a tier's uniform fleet meets the SLOs at no size), else None."""

    c0: float | None
    dc: float | None
    note: str | None = None


def two_tier_prices(cost_model: str, uniform: dict, pair: list,
                    prices: dict[str, float] | None) -> TwoTierPrices:
    """c0 and dc of the closed form for the tiers ``pair`` (cheap, top; each with a ``name``)
    from their sized uniform fleets ``uniform`` (by tier name, each with ``cost_usd``,
    ``replicas``, ``gpus_per_replica`` and ``infeasible``) under ``cost_model``: the top
    fleet's cost over the cheap one's, or under provisioned costs with ``prices`` (USD per
    GPU-hour by tier) their prices per hour's difference (:func:`_provisioned_dc`).
    ``tiersim run``'s summary and ``tiersim analytic --scenario`` both price the tiers here.
    Where a fleet has no cost (no size met the SLOs), c0 and dc are None and the note says so
    (:func:`unpriced_note`)."""
    c0, top = uniform[pair[0].name].cost_usd, uniform[pair[1].name].cost_usd
    if c0 is None or top is None:
        return TwoTierPrices(None, None, unpriced_note(uniform, pair))
    hourly = _provisioned_dc(cost_model, uniform, pair, prices)
    dc = float(top) - float(c0) if hourly is None else hourly
    if dc > 0:
        return TwoTierPrices(float(c0), dc)
    per = (" per hour (provisioned: the sized fleets' GPUs x USD per GPU-hour)"
           if hourly is not None else "")
    return TwoTierPrices(float(c0), dc, f"{pair[1].name} is not dearer than {pair[0].name}"
                         f"{per}: no trade to model")


def unpriced_note(uniform: dict, pair: list) -> str:
    """Why the closed form has no prices for ``pair``: the tiers whose uniform fleet meets the
    SLOs at no size (``cost_usd`` None), each with why (its ``infeasible``)."""
    unmet = [(t.name, uniform[t.name].infeasible) for t in pair
             if uniform[t.name].cost_usd is None]
    fleets = ", nor of ".join(f"{name} ({why})" if i else f"{name} meets the SLOs ({why})"
                              for i, (name, why) in enumerate(unmet))
    prices = "their prices" if len(unmet) > 1 else "its price"
    return f"no uniform fleet of {fleets}: without {prices} there is no trade to model"


NOTHING_SERVED_NOTE = ("no request reached the tiers (the response cache answered all): no "
                       "trade to model")
"""The closed form's note where a response cache answered every request: no request to
estimate the model on. ``tiersim run``'s summary and ``tiersim analytic`` both say it."""

UNESTIMATED_NOTE = ("no request was answered, so there is no per-token cost to estimate the "
                    "uniform fleets' costs from: no trade to model (--baselines sizes them by "
                    "simulation)")
"""The closed form's note where the savings are estimated and no request was answered (every
one dropped): the estimated uniform fleets have no cost."""


def analytic_summary(df: pd.DataFrame, infos: list[TierInfo], savings: SavingsResult | None,
                     basis: str = "expected", prices: dict[str, float] | None = None
                     ) -> dict[str, Any]:
    """The two-type closed form for the cheapest and the top tier, in the savings' cost units.

    p, eps and delta are estimated from the trace's per-request correctness on the two tiers
    (:func:`tiersim.analytic.estimate`); c0 and dc are the uniform fleets' costs from
    ``savings`` (:func:`two_tier_prices`, with ``prices`` in USD per GPU-hour by tier).
    Returns ``{}`` with fewer than two tiers or no savings, and ``{"note": why}`` where the
    model does not apply (nothing served, a tier's uniform fleet meeting the SLOs at no size,
    the top tier not dearer, or the cheap tier more accurate). ``dC_star_usd`` is the largest
    saving routing can have over a static split under that model. ``sources`` says where
    ``dC_star_usd``, ``c0_usd`` and ``dc_usd`` come from
    (:meth:`~tiersim.results.SavingsResult.closed_form_sources`), as the report's closed-form
    row does, and p, eps, delta (:func:`estimate_sources`) and the two frontiers
    (:data:`FRONTIER_SOURCE`) too.
    """
    from tiersim.analytic import (
        TwoType,
        accuracy_note,
        estimate,
        max_saving,
        oracle_frontier,
        static_frontier,
    )

    uniform = {u.tier: u for u in (savings.uniform if savings is not None else ())}
    if len(infos) < 2 or infos[0].name not in uniform or infos[-1].name not in uniform:
        return {}
    if not len(df):
        return {"note": NOTHING_SERVED_NOTE}
    pair = [infos[0], infos[-1]]
    if savings.estimated and any(uniform[t.name].cost_usd is None for t in pair):
        return {"note": UNESTIMATED_NOTE}
    priced = two_tier_prices(savings.cost_model, uniform, pair, prices)
    if priced.note is not None:
        return {"note": priced.note}
    easy = None
    if "difficulty_class" in df and df["difficulty_class"].notna().any():
        easy = (df["difficulty_class"] != "hard").to_numpy()
    est = estimate(expected_matrix(df, pair, basis), realised_matrix(df, pair), easy)
    c0, dc = priced.c0, priced.dc
    note = accuracy_note(pair[0].name, pair[1].name, est)
    if note is not None:
        return {"note": note}
    model = TwoType(est["p"], est["eps"], est["delta"], dc=dc, c0=c0, a_top=est["a_top"])
    cheap, top = pair[0].name, pair[1].name
    oracle, static = f"oracle ({cheap} vs {top})", f"static split ({cheap} vs {top})"
    return {
        oracle: oracle_frontier(model).tolist(),
        static: static_frontier(model).tolist(),
        "params": {"cheap": cheap, "top": top, "p": est["p"],
                   "eps": est["eps"], "delta": est["delta"], "c0_usd": c0, "dc_usd": dc,
                   "dC_star_usd": max_saving(model.p, model.eps, model.delta, dc)},
        "sources": {**savings.closed_form_sources(cheap, top),
                    **estimate_sources(cheap, top, basis, easy is not None),
                    "oracle_frontier": FRONTIER_SOURCE, "static_frontier": FRONTIER_SOURCE},
    }


FRONTIER_SOURCE = closed_form_words("p / eps / delta, c0 / dc and the top tier's accuracy")
"""Where the closed form's oracle and static-split frontiers in a summary's ``analytic``
block come from, under ``analytic.sources``' keys ``oracle_frontier`` and ``static_frontier``
(as ``tiersim analytic --json`` keys and words its frontiers' source)."""


EASY_BY_CLASS = ("the requests whose difficulty_class is not hard (set by workload.difficulty, "
                 "or the trace's own where it gives correct_<tier> labels)")
"""How :func:`estimate_sources` words the easy requests where they have a difficulty class
(:func:`tiersim.routing.accuracy.prepare_workload`: the class workload.difficulty draws, or
reads from the trace's ``difficulty``, replaces any the trace gives unless its rows carry
correct_<tier> labels)."""


def estimate_sources(cheap: str, top: str, basis: str, classes_given: bool) -> dict[str, str]:
    """Where p, eps and delta in a summary's ``analytic.params`` come from
    (:func:`tiersim.analytic.estimate`): the easy requests by their ``difficulty_class``
    where they have one, else those ``cheap`` answers as well as ``top`` on the realised
    draws; eps and delta the mean loss of ``basis`` accuracy from ``top`` to ``cheap`` over
    each class. Before round 57 only dC*, c0 and dc said where they came from (review57).
    The class is :data:`EASY_BY_CLASS`'s: workload.difficulty sets it on a trace without
    correct_<tier> labels, whatever class column the trace has (review57b: it read "in the
    trace", where tiny's, agentic's and cascade_models' traces have none)."""
    easy = (EASY_BY_CLASS if classes_given
            else f"the requests {cheap} answers as well as {top} on the realised draws")
    loss = f"the mean loss of {basis} accuracy from {top} to {cheap}"
    return {"p": f"the share of easy requests: {easy}",
            "eps": f"{loss} over the easy requests (p's), at most delta",
            "delta": f"{loss} over the other requests"}


def _provisioned_dc(cost_model: str, uniform: dict, pair: list,
                    prices: dict[str, float] | None) -> float | None:
    """Under provisioned costs, how much dearer the top uniform fleet is than the cheap one by
    their prices per hour alone (replicas x GPUs x USD per GPU-hour): ``c0 x (rate_top /
    rate_cheap - 1)``. Two fleets of the same price differ only in when their last request
    finished, which is no price difference to trade accuracy for. None where the costs are
    not provisioned or a price or size is unknown."""
    if cost_model != "provisioned" or not prices:
        return None
    rates = []
    for info in pair:
        base, price = uniform[info.name], prices.get(info.name)
        if base.replicas is None or base.gpus_per_replica is None or price is None:
            return None
        rates.append(base.replicas * base.gpus_per_replica * price)
    if rates[0] <= 0:
        return None
    return float(uniform[pair[0].name].cost_usd) * (rates[1] / rates[0] - 1.0)


def run_end_s(result, end_s: float = 0.0) -> float:
    """The least a run lasts besides its requests' arrivals and finishes: ``end_s`` (a
    response cache's last answer) or the end of the fleet's last step, whichever is later. A
    pass that ran but gave no answer (a first pass whose escalation was dropped, a prefill
    whose decoder refused it) has no ``finish_s``, and the fleet is paid while it runs."""
    return max(end_s, float(result.busy_until_s))


def run_duration(stats: metrics.RequestStats, end_s: float) -> metrics.RequestStats:
    """``stats`` over a run that lasts until ``end_s`` when that is later than its own last
    arrival and finish: the duration D covers every trace request, including those a response
    cache answered (a hit ends at its arrival plus the lookup), and the throughputs are over D."""
    if end_s <= stats.duration_s:
        return stats
    return dataclasses.replace(
        stats, duration_s=end_s, throughput_tok_s=stats.output_tokens / end_s,
        throughput_req_s=stats.completed / end_s)


def accuracy_labels(accuracy_source: dict[str, str], scenario: Scenario) -> dict[str, str]:
    """Each tier's accuracy source, a tier whose accuracy is the scenario's saying what the
    scenario says its numbers are (``accuracy_values``): "scenario (illustrative)"."""
    said = scenario.accuracy_values
    if said is None:
        return accuracy_source
    return {name: f"scenario ({said})" if value == "scenario" else value
            for name, value in accuracy_source.items()}


def run_result(scenario: Scenario, fleet: Fleet, requests: pd.DataFrame, result,
               accuracy_source: dict[str, str], router: RouterResult,
               savings: SavingsResult | None = None,
               analytic: dict[str, Any] | None = None, end_s: float = 0.0,
               trace_acceptance: tuple[int, int] = (0, 0)) -> RunResult:
    """The run's typed summary: request figures, the cost ledger, tiers, router, provenance.

    The run lasts at least ``end_s``: the last answer of a response cache, whose hits have no
    row in ``requests`` (:func:`run_duration`). ``trace_acceptance``: the served requests whose
    trace row sets ``spec_acceptance``, and all of them (:func:`latency_assumptions`)."""
    accuracy_source = accuracy_labels(accuracy_source, scenario)
    slo = metrics.Slo(ttft_s=scenario.slo.ttft_p99_s, tpot_s=scenario.slo.tpot_p99_s,
                      e2e_s=scenario.slo.e2e_p99_s)
    stats = run_duration(metrics.request_stats(requests, slo), run_end_s(result, end_s))
    duration = stats.duration_s
    ledger = costs.ledger(scenario.cost_model, fleet, result, duration)
    tiers = tier_results(scenario, fleet, requests, result, ledger, duration, accuracy_source)
    cost = ledger.headline_usd
    out_tokens = stats.output_tokens
    return RunResult(
        scenario=scenario.name, seed=scenario.seed, model=scenario.model, gpu=scenario.gpu,
        requests=stats.requests, completed=stats.completed, dropped=stats.dropped,
        duration_s=duration, cost_model=scenario.cost_model, cost_usd=cost,
        attributed_cost_usd=ledger.attributed_usd,
        provisioned_cost_usd=ledger.total("provisioned"),
        fixed_per_request_cost_usd=ledger.total("fixed_per_request"),
        gpu_hours=fleet.gpus * duration / 3600.0,
        gpu_hours_busy=sum(float(sum(result.busy_s[t.name])) * t.gpus / t.engine_replicas
                           for t in fleet.tiers if t.engine_replicas) / 3600.0,
        input_tokens=stats.input_tokens, output_tokens=out_tokens,
        cost_per_1m_output_tokens=cost / out_tokens * 1e6 if out_tokens and cost is not None
        else None,
        accuracy=stats.accuracy, accuracy_floor=scenario.accuracy_floor,
        ttft_p50_s=stats.ttft_p50_s, ttft_p99_s=stats.ttft_p99_s,
        tpot_p50_s=stats.tpot_p50_s, tpot_p99_s=stats.tpot_p99_s,
        e2e_p50_s=stats.e2e_p50_s, e2e_p99_s=stats.e2e_p99_s,
        queue_p50_s=stats.queue_p50_s, queue_p99_s=stats.queue_p99_s,
        throughput_tok_s=stats.throughput_tok_s, throughput_req_s=stats.throughput_req_s,
        slo_ttft_p99_s=slo.ttft_s, slo_tpot_p99_s=slo.tpot_s, slo_scope=scenario.slo.scope,
        slo_e2e_p99_s=slo.e2e_s, slo_session_p99_s=scenario.slo.session_p99_s,
        slo_attainment=stats.slo_attainment, tiers=tiers, router=router,
        sources=sources(scenario, fleet, tiers, accuracy_source, trace_acceptance),
        profile=profile_used(scenario, fleet),
        savings=with_accuracy_sources(savings, accuracy_source), analytic=analytic or {},
        cost_per_hour_usd=float(costs.provisioned_totals(fleet, 3600.0).sum()),
    )


def with_accuracy_sources(savings: SavingsResult | None,
                          accuracy_source: dict[str, str]) -> SavingsResult | None:
    """A simulated saving's uniform fleets, each with its tier's accuracy source (a
    baseline-only tier's is given nowhere else: its accuracy printed beside the routed tiers'
    read as theirs); an estimate's are left out (its fleets are the routed tiers)."""
    if savings is None or savings.estimated:
        return savings
    return dataclasses.replace(savings, uniform=tuple(
        dataclasses.replace(u, accuracy_source=accuracy_source.get(u.tier))
        for u in savings.uniform))
