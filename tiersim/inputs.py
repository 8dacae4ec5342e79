"""A run's inputs, before any simulation: the trace, each tier's routing facts, the prepared
workload and the router's assignment.

Shared by the runner (:func:`tiersim.runner.run_scenario`) and the planner
(:class:`tiersim.plan.evaluate.SimEvaluator`), so both draw the same workload from the same seed.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tiersim import fleet as fleet_mod
from tiersim.engine import Disagg, sequences_held
from tiersim.errors import Note, ScenarioError, TiersimError, TraceError
from tiersim.fleet import BuiltTier, Fleet, build_fleet
from tiersim.memory import beyond_room, memory_room
from tiersim.paths import TraceFolderError, expand_user, file_sha256, resolve_trace_path
from tiersim.perf.base import StepShape
from tiersim.results import TraceRead
from tiersim.results_figures import percent_text
from tiersim.routing import Assignment, Prepared, TierInfo, build_router, prepare_workload
from tiersim.routing.config import DEFAULT_STEP_TIERS
from tiersim.routing.constrained import with_scenario_floor
from tiersim.scenario import Scenario
from tiersim.text_columns import text_codes
from tiersim.trace import LoadedTrace, TraceOrigin, read_trace
from tiersim.trace.canonical import distinct_text
from tiersim.trace.loader import SESSION_COLUMNS
from tiersim.trace.stats import span_rate
from tiersim.workload import sessions

RUN_REQUEST_BYTES = 104
"""Memory a run takes per simulated request, at least, on top of the trace and request table
already held: the engine's thirteen 8-byte per-request arrays (``tiersim.engine.cluster.
_Fleet``), which every run fills whatever its arrivals. A floor, so that no run that fits is
refused: measured peaks are about 212 bytes a request with the trace (Poisson arrivals) and
about 600 for a burst (README, "Whole runs and memory")."""
PRICE_SAMPLE = 256
"""Requests of the workload :func:`cost_weight` prices a tier over, at most: drawn without
replacement from the routed table (all of it when it holds no more), the same for every tier,
so that ranking tiers stays cheap on a trace of millions of rows."""
BATCH_ROUNDS = 200
"""Rounds of Little's law at most in :func:`decode_batch`'s fixed point: each round's batch
is no less than the one before, so where they do not settle (a load at the edge of what the
tier can take) the batch is the last round's, a lower bound on the fixed point."""
PRICE_SEED_KEY = 52
"""The spawn key of the scenario seed's child that draws :data:`PRICE_SAMPLE`'s rows
(:func:`price_sample`): apart from the run's workload, classifier and router generators."""
MIN_ARRIVALS = 200
"""Arrivals a routed table needs before :class:`Arrivals` reads how busy a replica is from its own
arrival times; with fewer the price takes them as Poisson (:func:`pooled_busy_batch`). At
Poisson arrivals the batch read from a trace of ``n`` arrivals scatters about the closed form
with a relative standard deviation of at most about ``0.4 / sqrt(n)`` (loads of 0.1 to 10
sequences a replica, 1 to 17 replicas: 2.8 % at 200 arrivals, test_round54_burst54), well
inside the 7-16 % the bundled Azure code trace's bursts move the price (routing, default,
tiny), so a trace this short is not read as bursty by chance."""


@dataclasses.dataclass(frozen=True)
class Arrivals:
    """A routed table's arrivals, from which the decode batch reads how busy a replica is
    (:meth:`busy_batch`): ``rate``, the table's arrivals a second (the gaps between its
    arrivals over their span, :func:`arrival_rate`); ``times``, the arrival times sorted
    from 0 (None where there are fewer than :data:`MIN_ARRIVALS`: too few to tell bursts
    from chance, and Poisson is assumed). Built by :meth:`of`."""

    rate: float
    times: np.ndarray | None = None
    _seen: dict = dataclasses.field(default_factory=dict, init=False, compare=False,
                                    repr=False)

    @classmethod
    def of(cls, arrival: np.ndarray) -> Arrivals | None:
        """The arrivals at times ``arrival`` (seconds, any order; non-finite ones left
        out); None for fewer than two or no span (no load to batch)."""
        times = np.sort(np.asarray(arrival, dtype=np.float64))
        times = times[np.isfinite(times)]
        if len(times) < 2 or not times[-1] > times[0]:
            return None
        rate = span_rate(len(times), float(times[-1] - times[0]))  # as arrival_rate
        if len(times) < MIN_ARRIVALS:
            return cls(rate=rate)
        return cls(rate=rate, times=times - times[0])

    def busy_batch(self, seconds: float, rate: float) -> float:
        """The mean sequences an engine replica holds while it holds any, where each replica
        receives ``rate`` requests a second (so ``k = self.rate / rate`` replicas, at least
        one, share the table's arrivals) and a request stays ``seconds`` in the engine. The
        dispatcher gives an arrival the least-loaded replica, so while ``N`` of the fleet's
        requests are in the engine ``min(N, k)`` replicas are taken as busy: the batch is the
        time-average of ``N`` over that of ``min(N, k)`` (:func:`pooled_busy_batch` at Poisson
        arrivals; ``load / (1 - exp(-load))`` for one replica). A dispatcher that moves no
        request can leave a replica idle while another holds two, so this is a lower bound on
        its batch (0.3-5 % below a join-the-shortest-queue simulation at Poisson arrivals,
        test_round54_check54). By Little's law the time-average of
        ``N`` is the arrivals a second times ``seconds`` whatever the arrivals; how bursty
        they are sets how much of the time replicas stand idle. ``N(t)`` is counted on the
        table's own arrival times, each in the engine ``seconds`` from its arrival, once
        through as a run replays them (from an empty fleet, draining at the end: on a trace
        not much longer than ``seconds`` the batch is below the load), with no draw; where
        the table has fewer than
        :data:`MIN_ARRIVALS` arrivals, at Poisson arrivals. Each ``seconds`` is counted once
        (cached): a plan prices the same tiers many times."""
        if seconds <= 0.0 or rate <= 0.0:
            return 1.0
        replicas = max(1.0, self.rate / rate)  # a rate above the table's: one replica
        if self.times is None:
            return pooled_busy_batch(rate * seconds, replicas)
        key = (float(seconds), float(replicas))
        if key not in self._seen:
            self._seen[key] = _counted_busy_batch(self.times, float(seconds),
                                                  float(replicas))
        return self._seen[key]


def _counted_busy_batch(times: np.ndarray, seconds: float, replicas: float) -> float:
    """:meth:`Arrivals.busy_batch` on the arrival ``times`` (sorted), each in the engine for
    ``seconds`` from its arrival: the integral of the requests in the engine ``N(t)``
    (``n x seconds``) over that of ``min(N(t), replicas)``, at least 1."""
    ends = times + seconds
    count = len(times)
    order = np.arange(count)
    ended = np.searchsorted(ends, times, side="right")  # ends at or before each arrival
    started = np.searchsorted(times, ends, side="left")  # arrivals before each end
    edges = np.empty(2 * count)
    held = np.empty(2 * count)
    edges[order + ended] = times  # the two sorted lists merged, an end before a tied arrival
    held[order + ended] = order + 1 - ended  # in the engine just after each arrival
    edges[order + started] = ends
    held[order + started] = started - order - 1  # ... and just after each end
    lasting = np.diff(edges)
    held = held[:-1]
    busy = float((np.minimum(held, replicas) * lasting).sum())  # (np.dot: BLAS, slower here)
    return max(1.0, float((held * lasting).sum()) / busy) if busy > 0.0 else 1.0


def pooled_busy_batch(load: float, replicas: float = 1.0) -> float:
    """:meth:`Arrivals.busy_batch` at Poisson arrivals: ``replicas`` replicas each with
    ``load`` sequences on average, sharing the arrivals by giving each the least-loaded
    replica, so the fleet's ``N`` in the engine are Poisson with mean ``replicas x load``
    (any time in the engine) and ``min(N, replicas)`` replicas are busy: ``load x replicas /
    E[min(N, replicas)]``. One replica: :func:`busy_batch`'s ``load / (1 - exp(-load))``;
    more replicas a smaller batch at the same load (an arrival finds an idle replica more
    often), ``load`` at heavy load."""
    replicas = max(1.0, float(replicas))
    if replicas == 1.0:
        return busy_batch(load)
    if load <= 1e-12:
        return 1.0
    from scipy.special import pdtr  # lazy: scipy is a heavy import

    mean = load * replicas
    whole = int(np.floor(replicas))
    beyond = 1.0 - pdtr(np.arange(whole + 1), mean)  # P(N > j), j = 0 .. whole
    expected = float(beyond[:whole].sum() + (replicas - whole) * beyond[whole])
    return max(1.0, mean / expected) if expected > 0.0 else max(1.0, load)


@dataclasses.dataclass(frozen=True)
class LengthMix:
    """The prompt and output tokens (as logged) of the requests a tier's price per request is
    taken over (:func:`price_sample`); the same rows for every tier. ``rate``: the requests a
    second each engine replica of the fleet receives, the load spread evenly over them
    (:func:`arrival_rate` over the replicas; 0: no load known, a decode batch of one
    sequence). ``arrivals``: the whole routed table's arrivals (:class:`Arrivals`), from
    which the decode batch reads how busy a replica is as the fleet's replicas share them;
    None (none given): Poisson arrivals at one replica (:func:`busy_batch`)."""

    prompt: np.ndarray
    output: np.ndarray
    rate: float = 0.0
    arrivals: Arrivals | None = None


