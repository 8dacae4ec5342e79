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
import warnings
from typing import Any

from tiersim.errors import IdleConfusion, Note, TiersimError, UnreachableFloor, yaml_written
from tiersim.plan.assembly import PlanAssembly
from tiersim.plan.constraints import (  # noqa: F401 - re-exported
    OVERSHOOT_CAP,
    Constraints,
    _finished,
    _measured,
    _missed,
    _overshoot,
    _within,
    margins,
    verdict,
)
from tiersim.plan.designs import (  # noqa: F401 - re-exported
    FLOOR_MARGINS,
    DesignResult,
    _by_cost,
    _combinations,
    _floor_setting,
    _idle_tiers,
    _latency_met,
    raised_floors,
    read_setting,
)
from tiersim.plan.evaluate import Design, Outcome, SimEvaluator  # noqa: F401 - re-exported
from tiersim.plan.feasibility import (  # noqa: F401 - re-exported
    FeasibilityChecks,
    _note_held_layouts,
    _passed_on,
    _refuses_layout,
)
from tiersim.plan.ranking import (  # noqa: F401 - re-exported
    BASELINE_ONLY,
    _costs,
    _dearer,
    _dearer_share,
    _over_trace,
    _plan_order,
    _simpler,
    _tie,
    compare,
    drain_gap,
)
from tiersim.plan.reasons import (  # noqa: F401 - re-exported
    TOO_LONG,
    _drops_words,
    _fixed_words,
    _longer_counted,
    _one_line,
    _over_kv_drops,
    _over_kv_words,
    _per_replica,
    _raise_or_serve,
    _raise_words,
    _too_long,
    _too_long_fix,
)
from tiersim.plan.search import HOPELESS, Sizing, Verdict, size_replicas  # noqa: F401
from tiersim.results import floor_pair, percent_as_given, reaches_floor
from tiersim.routing.policies import ROUTERS
from tiersim.scenario import DEFAULT_MAX_REPLICAS, SIZED_GPUS_PER_REPLICA

GPU_OPTIONS = SIZED_GPUS_PER_REPLICA
"""GPUs per replica the planner may try, smallest that fits first."""

IDLE = "no traffic from the router"
"""Words of a design's miss when its router sends one of its tiers nothing."""


def planning_cost_model(scenario, override: str | None = None) -> str:
    """The cost model a plan is priced in: ``override``, else the scenario's when it sets one,
    else ``provisioned`` (what you would pay for the fleet; busy-time attribution would make
    idle replicas free)."""
    if override is not None:
        return override
    if "cost_model" in getattr(scenario, "model_fields_set", {"cost_model"}):
        return scenario.cost_model
    return "provisioned"


def _policy_reads_realised(router) -> bool:
    """Whether the scenario's router policy itself (a cascade, or a ``step_type`` router falling
    back to one), not a ``confusion`` the user wrote, makes a plan score every design on
    realised draws (:func:`tiersim.plan.evaluate.scores_realised`): the floor router that
    replaces it keeps a written ``confusion``, so only then does the basis hang on the policy."""
    if "confusion" in getattr(router, "model_fields_set", ()):
        return False
    policy = getattr(router, "policy", None)
    if policy == "step_type":
        policy = getattr(router, "step_fallback", None)
    return bool(getattr(ROUTERS.get(policy), "reads_realised", False))


