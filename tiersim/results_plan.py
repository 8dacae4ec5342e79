"""A capacity plan's result (:class:`PlanResult`, the content of ``plan.json``) and how its
designs read: constraint margins in the order ``tiersim plan`` prints them, a design's maps in
the scenario's order of tiers, and a design's verdict.

Every name here is importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from typing_extensions import TypedDict

from tiersim.errors import TiersimError
from tiersim.results_figures import _fields
from tiersim.results_read import _build, _oneline, check_finite

NO_SEED_CHECK_WHY = ("--check-seeds 0", "no seed follows the scenario's")
"""Why a plan was checked at no other seed, as plan.json ``seed_check_none`` may say it:
``--check-seeds 0`` typed, or a scenario at the largest seed, where the default has no seed to
check (:data:`tiersim.results_seeds.NO_SEED_CHECK` gives each its fix)."""

SPLIT_KEYS = ("split_uniform_design", "right_sizing_per_hour_usd",
              "design_vs_uniform_per_hour_usd", "split_not_given")
"""plan.json ``current``'s split of the saving per hour (:mod:`tiersim.results_current`
writes it): the sized uniform fleet it is split at, the two parts (null where not given) and
why it is not given (null where it is)."""

MARGIN_ORDER = ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s", "dropped",
                "accuracy")
"""The constraints of a plan's ``margins``, in the order ``tiersim plan`` prints them (its
accuracy on a line of its own, last); plan.json writes them with sorted keys."""


def in_margin_order(margins: dict[str, Any]) -> list[tuple[str, Any]]:
    """A plan's ``margins`` as (constraint, margin) pairs in :data:`MARGIN_ORDER` (any other,
    after them): the report's margins table read them from plan.json alphabetically (accuracy,
    dropped, tpot, ttft) beside the plan's lines (ttft, tpot, dropped, accuracy)."""
    rank = {name: k for k, name in enumerate(MARGIN_ORDER)}
    return sorted(margins.items(), key=lambda item: rank.get(item[0], len(rank)))


def whose_p99(margin: dict[str, Any]) -> str:
    """The words after a latency margin's "value vs limit" naming the tier whose own p99 the
    value is, under ``slo_scope: tier`` (the margin's ``tier``:
    :func:`tiersim.plan.constraints.margins`): " (tier bf16's own p99)"; empty where it is the
    fleet's, the p99 plan.json and summary.json give beside it."""
    tier = margin.get("tier")
    return f" (tier {tier}'s own p99)" if tier else ""


def baseline_design(saving: dict[str, Any]) -> str | None:
    """The cheapest sized uniform fleet a plan's saving is against, labelled as plan.json labels
    every design (``design``: its tier, ``@G`` after it where it runs on G > 1 GPUs per replica,
    ``fp8@2``): ``baseline_uniform_design``, or in a plan.json written before it the tier alone
    (``baseline_uniform_tier``, which stays: it names the tier, the key of the per-tier maps and
    of a run's ``savings.uniform``). Before, the plan's saving line and its report named the
    fleet ``fp8`` beside the uniform line ``uniform fp8@2 (1 x 2 GPU)`` of the same fleet."""
    return saving.get("baseline_uniform_design") or saving.get("baseline_uniform_tier")


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


def source_words(design: dict[str, Any], said: str | None) -> str:
    """Where a sized uniform fleet's accuracy comes from (its ``accuracy_source``), where it
    is not where the plan's does (``said``, the plan's ``accuracy_sources.source``): "; accuracy
    from prior" for a baseline-only tier with no accuracy table beside tiers reading the
    scenario's; nothing where they agree or it is not known. ``tiersim plan``'s uniform lines
    and the report's "Other designs" table both add it."""
    source = design.get("accuracy_source")
    return "" if source is None or source == said else f"; accuracy from {source}"