def arrival_rate(df: pd.DataFrame) -> float:
    """Requests a second of the routed table ``df``: the gaps between its ``n`` arrivals
    (``n - 1`` of them) over their span, from the first arrival to the last (0 for fewer than
    two rows or no span: no load to batch). The first arrival starts the span, so it is not
    one of the gaps it measures: at Poisson arrivals the span is the sum of ``n - 1``
    exponential gaps, so ``span / (n - 1)`` is the unbiased estimate of the mean gap and its
    reciprocal the maximum-likelihood rate (``n / span``, until round 55, read every trace's
    rate ``n / (n - 1)`` high: 0.3 % at 300 arrivals, 50 % at 3)."""
    if len(df) < 2:
        return 0.0
    arrival = df["arrival_s"].to_numpy(np.float64)
    span = float(arrival.max() - arrival.min())
    return span_rate(len(df), span) if span > 0 else 0.0


def price_sample(df: pd.DataFrame, seed: int, replicas: int = 1) -> LengthMix:
    """Up to :data:`PRICE_SAMPLE` rows of the routed table ``df`` (its ``input_tokens`` and
    ``output_tokens``), drawn without replacement by the scenario ``seed``'s child
    :data:`PRICE_SEED_KEY` (every row where there are no more), in table order, with the
    table's arrival rate over the fleet's ``replicas`` (engine replicas between the routed
    tiers: :func:`fleet_replicas`) and the table's arrivals (:class:`Arrivals`: how
    busy the replicas sharing them are)."""
    count = len(df)
    rows = np.arange(count)
    if count > PRICE_SAMPLE:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(PRICE_SEED_KEY,)))
        rows = np.sort(rng.choice(count, PRICE_SAMPLE, replace=False))
    return LengthMix(prompt=df["input_tokens"].to_numpy(np.int64)[rows],
                     output=df["output_tokens"].to_numpy(np.int64)[rows],
                     rate=arrival_rate(df) / max(1, int(replicas)),
                     arrivals=Arrivals.of(df["arrival_s"].to_numpy(np.float64)))


def load_scenario_trace(scenario: Scenario, source: str) -> LoadedTrace:
    """The scenario's trace: the canonical table and where it came from; a relative path starts
    at the scenario's folder, then the bundled ``traces/``."""
    cfg = scenario.trace
    window = tuple(cfg.window) if cfg.window is not None else None
    replayed = scenario.workload.sessions.source in ("auto", "trace")  # else rows stand alone
    _note_replaced_rows(scenario, source)
    path = scenario_trace_path(scenario, source)
    try:
        loaded = read_trace(path, format=cfg.format, window=window, time_scale=cfg.time_scale,
                            sessions=replayed, keep=trace_keep(scenario))
    except TraceError as err:
        message = str(err).removeprefix(f"{err.path}: ")
        if window is None or err.row is not None or not message.startswith("window ["):
            raise
        raise ScenarioError(source, "trace.window", f"{err.path}: {message}") from None
    skip = cfg.skip_longer_than if scenario.workload.sessions.source != "generate" else None
    return skip_longer(loaded, skip, replayed, source)  # generated sessions replace the rows


def skip_longer(loaded: LoadedTrace, limit: int | None, replayed: bool,
                source: str, flag: str | None = None) -> LoadedTrace:
    """``loaded`` less its requests longer (prompt + output tokens, as logged) than ``limit``
    (the scenario's ``trace.skip_longer_than``; None: unchanged), as vLLM refuses such a
    request at its API (HTTP 400) whatever the fleet, with a note saying how many and what
    share were left out, and the count in the trace's origin (summary.json's ``trace``). A
    session trace replayed as sessions (``replayed``) loses each whole session holding such a
    step: its later steps follow the refused one. The rest keep their arrival times (the
    refused ones still came). A limit leaving no request is refused at the key. ``flag``
    (``tiersim trace inspect``'s ``--skip-longer-than``, quoting the limit as typed) names the
    limit in the note and the refusal instead of ``source``'s key."""
    if limit is None:
        return loaded
    table, origin = loaded.table, loaded.origin
    tokens = (table["input_tokens"].to_numpy(np.int64)
              + table["output_tokens"].to_numpy(np.int64))
    longer = tokens > limit
    whole = replayed and set(SESSION_COLUMNS) <= set(table.columns)
    sessions_out = 0
    if whole and longer.any():
        out = table["session_id"][longer].unique()
        sessions_out = len(out)
        longer = table["session_id"].isin(out).to_numpy()
    count, total = int(longer.sum()), len(table)
    origin = dataclasses.replace(origin, skipped=(int(limit), count, total))
    if not count:
        return LoadedTrace(table, origin)
    if count == total:
        every = (f"leaves out every one of the {total:,} requests read (the shortest is "
                 f"{int(tokens.min()):,} tokens, prompt + output); raise it")
        if flag is not None:
            raise TiersimError(f"{flag} {limit!r}: {every}, or drop it")
        raise ScenarioError(source, "trace.skip_longer_than",
                            f"{limit:,} {every}, or remove the key")
    kept = np.flatnonzero(~longer)
    rows = (np.asarray(origin.rows, dtype=np.int64)[kept] if origin.rows is not None
            else origin.first_row + kept)  # the file's 0-based data rows, as origin.row's
    run = int(rows[-1]) - int(rows[0]) + 1 == len(rows)
    origin = dataclasses.replace(origin, first_row=int(rows[0]), rows=None if run else rows)
    share = percent_text(count / total, 1)
    what = (f"the {sessions_out:,} session{'s' if sessions_out != 1 else ''} holding a step "
            if whole else "those ")
    named = f"{source}: trace.skip_longer_than" if flag is None else flag
    warnings.warn(Note(
        f"{named} {limit:,} left out {count:,} of the {total:,} "
        f"requests read ({share}): {what}longer (prompt + output) than {limit:,} tokens, "
        f"up to {int(tokens[longer].max()):,}{', whole' if whole else ''}, as vLLM refuses such "
        "a request at its API (HTTP 400) whatever the fleet; every figure is over the "
        f"{total - count:,} left, and those left out count nowhere, not as dropped"),
        stacklevel=3)
    return LoadedTrace(table.iloc[kept].reset_index(drop=True), origin)


def trace_keep(scenario: Scenario | None) -> tuple[str, ...]:
    """The trace columns a run of ``scenario`` reads beyond the canonical ones (``keep`` of
    :func:`tiersim.trace.loader.read_trace`): its response cache's key; none without a
    scenario (a bare trace's estimate reads the canonical columns alone)."""
    cache = None if scenario is None else scenario.router.response_cache
    return () if cache is None else (cache.key,)


ENGINE_REPLICA_BYTES = 3000
"""Memory a run takes per engine replica (a replica, or each data-parallel rank of one: each
schedules on its own), at least: two tiers of 65,536 (1,024 replicas x data_parallel 64) peaked
421 MB above a run of the same trace on one replica a tier (3.2 KB each), two of 8,192 51 MB
(3.1 KB each), on the tiny scenario's trace, 2026-12-07. A floor, as
:data:`RUN_REQUEST_BYTES` is: each tier may hold up to 100,000, and 64 tiers of them (6.4
million) would take about 20 GB."""


def check_fleet_memory(scenario: Scenario, source: str) -> None:
    """Refuse, before the engine is built, a fleet whose engine replicas over all its tiers
    cannot fit in what this process may still take (:func:`tiersim.memory.memory_room`), at
    :data:`ENGINE_REPLICA_BYTES` each: each tier is held to 100,000 on its own
    (:func:`tiersim.scenario._check_limits`), but not the fleet, which took memory until
    there was none. A ScenarioError naming ``tiers``, the estimate and the fix."""
    engines = sum(tier.replicas * tier.data_parallel for tier in scenario.tiers)
    short = beyond_room(engines, ENGINE_REPLICA_BYTES, "replica", memory_room())
    if short is None:
        return
    raise ScenarioError(source, "tiers", (
        f"the fleet's {engines:,} engine replicas (replicas x data_parallel, over its "
        f"{len(scenario.tiers)} tiers) {short}; lower replicas or data_parallel, or run where "
        "more memory is allowed"))


def check_run_memory(scenario: Scenario, trace: LoadedTrace, requests: int) -> None:
    """Refuse, before the engine is built, a run of ``requests`` requests from ``trace`` that
    cannot fit in what this process may still take (:func:`tiersim.memory.memory_room`): at
    least :data:`RUN_REQUEST_BYTES` each. A TraceError naming the trace, the estimate and the
    fix. Generated sessions are checked before they are made
    (:func:`tiersim.workload.sessions.check_memory`)."""
    if scenario.workload.sessions.source == "generate":
        return
    short = beyond_room(requests, RUN_REQUEST_BYTES, "request", memory_room())
    if short is None:
        return
    raise TraceError(trace.origin.path, (
        f"its {requests:,} requests to simulate {short}; replay a part of it (a shorter "
        "trace.window, or a sample of its rows), or run where more memory is allowed"))


