"""The capacity planner: the cheapest fleet design that meets the SLOs and the accuracy floor.

A *design* keeps a subset of the scenario's tiers (zero replicas drops a tier: it leaves the
fleet and the router never sends to it), gives each kept tier a ``gpus_per_replica`` among the
values that fit in memory, and routes with one router setting. For each design:

1. Route (no simulation needed: routing is decided before it). A multi-tier design routes with
   the ``floor`` policy at the accuracy floor (the cheapest routing that meets it), trying the
   floor plus a small margin when the realised accuracy falls short of the fitted one, then
   each floor ``--choose router.floor`` names (higher floors are not tried otherwise: a note
   says so where one could matter); a single-tier design is a *uniform fleet*.
   Without a floor, the scenario's own router.
   A design whose accuracy misses the floor is recorded and not simulated.
2. Size replicas by doubling then bisection (:mod:`tiersim.plan.search`): O(K log R)
   simulations per design, each tier simulated alone on its own requests and cached
   (:class:`tiersim.plan.evaluate.SimEvaluator`).
3. GPUs per replica: a uniform fleet is sized at every fitting value (1, 2, 4, 8 and the
   tier's own) that could still be cheaper than the best found, and keeps the cheapest. A
   multi-tier design starts each tier at its uniform fleet's value and at every smaller fitting
   value (every mix); when a tier cannot meet the SLOs at any replica count (its step is too
   slow for the TTFT or TPOT target, or its KV cache cannot hold the longest prompts so
   requests are dropped), it moves to the next larger value (tensor parallel) before the
   design is called infeasible.

The plan is the design of least cost under the scenario's cost model (``provisioned``: what you
would pay, per hour; a tie goes to fewer tiers, then fewer replicas: :func:`_plan_order`), the
runner-up designs are listed in that order with the constraint each missed (or how much dearer
they are, on the basis the order ranks by: per hour under ``provisioned``), the plan's saving is
against the first uniform fleet meeting the floor in that order, on that basis too
(:func:`compare`), and the uniform fleets are given beside them: one per tier, and one per tier
of the scenario's ``baselines:`` (tiers kept only as uniform baselines: sized, never in a
design).
"""

from __future__ import annotations

import itertools
import json
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from tiersim.errors import Note, UnreachableFloor
from tiersim.plan.evaluate import Design, Outcome, SimEvaluator
from tiersim.plan.search import Sizing, Verdict, size_replicas
from tiersim.results import (
    PlanResult,
    baseline_floor,
    basis_words,
    digits_apart,
    drain_words,
    figure_text,
    fleet_size,
    floor_digits,
    floor_pair,
    over_digits,
    paid,
    paid_order,
    paid_share,
    percent_as_given,
    reaches_floor,
    round_sig,
    saved_share,
    saving_basis,
    share_text,
    within_limit,
    without_noise,
)
from tiersim.scenario import DEFAULT_MAX_REPLICAS, SIZED_GPUS_PER_REPLICA

GPU_OPTIONS = SIZED_GPUS_PER_REPLICA
"""GPUs per replica the planner may try, smallest that fits first."""

FLOOR_MARGINS = (0.0, 0.0025, 0.005, 0.01, 0.02)
"""Added to the floor the ``floor`` router is fitted to, in turn, while the realised accuracy
(all requests) misses the floor the router was fitted to on its calibration split."""


def raised_floors(floor: float) -> list[float]:
    """The floors the ``floor`` router is fitted to for an accuracy floor ``floor``: it plus
    each of :data:`FLOOR_MARGINS`, in turn, none above 1 (no routing is more accurate than
    every request answered right; a floor of 0.99 tries 0.99, 0.9925, 0.995 and 1)."""
    return list(dict.fromkeys(min(1.0, round(floor + m, 6)) for m in FLOOR_MARGINS))


TOO_LONG = "dropped at any size"
"""Words of a design's miss when requests are longer than a tier's context (see
:func:`_too_long`)."""

IDLE = "no traffic from the router"
"""Words of a design's miss when its router sends one of its tiers nothing."""

OVERSHOOT_CAP = 1e6
"""The overshoot of a latency nothing finished to measure (every request dropped), or one
too far over its limit for a float (:func:`_overshoot`)."""


def planning_cost_model(scenario, override: str | None = None) -> str:
    """The cost model a plan is priced in: ``override``, else the scenario's when it sets one,
    else ``provisioned`` (what you would pay for the fleet; busy-time attribution would make
    idle replicas free)."""
    if override is not None:
        return override
    if "cost_model" in getattr(scenario, "model_fields_set", {"cost_model"}):
        return scenario.cost_model
    return "provisioned"


@dataclass(frozen=True)
class Constraints:
    """What a plan must meet: p99 latencies (seconds), the accuracy floor, and no request
    dropped."""

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    accuracy_floor: float | None = None

    @classmethod
    def of(cls, scenario, ttft: float | None = None, tpot: float | None = None,
           floor: float | None = None) -> Constraints:
        """Given values, else the scenario's ``slo`` and ``accuracy_floor``."""
        return cls(ttft if ttft is not None else scenario.slo.ttft_p99_s,
                   tpot if tpot is not None else scenario.slo.tpot_p99_s,
                   floor if floor is not None else scenario.accuracy_floor)

    def as_dict(self) -> dict[str, float | None]:
        """JSON form (no dropped request is always required too; see ``margins``)."""
        return {"ttft_p99_s": self.ttft_p99_s, "tpot_p99_s": self.tpot_p99_s,
                "accuracy_floor": self.accuracy_floor}


def _refuses_layout(err: Exception) -> bool:
    """Whether ``err`` refuses a layout (a MoE kernel, a split) rather than saying the
    model is short of memory there (a :class:`FitError` with no key)."""
    from tiersim.errors import FitError

    return not (isinstance(err, FitError) and not err.key)


def _note_held_layouts(scenario) -> None:
    """A note for each tier whose ``data_parallel`` the sizing holds: at a GPU count it divides
    the ranks share the replica's GPUs, and tensor parallelism alone there is not tried."""
    for tier in scenario.tiers:
        dp = getattr(tier, "data_parallel", 1)
        if dp > 1:
            warnings.warn(Note(
                f"tier {tier.name}: sized with data_parallel {dp} at every GPU count it divides "
                "(1 below it); tensor parallelism alone at those counts is not tried: set "
                "data_parallel: 1 to size the tier that way"), stacklevel=3)


@dataclass
class DesignResult:
    """The best sizing of one design: its outcome when it meets every constraint, else the
    constraint it missed."""

    design: Design
    replicas: dict[str, int] | None
    outcome: Outcome | None
    missed: str | None
    tried_gpus: dict[str, list[int]]
    infeasible: str | None = None
    """Why no size of the design meets the SLOs, in a few words (a run's uniform baseline
    gives them instead of the last count its search tried); None when a size does."""

    @property
    def feasible(self) -> bool:
        """True when every constraint is met."""
        return self.missed is None and self.outcome is not None

    def as_dict(self, c: Constraints) -> dict[str, Any]:
        """JSON form for plan.json."""
        o = self.outcome
        out: dict[str, Any] = {
            "design": self.design.label, "tiers": list(self.design.tiers),
            "router": dict(self.design.router), "feasible": self.feasible,
            "missed": self.missed, "gpus_per_replica_tried": self.tried_gpus,
        }
        if o is None:
            return out
        out.update({
            "replicas": self.replicas,
            "gpus_per_replica": dict(zip(self.design.tiers, self.design.gpus_per_replica,
                                         strict=True)),
            "gpus": sum(self.replicas[n] * self.design.gpus(n) for n in self.design.tiers),
            "cost_usd": o.cost_usd, "cost_per_hour_usd": o.cost_per_hour_usd,
            "accuracy": o.accuracy, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
            "dropped": o.dropped, "duration_s": o.duration_s,
            "per_tier": {n: vars(t) for n, t in o.tiers.items()},
            "margins": margins(o, c),
        })
        return out