class SeedRow(TypedDict):
    """One seed of a plan's ``seed_check`` (:func:`tiersim.cli.plan_seeds.check_seeds`): the
    planned fleet's p99s, accuracy and drops there, the constraints it missed, each tier's share
    of the requests, and against the saving's baseline what that fleet missed and the saving."""

    seed: int
    planned: NotRequired[bool]
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: NotRequired[float | None]
    """Its p99 end-to-end latency, given only where the plan holds ``e2e_p99_s``."""
    session_p99_s: NotRequired[float | None]
    """Its p99 task latency, given only where the plan holds ``session_p99_s``."""
    accuracy: float | None
    dropped: int | None
    missed: list[str]
    shares: dict[str, float | None]
    baseline_missed: NotRequired[list[str]]
    vs_uniform_frac: NotRequired[float | None]


class SeedFailure(TypedDict):
    """A constraint the planned fleet missed in a ``seed_check``, and at which seeds."""

    constraint: str
    seeds: list[int]


class RejectedRow(TypedDict):
    """One checked seed of a rejected fleet in a ``seed_check``: its figures there, the
    constraints it missed, and the plan's saving against it (``vs_fleet_frac``, on the
    saving's basis; below 0 where the plan costs more)."""

    seed: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: NotRequired[float | None]
    """Its p99 end-to-end latency, given only where the plan holds ``e2e_p99_s``."""
    session_p99_s: NotRequired[float | None]
    """Its p99 task latency, given only where the plan holds ``session_p99_s``."""
    accuracy: float | None
    dropped: int | None
    missed: list[str]
    vs_fleet_frac: float | None


class RejectedFleet(TypedDict):
    """A fleet the plan turned away at its seed that ranks before the plan or the saving's
    baseline, checked at the other seeds (``seed_check.rejected``:
    :func:`tiersim.cli.plan_seeds.rejected_check`)."""

    design: str
    tiers: list[str]
    router: dict[str, Any]
    replicas: dict[str, int]
    gpus_per_replica: dict[str, int]
    ranks_before: str
    missed_at_planned_seed: list[str]
    dearer_than_plan_frac: float | None
    dearer_than_baseline_frac: NotRequired[float | None]
    met_seeds: list[int]
    per_seed: list[RejectedRow]


class TodayRow(TypedDict):
    """Today's fleet at one checked seed of a ``seed_check`` (``current.per_seed``): its
    figures there and the constraints it missed."""

    seed: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: NotRequired[float | None]
    """Its p99 end-to-end latency, given only where the plan holds ``e2e_p99_s``."""
    session_p99_s: NotRequired[float | None]
    """Its p99 task latency, given only where the plan holds ``session_p99_s``."""
    accuracy: float | None
    dropped: int | None
    missed: list[str]


class TodayAtSeeds(TypedDict):
    """Today's fleet at a ``seed_check``'s checked seeds (``seed_check.current``:
    :func:`tiersim.cli.plan_seeds.today_check`), beside plan.json's ``current`` at the plan's
    seed; absent without today's fleet, under ``--robust`` and before round 55."""

    met_seeds: list[int]
    per_seed: list[TodayRow]


class SeedCheck(TypedDict):
    """A plan's ``seed_check`` (docs/planning.md): read strictly, so a hand-edited one is the
    plan's one-line "malformed plan" error, never a traceback in the report."""

    source: str
    seeds: list[int]
    planned_seed: int
    design: str | None
    tiers: NotRequired[list[str]]
    met_seeds: list[int]
    failed: list[SeedFailure]
    ranges: dict[str, tuple[float | None, float | None] | None]
    share_ranges: dict[str, tuple[float | None, float | None] | None]
    per_seed: list[SeedRow]
    baseline_uniform_tier: str | None
    baseline_is_plan: bool
    baseline_met_seeds: NotRequired[list[int]]
    saving_basis: str | None
    accuracy_basis: NotRequired[str | None]
    accuracy_floor: float | None
    rejected: NotRequired[list[RejectedFleet]]
    current: NotRequired[TodayAtSeeds]
    wall_s: float | None


class RobustRow(TypedDict):
    """One seed of a robust plan's ``per_seed`` or ``baseline_per_seed``
    (:func:`tiersim.plan.robust.robust_record`): the fleet's figures there."""

    seed: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    e2e_p99_s: NotRequired[float | None]
    """Its p99 end-to-end latency, given only where the plan holds ``e2e_p99_s``."""
    session_p99_s: NotRequired[float | None]
    """Its p99 task latency, given only where the plan holds ``session_p99_s``."""
    accuracy: float | None
    dropped: int
    cost_usd: float | None
    duration_s: NotRequired[float | None]
    """The run's length there, the one its ``cost_usd`` is of (absent before round 56)."""
    cost_per_hour_usd: float | None
    missed: list[str]
    shares: dict[str, float | None]