def _note_replaced_rows(scenario: Scenario, source: str) -> None:
    """A note when ``trace.window``, ``trace.time_scale`` or ``trace.skip_longer_than`` is set
    beside generated sessions:
    the generated tasks replace the trace's rows, so none shapes a request (``time_scale:
    100`` ran the same steps over the same time, without a word)."""
    if scenario.workload.sessions.source != "generate":
        return
    keys = [f"trace.{key}" for key, unset in (
        ("window", scenario.trace.window is None), ("time_scale", scenario.trace.time_scale == 1.0),
        ("skip_longer_than", scenario.trace.skip_longer_than is None)) if not unset]
    if keys:
        one = len(keys) == 1
        named = keys[0] if one else f"{', '.join(keys[:-1])} and {keys[-1]}"
        warnings.warn(Note(f"{source}: {named} {'is' if one else 'are'} not read: "
                           "workload.sessions.source generate replaces the trace's rows with "
                           "generated sessions, which start at generate.task_rate_rps; remove "
                           f"{'it' if one else 'them'}, or set that rate"), stacklevel=3)


def trace_read(origin: TraceOrigin) -> TraceRead:
    """The trace file a run read, for its summary and manifest: the file's name, the format it
    was read as and the SHA-256 of its bytes (:class:`tiersim.results.TraceRead`)."""
    path = Path(origin.path)
    skip, skipped, read = origin.skipped or (None, None, None)
    return TraceRead(file=path.name, format=origin.format, sha256=file_sha256(path),
                     skip_longer_than=skip, skipped_requests=skipped, requests_read=read)


def scenario_trace_path(scenario: Scenario, source: str) -> Path:
    """Where the scenario's trace is: a relative path from the scenario's folder, then the
    bundled ``traces/``. A folder is refused at the scenario's ``trace.path`` (``path: .``
    alone would not say which file or key named it)."""
    folder = Path(source).parent if Path(source).is_file() else None
    try:
        return resolve_trace_path(scenario.trace.path, folder)
    except TraceFolderError:
        path = scenario.trace.path
        start = ("" if expand_user(path).is_absolute() else
                 " (a relative path starts at the scenario's folder)")
        raise ScenarioError(source, "trace.path", f"{path!r} is a folder; give the trace file "
                            f"in it{start}") from None
    except TraceError as err:  # not found, not a file: the scenario's key names it
        raise ScenarioError(source, "trace.path", str(err)) from None


def step_model(scenario: Scenario, tier) -> Any:
    """The step-time model of one engine replica of a tier (:func:`tiersim.fleet.step_model`)."""
    return fleet_mod.step_model(scenario, tier)


def tier_specs(scenario: Scenario, models: list | None = None) -> list:
    """One engine TierSpec per scenario tier (``models`` are ignored: the fleet builds them)."""
    return build_fleet(scenario).specs()


def tier_infos(scenario: Scenario, fleet: Fleet | list | None = None,
               mix: LengthMix | None = None) -> list[TierInfo]:
    """What routing needs per tier; ``cost_weight`` is the tier's cost per request in the
    scenario's cost model over the workload's requests ``mix`` (:func:`cost_weight`; NaN
    without a mix, outside ``fixed_per_request``: the tiers are not priced yet, as for
    drawing the workload, which reads no price; :func:`priced` prices them).

    ``fleet``: the built fleet (built here when None; a list of step models is accepted too)."""
    if not isinstance(fleet, Fleet):
        fleet = build_fleet(scenario)
    return [
        TierInfo(name=t.name, precision=_prior_precision(scenario, t.config),
                 accuracy=t.config.accuracy,
                 cost_weight=cost_weight(t, scenario.cost_model, mix),
                 output_length_multiplier=t.config.output_length_multiplier,
                 max_model_len=int(t.limits.max_model_len or 0))
        for t in fleet.tiers
    ]


def priced(infos: list[TierInfo], scenario: Scenario, fleet: Fleet,
           df: pd.DataFrame) -> list[TierInfo]:
    """``infos`` (the routed tiers' of the built ``fleet``, as :func:`tier_infos` gives them)
    with each ``cost_weight`` taken over the routed table ``df``'s requests at the load each
    replica of ``fleet`` receives (:func:`price_sample` at the scenario's seed;
    :func:`cost_weight`)."""
    mix = price_sample(df, scenario.seed, fleet_replicas(scenario))
    return [dataclasses.replace(info, cost_weight=cost_weight(tier, scenario.cost_model, mix))
            for info, tier in zip(infos, fleet.tiers, strict=True)]


def fleet_replicas(scenario: Scenario) -> int:
    """The engine replicas the scenario's routed tiers run between them (replicas x
    ``data_parallel``), the load its routers' prices spread evenly over
    (:func:`price_sample`): a fleet sized to its routing gives each tier replicas in
    proportion to its share, so each replica of every tier carries about the fleet's mean
    load whatever the shares. The planner prices every design at the scenario's own fleet
    too, as a run of the scenario would."""
    return sum(int(t.replicas) * int(t.data_parallel) for t in scenario.tiers)


#: The accuracy prior of a format that has none of its own (a tier's ``precision``, or the
#: format holding most of a checkpoint's weights); :func:`borrowed_because` says why.
PRIOR_OF_FORMAT = {"fp8_block": "fp8", "mxfp4": "w4a16"}
BORROWED_BECAUSE = {"fp8_block": "block FP8 is FP8 at a finer scale"}
"""Why a format borrows its prior, where that holds on every GPU (MXFP4's reason depends on
the GPU: :func:`borrowed_because`)."""


def borrowed_because(name: str, gpu_name: str) -> str:
    """Why format ``name`` borrows the prior of :data:`PRIOR_OF_FORMAT`, true on the GPU
    ``gpu_name`` the tier runs on: MXFP4 is served weight-only as W4A16 is where the GPU has no
    FP4 tensor cores (Hopper); where it has them (Blackwell) MXFP4 runs natively, which the
    borrowed prior does not measure."""
    from tiersim.hardware import get_gpu, get_precision

    if name != "mxfp4":
        return BORROWED_BECAUSE[name]
    gpu = get_gpu(gpu_name)
    if get_precision(name).is_native_on(gpu):
        return (f"MXFP4 is 4-bit weights as W4A16 is, the nearest format with a measured "
                f"prior; {gpu.name} runs MXFP4 natively, which that prior does not measure")
    return f"MXFP4 is 4-bit weights, served weight-only on {gpu.name} as W4A16 is"


def _prior_precision(scenario: Scenario, tier) -> str:
    """The precision whose accuracy prior describes the tier: its ``precision``, or for
    ``checkpoint`` the format that holds most of the served weights (BF16 for a BF16
    checkpoint; an FP8 or NVFP4 checkpoint's experts' format); :data:`PRIOR_OF_FORMAT` where
    that format has no prior, with a note saying the prior is borrowed. A tier that sets
    ``accuracy`` does not use it."""
    name = _own_format(scenario, tier)
    return PRIOR_OF_FORMAT.get(name, name)


def _own_format(scenario: Scenario, tier) -> str:
    """The tier's format: its ``precision``, or for ``checkpoint`` the format holding most of
    the weights it serves (:func:`_checkpoint_format`)."""
    from tiersim.hardware.precisions import CHECKPOINT

    name = str(tier.precision).strip().lower()
    return _checkpoint_format(scenario, tier) if name == CHECKPOINT else name


def _note_borrowed_priors(scenario: Scenario, accuracy_source: dict[str, str]) -> None:
    """A note per tier whose accuracy is the prior (no ``accuracy``, no trace labels) of
    another format than its own (:data:`PRIOR_OF_FORMAT`): it says the prior is borrowed."""
    for tier in scenario.tiers:
        if accuracy_source.get(tier.name) != "prior":
            continue
        name = _own_format(scenario, tier)
        borrowed = PRIOR_OF_FORMAT.get(name)
        if borrowed is not None:
            warnings.warn(Note(f"tier {tier.name}: no accuracy prior was measured for {name}; "
                               f"it borrows {borrowed}'s "
                               f"({borrowed_because(name, scenario.gpu)}); set the "
                               "tier's accuracy to give its own"), stacklevel=3)