def margins(o: Outcome, c: Constraints) -> dict[str, dict[str, Any]]:
    """Per constraint: limit, value, margin (positive = slack) and whether it is met."""
    out = {}
    for key in ("ttft_p99_s", "tpot_p99_s"):
        limit, value = getattr(c, key), getattr(o, key)
        if limit is not None:
            v = _measured(value, o.dropped, _finished(o))
            shown = round_sig(v) if math.isfinite(v) else v  # as met is judged: never < 0 if met
            out[key] = {"limit": limit, "value": value, "margin": limit - shown,
                        "margin_frac": (limit - shown) / limit, "met": within_limit(v, limit)}
    if c.accuracy_floor is not None:
        out["accuracy"] = {"limit": c.accuracy_floor, "value": o.accuracy,
                           "margin": o.accuracy - c.accuracy_floor,
                           "met": reaches_floor(o.accuracy, c.accuracy_floor)}
    out["dropped"] = {"limit": 0, "value": o.dropped, "met": o.dropped == 0}
    return out


def verdict(o: Outcome, c: Constraints) -> Verdict:
    """Latency (and drops) of one simulated fleet, for the replica search."""
    over = [_overshoot(getattr(o, k), getattr(c, k), o.dropped, _finished(o))
            for k in ("ttft_p99_s", "tpot_p99_s")]
    violators = tuple(n for n, t in o.tiers.items() if t.dropped or not all(
        _within(getattr(t, k), getattr(c, k), t.dropped, t.requests - t.dropped)
        for k in ("ttft_p99_s", "tpot_p99_s") if t.requests))
    worst = max(over + [10.0 * o.dropped / max(sum(t.requests for t in o.tiers.values()), 1)])
    met = o.dropped == 0 and all(_within(getattr(o, k), getattr(c, k), o.dropped, _finished(o))
                                 for k in ("ttft_p99_s", "tpot_p99_s"))
    return Verdict(ok=met, violators=violators, overshoot=min(worst, 0.0) if met else worst)


def _within(value: float | None, limit: float | None, dropped: int, finished: int) -> bool:
    """Whether a p99 (as :func:`_measured` reads it) meets its limit at the precision plan.json
    and summary.json write it (:func:`tiersim.results.within_limit`); no limit: met."""
    return limit is None or within_limit(_measured(value, dropped, finished), limit)


def _finished(o: Outcome) -> int:
    """Requests a simulated fleet finished (served, not dropped)."""
    return sum(t.requests for t in o.tiers.values()) - o.dropped


def _measured(value: float | None, dropped: int, finished: int) -> float:
    """A p99 to hold against its limit. None when requests finished, or when none was sent,
    means no finished request had that interval (every output one token long has no TPOT; a
    response cache that answers every request sends the fleet none): none exceeded the limit,
    so it counts as 0 (drops are judged on their own). None when requests were dropped and
    none finished counts as infinite: nothing finished to measure."""
    if value is None:
        return math.inf if dropped and not finished else 0.0
    return value


def _overshoot(value: float | None, limit: float | None, dropped: int = 0,
               finished: int = 0) -> float:
    """value / limit - 1 (<= 0 when met); a missing value as :func:`_measured` reads it (the
    cap when nothing finished to measure), and the cap too where the ratio overflows (a limit
    of 1e-320 s: an infinite overshoot never looked hopeless, inf - inf being NaN, so the
    search doubled every tier up to the replica limit)."""
    if limit is None:
        return -1.0
    measured = _measured(value, dropped, finished)
    over = measured / limit - 1.0
    return over if math.isfinite(over) else OVERSHOOT_CAP