def costliest_key(o) -> tuple[float, float]:
    """How a robust plan picks the seed whose run its cost is of: the highest cost over the
    trace, of equal costs the longest run (``o``: a :class:`tiersim.plan.evaluate.Outcome`, or
    a ``per_seed`` row's ``cost_usd`` and ``duration_s`` read as one)."""
    if isinstance(o, dict):
        return (o["cost_usd"], o.get("duration_s") or 0.0)
    return (o.cost_usd, o.duration_s)


def costliest_seed(rows: list[dict[str, Any]], prefer: int | None = None) -> int:
    """The seed whose run a robust fleet's cost and ``duration_s`` are: the costliest of
    ``rows`` (:func:`costliest_key`, on the figures as simulated, as
    :func:`tiersim.plan.robust.worst_outcome` picks it), the first of runs alike, or
    ``prefer`` where it is one of them."""
    top = max(map(costliest_key, rows))
    tied = [r["seed"] for r in rows if costliest_key(r) == top]
    return prefer if prefer in tied else tied[0]


class Robust(TypedDict):
    """A plan's ``robust`` (``tiersim plan --robust``; docs/planning.md): read strictly, as
    :class:`SeedCheck` is, so a hand-edited one (``per_seed`` as text, ``seeds`` as
    ``"0,1"``, a row's cost as a word) is the plan's one-line "malformed plan" error, not a
    traceback or a line built from the text's characters in the report."""

    source: str
    seeds: list[int]
    planned_seed: int
    per_seed: NotRequired[list[RobustRow]]
    worst_seed: NotRequired[dict[str, int | None]]
    baseline_uniform_design: NotRequired[str | None]
    baseline_per_seed: NotRequired[list[RobustRow]]
    baseline_cost_seed: NotRequired[int]
    """The seed whose run the baseline's cost is, its costliest (of runs alike, the plan's
    costliest seed): the robust saving is the plan's costliest run against this one (plan57;
    absent before round 57)."""
    least_saving_seed: NotRequired[int | None]
    """The seed where the plan saves least against the baseline's run at that same seed."""
    least_saving_frac: NotRequired[float | None]
    """That least one-seed saving, on the plan's basis (None against a free baseline)."""