def _note_weight_only_formats(scenario: Scenario) -> None:
    """A note per tier with a format the scenario's GPU has no tensor cores for (NVFP4 or
    MXFP4 on Hopper): vLLM runs those layers weight-only, their weights dequantised to BF16
    math, so a planner who sees an NVFP4 tier read as fast as a W4A16 one is told why, and
    that the format saves weight memory and reads there, not compute."""
    from tiersim.hardware import get_gpu, get_model
    from tiersim.hardware.precisions import PRECISIONS, weight_formats

    gpu = get_gpu(scenario.gpu)
    for tier in (*scenario.tiers, *scenario.baselines):  # a baseline is sized and shown too
        formats = weight_formats(get_model(scenario.tier_model_ref(tier)), tier.precision)
        # by the format's own label: a checkpoint group stored at other bits ("NVFP4 (8.78
        # bits a weight: some modules in another format)") is that format's tensor cores too
        lacking = {getattr(PRECISIONS.get(p.name), "label", p.label): p
                   for p in (formats.of(g) for g in formats.present)
                   if not p.weight_only and p.native_compute != "bf16"
                   and not p.is_native_on(gpu)}
        if not lacking:
            continue
        names = " and ".join(sorted(lacking))
        four = all(p.value_bits == 4 for p in lacking.values())
        warnings.warn(Note(
            f"tier {tier.name}: {gpu.name} has no {names} tensor cores, so vLLM runs its "
            f"{names} layers weight-only (the weights dequantised to BF16 math"
            f"{', as W4A16 runs' if four else ''}); its step times are modelled that way: the "
            "format saves weight memory and reads here, not compute"), stacklevel=3)


def _checkpoint_format(scenario: Scenario, tier) -> str:
    """The format holding most of the weights a ``checkpoint`` tier serves per GPU, as the
    accuracy priors name it (:func:`~tiersim.hardware.precisions.prior_name`)."""
    from tiersim.hardware import get_model
    from tiersim.hardware.precisions import FORMAT_GROUPS, prior_name, weight_formats
    from tiersim.perf.memory import params_per_gpu

    model = get_model(scenario.tier_model_ref(tier))
    formats = weight_formats(model, tier.precision)
    params = params_per_gpu(model)
    largest = max(FORMAT_GROUPS, key=lambda group: params.get(group, 0.0))
    return prior_name(formats.of(largest))


def cost_weight(tier: BuiltTier, cost_model: str, mix: LengthMix | None = None) -> float:
    """Cost of serving a request on a tier, in USD, in the cost model in force: its fixed
    price per request under ``fixed_per_request``, else the engine replica's price for the
    replica-seconds the requests of ``mix`` take on average on the tier's step model at the
    decode batch and prompt packing a replica receiving ``mix.rate`` requests a second runs
    (:func:`request_seconds`); 0 for a mix of no request, NaN
    without a mix (not priced yet). A per-request price the ``provisioned`` and
    ``attributed`` ledgers ignore does not steer routing. It was the price of one reference
    step (a 512-token prefill beside 32 decodes at 2,048 tokens of context), which a piecewise
    operator table could rank otherwise than the fleets the tiers need: NVIDIA's FP8 GEMM
    tables time 512 tokens at half of 513's, so at Llama-3.1-70B TP2 on H200 FP8 was priced
    above BF16 (0.000173 against 0.00017 USD); then (round 52) a 32nd of a 32-sequence decode
    step per output token, about half of what a request costs at the batches light loads run,
    and in the wrong order where a 4-bit weight-only tier's small-batch step is the dearer."""
    if cost_model == "fixed_per_request" and tier.config.cost_per_request_usd is not None:
        return tier.config.cost_per_request_usd
    if mix is None:
        return float("nan")
    if not len(mix.prompt):
        return 0.0
    if getattr(tier, "disagg", None) is not None:  # (a tier stand-in may have none)
        seconds = split_seconds(tier.step_model, tier.limits, tier.disagg,
                                tier.config.output_length_multiplier, mix, mix.rate,
                                tier.num_blocks)
    else:
        seconds = request_seconds(tier.step_model, tier.limits,
                                  tier.config.output_length_multiplier, mix, mix.rate,
                                  tier.num_blocks, fleet_mod.draft_tokens(tier.config))
    return tier.usd_per_replica_second * float(seconds.mean())


def split_seconds(model: Any, limits: Any, split: Disagg, multiplier: float, mix: LengthMix,
                  rate: float = 0.0, num_blocks: int = 0) -> np.ndarray:
    """Replica-seconds each request of ``mix`` takes on a tier split into ``split.prefill``
    prefill and ``split.decode`` decode replicas (:mod:`tiersim.engine.disagg`), where each of
    its replicas would receive ``rate`` requests a second were it aggregated: every request
    is prefilled on a prefill replica, ``rate x replicas / prefill`` a second each, as
    :class:`PrefillSteps` packs them there (:func:`prefill_packing`; a prefill replica runs no
    decode, and holds each prompt and its first token, which its prefill pass emits), then
    decodes its other output tokens on a decode replica, each a share of a pure-decode step
    of that replica's batch (:func:`decode_batch`, no prefill beside it). The decode replicas
    receive the requests as the prefill replicas let them go, not as they arrived
    (:func:`prefilled_arrivals`: the decoders sharing the table's arrivals are its rate over
    a decode replica's, at least 1, as :meth:`Arrivals.busy_batch` counts them, and the
    prefill replicas beside them are in the split's proportion; under
    :data:`MIN_ARRIVALS` arrivals, at Poisson arrivals, which a queue fed by Poisson
    arrivals lets go as Poisson, Burke's theorem): a prefill queue smooths the bursts, and a
    decode batch counted on the trace's own arrivals read 38.6 sequences on disagg.yaml's 4P
    1D at 8x (code trace, 0-600 s), where the run's decoder held 9.2 while busy and the
    prefilled arrivals read 10.5 (modelled). The KV transfer between the two
    (:meth:`~tiersim.engine.disagg.Disagg.transfer_s`) runs no step on either side, so it
    adds no replica-seconds: it delays each decode arrival by its prompt's transfer, which
    shifts the decoders' arrivals and leaves their batch as it is (disagg.yaml's 50 GB/s
    moves a 1,914-token prompt in 6.3 ms). No prompt rides on the decode steps
    (:func:`riding_seconds` is an aggregated replica's limit). Never rises with the load
    (the table's arrivals sped up with ``rate``); at the table's arrivals as they are and a
    rising ``rate`` (a smaller fleet sharing them) it can where the split has more decode
    than prefill replicas, whose prefill then spaces the decoders' arrivals more."""
    from tiersim.routing.capability import output_on_tier

    output = output_on_tier(mix.output, multiplier).astype(np.float64)
    replicas = split.prefill + split.decode
    prefill_rate = rate * replicas / split.prefill
    prefill = split_prefill(model, limits, mix.prompt, prefill_rate, num_blocks)
    decoded = np.maximum(output - 1.0, 0.0)  # the prefill pass emitted the first token
    step = DecodeSteps(model, mix.prompt + output / 2.0)
    cap = batch_cap(limits, num_blocks, float(np.mean(mix.prompt + output)))
    decode_rate = rate * replicas / split.decode
    arrivals = mix.arrivals
    if rate > 0.0 and arrivals is not None and arrivals.times is not None:
        decoders = max(1.0, arrivals.rate / decode_rate)
        arrivals = prefilled_arrivals(arrivals, float(np.mean(prefill)),
                                      decoders * split.prefill / split.decode)
        decode_rate = arrivals.rate / decoders  # as many decoders share them
    seqs = decode_batch(decode_rate, np.zeros(len(output)), decoded, step, cap, arrivals)
    return prefill + decoded * step(seqs) / seqs


def split_prefill(model: Any, limits: Any, prompt: np.ndarray, rate: float,
                  num_blocks: int = 0) -> np.ndarray:
    """Replica-seconds each ``prompt`` takes on a split tier's prefill replica receiving
    ``rate`` prompts a second: :class:`PrefillSteps` at :func:`prefill_packing`'s count, at
    most as many as a step's budget holds and as the replica's KV cache holds of the mean
    prompt and its first token (:func:`batch_cap`)."""
    budget = max(1, int(limits.max_num_batched_tokens))
    steps = PrefillSteps(model, prompt, budget)
    cap = batch_cap(limits, num_blocks, float(np.mean(prompt)) + 1.0)
    return steps.cost(prefill_packing(rate, steps, packing_cap(budget, prompt, cap)))


def prefilled_arrivals(arrivals: Arrivals, seconds: float, replicas: float) -> Arrivals:
    """The arrivals at a split tier's decode replicas: the table's ``arrivals`` (with their
    times) as they leave ``replicas`` prefill replicas, each taking ``seconds``
    replica-seconds a prompt, taken as one server ``replicas`` times as fast, first come
    first served: the ``j``-th leaves at ``max over i <= j of (a_i + (j - i + 1) x gap)``,
    ``gap = seconds / replicas`` (Lindley's recursion written out: a maximum running over the
    arrivals, no loop). At light load each leaves ``gap`` after it came, the bursts as they
    were; at heavy load they leave ``gap`` apart, as many as the prefill replicas let go."""
    gap = seconds / max(replicas, 1e-12)
    order = np.arange(len(arrivals.times))
    left = np.maximum.accumulate(arrivals.times - order * gap) + (order + 1) * gap
    return Arrivals.of(left)


