"""Judging candidate fleets by simulation, fast enough to size every design of a plan.

A :class:`Design` is which tiers a fleet keeps (a tier with zero replicas is removed from the
fleet, so the router never sees it), each kept tier's ``gpus_per_replica`` and the router's
settings. :class:`SimEvaluator` simulates a design at given replica counts and returns an
:class:`Outcome` (fleet and per-tier p99 latencies, dropped requests, accuracy, cost under the
scenario's cost model).

It wires the run exactly as :func:`tiersim.runner.run_scenario` does (same seeds, so a full
design routes every request as a run of that scenario would), with two savings:

- the trace is loaded and its correctness drawn once (for every tier of the scenario, its
  baseline-only tiers too: a tier's draws do not depend on which other tiers are kept), and a
  design's routing is made once and reused at every replica count;
- routing is decided before the simulation and tiers share nothing but escalations, so
  without escalations each tier is simulated alone on its own requests and cached by
  (tier, gpus_per_replica, replicas, routing): bisecting one tier re-simulates only that tier.
  A router that escalates (a cascade, which also sends on what its first tier refuses) is
  simulated whole.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tiersim import costs, metrics
from tiersim.class_accuracy import class_means
from tiersim.errors import TiersimError
from tiersim.fleet import (
    BuiltTier,
    Fleet,
    build_fleet,
    build_tier,
    simulate,
    tier_techniques,
    workload,
)
from tiersim.routing import Assignment, build_router
from tiersim.routing.accuracy import expected_matrix
from tiersim.routing.config import policies_in_play, unread_key_problem
from tiersim.routing.constrained import with_scenario_floor
from tiersim.routing.policies import config_reads_realised
from tiersim.session_metrics import task_success


@dataclass(frozen=True)
class Design:
    """A fleet's shape: the tiers kept (cheapest first), each one's GPUs per replica, and
    router setting overrides (dotted keys below ``router``, e.g. ``{"floor": 0.8}``)."""

    tiers: tuple[str, ...]
    gpus_per_replica: tuple[int, ...]
    router: tuple[tuple[str, Any], ...] = ()

    def __hash__(self) -> int:
        """Hash by value, a router setting that is a list or a map included (``--choose
        router.thresholds=[0.2,0.5]``), as designs key the planner's caches."""
        return hash((self.tiers, self.gpus_per_replica,
                     json.dumps(self.router, sort_keys=True, default=repr)))

    @property
    def label(self) -> str:
        """``nvfp4+bf16`` (``@2`` after a tier on two GPUs per replica)."""
        return "+".join(n if g == 1 else f"{n}@{g}"
                        for n, g in zip(self.tiers, self.gpus_per_replica, strict=True))

    def gpus(self, name: str) -> int:
        """GPUs per replica of a kept tier."""
        return self.gpus_per_replica[self.tiers.index(name)]


@dataclass(frozen=True)
class TierOutcome:
    """One tier of a simulated fleet."""

    replicas: int
    requests: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    dropped: int
    utilization: float | None
    prefill: int | None = None  # a disaggregated tier's prefill replicas (the split it ran)
    techniques: str | None = None  # the serving techniques it ran (spec decode k=3)
    e2e_p99_s: float | None = None  # over its requests (final tier), an escalated one's both
    # passes counted, as its TTFT counts the first pass (plan.json only where the limit is held)


SHARED_RUNS = 64
"""Engine runs an evaluator's :attr:`SimEvaluator.shared_runs` keeps, the latest used: every
seed's run of one fleet follows the others' (:meth:`tiersim.plan.robust.SeedsEvaluator.
outcomes`), so a few dozen hold every run another seed can reuse without keeping the search's
every result."""


KEPT_ROWS = 4_000_000
"""Requests' latencies a :class:`RunStore` keeps at most, summed over its runs (the latest
used): 41 bytes a request (five float64 columns, three latencies, the arrival and the finish,
and a dropped flag; measured on a kept run, store55), so at most about 165 MB, and nothing
more while the evaluator that made a run still holds it."""


class RunStore:
    """One tier's engine runs alone (:class:`_TierRun` without its rows), by :func:`alone_key`,
    kept for evaluators of one process made after the one that ran them: in ``tiersim plan``
    the seed check's evaluators and the planned run's sized uniform baselines run many of the
    search's own fleets again (a uniform fleet sees every request at every seed and in every
    scenario of the same trace and tier). Runs are read only once :attr:`reading` is set (after
    the search, so the search's simulations count as before); a run found is the same result
    to the byte (the engine is deterministic, :func:`tiersim.fleet.workload`) and is not
    counted as a simulation. The kept runs are read, never changed."""

    def __init__(self, max_rows: int = KEPT_ROWS):
        import threading

        self.runs: collections.OrderedDict[bytes, _TierRun] = collections.OrderedDict()
        self.rows = 0
        self.max_rows = max_rows
        self.reading = False
        self.hits = 0
        self._lock = threading.Lock()

    def get(self, key: bytes) -> _TierRun | None:
        """The run kept at ``key`` (None when none is, or while not :attr:`reading`)."""
        with self._lock:
            if not self.reading or key not in self.runs:
                return None
            self.runs.move_to_end(key)
            self.hits += 1
            return self.runs[key]

    def put(self, key: bytes, run: _TierRun) -> None:
        """Keep ``run`` at ``key``, dropping the least recently used runs past
        :attr:`max_rows` requests (one run larger than that is not kept)."""
        size = len(run.ttft)
        if size > self.max_rows:
            return
        with self._lock:
            if key in self.runs:
                return
            self.runs[key] = dataclasses.replace(run, rows=_NO_ROWS)
            self.rows += size
            while self.rows > self.max_rows:
                self.rows -= len(self.runs.popitem(last=False)[1].ttft)


_NO_ROWS = np.zeros(0, dtype=np.int64)
_STORE: RunStore | None = None