class Planner(PlanAssembly, FeasibilityChecks):
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
        self._note_router_replaced()
        self._one_basis()
        self.uniform_results: dict[str, DesignResult] = {}
        self.judged: list[dict[str, Any]] = []
        self._judged_keys: set[str] = set()  # the fleets in judged, as JSON text

    def _note_router_replaced(self) -> None:
        """A note where an accuracy floor is set, the scenario's router is not ``floor``, there
        are multi-tier designs and no ``--choose router.policy`` was given: :meth:`settings`
        routes those designs with the floor router, not the scenario's own. Before, a cascade
        scenario with a floor was planned as floor routing and printed with nothing to say so:
        its runner-up "w4@4+fp8@8 ... meets every constraint" read as the cascade sized, though
        the cascade itself missed the TTFT SLO at any size."""
        policy = getattr(getattr(self.scenario, "router", None), "policy", None)
        if (self.c.accuracy_floor is None or policy in (None, "floor") or len(self.names) < 2
                or any(path.removeprefix("router.") == "policy" for path in self.choose)):
            return
        basis = (", though every design is scored on the realised draws a cascade reads, and "
                 "the planned scenario sets router.confusion to zeros to keep them "
                 "(router.policy: floor scores expected accuracy)"
                 if _policy_reads_realised(self.scenario.router) else "")
        warnings.warn(Note(
            f"multi-tier designs are routed by the floor router at the accuracy floor, not the "
            f"scenario's {policy} router (router.policy: {policy}){basis}; to size them with "
            f"the {policy} router, add --choose router.policy={policy}"), stacklevel=3)

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
        combinations alone. A setting that reads as one before it (a ``--choose
        router.policy=cascade`` design reads no floor) is sized once (:meth:`best`)."""
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
        sized: dict[str, DesignResult] = {}  # by start and the setting as its policy reads it
        with warnings.catch_warnings():  # a floor out of reach is this design's missed accuracy
            warnings.simplefilter("ignore", UnreachableFloor)
            warnings.simplefilter("ignore", IdleConfusion)  # of a design, not the scenario
            for start in self._starts(tiers):
                if self._dearer_at_least(tiers, start, results):
                    continue
                for group in self.settings(tiers):
                    tried: list[DesignResult] = []
                    for setting in group:  # stop at the first margin meeting the floor
                        # a setting that reads as one sized before routes alike: its result
                        # again, not routed and sized again (a --choose router.policy=cascade
                        # design, which reads no floor, was at each raised floor)
                        key = _sized_key(start, setting)
                        if key not in sized:
                            sized[key] = self._size(tiers, setting, start)
                        tried.append(sized[key])
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
        unused = self._idle(idle.design, self.evaluator.routing(idle.design)[1])
        left = tuple(n for n in idle.design.tiers if n not in unused)
        rest = Design(left, tuple(idle.design.gpus(n) for n in left)).label  # as it is listed
        rest = f"uniform {rest}" if len(left) == 1 else rest
        idle.missed = (f"accuracy < floor {percent_as_given(floor)} with the router fitted "
                       f"to {found}; fitted to {dict(idle.design.router)['floor']:g} it sends "
                       f"{' and '.join(unused)} nothing, which is {rest} (listed on its own)")

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
                                  f"{self._and_refused(name)}"
                                  f"{self._and_unasked(name, chosen.missed)})")
            if chosen.infeasible and len(tried[name]) > 1:
                chosen.infeasible += f"; tried {_per_replica(tried[name])}"
        self.uniform_results[name] = chosen
        return chosen

    def _idle(self, design: Design, assignment) -> list[str]:
        """The kept tiers a design's routing sends nothing (``assignment``: the plan's own
        seed's); under ``--robust`` (an evaluator with ``routings``: one per seed) only those
        no seed sends anything. Before, the plan's own seed's routing alone decided, and a
        design whose router sent a tier nothing at that seed but most of the requests at
        another was turned away as "the design without it", a uniform fleet that missed the
        floor at that other seed."""
        idle = _idle_tiers(design, assignment)
        every = getattr(self.evaluator, "routings", None)
        if idle and every is not None:
            for _, other, _ in every(design)[1:]:
                idle = [n for n in idle if n in _idle_tiers(design, other)]
        return idle

    def _uniform_level(self, name: str) -> int:
        """Index of the GPUs per replica a tier's sized uniform fleet uses (0 when unknown)."""
        r = self.uniform_results.get(name)
        if r is None or not _latency_met(r):
            return 0
        return self.gpus[name].index(r.design.gpus_per_replica[0])

    def _unrouted(self, design: Design) -> str:
        """Why a multi-tier design sends a tier nothing where that is the scenario's router at
        work, not a choice: with no accuracy floor the planner keeps the scenario's router,
        and ``uniform`` (the default) sends every request to one tier. Before, a two-tier
        scenario with no ``accuracy_floor`` planned "runner-up fp8+bf16: fp8 gets no traffic
        from the router: the design without it is cheaper" and never said how to route
        it."""
        router = dict(design.router)
        if (self.c.accuracy_floor is not None or len(design.tiers) < 2
                or router.get("policy", "uniform") != "uniform"):
            return ""
        return ("; the scenario's router is uniform (every request to one tier) and there is "
                "no accuracy floor to route by: set accuracy_floor (or --accuracy-floor) to "
                "route a multi-tier design with the floor router")

    def _not_a_cascade(self, design: Design) -> str:
        """Why a tier subset is not the routing its router names (the scenario's, or a
        ``--choose`` setting): it lacks a tier of the scenario the router names by name, so
        the router cannot route it as written; "" when it has them (or its router names
        none, or is refused as it is routed). Such a subset is left to the designs that keep
        them, with a plain verdict. Before, its verdict was the router's config error
        ("router: s.yaml: router.cascade.to_tier: unknown tier 'bf16'; tiers are w4a16,
        fp8"), which a planner reads as a fault of the scenario. A cascade lacking
        ``from_tier`` or ``to_tier`` is "not a cascade"; a ``static_split`` lacking a tier
        ``fractions`` gives a share "not this split" (its shares are not renormalised over
        the kept tiers: the split is what the scenario asked for); any other router lacking
        a tier it names (``tier``, a ``thresholds`` key, a ``step_tiers`` value) "not this
        routing". A name that is no tier of the scenario (a typo) is left to the router's
        refusal."""
        config = getattr(self.evaluator, "router_config", None)
        if config is None or len(design.tiers) < 2:
            return ""
        try:
            cfg = config(design)
        except (TiersimError, ValueError):  # refused where it is routed, as before
            return ""
        scenario = getattr(self.evaluator, "scenario", None)
        names = None if scenario is None else [t.name for t in scenario.tiers]
        lacking = [(ref, role) for ref, role in _named_tiers(cfg, names)
                   if ref not in design.tiers and (names is None or ref in names)]
        if not lacking:
            return ""
        said = ", and ".join(f"{ref}, {role}" for ref, role in lacking)
        kind = {"cascade": "a cascade", "static_split": "this split"}.get(cfg.policy,
                                                                          "this routing")
        return f"not {kind}: it lacks {said}"

    def _size(self, tiers: tuple[str, ...], setting, level: dict[str, int],
              escalate: bool = True) -> DesignResult:
        """Size one design from GPUs-per-replica ``level`` (index into each tier's options),
        moving a tier to more GPUs per replica when replicas cannot help (``escalate``)."""
        level = dict(level)
        tried = {n: [self.gpus[n][level[n]]] for n in tiers}
        lacks = self._not_a_cascade(Design(tiers, (1,) * len(tiers), setting))
        if lacks:
            return DesignResult(Design(tiers, tuple(self.gpus[n][level[n]] for n in tiers),
                                       setting), None, None, lacks, tried)
        while True:
            design = Design(tiers, tuple(self.gpus[n][level[n]] for n in tiers), setting)
            try:
                _, assignment, accuracy = self.evaluator.routing(design)
            except (TiersimError, ValueError) as err:
                # a router that cannot serve this subset refuses it as a run of the design
                # would: a ScenarioError (a cascade of one tier, a budget under the cheapest
                # tier, a floor no cut reaches) or a ValueError (the router's settings refused,
                # pydantic's ValidationError among them), as score_realised_if_read reads
                # them. Anything else (a TypeError, KeyError, ZeroDivisionError, MemoryError)
                # is a bug or the machine's, not this design's: it stops the plan, not
                # a verdict "router: ..." that hid it among the designs.
                return DesignResult(design, None, None, f"router: {_one_line(err)}", tried)
            floor = self.c.accuracy_floor  # checked first: a raised floor may send traffic up
            if len(tiers) > 1 and floor is not None and accuracy is not None \
                    and not reaches_floor(accuracy, floor):
                shown, limit = floor_pair(accuracy, floor)
                return DesignResult(design, None, None, f"accuracy {shown} < floor {limit}",
                                    tried)
            idle = self._idle(design, assignment)
            if idle:
                verb, them = ("gets", "it") if len(idle) == 1 else ("get", "them")
                return DesignResult(design, None, None, f"{' and '.join(idle)} {verb} "
                                    f"{IDLE}: the design without {them} is cheaper"
                                    f"{self._unrouted(design)}{_unreached(design, assignment)}",
                                    tried)
            sizing = self._search(design)
            if sizing.replicas is not None:
                outcome = self.evaluator.evaluate(design, sizing.replicas)
                missed = _missed(outcome, self.c)
                return DesignResult(design, sizing.replicas, outcome, missed, tried)
            last = self.evaluator.evaluate(design, sizing.judged[-1])
            longer, unsent = self._longer_and_unsent(design) if last.dropped else ([], 0)
            if longer:  # no size serves them: neither more replicas nor more GPUs each
                own = {name for name, _, _ in longer
                       if self.evaluator.built(name, design.gpus(name)).context_raisable}
                beyond = self._beyond_model(design)
                return DesignResult(design, sizing.judged[-1], last, f"latency: "
                                    f"{_too_long(longer, own, beyond, unsent)} "
                                    f"({_missed(last, self.c)})",
                                    tried, infeasible=_drops_words(longer, unsent))
            violators = verdict(last, self.c).violators or tiers
            bump = [n for n in violators if level[n] + 1 < len(self.gpus[n])] if escalate else []
            if not bump:
                gpus = "; ".join(f"{n} on {_per_replica(g)}{self._and_refused(n)}"
                                 for n, g in tried.items())
                # the counts left out, after every tier tried and each naming its tier, for
                # the tiers that miss alone: one that meets its limits needs no larger count
                gpus += "".join(self._and_unasked(n, sizing.reason, named=len(tried) > 1)
                                for n in tried if n in violators)
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

    def _search(self, design: Design) -> Sizing:
        """Replica search for one design, recording every fleet judged."""
        def judge(replicas: dict[str, int]) -> Verdict:
            o = self.evaluator.evaluate(design, replicas)
            v = verdict(o, self.c)
            entry = {"design": design.label, "router": read_setting(design.router),
                     "replicas": dict(replicas), "ok": v.ok, "ttft_p99_s": o.ttft_p99_s,
                     "tpot_p99_s": o.tpot_p99_s, "dropped": o.dropped, "cost_usd": o.cost_usd}
            for key in ("e2e_p99_s", "session_p99_s"):  # held: what an ok False may miss
                if getattr(self.c, key) is not None:
                    entry[key] = getattr(o, key)
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