def request_seconds(model: Any, limits: Any, multiplier: float, mix: LengthMix,
                    rate: float = 0.0, num_blocks: int = 0, extra: int = 0) -> np.ndarray:
    """Replica-seconds each request of ``mix`` takes on one engine replica of step model
    ``model`` receiving ``rate`` requests a second: its prompt's prefill, alone in chunks of
    the scheduler's ``max_num_batched_tokens`` (each chunk one step, beside the prompt's
    earlier chunks in the cache) while the replica prefills prompts faster than they come,
    else a share of the steps that pack the prompts waiting together under that budget
    (:func:`prefill_packing`, :class:`PrefillSteps`), plus its output tokens on the tier
    (``multiplier`` applied, at least one) each a share of a pure-decode step of the
    replica's decode batch (:func:`decode_batch`) at its mean context (prompt plus half its
    output); where the prompts are packed the replica prefills all the time, so that batch
    is at its cap (the load is more than it can take one prompt at a time). The batch is
    capped by :func:`batch_cap`: ``max_num_seqs``, and the sequences of the mix's mean
    length a replica of ``num_blocks`` KV blocks holds (0: not known, no such cap; ``extra``:
    draft token slots each sequence holds beside its own). Past that load the engine may be
    held back not by its prefill but by its running set, full of decoding sequences, which
    lets a prompt in only as one leaves (decode-heavy traffic: the Azure conversation
    trace's prefill steps carry about 2,100 prompt tokens beside 250 decodes, where the
    packed price took full 8,192-token steps and read 0.74-0.78 x the run); the price is
    then the dearer of the packed one and the prompts riding on the decode steps
    (:func:`riding_seconds`), at most the price at the threshold, so it never rises with
    the load. Below that load nothing of this runs: the price is as it was, to the bit.
    Neither a
    prefix cache's hits nor speculative decoding is counted, as the routers compare tiers on
    the same requests."""
    from tiersim.routing.capability import output_on_tier

    budget = max(1, int(limits.max_num_batched_tokens))
    output = output_on_tier(mix.output, multiplier).astype(np.float64)
    step = DecodeSteps(model, mix.prompt + output / 2.0)
    cap = batch_cap(limits, num_blocks, float(np.mean(mix.prompt + output)), extra)
    steps = PrefillSteps(model, mix.prompt, budget)
    prefill = steps.cost(prefill_packing(rate, steps, packing_cap(budget, mix.prompt, cap)))
    seqs = decode_batch(rate, prefill, output, step, cap, mix.arrivals)
    seconds = prefill + output * step(seqs) / seqs
    if rate * float(np.mean(steps.held(1))) <= 1.0:
        return seconds  # prefilled alone: the price before round 57, to the bit
    alone = steps.cost(1)
    riding = riding_seconds(model, limits, mix.prompt, output, step, alone, num_blocks, extra)
    return _dearer(seconds, riding, alone + output * step(cap) / cap)


def batch_cap(limits: Any, num_blocks: int, tokens: float, extra: int = 0) -> int:
    """The most sequences a replica's decode batch is priced at (:func:`decode_batch`): the
    scheduler's ``max_num_seqs``, or fewer where its KV cache (``num_blocks`` blocks, the
    engine's own figure, :attr:`tiersim.fleet.BuiltTier.num_blocks`) holds fewer sequences of
    ``tokens`` tokens (the priced requests' mean prompt + output on the tier), each at its
    full length (:func:`tiersim.engine.sequences_held`, as the run's KV-thrashing note counts
    them); at least 1 (a cache that holds no such sequence whole still runs one at a time).
    ``num_blocks`` 0: no KV capacity known, ``max_num_seqs`` alone."""
    cap = max(1, int(limits.max_num_seqs))
    if num_blocks <= 0 or not np.isfinite(tokens):
        return cap
    return max(1, min(cap, sequences_held(limits, int(num_blocks), int(tokens), int(extra))))


class DecodeSteps:
    """Seconds of one pure-decode step per request of a mix, at a batch of ``seqs`` sequences
    each at that request's ``context`` (the step model's ``decode_times``); a batch between
    two whole ones is read on the straight line between them. Each whole batch is asked once."""

    def __init__(self, model: Any, context: np.ndarray) -> None:
        self.model = model
        self.context = np.asarray(context, dtype=np.float64)
        self._at: dict[int, np.ndarray] = {}

    def whole(self, seqs: int) -> np.ndarray:
        """The steps at ``seqs`` sequences (cached)."""
        if seqs not in self._at:
            self._at[seqs] = np.asarray(self.model.decode_times(seqs, seqs * self.context),
                                        dtype=np.float64)
        return self._at[seqs]

    def __call__(self, seqs: float) -> np.ndarray:
        """The steps at ``seqs`` sequences (whole or not)."""
        low = int(np.floor(seqs))
        frac = seqs - low
        if frac <= 0.0:
            return self.whole(low)
        return self.whole(low) + frac * (self.whole(low + 1) - self.whole(low))