class CurrentFleet(TypedDict):
    """A plan's ``current``: the fleet run today (``plan.current`` or ``--current``),
    simulated on the plan's trace and seed (:func:`tiersim.cli.plan_current.current_record`),
    and the plan's saving against it per hour (provisioned) and per month of
    ``hours_per_month`` hours; the saving's figures null without a plan. Read strictly, as
    :class:`SeedCheck` is."""

    given: str
    seeds: list[int]
    design: str
    tiers: list[str]
    replicas: dict[str, int]
    gpus_per_replica: dict[str, int]
    prefill: NotRequired[dict[str, int | None]]
    """A disaggregated tier's prefill replicas as today's fleet ran it (the scenario's split;
    null for a tier served aggregated), given only where a tier of it is split (round 56)."""
    cost_usd: float
    cost_per_hour_usd: float
    duration_s: float
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    accuracy: float | None
    accuracy_basis: str
    dropped: int
    meets_slos: bool
    meets_floor: bool | None
    missed: str | None
    missed_keys: NotRequired[list[str]]
    """The constraints ``missed`` words, by key (``ttft_p99_s``, ``accuracy``, ...), which the
    seed check reads; absent in a plan.json written before round 56 (read from the words)."""
    hours_per_month: float
    vs_current_frac: float | None
    vs_current_per_hour_usd: float | None
    vs_current_per_month_usd: float | None
    e2e_p99_s: NotRequired[float | None]
    """Its p99 end-to-end latency, given only where the plan holds ``e2e_p99_s``."""
    session_p99_s: NotRequired[float | None]
    """Its p99 task latency, given only where the plan holds ``session_p99_s``."""
    split_uniform_design: NotRequired[str | None]
    right_sizing_per_hour_usd: NotRequired[float | None]
    design_vs_uniform_per_hour_usd: NotRequired[float | None]
    split_not_given: NotRequired[str | None]
    wall_s: NotRequired[float | None]
    """``wall_s``: seconds today's fleet took to simulate (absent before round 55). The saving
    per hour split (:func:`tiersim.results_current.split_record`): right-sizing
    today's fleet to the sized uniform fleet of its tier (``uniform``'s
    ``split_uniform_design``) and the plan's design against that fleet, summing to
    ``vs_current_per_hour_usd``; or why it is not given. Absent in a plan.json written before
    it was recorded (the four keys come together)."""


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
    seed_check: SeedCheck | None = None
    """``tiersim plan --check-seeds N``: the planned fleet and its saving's uniform baseline
    simulated at the N seeds after the scenario's (:func:`tiersim.cli.plan_seeds.check_seeds`);
    None where none was checked (``--check-seeds 0``, no plan, or a plan.json written before
    it was recorded)."""
    robust: Robust | None = None
    """``tiersim plan --robust``: the seeds every design was sized for (the plan's figures are
    the worst over them) and, with a plan, its fleet and its saving's baseline at each seed
    (:func:`tiersim.plan.robust.robust_record`); None, and not written, without ``--robust``
    (a plan.json of a plan without it reads as before)."""
    current: CurrentFleet | None = None
    """The fleet run today (``plan.current`` or ``tiersim plan --current``) and the plan's
    saving against it per hour and per month; None, and not written, where none is named (a
    plan.json of a plan without it reads as before)."""

    seed_check_none: str | None = None
    """Why the planned fleet was checked at no other seed: ``--check-seeds 0``, or ``no seed
    follows the scenario's`` (a scenario at the largest seed, ``--check-seeds`` left at its
    default; :data:`NO_SEED_CHECK_WHY`), so the report says it as the console
    does; None, and not written, where seeds were checked or no fleet was planned (a plan.json
    written before round 55 reads as before, and its report without that line)."""

    sources: dict[str, str] | None = None
    """Where every design's latency and cost figures come from, in words
    (:func:`tiersim.plan.sources.plan_sources`): ``latency`` (simulated, on the step times of
    each tier at the GPU counts its designs ran), ``cost`` (the cost model and the prices it
    reads) and ``cost_per_hour`` (provisioned GPUs x USD per GPU-hour, every design's
    ``cost_per_hour_usd``), as the planned run's summary.json ``sources`` says its own; None,
    and not written, where the evaluator says nothing of it (a plan.json written before round
    56 reads as before)."""

    hours_per_month: float | None = None
    """The hours a month is paid for where they were given (``--hours-per-month`` or the
    scenario's ``plan.hours_per_month``), with or without today's fleet: the month the saving
    against the baseline is priced over; None, and not written, where none was given (730
    then; a plan.json written before round 56 reads as before)."""

    @property
    def splits(self) -> list[dict[str, Any]]:
        """Every prefill/decode split the plan chose: ``disaggregation``, then
        ``other_splits``."""
        first = [self.disaggregation] if self.disaggregation else []
        return [*first, *self.other_splits]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the content of plan.json); ``robust`` only where the plan was
        sized for several seeds."""
        out = _fields(self)
        # only where given
        for key in ("robust", "current", "seed_check_none", "sources", "hours_per_month"):
            if out.get(key) is None:
                out.pop(key, None)
        return out

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
            plan = _build(cls, data, **lists)
            if plan.robust is not None:  # as the file writes it, its 2 not pydantic's 2.0
                _check_robust(data["robust"])
                _check_costliest_run(data["robust"], data.get("plan"))
            if plan.seed_check_none is not None:
                _check_no_seed_check(plan)
            if plan.seed_check is not None and "current" in plan.seed_check:
                _check_today_at_seeds(plan)
            if plan.hours_per_month is not None and not 0 < plan.hours_per_month <= 744:
                from tiersim.errors import json_written

                raise ValueError("'plan.hours_per_month' must be above 0 and at most 744, got "
                                 f"{json_written(data['hours_per_month'])}")
            if plan.current is not None:
                _check_current(data["current"], plan.plan)
                _check_split(data["current"], plan.plan, plan.uniform)
            return plan
        except (KeyError, TypeError, ValueError) as err:
            raise TiersimError(f"{source}: malformed plan ({_oneline(err)}); rerun "
                               "`tiersim plan` to rewrite it") from None


def _check_today_at_seeds(plan: PlanResult) -> None:
    """A ValueError where a seed check's ``current`` (today's fleet at its checked seeds) is
    no record a plan writes: without plan.json's ``current``, its rows not the checked seeds
    in order, or its ``met_seeds`` not the rows that missed nothing."""
    from tiersim.errors import json_written

    check = plan.seed_check or {}
    today = check["current"]
    if plan.current is None:
        raise ValueError("'plan.seed_check.current' is today's fleet at the checked seeds, got "
                         "it with no today's fleet ('plan.current')")
    seeds = [row["seed"] for row in today["per_seed"]]
    if seeds != check["seeds"][1:]:
        raise ValueError(f"'plan.seed_check.current.per_seed' must hold a row for each checked "
                         f"seed {json_written(check['seeds'][1:])} in order, got the seeds "
                         f"{json_written(seeds)}")
    met = [row["seed"] for row in today["per_seed"] if not row["missed"]]
    if today["met_seeds"] != met:
        raise ValueError(f"'plan.seed_check.current.met_seeds' must be the seeds whose row "
                         f"missed nothing, {json_written(met)}, got "
                         f"{json_written(today['met_seeds'])}")


def _check_no_seed_check(plan: PlanResult) -> None:
    """A ValueError where a plan's ``seed_check_none`` is no reason a plan writes
    (one of :data:`NO_SEED_CHECK_WHY`), or stands beside a ``seed_check``
    or without a planned fleet: the report words the line from it."""
    from tiersim.errors import json_written

    why = plan.seed_check_none
    if why not in NO_SEED_CHECK_WHY:
        raise ValueError(f"'plan.seed_check_none' must be one of "
                         f"{', '.join(json_written(k) for k in NO_SEED_CHECK_WHY)}, got "
                         f"{json_written(why)}")
    if plan.seed_check is not None or plan.plan is None:
        raise ValueError("'plan.seed_check_none' says why a planned fleet was checked at no "
                         "other seed, got it " + ("beside a seed_check" if plan.seed_check
                                                  is not None else "with no fleet planned"))


def _check_robust(robust: dict[str, Any]) -> None:
    """A ValueError naming the first part of a plan's ``robust`` (read as :class:`Robust`)
    that no robust plan writes: its ``seeds`` the planned seed and one or more after it,
    increasing, up to the largest seed (``[]`` was shown as "sized for seeds , each design
    ..."); each row's ``seed`` those seeds in order; a ``worst_seed`` one of them; a row's
    accuracy and shares fractions."""
    from tiersim.errors import json_written
    from tiersim.results_read import range_problem

    seeds = robust["seeds"]
    if (len(seeds) < 2 or seeds[0] != robust["planned_seed"] or seeds[-1] > 2**63 - 1
            or any(b <= a for a, b in zip(seeds, seeds[1:], strict=False))):
        raise ValueError(f"'plan.robust.seeds' must be the planned seed "
                         f"({robust['planned_seed']}) and the seeds after it, increasing, up to "
                         f"{2**63 - 1}, got {json_written(seeds)}")
    for part in ("per_seed", "baseline_per_seed"):
        rows = robust.get(part) or []
        if rows and [row["seed"] for row in rows] != seeds:
            raise ValueError(f"'plan.robust.{part}' must hold a row for each of its seeds "
                             f"{json_written(seeds)} in order, got the seeds "
                             f"{json_written([row['seed'] for row in rows])}")
        for k, row in enumerate(rows):
            for key, value in [("accuracy", row["accuracy"]), *(
                    (f"shares.{tier}", share) for tier, share in row["shares"].items())]:
                if value is not None and range_problem(value, "accuracy"):
                    raise ValueError(f"'plan.robust.{part}[{k}].{key}' must be a fraction "
                                     f"between 0 and 1, got {json_written(value)}")
    for key, seed in (robust.get("worst_seed") or {}).items():
        if seed is not None and seed not in seeds:
            raise ValueError(f"'plan.robust.worst_seed.{key}' must be one of its seeds "
                             f"{json_written(seeds)}, got {json_written(seed)}")


def _check_costliest_run(robust: dict[str, Any], plan: dict[str, Any] | None) -> None:
    """A ValueError where a robust plan's ``cost_usd`` and ``duration_s`` are not the run of
    the seed ``worst_seed.cost_usd`` names, as ``per_seed`` gives it (round 56: the cost and
    the run it is of are one seed's, :func:`tiersim.plan.robust.worst_outcome`), or where that
    seed's run is not the costliest (plan57: a plan.json naming a cheaper seed, its cost and
    run copied from that seed's row, passed; so does ``baseline_cost_seed`` in
    ``baseline_per_seed``); nothing to check in a plan.json written before its rows gave
    ``duration_s``. Where ``baseline_cost_seed`` is given (round 57 on), ``worst_seed.cost_usd``
    must name a row of ``per_seed``: left out or naming none, the report's saving read "the
    plan's costliest run (seed None)" (review57b)."""
    from tiersim.errors import json_written

    seed = (robust.get("worst_seed") or {}).get("cost_usd")
    rows = {r["seed"]: r for r in robust.get("per_seed") or []}
    row = rows.get(seed)
    if plan is not None and robust.get("baseline_cost_seed") is not None:
        _check_costliest_seed(robust, "per_seed", "worst_seed.cost_usd", seed)
        _check_costliest_seed(robust, "baseline_per_seed", "baseline_cost_seed",
                              robust["baseline_cost_seed"])
    if plan is None or row is None or row.get("duration_s") is None:
        return
    _check_costliest_seed(robust, "per_seed", "worst_seed.cost_usd", seed)
    for key in ("cost_usd", "duration_s"):
        if plan.get(key) != row[key]:
            raise ValueError(f"'plan.plan.{key}' must be the run of seed {seed} "
                             f"('plan.robust.worst_seed.cost_usd'), {json_written(row[key])} in "
                             f"'plan.robust.per_seed', got {json_written(plan.get(key))}")


def _check_costliest_seed(robust: dict[str, Any], part: str, key: str, seed: int) -> None:
    """A ValueError where ``seed`` (named by ``plan.robust.<key>``) has no row in
    ``plan.robust.<part>`` or its row's ``cost_usd`` is below another row's: the seed a robust
    fleet's cost is of is its costliest (:func:`costliest_seed`). Costs as written (to 10
    significant digits, rounded alike, so the costliest stays at least as costly); of costs
    alike written, any (their order below the written digits is not in the file)."""
    from tiersim.errors import json_written

    rows = robust.get(part) or []
    row = next((r for r in rows if r["seed"] == seed), None)
    if row is None:
        raise ValueError(f"'plan.robust.{key}' must name a seed of 'plan.robust.{part}', got "
                         f"{json_written(seed)}")
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    if costs and (row["cost_usd"] is None or row["cost_usd"] < max(costs)):
        top = next(r for r in rows if r["cost_usd"] == max(costs))
        raise ValueError(f"'plan.robust.{key}' must be the costliest seed's run, seed "
                         f"{json_written(top['seed'])} at {json_written(top['cost_usd'])} USD in "
                         f"'plan.robust.{part}', got seed {json_written(seed)} at "
                         f"{json_written(row['cost_usd'])} USD")


def difference_agrees(value: float, a: float, b: float) -> bool:
    """Whether ``value``, as plan.json writes it, is ``a - b`` of the figures it was written
    beside: all three are written to :data:`~tiersim.results_figures.SIG_DIGITS` significant
    digits (each within 5e-10 of itself), so a difference small beside ``a`` and ``b`` carries
    their rounding, which a tolerance on the difference alone (1e-8 of it) refused: today's
    29.68036530 USD/hour less a plan's 29.5 read 0.1803653 beside the 0.1803652964 written
    (review54b)."""
    import math

    slack = 1e-9 * (abs(a) + abs(b) + abs(value))
    return math.isclose(value, a - b, rel_tol=1e-8, abs_tol=max(slack, 1e-9))


def _check_current(current: dict[str, Any], plan: dict[str, Any] | None) -> None:
    """A ValueError naming the first part of a plan's ``current`` (read as
    :class:`CurrentFleet`) that no plan writes: its maps over other tiers than its ``tiers``,
    a count below 1, hours outside 0-744, an accuracy outside 0-1, a saving's figure without
    a plan (or none with one), or figures that do not agree: the saving per hour is today's
    USD/hour less the plan's, its share that over today's, and the month the hour times
    ``hours_per_month``."""
    import math

    from tiersim.errors import json_written
    from tiersim.numbers import shown

    def bad(key: str, what: str, value: Any) -> ValueError:
        # cut as --current quotes it: a hand-edited 400-digit count was repeated whole
        return ValueError(f"'plan.current.{key}' {what}, got {shown(json_written(value))}")

    if not current["seeds"] or any(k < 0 or k > 2**63 - 1 for k in current["seeds"]):
        raise bad("seeds", "must be the seeds it was simulated at (the plan's, and under "
                  "--robust those after it)", current["seeds"])
    _check_today_fleet(current, bad)
    hours = current["hours_per_month"]
    if not 0 < hours <= 744:
        raise bad("hours_per_month", "must be above 0 and at most 744", hours)
    if current["accuracy_basis"] not in ("expected", "realised"):
        raise bad("accuracy_basis", "must be \"expected\" or \"realised\"",
                  current["accuracy_basis"])
    accuracy = current["accuracy"]
    if accuracy is not None and not 0 <= accuracy <= 1:
        raise bad("accuracy", "must be a fraction between 0 and 1", accuracy)
    for key in ("cost_usd", "cost_per_hour_usd", "duration_s", "dropped", "wall_s"):
        if current.get(key) is not None and current[key] < 0:
            raise bad(key, "must be >= 0", current[key])
    per_hour, month = current["vs_current_per_hour_usd"], current["vs_current_per_month_usd"]
    rate = current["cost_per_hour_usd"]
    plan_rate = None if plan is None else plan.get("cost_per_hour_usd")
    if plan_rate is None:
        for key in ("vs_current_frac", "vs_current_per_hour_usd", "vs_current_per_month_usd"):
            if current[key] is not None:
                raise bad(key, "must be null in a plan with no fleet", current[key])
        return
    if per_hour is None or not difference_agrees(per_hour, rate, plan_rate):
        raise bad("vs_current_per_hour_usd", "must be today's cost_per_hour_usd less the "
                  "plan's", per_hour)
    frac = current["vs_current_frac"]
    expected = per_hour / rate if rate > 0 else None
    if (frac is None) != (expected is None) or (
            frac is not None and not math.isclose(frac, expected, rel_tol=1e-8, abs_tol=1e-12)):
        raise bad("vs_current_frac", "must be vs_current_per_hour_usd over today's "
                  "cost_per_hour_usd (null where that is 0)", frac)
    if month is None or not math.isclose(month, per_hour * hours, rel_tol=1e-8, abs_tol=1e-9):
        raise bad("vs_current_per_month_usd", "must be vs_current_per_hour_usd times "
                  "hours_per_month", month)


def _check_today_fleet(current: dict[str, Any], bad) -> None:
    """``bad(key, what, value)``'s ValueError for the first part of today's fleet in a plan's
    ``current`` that no plan writes: where it was given other than ``plan.current`` or
    ``--current``; its maps over other tiers than its ``tiers``; replicas or GPUs per replica
    outside what a scenario may give (1 to :data:`~tiersim.limits.MAX_REPLICAS_CEILING`
    replicas, 1 to :data:`~tiersim.limits.MAX_GPUS_PER_REPLICA` GPUs; until round 56
    2^70 of either was read and printed); a ``design`` other than its tiers' label; a
    prefill count that leaves a split tier no decode replica; more dropped requests than a
    run counts (int64)."""
    from tiersim.errors import json_written
    from tiersim.limits import MAX_GPUS_PER_REPLICA, MAX_REPLICAS_CEILING

    if current["given"] not in ("plan.current", "--current"):
        raise bad("given", 'must be "plan.current" or "--current" (where today\'s fleet was '
                  "named)", current["given"])
    tiers = current["tiers"]
    most = {"replicas": MAX_REPLICAS_CEILING, "gpus_per_replica": MAX_GPUS_PER_REPLICA}
    for key in ("replicas", "gpus_per_replica"):
        if sorted(current[key]) != sorted(tiers) or not tiers:
            raise bad(key, f"must give each of its tiers {json_written(tiers)}", current[key])
        for tier, n in current[key].items():
            if not 1 <= n <= most[key]:
                raise bad(f"{key}.{tier}", f"must be a whole number from 1 to {most[key]:,} "
                          "(what a scenario may give)", n)
    gpus = current["gpus_per_replica"]
    label = "+".join(t if gpus[t] == 1 else f"{t}@{gpus[t]}" for t in tiers)
    if current["design"] != label:
        raise bad("design", f"must be its tiers' label {json_written(label)}", current["design"])
    prefill = current.get("prefill")
    if prefill is not None:
        if sorted(prefill) != sorted(tiers):
            raise bad("prefill", f"must give each of its tiers {json_written(tiers)}", prefill)
        for tier, n in prefill.items():
            if n is not None and not 1 <= n < current["replicas"][tier]:
                raise bad(f"prefill.{tier}", "must be null (served aggregated) or from 1 to "
                          f"{current['replicas'][tier] - 1} (its replicas less a decode one)", n)
    if current["dropped"] > 2**63 - 1:
        raise bad("dropped", f"must be at most {2**63 - 1} (a run's count)", current["dropped"])


def _check_split(current: dict[str, Any], plan: dict[str, Any] | None,
                 uniform: tuple[dict[str, Any], ...]) -> None:
    """A ValueError naming the first part of ``current``'s split of the saving per hour that
    no plan writes: its four keys not together, a part without a plan, a split of a fleet of
    several tiers or at no sized uniform fleet of today's tier that met every constraint,
    right-sizing other than today's USD/hour less that fleet's, parts that do not sum to
    ``vs_current_per_hour_usd``, or both the parts and the reason they are not given (or
    neither)."""
    from tiersim.errors import json_written
    from tiersim.numbers import shown

    def bad(key: str, what: str, value: Any) -> ValueError:
        # cut as --current quotes it: a hand-edited 400-digit count was repeated whole
        return ValueError(f"'plan.current.{key}' {what}, got {shown(json_written(value))}")

    given = [k for k in SPLIT_KEYS if k in current]
    if not given:
        return  # written before the split was recorded
    for key in SPLIT_KEYS:
        if key not in current:
            raise KeyError(f"'plan.current.{key}'")
    right, design = current["right_sizing_per_hour_usd"], current["design_vs_uniform_per_hour_usd"]
    name, why = current["split_uniform_design"], current["split_not_given"]
    if current["vs_current_per_hour_usd"] is None or plan is None:
        for key in SPLIT_KEYS:
            if current[key] is not None:
                raise bad(key, "must be null in a plan with no fleet", current[key])
        return
    if why is not None:
        for key in SPLIT_KEYS[:3]:
            if current[key] is not None:
                raise bad(key, "must be null where split_not_given says why there is no split",
                          current[key])
        return
    if right is None or design is None or name is None:
        missing = next(k for k in SPLIT_KEYS[:3] if current[k] is None)
        raise bad(missing, "must be given, or split_not_given say why not", None)
    tiers = current["tiers"]
    sized = [u for u in uniform if u.get("design") == name and list(u.get("tiers") or ())
             == tiers and u.get("feasible")]
    if len(tiers) != 1 or not sized:
        raise bad("split_uniform_design", f"must name a sized uniform fleet of today's tier "
                  f"{json_written(tiers)} in 'uniform' that meets every constraint", name)
    if not difference_agrees(right, current["cost_per_hour_usd"],
                             sized[0]["cost_per_hour_usd"]):
        raise bad("right_sizing_per_hour_usd", "must be today's cost_per_hour_usd less the "
                  f"sized uniform {name} fleet's", right)
    if not difference_agrees(design, current["vs_current_per_hour_usd"], right):
        raise bad("design_vs_uniform_per_hour_usd", "must be vs_current_per_hour_usd less "
                  "right_sizing_per_hour_usd (the two parts sum to the saving)", design)