def _sized_key(start: dict[str, int], setting: tuple[tuple[str, Any], ...]) -> str:
    """A design's sizing from ``start`` under router ``setting``, as :meth:`Planner.best` keys
    it: the setting as its policy reads it (:func:`read_setting`), so that one differing only
    in keys its policy does not read (a cascade's floor) is the same sizing."""
    return json.dumps([start, read_setting(setting)], sort_keys=True, default=repr)


def _named_tiers(cfg, names: list[str] | None) -> list[tuple[str, str]]:
    """The tiers router ``cfg`` names by name, each with what it does with it (as a verdict
    says it), for the policies in play (``step_type``'s ``step_fallback`` too, which reads the
    same block); ``names``: the scenario's tiers, in order, which a ``fractions`` list gives
    its shares to (None: a list is not read). A ``step_tiers`` "top" or "cheapest" is a
    keyword, no tier's name."""
    policies = [cfg.policy] + ([cfg.step_fallback] if cfg.policy == "step_type" else [])
    named: list[tuple[str, str]] = []
    for policy in policies:
        if policy == "uniform" and isinstance(cfg.tier, str):
            named.append((cfg.tier, "the tier router.tier sends every request to"))
        elif policy == "cascade":
            roles = (("from_tier", "answers first on"), ("to_tier", "escalates to"))
            named += [(ref, f"the tier router.cascade.{key} {role}") for key, role in roles
                      if isinstance(ref := getattr(cfg.cascade, key), str)]
        elif policy == "static_split":
            shares = cfg.fractions
            if isinstance(shares, list) and names is not None and len(shares) == len(names):
                shares = dict(zip(names, shares, strict=True))
            if isinstance(shares, dict):
                named += [(ref, f"which router.fractions sends {share * 100:.4g} % of "
                           "requests" if share > 0 else
                           "which router.fractions gives a share of 0")
                          for ref, share in shares.items()]
        elif policy == "threshold" and isinstance(cfg.thresholds, dict):
            named += [(ref, f"which router.thresholds gives a threshold of {yaml_written(v)}")
                      for ref, v in cfg.thresholds.items()]
        elif policy == "step_type":
            steps = cfg.step_tiers if cfg.step_tiers is not None else {}
            named += [(ref, f"the tier router.step_tiers.{kind} sends {kind} steps to")
                      for kind, ref in steps.items()
                      if isinstance(ref, str) and ref not in ("top", "cheapest")]
    return named


def _unreached(design: Design, assignment) -> str:
    """Why a ``floor`` router sent a tier nothing where its fit reached no routing that
    meets its floor on the classifier's calibration split (``fit.feasible`` false): it then
    sends every request the most accurate way it found, so the tier idles because the floor is
    too close to the top tier's accuracy, not because the tier does not pay. Before, such a
    runner-up read "fp8 gets no traffic from the router: the design without it is cheaper"
    alone, and only a run of the design's scenario said why; "" otherwise."""
    fit = getattr(assignment, "fit", None) or {}
    best = fit.get("calibration_accuracy")
    floor_router = dict(design.router).get("policy") == "floor"
    if not floor_router or fit.get("feasible") is not False or not isinstance(best, int | float):
        return ""
    return ("; no routing the router finds reaches its floor on its calibration split (the "
            f"most accurate reads {100 * best:.2f} %), so it sends every request the most "
            "accurate way: a lower accuracy_floor (or --accuracy-floor) lets it route some to "
            "the cheaper tiers")