class PrefillSteps:
    """Seconds the prompts of a mix take in prefill when ``n`` prompts like each are prefilled
    together, under the scheduler's token ``budget`` a step (``max_num_batched_tokens``): each
    step holds ``n`` chunks of ``budget // n`` tokens (the prompt's earlier chunks in the
    cache), so the ``n`` prompts finish together after :meth:`held` seconds and each takes
    :meth:`cost`, a ``n``-th of them. ``n`` 1: each prompt alone in chunks of the budget, as
    the price was until round 56. A count between two whole ones is read on the straight
    line between them. Each (length, whole count) is asked of the step model once."""

    def __init__(self, model: Any, prompt: np.ndarray, budget: int) -> None:
        self.model = model
        self.prompt = np.asarray(prompt, dtype=np.int64)
        self.budget = max(1, int(budget))
        self._at: dict[int, np.ndarray] = {}

    def _together(self, tokens: int, count: int) -> float:
        """Seconds of the steps that prefill ``count`` prompts of ``tokens`` tokens together.
        Where ``count`` is more than 1 and the round spills past its first step, its last,
        part-filled step is charged its share (its tokens over a full step's) of a full step:
        the rounds run back to back, so the next round's first chunks fill the rest of it, as
        the engine fills a step's budget with whichever prompts wait. Charged whole, that step
        cost a step's overhead per round for a few tokens, and the price rose with the load
        (review56b: 73.9 -> 83.0 ms a request, 3,000-token prompts, 17 -> 18 requests/s)."""
        chunk = max(1, self.budget // count)
        seconds = 0.0
        for start in range(0, tokens, chunk):
            size = min(chunk, tokens - start)
            if count > 1 and start > 0 and size < chunk:
                full = StepShape(prefill_chunks=((chunk, start),) * count)
                seconds += self.model.step_time(full) * size / chunk
            else:
                seconds += self.model.step_time(StepShape(prefill_chunks=((size, start),) * count))
        return seconds

    def whole(self, count: int) -> np.ndarray:
        """:meth:`held` at a whole ``count`` of prompts (cached)."""
        if count not in self._at:
            seen: dict[int, float] = {}
            held = np.empty(len(self.prompt))
            for i, tokens in enumerate(self.prompt.tolist()):
                if tokens not in seen:
                    seen[tokens] = self._together(tokens, count)
                held[i] = seen[tokens]
            self._at[count] = held
        return self._at[count]

    def held(self, count: float) -> np.ndarray:
        """Seconds each prompt is in prefill where ``count`` prompts (at least 1) share its
        steps: the steps' whole time."""
        low = int(np.floor(count))
        frac = count - low
        if frac <= 0.0:
            return self.whole(low)
        return self.whole(low) + frac * (self.whole(low + 1) - self.whole(low))

    def cost(self, count: float) -> np.ndarray:
        """Replica-seconds each prompt's prefill takes where ``count`` prompts share its steps:
        :meth:`held` over ``count`` (exactly the time alone at 1); the time alone where that
        is less on the mean: the engine fills a step's budget with whichever prompts wait, not
        in equal shares, so prompts whose ``n`` equal chunks cost more than their chunks alone
        (two prompts of 4,097-8,191 tokens at a budget of 8,192, review57: 199.71 -> 199.83 ms
        a request) are not charged more, and the price does not rise as the load crosses the
        threshold. On the mean, not each prompt: capped prompt by prompt, the Azure
        conversation trace's price at 5x moved from 1.030 to 0.984 x the run (BF16) and from
        1.004 to 0.966 x (FP8), and the code trace's about 1 % cheaper (one replica of tiny's
        tiers, modelled), where the threshold asks nothing to move."""
        packed = self.held(count) / count
        alone = self.whole(1)
        return alone if float(np.mean(packed)) > float(np.mean(alone)) else packed


def riding_seconds(model: Any, limits: Any, prompt: np.ndarray, output: np.ndarray,
                   step: DecodeSteps, alone: np.ndarray, num_blocks: int = 0,
                   extra: int = 0) -> np.ndarray | None:
    """Replica-seconds each request takes on a saturated replica whose running set is full
    by count (``max_num_seqs`` decoding sequences), its prompt riding on the decode steps
    (:func:`riding_prefill`; at most its seconds prefilled ``alone``: a long prompt's chunks
    fill whole steps, where a token adds less than in the mean prompt's step) and its
    ``output`` tokens each a ``max_num_seqs``-th of a pure-decode step (``step``, at each
    request's mean context). None where the KV cache
    (``num_blocks``, 0: not known) holds fewer sequences at the mix's mean context (prompt
    plus half the output, as the running set holds them; ``extra`` draft slots each): the
    engine then lets prompts in as blocks free, several at a time, which this does not
    follow (tiny's BF16 tier at ``gpu_memory_utilization`` 0.47 on the Azure conversation
    trace holds 58 and packs 1.8 prompts a prefill step, where one a leaving sequence read
    1.2 x the run), or where :func:`riding_prefill` finds prefill the limit."""
    full = max(1, int(limits.max_num_seqs))
    held = int(np.mean(step.context)) if len(step.context) else 0
    if num_blocks > 0 and sequences_held(limits, int(num_blocks), held, extra) < full:
        return None
    budget = max(1, int(limits.max_num_batched_tokens))
    prefill = riding_prefill(model, prompt, output, step.context, full, budget, extra)
    if prefill is None:
        return None
    return np.minimum(prefill, alone) + output * step(full) / full


def _dearer(packed: np.ndarray, riding: np.ndarray | None, alone: np.ndarray) -> np.ndarray:
    """The replica-seconds a saturated replica's price takes: ``riding``
    (:func:`riding_seconds`, at most ``alone``'s mean: the price at the threshold, each
    prompt prefilled alone beside the capped decode batch) where its mean is above
    ``packed``'s, else ``packed``: the engine runs no faster than the slower of its two
    limits allows (prompts packed into a step's budget; prompts let in only as decoding
    sequences leave). ``packed`` falls with the load and the others do not move, so the
    price never rises with it; at the threshold ``packed`` is ``alone``, so it does not jump
    there."""
    if riding is None:
        return packed
    if float(np.mean(riding)) > float(np.mean(alone)):
        riding = alone
    return riding if float(np.mean(riding)) > float(np.mean(packed)) else packed


def riding_prefill(model: Any, prompt: np.ndarray, output: np.ndarray, context: np.ndarray,
                   cap: int, budget: int, extra: int = 0) -> np.ndarray | None:
    """Replica-seconds each prompt's prefill takes where a saturated replica's running set is
    full of decoding sequences (``cap`` of them, ``max_num_seqs`` in :func:`riding_seconds`,
    each at the mix's mean ``context``) and prompts get in only as they leave: ``q = cap /
    mean(output)`` leave a step (Little's law: each decodes a token a step), so ``q`` prompts
    of the mix's mean length come in a step on average, their chunks in that step's budget
    beside the decodes. The sequences leaving a step are the sum of ``cap`` streams of finishes, so
    Poisson in number (Palm-Khintchine); a step carrying ``k`` prompts takes
    :func:`_ride_seconds` more than a pure-decode step of the batch (the step model's
    ``step_time``, as the engine times its mixed steps). A prompt's share is its tokens' part
    of those seconds, ``E[seconds added by k] / (q x mean prompt)`` a token (the expectation
    summed over ``k`` exactly, within ten standard deviations and ten of ``q``). None where
    the replica is not bound by its running set: the prompts ``q`` a step make room for do
    not fit beside the decodes on average (``q x mean prompt > budget - cap``), so prefill
    is what holds it back (:func:`prefill_packing`), or no prompt or output to price. A
    speculative decoder (``extra``: its ``k`` draft tokens) takes ``k + 1`` tokens of a step's
    budget (:mod:`tiersim.engine.spec_decode`), so the room beside the decodes is ``budget -
    cap x (k + 1)``. Where every request has the same output length the prompts ride in
    cohorts (:func:`_cohort_seconds`), not Poisson in number."""
    if not len(prompt):
        return None
    mean_prompt = float(np.mean(prompt))
    leave = cap / max(1.0, float(np.mean(output)))
    room = int(budget) - int(cap) * (1 + max(0, int(extra)))
    if mean_prompt <= 0.0 or room <= 0 or leave * mean_prompt > room:
        return None
    decode = StepShape(decode_seqs=int(cap), decode_context=int(round(cap * np.mean(context))))
    size = max(1, round(mean_prompt))
    base = model.step_time(decode)
    if float(np.ptp(output)) == 0.0:
        per_token = _cohort_seconds(model, decode, base, int(cap), room, size) / (cap * size)
        return np.asarray(prompt, dtype=np.float64) * per_token
    low, high = _poisson_span(leave)
    ks = np.arange(low, high + 1)
    weight = np.exp(ks * np.log(leave) - leave - _log_factorial(ks))
    extra = [_ride_seconds(model, decode, base, int(k) * size, room, size) for k in ks]
    per_token = float(np.dot(weight, extra) / weight.sum()) / (leave * mean_prompt)
    return np.asarray(prompt, dtype=np.float64) * per_token


def _cohort_seconds(model: Any, decode: StepShape, base: float, cap: int, room: int,
                    size: int) -> float:
    """Seconds ``cap`` prompts of ``size`` tokens add to the decode steps ``decode`` they ride
    on where every request has the same output length: the engine fills its empty running
    set a step's ``room`` at a time, and each cohort leaves together ``output`` steps later,
    its seats taken again by one of the same size, so the prompts ride in cohorts of as many
    as the room holds (the last the rest of the ``cap`` seats), not Poisson in number (the
    engine on constant-length traffic, review57b: 300/32 tokens at 1,500/s on tiny's
    w4a16 tier, the Poisson price read 1.15 x the run)."""
    most = max(1, room // size)
    whole, rest = divmod(cap, most)
    seconds = whole * _ride_seconds(model, decode, base, most * size, room, size)
    return seconds + _ride_seconds(model, decode, base, rest * size, room, size)


def _poisson_span(mean: float) -> tuple[int, int]:
    """The counts :func:`riding_prefill` sums a Poisson law of ``mean`` over: within ten
    standard deviations and ten of the mean (the rest weighs under 1e-12)."""
    reach = 10.0 * np.sqrt(mean) + 10.0
    return max(0, int(np.floor(mean - reach))), int(np.ceil(mean + reach))


def _log_factorial(ks: np.ndarray) -> np.ndarray:
    """``log(k!)`` for each whole ``k`` (lazily from scipy: a heavy import)."""
    from scipy.special import gammaln

    return gammaln(ks + 1.0)


def _ride_seconds(model: Any, decode: StepShape, base: float, tokens: int, room: int,
                  size: int) -> float:
    """Seconds ``tokens`` prompt tokens add to the pure-decode steps ``decode`` they ride on:
    in steps of at most ``room`` tokens (the budget left beside the decodes; prompts past it
    spill into the next steps, each beside the same decodes), each step's time over ``base``,
    that of ``decode`` alone (``model.step_time`` both). A step's prompt tokens are chunks of
    ``size`` (the mean prompt: one chunk a prompt), none of them with context in the cache."""
    if tokens <= 0:
        return 0.0
    full, rest = divmod(int(tokens), int(room))
    seconds = 0.0
    if full:
        seconds += full * (_with_prompts(model, decode, room, size) - base)
    if rest:
        seconds += _with_prompts(model, decode, rest, size) - base
    return seconds


def _with_prompts(model: Any, decode: StepShape, tokens: int, size: int) -> float:
    """Seconds of the step ``decode`` with ``tokens`` prompt tokens in it, in chunks of
    ``size`` (the last the rest)."""
    whole, rest = divmod(int(tokens), max(1, int(size)))
    chunks = ((int(size), 0),) * whole + (((rest, 0),) if rest else ())
    return model.step_time(dataclasses.replace(decode, prefill_chunks=chunks))


def packing_cap(budget: int, prompt: np.ndarray, cap: int) -> float:
    """The most prompts :func:`prefill_packing` packs into a step: as many of the mix's mean
    ``prompt`` as one step's token ``budget`` holds, at most ``cap`` (:func:`batch_cap`: a
    prompt in prefill holds its KV blocks too) and at least 1."""
    mean = float(np.mean(prompt)) if len(prompt) else 0.0
    most = budget / mean if mean > 0.0 else 1.0
    return max(1.0, min(float(cap), most))


def prefill_packing(rate: float, steps: PrefillSteps, most: float) -> float:
    """Prompts a replica receiving ``rate`` requests a second prefills together: 1 while it
    prefills them faster than they come one at a time (``rate`` x a prompt's mean seconds
    alone at most 1: each finds the replica's prefill free, and the price is the one it had
    before round 56, to the bit), else the ``n`` where the prompts that arrive while ``n``
    are prefilled together (``rate x`` :meth:`PrefillSteps.held` at ``n``, on average) are
    ``n`` again: back-to-back packed rounds, the replica all the time prefilling, as the
    engine packs the waiting prompts into one step's token budget. At most ``most``
    (:func:`packing_cap`: the step's budget is full; the load is more than the replica can
    take). The held time grows with ``n``, so from 1 each round is no less than the last and
    they rise to the least fixed point. Between two whole counts the arrivals are a straight
    line in ``n`` (:meth:`PrefillSteps.held`), so where the next whole count takes fewer than
    it holds the fixed point is solved on that line, exactly; else the next round is at least
    that whole count (a map of slope near 1, where packing barely saves, crept up a millionth
    a round and stopped short of it). At most :data:`BATCH_ROUNDS` rounds (then a lower
    bound). Deterministic: no draw."""
    count = 1.0
    if not rate > 0.0 or not len(steps.prompt):
        return count
    for _ in range(BATCH_ROUNDS):
        over = rate * float(np.mean(steps.held(count))) - count  # arrivals beyond the count
        if over <= 0.0:
            return count
        upper = int(np.floor(count)) + 1
        short = rate * float(np.mean(steps.whole(upper))) - upper
        if short <= 0.0:  # the fixed point is on the line from count to upper
            return min(most, count + (upper - count) * over / (over - short))
        count = min(most, max(float(upper), count + over))
        if count >= most:
            return most
    return count


def busy_batch(load: float) -> float:
    """The mean number of sequences in a replica while it holds any, where ``load`` are in it
    on average (Little's law: requests a second times seconds each) and they come and go
    independently (Poisson: ``load / (1 - exp(-load))``): 1 at light load, where a replica
    runs one sequence at a time and is otherwise idle (an idle replica's time is no request's),
    ``load`` at heavy load."""
    if load <= 1e-12:
        return 1.0
    return load / -np.expm1(-load)


def decode_batch(rate: float, prefill: np.ndarray, output: np.ndarray, step: Any,
                 cap: int, arrivals: Arrivals | None = None) -> float:
    """Sequences a replica decodes a step at ``rate`` requests a second, by Little's law:
    the load is ``rate`` times a request's mean time in the engine at batch ``b`` (its
    ``prefill`` seconds plus its ``output`` tokens' steps, ``step(b)`` each), and ``b`` the
    mean sequences in the replica while it holds any: from the trace's own ``arrivals`` as
    the fleet's replicas share them (:meth:`Arrivals.busy_batch`: bursty arrivals keep the
    replicas busy a smaller share of the time, at a larger batch), else at Poisson arrivals
    to one replica (:func:`busy_batch`); at least
    1 and at most ``cap`` (:func:`batch_cap`: the scheduler's ``max_num_seqs``, or the
    sequences the replica's KV cache holds where fewer). The time grows with the batch
    (and the batch with the time), so from
    one sequence each round's batch is no less than the one before and they rise to the
    least fixed point; they stop when a round moves the batch by under a millionth, or at
    the cap (the load is more than the replica can take: it runs full), or after
    :data:`BATCH_ROUNDS` rounds (a batch that is still rising: a lower bound). Deterministic:
    no draw."""
    cap = max(1, int(cap))
    seqs = 1.0
    if rate <= 0.0 or not len(prefill):
        return seqs
    prefilling = rate * float(np.mean(prefill))  # share of the replica's time in prefill
    if prefilling >= 1.0:
        return float(cap)  # more prompts than it can prefill: it runs full
    for _ in range(BATCH_ROUNDS):
        engine_s = float(np.mean(prefill + output * step(seqs) / (1.0 - prefilling)))
        busy = (busy_batch(rate * engine_s) if arrivals is None
                else arrivals.busy_batch(engine_s, rate))
        nxt = min(float(cap), busy)
        if nxt - seqs <= 1e-6 * seqs:
            return nxt
        seqs = nxt
    return seqs


NO_SESSIONS_WORDS = ("the traffic has no agent sessions to hold it over (a trace with session_id "
                     "and step columns, or workload.sessions.source: generate); remove it, or "
                     "hold each request with slo.e2e_p99_s")
"""Why a session SLO (``slo.session_p99_s``, ``--slo-session-p99``) over traffic without agent
sessions is refused: no task would be held, and it would read as met."""


def prepare(trace: LoadedTrace | pd.DataFrame, infos: list[TierInfo], scenario: Scenario,
            rng: np.random.Generator, source: str) -> Prepared:
    """Agent sessions (generated, or the trace's with their context and links; see
    :mod:`tiersim.workload.sessions`), then per-tier correctness (labels, or drawn from the
    workload's difficulty model) and where each tier's accuracy comes from. A
    :class:`~tiersim.trace.LoadedTrace`'s origin names the file's rows in session errors; a
    bare table's errors name ``source`` and the table row."""
    origin = trace.origin if isinstance(trace, LoadedTrace) else None
    table = trace.table if isinstance(trace, LoadedTrace) else trace
    table = sessions.prepare_sessions(table, scenario.workload.sessions, rng, source, origin)
    if scenario.slo.session_p99_s is not None and "follows_id" not in table.columns:
        raise ScenarioError(source, "slo.session_p99_s", NO_SESSIONS_WORDS)
    check_step_tiers(scenario, table, source, None if origin is None else origin.step_types)
    prepared = prepare_workload(table, infos, scenario.workload, rng=rng, source=source)
    _note_borrowed_priors(scenario, prepared.accuracy_source)
    _note_weight_only_formats(scenario)
    return prepared


def check_step_tiers(scenario: Scenario, table: pd.DataFrame, source: str,
                     file_types: frozenset[str] | None = None) -> None:
    """Refuse a ``router.step_tiers`` step type the workload never has (a typo would route
    nothing and leave those steps to the fallback): the sessions generator's types are known
    from its ``step_mix``, and a whole trace's are its rows'. Under ``trace.window`` a type in
    the trace outside the window is a note instead; ``file_types``: the whole file's step
    types (:attr:`tiersim.trace.TraceOrigin.step_types`), so that a type in none of its rows
    is refused whatever the window (unknown when None: then a note)."""
    routes = scenario.router.step_tiers
    if scenario.router.policy != "step_type" or not routes or "step_type" not in table:
        return
    generator = scenario.workload.sessions.generate if scenario.workload.sessions.source == (
        "generate") else None
    kinds = (_generated_step_types(generator) if generator is not None
             else distinct_text(table["step_type"]))
    for kind in routes:
        if kind not in kinds:
            _unused_step_type(scenario, source, kind, kinds, generator is not None,
                              None if generator is not None else file_types)


def _generated_step_types(generator: sessions.SessionGenerator) -> set[str]:
    """The step types the sessions generator can make: planning, final and its step mix's
    (none of the mix's with ``max_steps: 2``, which leaves a task no middle step)."""
    middle = generator.step_mix.items() if generator.max_steps > 2 else ()
    return {"planning", "final", *(k for k, p in middle if p > 0)}


def _unused_step_type(scenario: Scenario, source: str, kind: str, kinds: set[str],
                      generated: bool, file_types: frozenset[str] | None = None) -> None:
    """The error (or, under a trace window, the note) for a mapped step type ``kind`` that
    none of the workload's step types ``kinds`` is; ``file_types``: the whole trace file's,
    where known (a type in none of them is an error under a window too)."""
    from tiersim.scenario import located
    from tiersim.trace.loader import _shown

    window = scenario.trace.window
    if window is not None and file_types is not None and kind not in file_types:
        kinds, window = set(file_types), None  # in no row of the file: a typo at any window
    close = difflib.get_close_matches(kind, sorted(kinds), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    known = ", ".join(sorted(kinds))
    where = f"router.step_tiers.{kind}"
    if generated:
        raise ScenarioError(source, where, f"workload.sessions.generate makes no {kind!r} "
                            f"step{hint}; its step types are {known}")
    if window is None:
        raise ScenarioError(source, where, f"the trace has no {kind!r} step{hint}; its step "
                            f"types are {known}")
    warnings.warn(str(located(ScenarioError(
        source, where, f"no step in trace.window {_shown(*window)} has type "
        f"{kind!r}{hint}, so the entry routes nothing in this run; the window's step types "
        f"are {known}"))), Note, stacklevel=4)


def baseline_infos(scenario: Scenario) -> list[TierInfo]:
    """What routing would need per baseline-only tier (``baselines``), each built as a tier is:
    the facts its correctness is drawn from; never routed to."""
    if not scenario.baselines:
        return []
    full = scenario.with_baselines()
    return tier_infos(full, Fleet(tiers=tuple(fleet_mod.build_tier(full, t)
                                              for t in scenario.baselines)))


def prepare_all(trace: LoadedTrace | pd.DataFrame, infos: list[TierInfo], scenario: Scenario,
                rng: np.random.Generator, source: str) -> Prepared:
    """:func:`prepare` for every tier: ``infos`` are the routed tiers' then the baseline-only
    tiers' (:func:`baseline_infos`), so the table holds every tier's correctness. Each
    request's draw is one number shared by every tier, so the routed tiers' columns are those
    of a run without baselines. An error about a baseline tier names its key
    (``baselines[j]``). A trace ``spec_acceptance`` column no tier reads is a note
    (:func:`note_unused_acceptance`), and so are prompt blocks with no prefix cache to read
    them, or a prefix cache with no blocks to find (:func:`note_unused_prompt_blocks`,
    :func:`note_no_prompt_blocks`)."""
    if not scenario.baselines:
        prepared = prepare(trace, infos, scenario, rng, source)
    else:
        try:
            prepared = prepare(trace, infos, scenario.with_baselines(), rng, source)
        except ScenarioError as err:
            raise _baseline_key(err, len(scenario.tiers)) from None
    note_unused_acceptance(prepared.df, scenario, source)
    note_prior_floor(scenario, prepared.accuracy_source, source, step_types(prepared.df))
    note_no_prompt_blocks(prepared.df, scenario, source)
    table = trace.table if isinstance(trace, LoadedTrace) else trace
    note_unused_prompt_blocks(prepared.df, scenario, source,
                              made_by_sessions="prefix_hashes" not in table.columns)
    return prepared


def step_types(df: pd.DataFrame) -> set[str] | None:
    """The step types the trace's rows carry (``step_type``), as text as the ``step_type``
    router reads them (:func:`tiersim.text_columns.text_codes`); None where it has no such
    column, or where a row has none: the router's fallback takes that row (review57b: left
    out, a row of no type was not said to be routed on the fallback's priors)."""
    if "step_type" not in df.columns:
        return None
    codes, kinds = text_codes(df["step_type"])
    if (codes < 0).any():
        return None
    return {str(kind) for kind in kinds[np.unique(codes)]}


def _fallback_routes(router, present: set[str] | None) -> bool:
    """Whether a ``step_type`` router's fallback routes any row: a row whose step type the
    map (``step_tiers``, else the default map) has no tier for. ``present``: the trace's step
    types (None: not known, so it may)."""
    routes = router.step_tiers if router.step_tiers is not None else DEFAULT_STEP_TIERS
    return present is None or any(kind not in routes for kind in present)


def note_prior_floor(scenario: Scenario, accuracy_source: dict[str, str], source: str,
                     present: set[str] | None = None) -> None:
    """A note where the scenario's ``accuracy_floor`` (else its ``router.floor``) is judged on
    the per-precision priors alone: two tiers or more, none stating its ``accuracy`` and no
    ``correct_<tier>`` labels; with no floor, likewise where a router that reads accuracy
    (:data:`ACCURACY_ROUTERS`, or a ``step_type`` router whose ``step_fallback`` is one)
    routes two tiers or more on them. ``present``: the trace's step types (:func:`step_types`),
    so a ``step_type`` router whose map holds every one of them, its fallback routing no row,
    is not said to route on the priors (review56d).
    The priors are alike for every model (BF16 95.00 %, FP8 94.78 %: README.md, "Accuracy"),
    so which fleet meets the floor, and what a router between the tiers wins, rests on
    placeholders; before, a run and a plan said only "prior" beside the accuracy."""
    tiers = [*scenario.tiers, *scenario.baselines]
    key, floor = "accuracy_floor", scenario.accuracy_floor
    if floor is None and getattr(scenario.router, "floor", None) is not None:
        key, floor = "router.floor", scenario.router.floor  # a floor router's own floor
    policy = scenario.router.policy
    fallback = scenario.router.step_fallback if policy == "step_type" else None
    if fallback is not None and not _fallback_routes(scenario.router, present):
        fallback = None  # the map takes every step the trace has
    reads = policy in ACCURACY_ROUTERS or fallback in ACCURACY_ROUTERS
    routes = floor is None and reads and len(scenario.tiers) >= 2
    if (floor is None and not routes) or len(tiers) < 2:
        return
    if any(accuracy_source.get(tier.name) != "prior" for tier in tiers):
        return
    what = (f"{key} {floor:g} is judged on qllm-eval's per-precision priors" if floor is not None
            else f"router.policy {policy}{_fallback_words(fallback)} routes on qllm-eval's "
                 "per-precision priors, and the run's accuracy is read from them")
    warnings.warn(f"{source}: no tier states its accuracy and the trace has no correct_<tier> "
                  f"labels, so {what}, alike for every model (README.md, "
                  "\"Accuracy\"): placeholders, not the model's measured accuracy; state each "
                  "tier's accuracy, or give the trace correct_<tier> labels", Note, stacklevel=3)


ACCURACY_ROUTERS = ("threshold", "lagrangian", "oracle", "cascade", "budget")
"""Routers whose choice reads each tier's accuracy (or correctness), besides ``floor``: with
no floor and every tier on the priors, :func:`note_prior_floor` says they route by
placeholders (fresh56's FP8 + BF16 threshold run sent every request to FP8 on 94.78 % against
95.00 % and read "expected accuracy 94.78 % | prior", no note)."""


def _fallback_words(fallback: str | None) -> str:
    """" (step_fallback threshold)" where a ``step_type`` router's fallback reads accuracy
    (:data:`ACCURACY_ROUTERS`): the step types it does not map are routed so; "" otherwise."""
    return f" (step_fallback {fallback})" if fallback in ACCURACY_ROUTERS else ""


def note_unused_acceptance(df: pd.DataFrame, scenario: Scenario, source: str) -> None:
    """A note when the trace sets ``spec_acceptance`` for some request but no tier (routed or
    baseline) decodes speculatively: the rates are read and checked, and change nothing."""
    if "spec_acceptance" not in df.columns or not df["spec_acceptance"].notna().any():
        return
    if any(t.speculative is not None for t in [*scenario.tiers, *scenario.baselines]):
        return
    warnings.warn(f"{source}: the trace's spec_acceptance column is not used: no tier has a "
                  "speculative block (add one to a tier to use the rates, or drop the "
                  "column)", Note, stacklevel=3)


def note_no_prompt_blocks(df: pd.DataFrame, scenario: Scenario, source: str) -> None:
    """A note when a tier (routed or baseline) caches prefixes and no request names a block of
    its prompt (no ``prefix_hashes`` column, none made by sessions, or every row's list
    empty): the cache, its offload levels and a prefix-aware balancer then find nothing, and
    the hit rate reads 0 whatever real prompts would share."""
    caching = [t.name for t in [*scenario.tiers, *scenario.baselines]
               if t.scheduler.enable_prefix_caching]
    if not caching:
        return
    if "prefix_hashes" in df.columns:
        if any(len(blocks) for blocks in df["prefix_hashes"]):
            return
        why = "no row of the trace's prefix_hashes column holds a block"
    else:
        why = ("the trace has no prefix_hashes column, as Mooncake's hash_ids, and runs no "
               "sessions")
    names = " and ".join([", ".join(caching[:-1]), caching[-1]] if len(caching) > 1
                         else caching)
    tiers, its = ("tiers", "their hit rates read") if len(caching) > 1 else (
        "tier", "its hit rate reads")
    verb = "cache" if len(caching) > 1 else "caches"
    warnings.warn(f"{source}: {tiers} {names} {verb} prefixes (scheduler.enable_prefix_caching), "
                  f"and no request names its prompt's blocks ({why}), so no prompt finds another's "
                  f"prefix: {its} 0 whatever real prompts share (a preempted request still "
                  "finds its own blocks); use a trace with prefix hashes to see sharing",
                  Note, stacklevel=3)


def note_unused_prompt_blocks(df: pd.DataFrame, scenario: Scenario, source: str,
                              made_by_sessions: bool = False) -> None:
    """A note when requests name their prompts' blocks (``prefix_hashes``: Mooncake's
    ``hash_ids``, or, ``made_by_sessions``, the blocks tiersim makes for a session trace that
    has no such column) but no tier (routed or baseline) caches prefixes: the blocks are read
    and change nothing, every prompt is computed whole, and the prefix figures of summary.json
    stay empty (:func:`note_no_prompt_blocks` is the converse)."""
    if "prefix_hashes" not in df.columns or not any(len(b) for b in df["prefix_hashes"]):
        return
    if any(t.scheduler.enable_prefix_caching for t in [*scenario.tiers, *scenario.baselines]):
        return
    named = ("the blocks tiersim makes for the sessions' prompts" if made_by_sessions
             else "prefix_hashes")
    warnings.warn(f"{source}: the requests name their prompts' blocks ({named}), but no "
                  "tier caches prefixes, so no prompt reuses another's: every prompt is computed "
                  "whole and the prefix figures stay empty; set scheduler.enable_prefix_caching: "
                  "true on a tier to replay the reuse", Note, stacklevel=3)


def _baseline_key(err: ScenarioError, routed: int) -> ScenarioError:
    """``err`` naming ``baselines[j]`` where it names ``tiers[k]`` past the ``routed`` tiers
    (the baseline-only tiers follow them in the drawn tier list)."""

    def rename(match: re.Match) -> str:
        k = int(match[1])
        return match[0] if k < routed else f"baselines[{k - routed}]"

    return ScenarioError(err.path, re.sub(r"tiers\[(\d+)\]", rename, err.where), err.message)


def route(scenario: Scenario, df: pd.DataFrame, infos: list[TierInfo],
          rngs: tuple[np.random.Generator, np.random.Generator], source: str) -> Assignment:
    """The router's per-request first tier, escalation tier and accuracy basis (decided before
    simulating).

    ``rngs``: one generator for training the router's classifier, one for its decisions.
    With a classifier, the assignment carries its score per request (``Assignment.score``).
    Tiers not priced yet (``cost_weight`` NaN: :func:`tier_infos` without a mix) are priced
    over ``df`` (:func:`priced`), as a run prices them.
    """
    if any(np.isnan(info.cost_weight) for info in infos):
        infos = priced(infos, scenario, build_fleet(scenario), df)
    cfg = with_scenario_floor(scenario.router, scenario.accuracy_floor)  # the floor policy's
    router = build_router(cfg, infos, train_df=df, rng=rngs[0], source=source)
    assignment = router.assign(df, rngs[1])
    if router.classifier is None or not len(df):
        return assignment
    # the scores routing read (cached by the table): the realised AUROC's (routing.quality)
    return dataclasses.replace(assignment, score=router.classifier.score(df))