class Planner:
    """Sizes every design of one scenario with one evaluator (see the module docstring).

    ``gpu_options``: GPUs per replica to consider (each tier's own value is added; only values
    that fit are kept); ``start``: GPUs per tier to start the replica search at (default one
    replica); ``choose``: router settings to try, dotted key -> values.
    """

    def __init__(self, scenario, constraints: Constraints, evaluator=None,
                 gpu_options: tuple[int, ...] = GPU_OPTIONS,
                 max_replicas: int = DEFAULT_MAX_REPLICAS,
                 choose: dict[str, list[Any]] | None = None,
                 start: dict[str, int] | None = None):
        self.scenario, self.c = scenario, constraints
        self.start = start or {}
        self.evaluator = evaluator or SimEvaluator(scenario)
        self.names = [t.name for t in scenario.tiers]
        self.baseline_names = [t.name for t in getattr(scenario, "baselines", ())]
        """Baseline-only tiers: sized as uniform fleets for the saving, in no design."""
        self.max_replicas = max_replicas
        self.choose = choose or {}
        every = [*scenario.tiers, *getattr(scenario, "baselines", ())]
        own = {t.name: getattr(t, "gpus_per_replica", 1) for t in every}
        self.gpu_options = tuple(gpu_options)
        self.gpus = {n: [g for g in sorted({*gpu_options, own[n]}) if self.evaluator.fits(n, g)]
                     for n in own}
        _note_held_layouts(scenario)
        self.refused = self._refused_counts()
        """Per tier, the GPU counts left out for a refused layout, with the refusal."""
        self._note_refused_options()
        self._one_basis()
        self.uniform_results: dict[str, DesignResult] = {}
        self.judged: list[dict[str, Any]] = []
        self._judged_keys: set[str] = set()  # the fleets in judged, as JSON text

    def _refused_counts(self) -> dict[str, dict[int, str]]:
        """Per tier, each GPU count the search leaves out because that layout is refused (a
        MoE kernel, a split: not a shortage of memory), with the refusal's line, so a reason
        that names the counts tried also names those (:meth:`_and_refused`)."""
        refusals = getattr(self.evaluator, "refusals", {})
        return {name: {g: _one_line(err) for (n, g), err in sorted(refusals.items())
                       if n == name and g not in options and _refuses_layout(err)}
                for name, options in self.gpus.items()}

    def _note_refused_options(self) -> None:
        """A note for each GPU count the scenario's ``limits.gpus_per_replica`` (or
        ``--gpus-per-replica``) asks for that a tier's sizing leaves out as a refused layout:
        a fleet found on the other counts said nothing of it (the default counts are not
        noted)."""
        limits = getattr(self.scenario, "limits", None)
        if "gpus_per_replica" not in getattr(limits, "model_fields_set", ()):
            return
        for name, counts in self.refused.items():
            for gpus, why in counts.items():
                if gpus in self.gpu_options:
                    warnings.warn(Note(f"tier {name}: limits.gpus_per_replica {gpus} is left "
                                       f"out of its sizing: {why}"), stacklevel=3)

    def _and_refused(self, name: str) -> str:
        """"; not on G GPUs per replica: why" for each count :meth:`_refused_counts` left out
        of tier ``name`` ("" when none)."""
        return "".join(f"; not on {_per_replica([g])}: {why}"
                       for g, why in self.refused.get(name, {}).items())

    def _one_basis(self) -> None:
        """Tell the evaluator every router setting a routed design may use, so that when one
        reads realised correctness (``--choose router.confusion.fpr=0``) the uniform fleets
        are scored on the same realised draws (none for a fake evaluator)."""
        mark = getattr(self.evaluator, "score_realised_if_read", None)
        if mark is not None and len(self.names) > 1:
            mark([s for group in self.settings(tuple(self.names)) for s in group])

    # ---- designs -----------------------------------------------------------------------------
    def subsets(self, sizes: tuple[int, ...] | None = None) -> list[tuple[str, ...]]:
        """Every non-empty subset of the tiers (scenario order), uniform fleets first."""
        out = []
        for k in range(1, len(self.names) + 1):
            if sizes is None or k in sizes:
                out.extend(itertools.combinations(self.names, k))
        return out

    def settings(self, tiers: tuple[str, ...]) -> list[list[tuple[tuple[str, Any], ...]]]:
        """Router settings to try, in groups: per combination of ``choose`` (its floors aside),
        one group of the floor router at the floor plus :data:`FLOOR_MARGINS` in turn, then one
        group per chosen floor, sorted (``--choose router.floor`` adds floors to the margins; it
        does not replace them). One empty setting for a uniform fleet; without a floor, the
        combinations alone."""
        if len(tiers) == 1:
            return [[()]]
        chosen = {path.removeprefix("router."): values for path, values in self.choose.items()}
        if self.c.accuracy_floor is None:
            return [[tuple(sorted(s.items()))] for s in _combinations(chosen)]
        floors = sorted(set(chosen.pop("floor", [])))
        groups = []
        for s in _combinations(chosen):
            groups.append([_floor_setting(f, s) for f in raised_floors(self.c.accuracy_floor)])
            groups += [[_floor_setting(floor, s)] for floor in floors]
        return groups

    # ---- one design --------------------------------------------------------------------------
    def best(self, tiers: tuple[str, ...]) -> DesignResult:
        """The cheapest feasible sizing of one tier subset (or why none exists)."""
        if any(not self.gpus[n] for n in tiers):
            bad = [n for n in tiers if not self.gpus[n]]
            split = self._split_refusal(bad[0])
            return DesignResult(Design(tiers, (1,) * len(tiers)), None, None, split or (
                f"{', '.join(bad)} does not fit on up to {max(self.gpu_options)} GPUs per "
                "replica (more: --gpus-per-replica, e.g. 16, two nodes whose all-reduces cross "
                "the network)"), {})
        if len(tiers) == 1:
            return self._best_uniform(tiers[0])
        results: list[DesignResult] = []
        last: list[DesignResult] = []  # per group, the margin it stopped at: its verdict
        with warnings.catch_warnings():  # a floor out of reach is this design's missed accuracy
            warnings.simplefilter("ignore", UnreachableFloor)
            for start in self._starts(tiers):
                if self._dearer_at_least(tiers, start, results):
                    continue
                for group in self.settings(tiers):
                    tried: list[DesignResult] = []
                    for setting in group:  # stop at the first margin meeting the floor
                        tried.append(self._size(tiers, setting, start))
                        if not (tried[-1].missed or "").startswith("accuracy"):
                            break
                    self._idle_after_misses(tried)
                    results += tried
                    last.append(tried[-1])
        found = [r for r in results if r.feasible]
        if found:
            return min(found, key=self._ranked)
        simulated = [r for r in last if r.outcome is not None]
        return (simulated or last)[0]

    def _starts(self, tiers: tuple[str, ...]) -> list[dict[str, int]]:
        """The GPUs-per-replica levels a multi-tier design is sized from: each tier at its
        uniform fleet's value first, then every mix with some tiers at any smaller fitting
        value instead. A tier behind a router serves only its share of the load, so one replica
        of fewer GPUs may do where its uniform fleet was cheapest on more (uniform nvfp4 on
        8 GPUs per replica kept nvfp4+bf16 from its 7 x 1 + 8 x 1 GPU fleet). Before, only the
        smallest value was tried beside the uniform one: a tier whose uniform fleet was
        cheapest on 4 GPUs per replica, and whose share needed 5 x 1 GPU or 1 x 2, was sized
        at 1 x 4 or 5 x 1, never at 2 GPUs per replica."""
        choices = [dict.fromkeys((self._uniform_level(n), *range(self._uniform_level(n))))
                   for n in tiers]
        return [dict(zip(tiers, levels, strict=True))
                for levels in itertools.product(*choices)]

    def _dearer_at_least(self, tiers: tuple[str, ...], start: dict[str, int],
                         results: list[DesignResult]) -> bool:
        """Whether a start cannot beat a fleet already found: under provisioned cost one
        replica of each kept tier at its start's GPUs per replica costs more per hour (more
        GPUs per replica, never fewer, are tried from a start; at the same rate a shorter
        drain may still be cheaper)."""
        if getattr(self.evaluator, "cost_model", None) != "provisioned":
            return False
        least = sum(self.gpus[n][start[n]] * self.evaluator.by_name[n].cost_per_gpu_hour
                    for n in tiers)
        return any(r.feasible and r.outcome.cost_per_hour_usd < least for r in results)

    def _idle_after_misses(self, tried: list[DesignResult]) -> None:
        """Where a design missed the floor at the fitted floors it tried first and then, at a
        raised one, sent a tier nothing, its verdict says so, with the accuracy found at each
        fitted floor: the design never met the floor with every tier serving (before, it read
        only "the design without it is cheaper")."""
        idle, misses = tried[-1], tried[:-1]
        if not misses or IDLE not in (idle.missed or ""):
            return
        floor = self.c.accuracy_floor
        found = ", ".join(f"{dict(r.design.router)['floor']:g} ("
                          f"{floor_pair(self.evaluator.routing(r.design)[2], floor)[0]})"
                          for r in misses)
        unused = _idle_tiers(idle.design, self.evaluator.routing(idle.design)[1])
        left = [n for n in idle.design.tiers if n not in unused]
        rest = f"uniform {left[0]}" if len(left) == 1 else "+".join(left)
        idle.missed = (f"accuracy < floor {percent_as_given(floor)} with the router fitted "
                       f"to {found}; fitted to {dict(idle.design.router)['floor']:g} it sends "
                       f"{' and '.join(unused)} nothing, which is {rest} (listed on its own)")

    def _split_refusal(self, name: str) -> str:
        """Why a tier has no layout left when every one that fits splits its weights in a way
        vLLM refuses ("" otherwise, or for an evaluator that does not check splits)."""
        check = getattr(self.evaluator, "split_problem", None)
        if check is None:
            return ""
        own = self.evaluator.by_name[name].gpus_per_replica
        fitting = [g for g in sorted({*self.gpu_options, own})
                   if self.evaluator.built(name, g) is not None]
        problems = [check(name, g) for g in fitting]
        if not fitting or not all(problems):
            return ""
        return f"{name} on {_per_replica(fitting)}: {problems[-1]}"

    def _best_uniform(self, name: str) -> DesignResult:
        """A uniform fleet sized at every GPUs-per-replica value that could still be cheaper
        than the best found (one replica of g GPUs costs at least g GPUs); the cheapest one
        meeting the SLOs on what is paid, as designs are ranked (:func:`_plan_order`: per hour
        under provisioned cost), else the largest tried."""
        results: list[DesignResult] = []
        for level, gpus in enumerate(self.gpus[name]):
            best = min((r.outcome.cost_per_hour_usd for r in results if _latency_met(r)),
                       default=math.inf)
            if gpus * self.evaluator.by_name[name].cost_per_gpu_hour > best:
                break
            if results and TOO_LONG in (results[-1].missed or ""):
                break  # more GPUs per replica do not lengthen the context
            results.append(self._size((name,), (), {name: level}, escalate=False))
        tried = {name: [r.design.gpus_per_replica[0] for r in results]}
        for r in results:
            r.tried_gpus = tried
        met = [r for r in results if _latency_met(r)]
        if met:  # what is paid first, as designs are ranked (_plan_order: per hour under
            # provisioned cost, where 7 x 2 GPUs at 14 USD/hour won over 3 x 4 at 12 by its
            # shorter drain), then the cost over the trace, then fewer GPUs per replica
            chosen = min(met, key=lambda r: (self._ranked(r)[0], r.outcome.cost_usd,
                                             r.design.gpus_per_replica))
        else:
            chosen = results[-1]
            if chosen.missed and chosen.missed.startswith("latency"):
                chosen.missed += (f" (tried {name} on {_per_replica(tried[name])}"
                                  f"{self._and_refused(name)})")
            if chosen.infeasible and len(tried[name]) > 1:
                chosen.infeasible += f"; tried {_per_replica(tried[name])}"
        self.uniform_results[name] = chosen
        return chosen

    def _uniform_level(self, name: str) -> int:
        """Index of the GPUs per replica a tier's sized uniform fleet uses (0 when unknown)."""
        r = self.uniform_results.get(name)
        if r is None or not _latency_met(r):
            return 0
        return self.gpus[name].index(r.design.gpus_per_replica[0])

    def _size(self, tiers: tuple[str, ...], setting, level: dict[str, int],
              escalate: bool = True) -> DesignResult:
        """Size one design from GPUs-per-replica ``level`` (index into each tier's options),
        moving a tier to more GPUs per replica when replicas cannot help (``escalate``)."""
        level = dict(level)
        tried = {n: [self.gpus[n][level[n]]] for n in tiers}
        while True:
            design = Design(tiers, tuple(self.gpus[n][level[n]] for n in tiers), setting)
            try:
                _, assignment, accuracy = self.evaluator.routing(design)
            except MemoryError:  # the plan's, not this design's: the command stops (one line)
                raise
            except Exception as err:  # noqa: BLE001 - a router that cannot serve this subset
                return DesignResult(design, None, None, f"router: {_one_line(err)}", tried)
            floor = self.c.accuracy_floor  # checked first: a raised floor may send traffic up
            if len(tiers) > 1 and floor is not None and not reaches_floor(accuracy, floor):
                shown, limit = floor_pair(accuracy, floor)
                return DesignResult(design, None, None, f"accuracy {shown} < floor {limit}",
                                    tried)
            idle = _idle_tiers(design, assignment)
            if idle:
                verb, them = ("gets", "it") if len(idle) == 1 else ("get", "them")
                return DesignResult(design, None, None, f"{' and '.join(idle)} {verb} "
                                    f"{IDLE}: the design without {them} is cheaper", tried)
            sizing = self._search(design)
            if sizing.replicas is not None:
                outcome = self.evaluator.evaluate(design, sizing.replicas)
                missed = _missed(outcome, self.c)
                return DesignResult(design, sizing.replicas, outcome, missed, tried)
            last = self.evaluator.evaluate(design, sizing.judged[-1])
            longer = self._longer(design) if last.dropped else []
            if longer:  # no size serves them: neither more replicas nor more GPUs each
                own = {name for name, _, _ in longer
                       if self.evaluator.built(name, design.gpus(name)).context_raisable}
                beyond = self._beyond_model(design)
                return DesignResult(design, sizing.judged[-1], last, f"latency: "
                                    f"{_too_long(longer, own, beyond)} "
                                    f"({_missed(last, self.c)})",
                                    tried, infeasible=_drops_words(longer))
            violators = verdict(last, self.c).violators or tiers
            bump = [n for n in violators if level[n] + 1 < len(self.gpus[n])] if escalate else []
            if not bump:
                gpus = "; ".join(f"{n} on {_per_replica(g)}{self._and_refused(n)}"
                                 for n, g in tried.items())
                where = f"; tried {gpus}" if escalate else ""
                larger = self._over_kv(design) if last.dropped else []
                if larger:  # dropped whatever the replica count: no p99 is to blame
                    return DesignResult(design, sizing.judged[-1], last, f"latency: "
                                        f"{_over_kv_words(larger, design)} "
                                        f"({_missed(last, self.c)}{where})", tried,
                                        infeasible=_over_kv_drops(larger))
                return DesignResult(design, sizing.judged[-1], last, f"latency: {sizing.reason}"
                                    f" ({_missed(last, self.c)}{where})", tried,
                                    infeasible=self._no_size(design, sizing.judged[-1], last))
            for n in bump:
                level[n] += 1
                tried[n].append(self.gpus[n][level[n]])

    def _longer(self, design: Design) -> list[tuple[str, int, int]]:
        """Per kept tier routed requests longer (prompt + output) than its context
        (``max_model_len``): (tier, how many, that context), tiers with none left out; empty
        when the evaluator does not say (a closed-form stand-in)."""
        out = []
        for name, tier, sent, tokens in self._routed_tokens(design):
            context = tier.limits.max_model_len
            longer = int(np.sum(sent & (tokens > context))) if context else 0
            if longer:
                out.append((name, longer, int(context)))
        return out

    def _routed_tokens(self, design: Design):
        """``(tier name, built tier, which requests are sent to it, each request's prompt +
        output tokens there)`` per kept tier of ``design``; none when the evaluator does not
        say (a closed-form stand-in)."""
        df, built = getattr(self.evaluator, "df", None), getattr(self.evaluator, "built", None)
        if df is None or built is None:
            return
        infos, a = self.evaluator.routing(design)[:2]
        prompt = df["input_tokens"].to_numpy(np.float64)
        output = df["output_tokens"].to_numpy(np.float64)
        passed_on = _passed_on(a, df, infos)
        for k, name in enumerate(design.tiers):
            mult = self.evaluator.by_name[name].output_length_multiplier
            sent = (((np.asarray(a.tier) == k) & ~passed_on)
                    | (np.asarray(a.escalate_to) == k))
            yield (name, built(name, design.gpus(name)), sent,
                   prompt + np.maximum(1, np.round(output * mult)))

    def _beyond_model(self, design: Design) -> dict[str, tuple[int, int]]:
        """Per kept tier, routed requests longer (prompt + output) than the most its model
        takes (:attr:`tiersim.fleet.BuiltTier.most_context`, its maximum context), which no
        ``max_model_len`` serves: tier -> (how many, that context), tiers with none or an
        unknown context left out."""
        out = {}
        for name, tier, sent, tokens in self._routed_tokens(design):
            beyond = int(np.sum(sent & (tokens > tier.most_context))) if tier.most_context else 0
            if beyond:
                out[name] = (beyond, int(tier.most_context))
        return out

    def _over_kv(self, design: Design) -> list[tuple[str, int, int]]:
        """Per kept tier routed requests within its context but larger (prompt + output) than
        one sequence may hold of a replica's KV cache at the design's GPUs per replica
        (:attr:`tiersim.fleet.BuiltTier.longest_sequence`): (tier, how many, that room), tiers
        with none left out. More replicas never serve them (more GPUs per replica may); empty
        when the evaluator does not say (a closed-form stand-in)."""
        out = []
        for name, tier, sent, tokens in self._routed_tokens(design):
            room = max(tier.longest_sequence, 0)
            context = tier.limits.max_model_len or math.inf
            larger = int(np.sum(sent & (tokens > room) & (tokens <= context)))
            if larger:
                out.append((name, larger, room))
        return out

    def _no_size(self, design: Design, replicas: dict[str, int], last: Outcome) -> str:
        """Why no replica count meets the SLOs, in a few words: what the largest fleet tried
        missed, and whether the replica limit or the latency itself stopped the search."""
        at = " + ".join(fleet_size(replicas[n], design.gpus(n)) for n in design.tiers)
        if any(replicas[n] >= self.max_replicas for n in design.tiers):
            return (f"misses the SLOs up to the replica limit {self.max_replicas} "
                    f"({_missed(last, self.c)} at {at})")
        return (f"misses the SLOs at any size: more replicas do not help "
                f"({_missed(last, self.c)} at {at})")

    def _search(self, design: Design) -> Sizing:
        """Replica search for one design, recording every fleet judged."""
        def judge(replicas: dict[str, int]) -> Verdict:
            o = self.evaluator.evaluate(design, replicas)
            v = verdict(o, self.c)
            entry = {"design": design.label, "router": dict(design.router),
                     "replicas": dict(replicas), "ok": v.ok, "ttft_p99_s": o.ttft_p99_s,
                     "tpot_p99_s": o.tpot_p99_s, "dropped": o.dropped, "cost_usd": o.cost_usd}
            if set(design.tiers) <= set(self.baseline_names):  # sized, never a plan
                entry["baseline_only"] = True
            fleet = {k: entry[k] for k in ("design", "router", "replicas")}
            key = json.dumps(fleet, sort_keys=True, default=repr)
            if key not in self._judged_keys:  # a fleet judged again (from the cache) once
                self._judged_keys.add(key)
                self.judged.append(entry)
            return v

        unit = {n: design.gpus(n) * self.evaluator.by_name[n].cost_per_gpu_hour
                for n in design.tiers}
        first = min(self.start.get(n, 1) // design.gpus(n) for n in design.tiers)
        first = min(max(1, first), self.max_replicas)  # a start above the limit breaks it
        return size_replicas(list(design.tiers), judge, unit, start=first,
                             limit=self.max_replicas)

    # ---- the plan ----------------------------------------------------------------------------
    def uniform(self) -> list[DesignResult]:
        """Every single-tier fleet, sized (whether or not it meets the floor), the
        baseline-only tiers' last."""
        return [self.best(s) for s in self.subsets((1,))] + self._baseline_fleets()

    def _baseline_fleets(self) -> list[DesignResult]:
        """The baseline-only tiers' uniform fleets, sized."""
        return [self.best((name,)) for name in self.baseline_names]

    def plan(self, sizes: tuple[int, ...] | None = None) -> PlanResult:
        """Size every design; the cheapest feasible one is the plan."""
        t0 = time.perf_counter()
        results = [self.best(s) for s in self.subsets(sizes)]
        feasible = sorted((r for r in results if r.feasible), key=self._ranked)
        best = feasible[0] if feasible else None
        self._note_floors_not_raised(feasible)
        uniform = [r for r in results if len(r.design.tiers) == 1] + self._baseline_fleets()
        others = [r for r in results if r is not best and len(r.design.tiers) > 1]
        return PlanResult(
            scenario=self.scenario.name, constraints=self.c.as_dict(),
            plan=self._plan_dict(best, uniform) if best else None,
            runners_up=tuple(self._runner_up(r, best) for r in self._in_plan_order(others)),
            uniform=tuple(self._runner_up(r, best) for r in uniform),
            reason=None if best else "; ".join(f"{r.design.label}: {r.missed}" for r in results),
            simulations=self.evaluator.simulations, wall_s=time.perf_counter() - t0,
            evaluated=tuple(self.judged), cost_model=getattr(self.evaluator, "cost_model", None),
        )

    def _in_plan_order(self, results: list[DesignResult]) -> list[DesignResult]:
        """Designs meeting every constraint in the order designs are chosen in
        (:meth:`_ranked`), then the rest by cost over the trace (:func:`_by_cost`). Before,
        all were listed by cost over the trace, so under provisioned cost a runner-up with a
        shorter drain was listed before one it ranks after per hour."""
        feasible = sorted((r for r in results if r.feasible), key=self._ranked)
        return feasible + _by_cost([r for r in results if not r.feasible])

    def _ranked(self, r: DesignResult) -> tuple:
        """``r``'s place in the order designs are chosen in (:func:`_plan_order`) under this
        plan's cost model."""
        return _plan_order(r, getattr(self.evaluator, "cost_model", None))

    def _note_floors_not_raised(self, feasible: list[DesignResult]) -> None:
        """A note where a multi-tier design met every constraint, could still cost less than
        the plan (:meth:`_could_cost_less`; ``feasible``: the plan first) and no ``--choose
        router.floor`` was given: the router was fitted to the lowest of :func:`raised_floors`
        that met the floor, and a higher one (more traffic to the dearer tiers, so other
        replica counts) was not tried, though it may cost less (a routed fleet's replicas round
        up per tier; on one scenario a floor of 0.835 planned cheaper than the 0.8 fitted)."""
        chosen = any(path.removeprefix("router.") == "floor" for path in self.choose)
        if self.c.accuracy_floor is None or chosen or not any(
                len(r.design.tiers) > 1 and self._could_cost_less(r, feasible[0])
                for r in feasible):
            return
        floors = raised_floors(self.c.accuracy_floor)
        warnings.warn(Note(
            f"each multi-tier design was routed at the lowest floor of {floors[0]:g} to "
            f"{floors[-1]:g} its accuracy met; higher floors were not tried and may cost less "
            "(replicas round up per tier): try them with --choose router.floor=F1,F2"),
            stacklevel=3)

    def _could_cost_less(self, r: DesignResult, plan: DesignResult) -> bool:
        """Whether another routing of a sized design might undercut the plan: the plan itself
        unless every tier is at one replica; another design where one replica per kept tier
        costs less per hour than the plan (provisioned cost; any other ledger: always)."""
        if r is plan:
            return any(count > 1 for count in r.replicas.values())
        if getattr(self.evaluator, "cost_model", None) != "provisioned":
            return True
        least = sum(r.design.gpus(n) * self.evaluator.by_name[n].cost_per_gpu_hour
                    for n in r.design.tiers)
        return least < plan.outcome.cost_per_hour_usd

    def _plan_dict(self, best: DesignResult, uniform: list[DesignResult]) -> dict[str, Any]:
        """The plan's JSON, with what it saves against the sized uniform fleets and the proof
        that one replica fewer in any tier misses."""
        out = best.as_dict(self.c)
        out["cost_model"] = self.evaluator.cost_model
        sources = getattr(self.evaluator, "accuracy_sources", None)  # None: a fake evaluator
        if sources is not None:
            out["accuracy_sources"] = sources(best.design)
        out["savings"] = compare(best, uniform, self.c.accuracy_floor, self.evaluator.cost_model)
        out["one_fewer"] = self.one_fewer(best)
        return out

    def one_fewer(self, best: DesignResult) -> dict[str, dict[str, Any]]:
        """Per kept tier: what one replica fewer misses (simulated; usually cached). At one
        replica, fewer means dropping the tier, which is another design."""
        out = {}
        for name in best.design.tiers:
            r = best.replicas[name]
            if r <= 1:
                out[name] = {"replicas": 0, "misses": None,
                             "verdict": "at 1 replica; zero drops the tier (another design)"}
                continue
            fewer = self.evaluator.evaluate(best.design, {**best.replicas, name: r - 1})
            missed = _missed(fewer, self.c)
            out[name] = {"replicas": r - 1, "misses": missed is not None,
                         "verdict": f"misses: {missed}" if missed else
                         "still meets every constraint (latency was not monotone here)"}
        return out

    def _runner_up(self, r: DesignResult, best: DesignResult | None) -> dict[str, Any]:
        """A design beside the plan: what it missed, the rule that kept the plan at a tie on
        what is paid (:func:`_plan_order`; two free fleets tie too; a baseline-only tier's fleet
        is named so, :data:`BASELINE_ONLY`), or how much dearer it is on the basis designs are
        ranked by (``dearer_by_frac``, ``dearer_basis``: per hour under provisioned cost, else
        over the trace), with the share over the trace beside it (``dearer_over_trace_frac``).
        Before, the share was over the trace under provisioned cost too: a runner-up ranked
        after the plan could read "cheaper than the plan"."""
        out = r.as_dict(self.c)
        if not (r.feasible and best is not None and r is not best):
            return out
        model = getattr(self.evaluator, "cost_model", None)
        frac = _dearer_share(paid(model, *_costs(r)), paid(model, *_costs(best)))
        over = _dearer_share(r.outcome.cost_usd, best.outcome.cost_usd)
        if frac is not None:
            out.update(dearer_by_frac=frac, dearer_basis=saving_basis(model),
                       dearer_over_trace_frac=over)
        baseline = self._baseline_only(r)
        if self._ranked(r)[0] == self._ranked(best)[0]:
            drain = drain_gap(r.outcome, best.outcome, model)
            gap = f"{_dearer(over)} over the trace, but {drain}" if drain and over else None
            out["missed"] = _tie(r.outcome.accuracy, best.outcome.accuracy,
                                 _simpler(r, best), gap, baseline,
                                 self.c.accuracy_floor is not None)
            return out
        if frac is None:  # a free plan (or one so near 0 USD that no share is finite)
            cost = figure_text(r.outcome.cost_usd)
            out["missed"] = f"meets every constraint; costs {cost} USD against the plan's 0"
            return out
        notes = [n for n in (BASELINE_ONLY if baseline and frac <= 0 else "",
                             _over_trace(frac, over)) if n]
        out["missed"] = (f"meets every constraint; {_dearer(frac)}"
                         f"{basis_words(saving_basis(model), frac)}"
                         + (f" ({'; '.join(notes)})" if notes else ""))
        return out

    def _baseline_only(self, r: DesignResult) -> bool:
        """Whether ``r`` is the uniform fleet of a tier listed under ``baselines:`` (sized for
        the saving, never a plan)."""
        return set(r.design.tiers) <= set(self.baseline_names)


def _dearer_share(theirs: float, plans: float) -> float | None:
    """How much dearer a fleet paying ``theirs`` is than the plan paying ``plans``
    (``theirs / plans - 1``, below 0 when cheaper); None where the plan pays nothing (no share
    is finite): the share the plan saves, negated."""
    saved = saved_share(theirs, plans)
    return None if saved is None else without_noise(-saved)


def _over_trace(frac: float, over: float | None) -> str:
    """Where a fleet is dearer than the plan per hour but cheaper over the trace, or the other
    way round, the share over the trace and why, in words: ``"1.80 % cheaper than the plan
    over the trace: its drain after the last arrival is shorter"``; "" where both agree (or
    the basis is the trace itself: ``over`` is ``frac``)."""
    if over is None or over == frac or (frac < 0) == (over < 0) or not (frac and over):
        return ""
    drain = "shorter" if over < 0 else "longer"
    return f"{_dearer(over)} over the trace: its drain after the last arrival is {drain}"


def _passed_on(a, df, infos) -> np.ndarray:
    """Which requests their first tier refuses on to a ``refused_to`` tier that holds them (a
    cascade's): that first tier never serves them, so they are no drop of it."""
    if a.refused_to is None:
        return np.zeros(len(df), dtype=bool)
    from tiersim.routing.capability import fits

    on = np.asarray(a.refused_to, dtype=np.int64)
    return (on >= 0) & fits(df, infos)[np.arange(len(df)), np.maximum(on, 0)]


def _per_replica(gpus: list[int]) -> str:
    """``1 GPU per replica`` / ``1, 2, 4 GPUs per replica``."""
    return f"{', '.join(map(str, gpus))} GPU{'' if list(gpus) == [1] else 's'} per replica"


def _too_long(longer: list[tuple[str, int, int]], own: set[str],
              beyond: dict[str, tuple[int, int]] | None = None) -> str:
    """A design's requests longer than their tier's context (:meth:`Planner._longer`), with
    the fix, in words: raise ``max_model_len`` on the tiers that set their own (``own``),
    else (the model's context already) serve them on a model with a longer one, as a run's
    note says; with both kinds of tier, each is named with its own fix. ``beyond``
    (:meth:`Planner._beyond_model`): those longer than their model's maximum context, which
    no ``max_model_len`` serves, named apart (they were told to raise it)."""
    count, where = _longer_counted(longer)
    one = count == "1"
    them = "it" if one else "them"
    return (f"{count} {'request is' if one else 'requests are'} longer (prompt + output) than "
            f"{'its' if one else 'their'} tier's context ({where}) and "
            f"{'is' if one else 'are'} {TOO_LONG}; {_too_long_fix(longer, own, them, beyond)} "
            f"or leave {them} out of the trace")


def _too_long_fix(longer: list[tuple[str, int, int]], own: set[str], them: str,
                  beyond: dict[str, tuple[int, int]] | None = None) -> str:
    """The fix :func:`_too_long` gives: raise ``max_model_len`` where every tier sets its own,
    serve elsewhere where none does, and with both, which tiers get which. Requests longer
    than their model's maximum context (``beyond``, on a tier that sets its own
    ``max_model_len``; a tier at its model's context is told so already) are named apart, each
    tier by name: no ``max_model_len`` serves them, so they were not to be told to raise it."""
    beyond = {name: v for name, v in (beyond or {}).items() if name in own}
    if not beyond:
        return _raise_or_serve(longer, own, them)
    rest = [name for name, n, _ in longer if n > beyond.get(name, (0, 0))[0]]
    words = [_raise_words([n for n in rest if n in own]), _fixed_words(
        [n for n in rest if n not in own])]
    past = sum(k for k, _ in beyond.values())
    exceed = " and ".join(f"{k:,} on {name} exceed{'s' if k == 1 else ''} its model's maximum "
                          f"context ({context:,} tokens)" for name, (k, context) in beyond.items())
    words.append(f"{exceed}, which no max_model_len serves: serve "
                 f"{'it' if past == 1 else 'them'} on a model with a longer context")
    return "; ".join(w for w in words if w)


def _raise_or_serve(longer: list[tuple[str, int, int]], own: set[str], them: str) -> str:
    """:func:`_too_long_fix` where every request is within its model's context."""
    raised = [name for name, _, _ in longer if name in own]
    fixed = [name for name, _, _ in longer if name not in own]
    if not fixed:
        return "raise tiers[].scheduler.max_model_len (up to the model's context)"
    if not raised:
        return (f"{'it is the model' if len(longer) == 1 else 'each is its model'}'s context: "
                f"serve {them} on a model with a longer context")
    return f"{_raise_words(raised)}; {_fixed_words(fixed)}"


def _raise_words(raised: list[str]) -> str:
    """"raise w4a16's scheduler.max_model_len (up to its model's context)"; "" for none."""
    if not raised:
        return ""
    return (f"raise {' and '.join(raised)}'s scheduler.max_model_len (up to "
            f"{'their models' if len(raised) > 1 else 'its model'}'s context)")


def _fixed_words(fixed: list[str]) -> str:
    """"bf16's is its model's context: serve its requests on a model with a longer context";
    "" for none."""
    if not fixed:
        return ""
    many = len(fixed) > 1
    return (f"{' and '.join(fixed)}'s {'are their models' if many else 'is its model'}'s "
            f"context: serve {'their' if many else 'its'} requests on a model with a longer "
            f"context")


def _drops_words(longer: list[tuple[str, int, int]]) -> str:
    """The same in a few words (a run's uniform baseline gives them): ``"drops 476 requests
    longer (prompt + output) than fp8's max_model_len 1,500 at any size"``."""
    count, where = _longer_counted(longer)
    return (f"drops {count} request{'s' if count != '1' else ''} longer (prompt + output) than "
            f"{where} at any size")


def _over_kv_words(larger: list[tuple[str, int, int]], design: Design) -> str:
    """Requests larger than their tier's KV cache holds for one sequence
    (:meth:`Planner._over_kv`), with the fix, in words."""
    count = sum(n for _, n, _ in larger)
    where = ", ".join(f"{room:,} tokens on {name} at {_per_replica([design.gpus(name)])}"
                      for name, _, room in larger)
    many = "requests are" if count != 1 else "request is"
    return (f"{count:,} {many} larger than one sequence may hold of a replica's KV cache "
            f"({where}) and {'are' if count != 1 else 'is'} dropped at any replica count; "
            "allow more GPUs per replica (--gpus-per-replica or limits.gpus_per_replica) or "
            "give the tier more memory (gpu_memory_utilization)")


def _over_kv_drops(larger: list[tuple[str, int, int]]) -> str:
    """The same in a few words (a run's uniform baseline gives them)."""
    count = sum(n for _, n, _ in larger)
    where = ", ".join(f"{name}'s {room:,} tokens" for name, _, room in larger)
    return (f"drops {count:,} request{'s' if count != 1 else ''} larger than one sequence may "
            f"hold of a replica's KV cache ({where}) at any replica count")


def _longer_counted(longer: list[tuple[str, int, int]]) -> tuple[str, str]:
    """How many requests are too long (``"1,234"``) and which contexts they exceed."""
    where = ", ".join(f"{name}'s max_model_len {context:,}" for name, _, context in longer)
    return f"{sum(n for _, n, _ in longer):,}", where


def _plan_order(r: DesignResult, cost_model: str | None = "provisioned") -> tuple:
    """The order feasible designs are chosen in: the cost the operator pays first (under
    ``provisioned`` cost the fleet's USD/hour, else the cost over the trace), as plan.json
    writes it (10 significant digits, so sums of one price in another order tie; an infinite
    cost after every finite one and NaN last, :func:`~tiersim.results.sig_order`); at a tie the
    fewer tiers, then the fewer replicas, then the cost over the trace, then the higher
    accuracy (and last, the design found first): :func:`tiersim.results.paid_order`, by which
    a saving's uniform baseline is chosen too. Two provisioned fleets of one USD/hour differ
    over the trace only by their drain after the last arrival, which is no saving per hour: a
    routed design that was "cheaper" by that alone was the plan (FP8 8 + BF16 9 over uniform
    BF16 17 on plan_default.yaml, both 59.5 USD/hour, "0.00850 % cheaper")."""
    o = r.outcome
    return paid_order(cost_model, o.cost_usd, o.cost_per_hour_usd, len(r.design.tiers),
                      sum(r.replicas.values()), o.accuracy)


def _simpler(r: DesignResult, plan: DesignResult) -> str | None:
    """Why the plan won a tie with ``r`` on its size, in words (:func:`_plan_order`): ``"kept
    as the simpler design, 1 tier against 2"`` or ``"kept as the smaller fleet, 17 replicas
    against 18"``; None where both have as many tiers and replicas."""
    tiers, theirs = len(plan.design.tiers), len(r.design.tiers)
    if tiers < theirs:
        return f"kept as the simpler design, {tiers} tier{'s' * (tiers > 1)} against {theirs}"
    count, their_count = sum(plan.replicas.values()), sum(r.replicas.values())
    if tiers == theirs and count < their_count:
        replicas = f"{count} replica{'s' * (count > 1)}"
        return f"kept as the smaller fleet, {replicas} against {their_count}"
    return None


def _tie(accuracy: float, plans: float, simpler: str | None = None,
         gap: str | None = None, baseline: bool = False,
         floored: bool = True) -> str:
    """A fleet meeting every constraint at the plan's cost, in words, with the rule that kept
    the plan (:func:`_plan_order`), or with ``baseline``, that the fleet's tier is a
    baseline-only tier (:data:`BASELINE_ONLY`: never a plan, so no rule ranked the plan before
    it; it read "kept as found first (fewer tiers first, ...)" beside a more accurate
    baseline of as many tiers); the rule: the simpler design or smaller fleet (``simpler``, from
    :func:`_simpler`; with both accuracies where the other is the more accurate, to 4 figures
    or as many more as print them apart, the accuracy given up for it and the rule, fewer
    tiers or fewer replicas, that ranked the plan first), else with ``gap`` (the two cost the
    same per hour but not over the trace: why, the drain after the last arrival) the cost over
    the trace (with the accuracy given up likewise: it read "kept as found first" beside a more
    accurate fleet found first, "kept for its higher accuracy" beside a less accurate one,
    though the cost over the trace ranks before either), else the higher accuracy, else the
    design found first (fewer tiers first, then the scenario's order of tiers). ``floored``:
    whether the plan has an accuracy floor (without one the accuracy given up is said against
    none: it read "the floor is met"). Before, it read "0.0% dearer than the plan"."""
    if simpler or gap:  # the ranks before the accuracy (_plan_order)
        kept = simpler or "kept as the cheaper over the trace"
        first = ("fewer tiers rank" if kept.startswith("kept as the simpler design") else
                 "fewer replicas rank" if simpler else "the cost over the trace ranks")
        n = digits_apart(plans, accuracy, 4)  # 85.00% against 85.00% read as no accuracy lost
        why = kept if accuracy <= plans else (
            f"{kept} (the plan's accuracy {figure_text(plans, '%', 100, n)} against its "
            f"{figure_text(accuracy, '%', 100, n)}: "
            f"{'the floor is met' if floored else 'no accuracy floor is set'}, {first} first)")
    elif plans > accuracy:
        places = max(2, floor_digits(plans, accuracy, 4) - 2)  # the plan's percent decimals
        while places < 10 and f"{100 * plans:.{places}f}" == f"{100 * accuracy:.{places}f}":
            places += 1  # more where they print alike (below 10%, or within the tolerance)
        why = (f"kept for its higher accuracy, {100 * plans:.{places}f}% against "
               f"{100 * accuracy:.{places}f}%")
    else:
        why = "kept as found first (fewer tiers first, then the scenario's order of tiers)"
    rule = BASELINE_ONLY if baseline else f"the plan is {why}"
    if gap:
        return f"meets every constraint at the plan's cost per hour (a tie): {gap}; {rule}"
    return f"meets every constraint at the plan's cost (a tie); {rule}"


BASELINE_ONLY = "its tier is listed under baselines:, never in a design"
"""Why a baseline-only tier's uniform fleet, cheaper than the plan or tied with it, is not the
plan."""


def _dearer(frac: float) -> str:
    """A cost gap to the plan in words: ``"2.00 % dearer than the plan"`` or, below it,
    ``"0.700 % cheaper than the plan"`` (never "-0.7% dearer"); the share as the plan's saving
    and ``tiersim run`` print one (:func:`~tiersim.results.figure_text`: 3 figures, where it
    read to one decimal place, 0.0756 % as "0.1%" and 0.0049 % as "0.0%"), in plain digits
    (:func:`~tiersim.results.share_text`); a share of 0 costs "the same as the plan" (it read
    "0 % dearer", and 5e-12 "0 % dearer" beside the plan's lower cost)."""
    frac = without_noise(frac)
    if frac == 0:
        return "costs the same as the plan"
    word = "dearer" if frac > 0 else "cheaper"
    return f"{share_text(abs(frac))} {word} than the plan"


def compare(routed: DesignResult, uniform: list[DesignResult], floor: float | None,
            cost_model: str = "provisioned") -> dict[str, Any]:
    """Routed design against the cheapest uniform fleet meeting the SLOs and the floor (with
    none, the routed design's own accuracy, as a run's savings: :func:`baseline_floor`), and
    against a static split of the sized uniform fleets at the routed accuracy.

    The baseline is the first such fleet in the plan's order (:func:`_plan_order`) and
    ``vs_uniform_frac`` is on the basis that order ranks by (``saving_basis``: USD/hour under
    provisioned cost, else over the trace); ``vs_uniform_usd`` and
    ``vs_uniform_over_trace_frac`` are over the trace. Before, the baseline and the share were
    over the trace under provisioned cost too: a plan printed "saves 0.0657 %" against a
    baseline-only fleet it cost 2.56 % more per hour than, the share being the baseline's
    longer drain after the last arrival. The static split is on that basis too, the share
    over the trace beside it (:func:`~tiersim.routing.metrics.static_split_saving`, as a
    run's)."""
    from tiersim.routing.metrics import static_split_saving

    sized = [u for u in uniform if u.outcome is not None and _latency_met(u)]
    cost = routed.outcome.cost_usd
    floor = baseline_floor(floor, routed.outcome.accuracy)
    meets = [u for u in sized if reaches_floor(u.outcome.accuracy, floor)]
    base = min(meets, key=lambda u: _plan_order(u, cost_model)) if meets else None
    return {
        "routed_cost_usd": cost,
        "baseline_uniform_tier": base.design.tiers[0] if base else None,
        "baseline_uniform_cost_usd": base.outcome.cost_usd if base else None,
        "vs_uniform_usd": base.outcome.cost_usd - cost if base else None,
        "vs_uniform_frac": paid_share(cost_model, _costs(routed), _costs(base)) if base
        else None,
        "vs_uniform_over_trace_frac": saved_share(cost, base.outcome.cost_usd) if base else None,
        "saving_basis": saving_basis(cost_model),
        "routed_cost_per_hour_usd": routed.outcome.cost_per_hour_usd,
        **static_split_saving(cost_model, routed.outcome.accuracy, _costs(routed),
                              [(*_costs(u), u.outcome.accuracy) for u in sized]),
        "accuracy_floor": floor,
        "baseline_uniform_cost_per_hour_usd": base.outcome.cost_per_hour_usd if base else None,
        "drain_gap": drain_gap(routed.outcome, base.outcome, cost_model) if base else None,
    }


def _costs(r: DesignResult) -> tuple[float, float]:
    """A sized design's cost over the trace and USD/hour, as :func:`paid_share` takes them."""
    return r.outcome.cost_usd, r.outcome.cost_per_hour_usd


def drain_gap(o: Outcome, other: Outcome, cost_model: str) -> str | None:
    """Why two provisioned fleets of one USD/hour cost differently, in words
    (:func:`tiersim.results.drain_words`); None for any other pair."""
    return drain_words((o.cost_per_hour_usd, other.cost_per_hour_usd),
                       (o.duration_s, other.duration_s), cost_model)


def _combinations(chosen: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the chosen router settings' values, key -> value."""
    return [dict(zip(chosen, values, strict=True))
            for values in itertools.product(*chosen.values())]


def _floor_setting(floor: float, chosen: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The floor router at ``floor`` with the chosen settings over it, as a design's setting."""
    return tuple(sorted({"policy": "floor", "floor": floor, **chosen}.items()))


def _idle_tiers(design: Design, assignment) -> list[str]:
    """Kept tiers the routing sends nothing to (none for a fake evaluator's routing)."""
    if assignment is None or len(design.tiers) == 1:
        return []
    used = set(np.unique(assignment.tier)) | set(np.unique(assignment.escalate_to))
    return [n for k, n in enumerate(design.tiers) if k not in used]


def _latency_met(r: DesignResult) -> bool:
    """Whether a sized design met the SLOs and dropped nothing (its accuracy aside)."""
    return r.outcome is not None and not (r.missed or "").startswith("latency")


def _by_cost(results: list[DesignResult]) -> list[DesignResult]:
    """Feasible designs by cost, then the rest."""
    return sorted(results, key=lambda r: (not r.feasible,
                                          r.outcome.cost_usd if r.outcome else math.inf))


def _missed(o: Outcome, c: Constraints) -> str | None:
    """The constraints an outcome misses, in words (None when it meets them all)."""
    words = []
    for key, m in margins(o, c).items():
        if not m["met"]:
            value, limit = m["value"], m["limit"]
            if key == "accuracy" and value is not None:  # in percent, as the plan's own line
                words.append("accuracy {} vs limit {}".format(*floor_pair(value, limit)))
                continue
            # to 3 figures as the plan's margins and tiersim run print a p99 (figure_text: 1,500
            # s and 1,234 dropped, not 1.5e+03 and 1.23e+03); one over its limit by less than
            # they show, to more
            shown = ("none finished" if value is None else
                     figure_text(value, digits=over_digits(value, limit, 3)))
            words.append(f"{key} {shown} vs limit {limit:.10g}")
    return "; ".join(words) or None


def _one_line(err: BaseException) -> str:
    """An exception as one line."""
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