@contextlib.contextmanager
def keeping_runs(store: RunStore | None = None):
    """Every :class:`SimEvaluator` made inside keeps its tier runs in one :class:`RunStore`
    (``store``, else a new one), read once :func:`reuse_kept_runs` is called."""
    global _STORE
    before, _STORE = _STORE, (store if store is not None else RunStore())
    try:
        yield _STORE
    finally:
        _STORE = before


def reuse_kept_runs() -> None:
    """Evaluators read the active :class:`RunStore` from now on (none active: nothing)."""
    if _STORE is not None:
        _STORE.reading = True


def alone_key(scenario, built: BuiltTier, spec, gpus: int, df: pd.DataFrame,
              a: Assignment) -> bytes | None:
    """What one tier's run alone depends on, across scenarios: :func:`run_key` (the spec but
    its step model, and the workload) with the step model's own inputs
    (:func:`tiersim.fleet.step_model_key`). None where nothing is shared (speculative
    decoding: its draws are seeded by the scenario's seed)."""
    from tiersim.fleet import step_model_key

    key = run_key([spec], (gpus,), df, a)
    if key is None:
        return None
    return hashlib.blake2b(key + step_model_key(scenario, built.config).encode(),
                           digest_size=32).digest()


def run_key(specs, gpus: tuple[int, ...], df: pd.DataFrame, a: Assignment) -> bytes | None:
    """What one engine run depends on, as a digest, among evaluators of one scenario at
    different seeds (``--robust``): each spec by the fields a seed cannot change (its tier, GPUs
    per replica, replicas, KV blocks, scheduler limits, balancer, output multiplier, split and
    lockstep: its step model is the tier's on those GPUs at every seed) and every array and list
    of the engine's workload (:func:`tiersim.fleet.workload`: the requests, their routing and
    what the engine reads of them). None, nothing shared, where a spec decodes speculatively:
    its draws are seeded by the scenario's seed."""
    import pickle

    if any(spec.spec_decoding is not None for spec in specs):
        return None
    digest = hashlib.blake2b(digest_size=32)
    digest.update(repr([(spec.name, g, spec.replicas, spec.num_blocks, spec.limits,
                         spec.balancer, spec.output_multiplier, spec.disagg, spec.lockstep)
                        for spec, g in zip(specs, gpus, strict=True)]).encode())
    work = workload(df, a)
    for f in dataclasses.fields(work):
        value = getattr(work, f.name)
        digest.update(f.name.encode())
        if value is None:
            digest.update(b"-")
        elif isinstance(value, np.ndarray):
            digest.update(f"{value.dtype.str}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        else:
            digest.update(pickle.dumps(value, protocol=5))
    return digest.digest()


@dataclass(frozen=True)
class Outcome:
    """A simulated fleet: latencies, drops, accuracy and cost (``cost_usd`` under the cost
    model over the run; ``cost_per_hour_usd`` the provisioned rate). ``accuracy`` is None
    where no request reached the fleet (a response cache answered every one), as a run's."""

    ttft_p99_s: float | None
    tpot_p99_s: float | None
    dropped: int
    accuracy: float | None
    cost_usd: float
    cost_per_hour_usd: float
    duration_s: float
    tiers: dict[str, TierOutcome] = field(default_factory=dict)
    attributed_cost_usd: float | None = None
    e2e_p99_s: float | None = None
    session_p99_s: float | None = None  # p99 task latency over agent sessions (None: none)
    accuracy_ci95: tuple[float, float] | None = None
    """The accuracy's 95% interval over the run's requests, as a run's ``router.accuracy_ci95``
    (:func:`tiersim.routing.metrics.accuracy_ci`); None with no request, and for the worst of
    several seeds (``--robust``: no one run's interval)."""
    task_success: float | None = None
    """Mean over agent tasks (``session_id``) of the product of their steps' scored
    correctness, as a run's ``sessions.task_success``
    (:func:`tiersim.session_metrics.task_success`); None where the traffic has no sessions."""
    accuracy_by_class: dict[str, dict[str, float]] | None = None
    """Each difficulty class of the requests, by name: its ``requests`` and ``accuracy``, as
    a run's ``accuracy_by_class`` (:func:`tiersim.class_accuracy.class_means`); None where no
    request has a class, and for the worst of several seeds (``--robust``)."""


@dataclass
class _TierRun:
    """Per-request results of one tier simulated alone (positions into the routed table)."""

    rows: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    e2e: np.ndarray
    dropped: np.ndarray
    last_finish: float
    busy_s: float
    prefill: int | None = None  # a disaggregated tier's prefill replicas (the split kept)
    last_arrival: float = -math.inf  # the engine's: a session step's is set by the run
    busy_until: float = -math.inf  # the end of the simulated fleet's last step
    escalated: np.ndarray | None = None  # simulated whole: sent to a second tier
    refused: np.ndarray | None = None  # simulated whole: refused by the first tier, sent on
    arrival: np.ndarray | None = None  # the engine's arrival of each request
    finish: np.ndarray | None = None  # its finish (NaN: dropped)


def scores_realised(scenario) -> bool:
    """Whether ``tiersim run`` scores ``scenario``'s accuracy on realised draws: a router that
    reads them (``confusion`` set, or a cascade), as :meth:`Router.scores_realised` says for a
    run of any number of tiers. A one-tier scenario counts too: a plan that scored on realised
    draws writes its one-tier fleet with ``confusion: {fpr: 0, fnr: 0}`` so that its run does,
    and the seed check simulates that scenario (it had read the expected accuracy at the
    checked seeds under the realised label)."""
    return config_reads_realised(scenario.router)


class SimEvaluator:
    """Simulates designs of one scenario (see the module docstring); counts its simulations."""

    def __init__(self, scenario, source: str | None = None, cost_model: str | None = None,
                 df: pd.DataFrame | None = None, end_s: float = 0.0, trace=None):
        """``trace``: the scenario's trace already read (a :class:`tiersim.trace.loader.
        LoadedTrace`, held read-only: ``tiersim plan --robust`` reads it once for every seed's
        evaluator, whose tables share its columns), else read here."""
        from tiersim import inputs as runner  # the runner's own inputs (no import cycle)

        self.runner = runner
        self.scenario = scenario
        self.source = source or scenario.source
        self.cost_model = cost_model or scenario.cost_model
        self.seeds = np.random.SeedSequence(scenario.seed).spawn(4)
        self.by_name = {t.name: t for t in getattr(scenario, "all_tiers", scenario.tiers)}
        """Every tier a design or a uniform fleet may use: the scenario's tiers, then its
        baseline-only tiers (``baselines``: sized as uniform fleets, never in a design)."""
        self.accuracy_source: dict[str, str] = {}
        """Per tier, where its accuracy comes from (as a run's ``sources.accuracy``); empty for
        a run's own table."""
        if df is None:  # drawn as run_scenario draws it (``df``: a run's own prepared table)
            if trace is None:
                trace = runner.load_scenario_trace(scenario, self.source)
            infos = [*runner.tier_infos(scenario, build_fleet(scenario)),
                     *runner.baseline_infos(scenario)]
            prepared = runner.prepare_all(trace, infos, scenario,
                                          np.random.default_rng(self.seeds[0]), self.source)
            df, self.accuracy_source = prepared.df, dict(prepared.accuracy_source)
            if scenario.router.response_cache is not None:  # the fleet serves the misses
                from tiersim.response_cache import answered, last_answer_s

                hit = answered(scenario, df, self.source)[0]
                end_s = last_answer_s(df, hit, scenario.router.response_cache.lookup_s)
                df = df[~hit].reset_index(drop=True)
        self.df = df
        self.end_s = end_s  # the run lasts at least this long (a response cache's last answer)
        self._realised: bool | None = None  # see :attr:`realised`
        self._price_mix = None  # see :attr:`price_mix`
        self._built: dict[tuple[str, int], BuiltTier | None] = {}
        self.refusals: dict[tuple[str, int], Exception] = {}
        """Per (tier, GPUs per replica) that did not build, why (:meth:`built`)."""
        self._routing: dict[Design, tuple] = {}
        self._tier_runs: dict[tuple, _TierRun] = {}
        self._fleets: dict[tuple, Outcome] = {}
        self.peers: list[SimEvaluator] = []
        """Evaluators of the scenario at other seeds (``tiersim plan --robust``,
        :func:`tiersim.plan.robust.seeds_evaluator`): a disaggregated tier's split is then the
        one whose worst score over this evaluator and its peers is best, so every seed runs
        the tier at one split (each kept its own best split, and the worst over the seeds
        mixed fleets of different splits under the first seed's)."""
        self._configured = False  # :meth:`as_configured`: every split tier at its own split
        self._options: dict[tuple, Any] = {}  # with peers: each split's runs, for theirs
        # (kept only where a disaggregated tier's split is chosen, so that no seed simulates
        # a split twice; one run of no choice is not kept beyond the search's own caches)
        self.simulations = 0
        self.sim_wall_s = 0.0
        self.shared_runs: collections.OrderedDict | None = None
        """Engine runs shared with the evaluators of the scenario at other seeds (``tiersim
        plan --robust``, :func:`tiersim.plan.robust.seeds_evaluator`; None: none shared), by
        :func:`run_key`: a uniform fleet's tier sees every request at every seed, and runs the
        same (:meth:`_simulate`)."""
        self.slo: tuple[float | None, ...] = (scenario.slo.ttft_p99_s, scenario.slo.tpot_p99_s,
                                              getattr(scenario.slo, "e2e_p99_s", None))
        """p99 TTFT, TPOT and end-to-end limits (the last None where not held) a disaggregated
        tier's split is chosen against (the planner sets its constraints here)."""

    # ---- building blocks ---------------------------------------------------------------------
    def tier_config(self, name: str, gpus: int, replicas: int = 1):
        """The scenario's tier with another size (``data_parallel`` kept when it divides
        ``gpus``, else 1)."""
        tier = self.by_name[name]
        dp = tier.data_parallel if gpus % tier.data_parallel == 0 else 1
        return tier.model_copy(update={"gpus_per_replica": gpus, "data_parallel": dp,
                                       "replicas": max(replicas, 1)})

    def built(self, name: str, gpus: int) -> BuiltTier | None:
        """The tier built on ``gpus`` GPUs per replica (step model, KV blocks), None when it
        does not fit (cached)."""
        key = (name, gpus)
        if key not in self._built:
            shared = self._peer_built(key)
            if shared is not None:
                self._built[key] = shared
                return shared
            try:
                self._built[key] = build_tier(self.scenario, self.tier_config(name, gpus))
            except (TiersimError, ValueError) as err:
                self._built[key] = None
                self.refusals[key] = err
        return self._built[key]

    def fits(self, name: str, gpus: int) -> bool:
        """Whether the tier's weights and some KV cache fit on ``gpus`` GPUs per replica and
        vLLM loads its weights split that way (no partial block-FP8 blocks or W4A16 groups,
        :func:`tiersim.perf.memory.block_split_problem`: a run of such a split says so; a plan
        does not offer it)."""
        return self.built(name, gpus) is not None and not self.split_problem(name, gpus)

    def split_problem(self, name: str, gpus: int) -> str:
        """Why vLLM may refuse the tier's weights split over ``gpus`` GPUs ("" when nothing)."""
        from tiersim.fleet import parallel
        from tiersim.hardware import get_model
        from tiersim.perf.memory import block_split_problem

        tier = self.tier_config(name, gpus)
        model = get_model(self.scenario.tier_model_ref(tier))
        return block_split_problem(model, tier.precision, *parallel(tier))

    def _peer_built(self, key: tuple[str, int]) -> BuiltTier | None:
        """The tier a :attr:`peer <peers>` (the scenario at another seed, ``--robust``) built
        at ``key`` (tier, GPUs per replica), with this evaluator's config: its step model, KV
        blocks and limits do not depend on the seed, and its step model (whose tables grow as
        it is asked) is held once, not once a seed. None where no peer built it, or the tier
        decodes speculatively (its draws are seeded by the scenario's seed)."""
        if self.by_name[key[0]].speculative is not None:
            return None
        for peer in self.peers:
            built = peer._built.get(key) if isinstance(peer, SimEvaluator) else None
            if built is not None:
                return dataclasses.replace(built, config=self.tier_config(*key))
        return None

    def fleet(self, design: Design) -> Fleet:
        """The design's tiers built (one replica each; :meth:`BuiltTier.spec` sizes them)."""
        return Fleet(tiers=tuple(self.built(n, g) for n, g in
                                 zip(design.tiers, design.gpus_per_replica, strict=True)))

    def built_design(self, design: Design) -> Design:
        """``design`` with each tier on a GPU count it is built at: the design's, else the
        scenario tier's own (which the scenario's checks built). A design no size of which
        loads names 1 GPU per replica (Qwen2.5-72B in block FP8 on H100s: too large for one,
        and its MLP of 231 blocks of 128 splits whole over none of 2, 4, 8); its accuracy and
        basis, routed there, stopped ``run`` and ``plan`` on an AttributeError. Such a design
        is never simulated: only its accuracy and basis are read from its routing."""
        gpus = tuple(g if self.built(n, g) is not None else self.by_name[n].gpus_per_replica
                     for n, g in zip(design.tiers, design.gpus_per_replica, strict=True))
        if gpus == design.gpus_per_replica:
            return design
        return dataclasses.replace(design, gpus_per_replica=gpus)

    def router_config(self, design: Design):
        """The scenario's router with the design's overrides; every request on the one tier of
        a single-tier design."""
        if len(design.tiers) == 1:
            return self.scenario.router.model_validate({"policy": "uniform"})
        return self.routed_config(design.router)

    def routed_config(self, setting: tuple[tuple[str, Any], ...], realised: bool | None = None):
        """The router a design of two or more tiers routes with under one setting (dotted keys
        below ``router``): :func:`design_router`, the map the planned scenario writes, so the
        plan routes as a run of its scenario does; ``realised`` defaults to the plan's basis
        (:attr:`realised`)."""
        data = design_router(self.scenario.router.model_dump(by_alias=True, exclude_unset=True),
                             setting, self.realised if realised is None else realised,
                             [t.name for t in self.scenario.tiers])
        cfg = type(self.scenario.router).model_validate(data)
        return with_scenario_floor(cfg, self.scenario.accuracy_floor)

    def score_realised_if_read(self, settings: list[tuple[tuple[str, Any], ...]]) -> None:
        """Score every design on realised draws when a router setting the plan tries reads
        them (``--choose router.confusion.fpr=0`` or ``router.policy=cascade``), not only when
        the scenario's own router does: one basis for the whole plan (:meth:`basis`). Called
        before any design is routed (a design routed earlier keeps its routing)."""
        for setting in settings:
            try:
                reads = config_reads_realised(self.routed_config(setting, realised=False))
            except (TiersimError, ValueError):  # refused where that design is routed
                continue
            if reads:
                self._realised = True
                return

    @property
    def price_mix(self):
        """The requests each design's tiers are priced over for routing (``cost_weight``): the
        run's sample of the served table (:func:`tiersim.inputs.price_sample`), drawn once, at
        the load per replica of the scenario's own fleet (:func:`tiersim.inputs.fleet_replicas`:
        a design's replicas are sized after its routing)."""
        if self._price_mix is None:
            self._price_mix = self.runner.price_sample(
                self.df, self.scenario.seed, self.runner.fleet_replicas(self.scenario))
        return self._price_mix

    @property
    def realised(self) -> bool:
        """Whether the plan scores every design on realised draws: the scenario's router reads
        them (:func:`scores_realised`), or a setting the plan tries does
        (:meth:`score_realised_if_read`)."""
        if self._realised is None:
            self._realised = scores_realised(self.scenario)
        return self._realised

    def routing(self, design: Design) -> tuple[list, Assignment, float]:
        """(tier infos, assignment, accuracy if nothing is dropped) of a design (cached), routed
        on GPU counts its tiers are built at (:meth:`built_design`)."""
        if design not in self._routing:
            built = self.built_design(design)
            sub = self.scenario.model_copy(update={"tiers": [
                self.tier_config(n, g) for n, g in
                zip(built.tiers, built.gpus_per_replica, strict=True)]})
            infos = self.runner.tier_infos(sub, self.fleet(built), self.price_mix)
            router = build_router(self.router_config(design), infos, train_df=self.df,
                                  rng=np.random.default_rng(self.seeds[1]), source=self.source,
                                  baselines=[t.name for t in self.scenario.baselines])
            a = router.assign(self.df, np.random.default_rng(self.seeds[2]))
            acc = expected_matrix(self.df, infos, self.basis(a))[np.arange(len(self.df)),
                                                                  a.final_tier]
            # no request reaches the fleet (a response cache answered all): no accuracy (None,
            # as tiersim run gives it; it had read 1.0 here), and no floor to hold it to
            self._routing[design] = (infos, a, float(acc.mean()) if acc.size else None)
        return self._routing[design]

    def basis(self, a: Assignment) -> str:
        """What a design's accuracy is scored on: one basis for every design of the plan, the
        one ``tiersim run`` scores the scenario on. Where the scenario's router, or a setting
        the plan tries (:meth:`score_realised_if_read`), reads realised correctness (it sets
        ``confusion``, or is a cascade), every design, uniform fleets and floor-routed ones
        included, is scored on the realised draws, as ``run`` scores its
        uniform fleets on its routed run's basis (:func:`tiersim.savings.same_basis`), and the
        planned scenario keeps that basis (:func:`tiersim.cli.plan.planned_scenario`); else
        each design on its own router's basis."""
        return "realised" if self.realised else a.basis

    def accuracy_sources(self, design: Design) -> dict[str, str]:
        """What a design's accuracy is scored on (``basis``: expected or realised) and where its
        kept tiers' accuracies come from (``source``, as a run of the planned scenario says it
        in ``sources.accuracy``: trace labels, the scenario's, the prior)."""
        from tiersim.summary import accuracy_labels  # the run's words (no import cycle)

        said = accuracy_labels(self.accuracy_source, self.scenario)
        kept = {str(said[n]) for n in design.tiers if n in said}
        return {"basis": self.basis(self.routing(design)[1]),
                "source": " + ".join(sorted(kept)) or "scenario"}

    # ---- simulation --------------------------------------------------------------------------
    def simulated(self) -> list[tuple[Design, dict[str, int]]]:
        """Every fleet simulated so far (each design at each replica count, as
        :meth:`evaluate` cached it), in the order first simulated."""
        return [(design, dict(zip(design.tiers, counts, strict=True)))
                for design, counts in self._fleets]

    def evaluate(self, design: Design, replicas: dict[str, int]) -> Outcome:
        """Simulate the design at ``replicas`` (cached)."""
        key = (design, tuple(replicas[n] for n in design.tiers))
        if key not in self._fleets:
            infos, a, _ = self.routing(design)
            sends_on = a.refused_to is not None and bool(np.any(a.refused_to >= 0))
            if np.any(a.escalated) or sends_on or (len(design.tiers) > 1 and self._chained()):
                runs = self._whole(design, replicas, a)
            else:
                runs = {n: self._alone(design, n, replicas[n], a) for n in design.tiers}
            self._fleets[key] = self._outcome(design, replicas, runs, a, infos)
        return self._fleets[key]

    def _chained(self) -> bool:
        """Whether some request waits for another to finish (agentic sessions): then the tiers
        of a design are simulated together, as a step may follow one served on another tier,
        and its arrival depends on when that one finishes."""
        if "follows_id" not in self.df.columns:
            return False
        return bool((pd.to_numeric(self.df["follows_id"], errors="coerce") >= 0).any())

    def _simulate(self, specs, df: pd.DataFrame, a: Assignment,
                  gpus: tuple[int, ...] | None = None):
        """One engine run, counted and timed (no time series: nothing here reads one). With
        :attr:`shared_runs` (``--robust``: one store for every seed's evaluator) and ``gpus``
        (each spec's GPUs per replica), a run whose specs and workload another seed already ran
        is that run's result again, copied, not counted as a simulation (:func:`run_key`)."""
        t0 = time.perf_counter()
        shared = getattr(self, "shared_runs", None)  # a stand-in counter has none
        key = None if shared is None or gpus is None else run_key(specs, gpus, df, a)
        if key is not None and key in shared:
            shared.move_to_end(key)
            result = copy.deepcopy(shared[key])
        else:
            result = simulate(specs, df, a, series=False)
            self.simulations += 1
            if key is not None:
                shared[key] = copy.deepcopy(result)
                while len(shared) > SHARED_RUNS:
                    shared.popitem(last=False)
        self.sim_wall_s += time.perf_counter() - t0
        return result

    def _alone(self, design: Design, name: str, replicas: int, a: Assignment) -> _TierRun:
        """One tier simulated on its own requests (cached)."""
        key = (name, design.gpus(name), replicas, design)
        if key not in self._tier_runs:
            runs = self._alone_splits(design, name, replicas, a)
            self._tier_runs[key] = runs[0] if len(runs) == 1 else runs[min(
                range(len(runs)), key=lambda i: self._worst_score(
                    runs[i], lambda e: e._alone_splits(design, name, replicas,
                                                       e.routing(design)[1])[i]))]
        return self._tier_runs[key]

    def _alone_splits(self, design: Design, name: str, replicas: int,
                      a: Assignment) -> list[_TierRun]:
        """One tier simulated on its own requests at each split :meth:`_splits` tries (kept
        where the evaluator has :attr:`peers` and there is a split to choose: they read
        them)."""
        key = ("alone", name, design.gpus(name), replicas, design)
        if key in self._options:
            return self._options[key]
        rows = np.flatnonzero(a.tier == design.tiers.index(name))
        df = self.df.iloc[rows]
        zeros = np.zeros(len(rows), dtype=np.int64)
        built = self.built(name, design.gpus(name))
        alone = Assignment(tier=zeros, escalate_to=zeros - 1)
        store = _STORE
        runs = []
        for prefill in self._tried_splits(built, replicas):
            spec = built.spec(replicas, prefill)
            stored = None if store is None else alone_key(self.scenario, built, spec,
                                                          design.gpus(name), df, alone)
            kept = None if stored is None else store.get(stored)
            if kept is not None:  # the same run another evaluator made (RunStore)
                # labelled with the split asked for here, as a run simulated here is: the
                # same engine input is asked for as None (as configured) or as its count
                # (a search's split), and the kept run carried its maker's label (round 55,
                # store55: today's 1P 1D read back recorded prefill 1, a fresh run None; a
                # baseline read back from today's run recorded "served aggregated")
                runs.append(dataclasses.replace(kept, rows=rows, prefill=prefill or None))
                continue
            result = self._simulate([spec], df, alone, (design.gpus(name),))
            run = _tier_run(rows, np.asarray(result.arrival_s, np.float64), result,
                            float(sum(result.busy_s[name])))
            runs.append(dataclasses.replace(run, prefill=prefill or None,  # 0: aggregated
                                            busy_until=result.busy_until_s))
            if stored is not None:
                store.put(stored, runs[-1])
        if self.peers and len(runs) > 1:  # a split to choose: the peers read these runs
            self._options[key] = runs
        return runs

    def _worst_score(self, run: _TierRun, run_at) -> tuple[int, float]:
        """A split's score (:meth:`_split_score`) for its ``run`` here and its run at each of
        the :attr:`peers` (``run_at(peer)``), the worst (``run``'s alone without peers)."""
        return max(e._split_score(r) for e, r in
                   [(self, run), *((p, run_at(p)) for p in self.peers)])

    @contextlib.contextmanager
    def as_configured(self):
        """Inside, a disaggregated tier runs at the split its scenario gives it (carried in
        proportion to another count of replicas, :func:`tiersim.fleet.proportional_prefill`,
        as the planned scenario writes a split the plan did not choose), not at the best of
        its splits: the fleet run today (``plan.current``,
        :func:`tiersim.cli.plan_current.current_record`) is simulated as a run of it is, at
        the split it runs, where the search chooses a design's split. The search's cached
        runs are set aside inside (a design of the same size holds its best split's) and
        kept as they were after. Before (round 54), today's bf16 at 1P 4D on disagg.yaml read
        p99 TTFT 1.19 s, its 4P 1D split's, "meets the SLOs", where a run of it gives 37.0 s
        (review55)."""
        saved = (self._configured, self._fleets, self._tier_runs, self._options)
        self._configured, self._fleets, self._tier_runs, self._options = True, {}, {}, {}
        try:
            yield self
        finally:
            self._configured, self._fleets, self._tier_runs, self._options = saved

    def _tried_splits(self, built: BuiltTier, replicas: int) -> list[int | None]:
        """The prefill counts a tier runs at here: :meth:`_splits`, or its own split alone
        (None: the scenario's, in proportion) :meth:`as_configured`."""
        return [None] if self._configured else self._splits(built, replicas)

    @staticmethod
    def _splits(built: BuiltTier, replicas: int) -> list[int | None]:
        """The prefill counts to try: for a disaggregated tier, aggregated serving (0) and its
        splits of ``replicas``, as ``tiersim disagg`` tries them
        (:func:`tiersim.metrics.prefill_counts`: every one, or at most
        :data:`tiersim.metrics.MAX_SPLITS` spread evenly; the plan keeps the best, so a tier is
        not sized at a split it would not run), else one run as configured. Aggregated serving
        is one of them because the plan may choose it (``with_disaggregation``): sized on the
        splits alone, disagg.yaml at a 1 s TTFT SLO kept 6 x 2 GPUs where 5 served
        aggregated met every constraint."""
        if built.disagg is None or replicas < 2:
            return [None]
        return [0, *metrics.prefill_counts(replicas)]

    def _split_score(self, run: _TierRun) -> tuple[int, float]:
        """A tier run's rank against the planned SLOs (:attr:`slo`), lower first, as
        :func:`tiersim.disagg.compare_splits` ranks splits (:func:`metrics.split_rank`: its
        drops, then its p99s over the SLOs)."""
        return metrics.split_rank(metrics.percentile(run.ttft, 99),
                                  metrics.percentile(run.tpot, 99), self.slo,
                                  int(run.dropped.sum()), metrics.percentile(run.e2e, 99))

    def _whole(self, design: Design, replicas: dict[str, int], a: Assignment):
        """Every tier simulated together (a router that escalates, or chained sessions); per
        tier by final tier. Each kept tier with a ``disaggregation`` block and two replicas or
        more, in turn, is run served aggregated and at each of its splits (:meth:`_splits`),
        the earlier ones at the split kept for them and the later at their configured
        proportion (:func:`tiersim.fleet.proportional_prefill`), and the best by its own SLO
        score is kept: the choice the plan then writes (``with_disaggregation`` runs the whole
        planned scenario at each, tier by tier). Before, it ran only at its configured
        proportion, so agent sessions were sized at a split the plan did not keep (fp8 4 +
        bf16 2, 11 USD/hour, sized at 2P 2D and written at 1P 3D, where fp8 3 at 1P 2D + bf16
        2, 10 USD/hour, met every constraint); and only the first such tier was chosen."""
        names = list(design.tiers)
        kept: dict[str, int | None] = {}  # per split tier chosen so far, its prefill count
        for split in [n for n in names if replicas[n] >= 2
                      and self.built(n, design.gpus(n)).disagg is not None] or [None]:
            options = [None] if split is None else self._tried_splits(
                self.built(split, design.gpus(split)), replicas[split])
            best = best_score = None
            for prefill in options:
                at = {**kept, split: prefill}
                runs = self._whole_at(design, replicas, a, at)
                if split is None:
                    best, kept_here = runs, prefill
                    continue
                score = self._worst_score(runs[split], lambda e, at=at, split=split: e._whole_at(
                    design, replicas, e.routing(design)[1], at)[split])
                if best is None or score < best_score:
                    best, best_score, kept_here = runs, score, prefill
            kept[split] = kept_here
        return best

    def _whole_at(self, design: Design, replicas: dict[str, int], a: Assignment,
                  prefills: dict[str | None, int | None]):
        """One whole-fleet run with the given tiers at the given prefill counts (0: served
        aggregated; a tier not named, at its configured proportion); kept where the evaluator
        has :attr:`peers` and a split is chosen, as they read them."""
        key = ("whole", design, tuple(replicas[n] for n in design.tiers),
               tuple(prefills.items()))
        if key in self._options:
            return self._options[key]
        names = list(design.tiers)
        specs = [self.built(n, design.gpus(n)).spec(replicas[n], prefills.get(n))
                 for n in names]
        runs = self._whole_runs(names, self._simulate(specs, self.df, a,
                                                      tuple(design.gpus(n) for n in names)))
        for n, prefill in prefills.items():
            if n is not None:
                runs[n] = dataclasses.replace(runs[n], prefill=prefill or None)
        if self.peers and any(n is not None for n in prefills):  # a split the peers read
            self._options[key] = runs
        return runs

    @staticmethod
    def _whole_runs(names: list[str], result) -> dict[str, _TierRun]:
        """Per tier of one whole-fleet run, by final tier."""
        arrival = np.asarray(result.arrival_s, np.float64)  # a session step's: set by the run
        runs = {}
        for k, n in enumerate(names):
            mask = np.asarray(result.final_tier) == k
            runs[n] = dataclasses.replace(
                _tier_run(np.flatnonzero(mask), arrival[mask], _Masked(result, mask),
                          float(sum(result.busy_s[n]))), busy_until=result.busy_until_s,
                escalated=np.asarray(result.escalated, dtype=bool)[mask],
                refused=np.asarray(result.refused, dtype=bool)[mask])
        return runs

    def _outcome(self, design: Design, replicas, runs: dict[str, _TierRun], a: Assignment,
                 infos) -> Outcome:
        """Fleet metrics from per-tier runs."""
        n = len(self.df)
        passes = _passes(runs, a, n)
        dropped = passes.dropped
        # as the run's duration: the engine's arrivals (a session step arrives when its
        # predecessor finishes or is dropped, not at its trace arrival_s), and the end of the
        # fleet's last step (a pass that gave no answer still ran)
        ends = [e for r in runs.values() for e in (r.last_arrival, r.last_finish, r.busy_until)
                if math.isfinite(e)]
        duration = max([self.end_s, *ends])
        exp = expected_matrix(self.df, infos, self.basis(a))[np.arange(n), passes.final_tier]
        ttft = np.concatenate([r.ttft for r in runs.values()])
        tpot = np.concatenate([r.tpot for r in runs.values()])
        tiers = {name: TierOutcome(
            replicas=replicas[name], requests=len(r.rows),
            ttft_p99_s=metrics.percentile(r.ttft, 99), tpot_p99_s=metrics.percentile(r.tpot, 99),
            dropped=int(r.dropped.sum()),
            utilization=metrics.utilization(
                r.busy_s, self.built(name, design.gpus(name)).spec(replicas[name]).replicas,
                duration),
            prefill=r.prefill, techniques=self._techniques(name, design.gpus(name)),
            e2e_p99_s=metrics.percentile(r.e2e, 99))
            for name, r in runs.items()}
        rate = self._provisioned(design, replicas, 3600.0)
        attributed = sum(r.busy_s * self.built(n, design.gpus(n)).usd_per_replica_second
                         for n, r in runs.items())
        e2e = np.concatenate([r.e2e for r in runs.values()])
        scored = np.where(dropped, 0.0, exp)
        return Outcome(ttft_p99_s=metrics.percentile(ttft, 99),
                       tpot_p99_s=metrics.percentile(tpot, 99), dropped=int(dropped.sum()),
                       accuracy=float(scored.mean()) if n else None,
                       cost_usd=self._cost(design, replicas, runs, passes, duration),
                       cost_per_hour_usd=rate, duration_s=duration, tiers=tiers,
                       attributed_cost_usd=attributed, e2e_p99_s=metrics.percentile(e2e, 99),
                       session_p99_s=self._session_p99(runs, n),
                       accuracy_ci95=_interval(scored),
                       task_success=task_success(self.df, scored),
                       accuracy_by_class=class_means(self.df, scored))

    def _session_p99(self, runs: dict[str, _TierRun], n: int) -> float | None:
        """The p99 over agent tasks (``session_id``) of a task's latency, its first step's
        arrival to its last step's finish, as a run's ``sessions.task_latency_p99_s``
        (:func:`tiersim.session_metrics.session_result`: a task with a dropped step has none);
        None where the traffic has no sessions."""
        if "session_id" not in self.df.columns or "follows_id" not in self.df.columns:
            return None
        arrival, finish = np.full(n, np.nan), np.full(n, np.nan)
        for r in runs.values():
            arrival[r.rows] = r.arrival
            finish[r.rows] = np.where(r.dropped, np.nan, r.finish)
        t = pd.DataFrame({"session": self.df["session_id"].to_numpy(), "arrival": arrival,
                          "finish": finish})
        g = t.groupby("session", sort=False)
        done = g["finish"].count().to_numpy() == g.size().to_numpy()
        latency = np.where(done, (g["finish"].max() - g["arrival"].min()).to_numpy(), np.nan)
        return metrics.percentile(latency, 99)

    def _techniques(self, name: str, gpus: int) -> str | None:
        """The serving techniques tier ``name`` runs on ``gpus`` GPUs per replica
        (:func:`tiersim.fleet.tier_techniques` of the tier at that size: an offload level holds
        a block of one GPU's KV at one tensor-parallel size and none at another); None for a
        name the scenario does not list."""
        if name not in self.by_name:
            return None
        return tier_techniques(self.scenario, self.tier_config(name, gpus))

    def _provisioned(self, design: Design, replicas, seconds: float) -> float:
        """The fleet's provisioned cost over ``seconds``, term for term as
        :func:`tiersim.costs.provisioned_totals` (so a run and its plan agree to the bit)."""
        total = 0.0
        for name in design.tiers:
            built = self.built(name, design.gpus(name))
            engines = replicas[name] * built.config.data_parallel
            total += engines * built.usd_per_replica_second * seconds
        return total

    def _cost(self, design: Design, replicas, runs, passes, duration: float) -> float:
        """The fleet's cost over the run under the cost model (``passes``: :func:`_passes`)."""
        if self.cost_model == "provisioned":
            return self._provisioned(design, replicas, duration)
        counts = costs.pass_counts(passes, len(design.tiers))
        total = 0.0
        for k, name in enumerate(design.tiers):
            tier = self.by_name[name]
            if self.cost_model == "attributed":  # busy engine-replica seconds x their price
                total += runs[name].busy_s * self.built(name, design.gpus(name)) \
                    .usd_per_replica_second
            else:
                total += int(counts[k]) * (tier.cost_per_request_usd or 0.0)
        return total


class _Masked:
    """A SimResult seen through a row mask (the fields :func:`_tier_run` reads)."""

    def __init__(self, result, mask: np.ndarray):
        self.first_token_s = np.asarray(result.first_token_s)[mask]
        self.finish_s = np.asarray(result.finish_s)[mask]
        self.output_tokens = np.asarray(result.output_tokens)[mask]
        self.dropped = np.asarray(result.dropped)[mask]


def _tier_run(rows: np.ndarray, arrival: np.ndarray, result, busy_s: float) -> _TierRun:
    """Latencies of one tier's requests (:func:`tiersim.metrics.latency_columns`, the run's)."""
    finish = np.asarray(result.finish_s, dtype=np.float64)
    lat = metrics.latency_columns(arrival, np.asarray(result.first_token_s, dtype=np.float64),
                                  finish, np.asarray(result.output_tokens))
    fin = finish[np.isfinite(finish)]
    return _TierRun(rows=rows, ttft=lat["ttft_s"], tpot=lat["tpot_s"], e2e=lat["e2e_s"],
                    dropped=np.asarray(result.dropped, dtype=bool), arrival=arrival,
                    finish=finish,
                    last_finish=float(fin.max()) if fin.size else -math.inf, busy_s=busy_s,
                    last_arrival=float(arrival.max()) if arrival.size else -math.inf)


@dataclass(frozen=True)
class _Passes:
    """Per request of a design's run, what the ledger (:func:`tiersim.costs.pass_counts`) and
    the accuracy read: first and final tier, escalated, refused by its first tier, dropped."""

    first_tier: np.ndarray
    final_tier: np.ndarray
    escalated: np.ndarray
    refused: np.ndarray
    dropped: np.ndarray


def _passes(runs: dict[str, _TierRun], a: Assignment, n: int) -> _Passes:
    """The per-request outcome of ``runs`` (one per tier, by final tier) of ``n`` requests
    routed by ``a``; a tier simulated alone escalated and refused nothing."""
    final = np.asarray(a.tier, dtype=np.int64).copy()
    escalated, refused, dropped = (np.zeros(n, dtype=bool) for _ in range(3))
    for k, run in enumerate(runs.values()):
        final[run.rows] = k
        dropped[run.rows] = run.dropped
        if run.escalated is not None:
            escalated[run.rows], refused[run.rows] = run.escalated, run.refused
    return _Passes(np.asarray(a.tier, dtype=np.int64), final, escalated, refused, dropped)


def design_router(router: dict, setting: tuple[tuple[str, Any], ...], realised: bool,
                  names: list[str] | None = None) -> dict:
    """The ``router:`` map a design of two or more tiers routes with, which the planned
    scenario writes too (:func:`tiersim.cli.plan.planned_scenario`): the scenario's ``router``
    (as written) with the setting's overrides, less the keys no policy then in play reads (a
    cascade's ``cascade`` under the floor router: a run refuses a key it would ignore), and
    with ``confusion: {fpr: 0, fnr: 0}`` where the plan scores on realised draws
    (``realised``), so the floor router fits its cuts on the correctness the plan and the run
    score it on. One map for both, so the plan simulates the routing its scenario runs: before,
    a plan of a cascade scenario with a floor fitted the floor router on expected correctness
    and its written scenario (with the zero ``confusion``) on realised draws, another routing,
    whose run missed the floor the plan had met. A tier given by its index among the
    scenario's tiers ``names`` is written as its name (:func:`_tiers_by_name`)."""
    doc = copy.deepcopy(router)
    for key, value in setting:
        set_dotted(doc, key, value)
    if names is not None:
        _tiers_by_name(doc, names)
    playing = policies_in_play(doc)
    doc = {k: v for k, v in doc.items() if unread_key_problem(str(k), playing) is None}
    if realised and "confusion" not in doc:
        doc["confusion"] = {"fpr": 0.0, "fnr": 0.0}
    return doc


def _tiers_by_name(doc: dict, names: list[str]) -> None:
    """Write each tier the ``router:`` map ``doc`` gives by index (``cascade.from_tier: 0``,
    ``to_tier``, ``tier``, a ``step_tiers`` value) as the name of that tier of the scenario
    (``names``, in order), in place: a design keeps a subset of the tiers, where an index
    counts the kept ones. Before, a cascade ``from_tier: 0, to_tier: 2`` of three tiers was
    refused in every two-tier design ("router.cascade.to_tier: unknown tier 2; tiers are
    w4a16, bf16"), the cascade it names among them. An index out of range is left as
    written, for the router to refuse."""
    def named(ref: Any) -> Any:
        if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(names):
            return names[ref]
        return ref

    cascade = doc.get("cascade")
    if isinstance(cascade, dict):
        for key in ("from_tier", "to_tier"):
            if key in cascade:
                cascade[key] = named(cascade[key])
    if "tier" in doc:
        doc["tier"] = named(doc["tier"])
    if isinstance(doc.get("step_tiers"), dict):
        doc["step_tiers"] = {k: named(v) for k, v in doc["step_tiers"].items()}


def set_dotted(data: dict, dotted: str, value: Any) -> None:
    """Set ``data[a][b] = value`` for ``dotted = "a.b"`` (a leading ``router.`` is dropped);
    one line where a step of the path holds a value that is not a mapping."""
    parts = dotted.removeprefix("router.").split(".")
    for i, part in enumerate(parts[:-1]):
        data = data.setdefault(part, {})
        if not isinstance(data, dict):
            where = ".".join(parts[: i + 1])
            raise TiersimError(f"{dotted}: router.{where} is {data!r}, not a mapping; name a "
                               "setting inside a mapping")
    data[parts[-1]] = value


def _interval(scored: np.ndarray) -> tuple[float, float] | None:
    """The 95% interval of per-request accuracies ``scored`` (dropped ones 0), as a run's
    ``router.accuracy_ci95`` (:func:`tiersim.routing.metrics.accuracy_ci`); None with no
    request, where a run gives none."""
    from tiersim.routing.metrics import accuracy_ci

    if not len(scored):
        return None
    lo, hi = accuracy_ci(scored)
    return (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else None
