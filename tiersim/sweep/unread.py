"""Refusals of an axis or key no point of the sweep reads, so that every point would run the
same scenario under another label: an axis that only labels the points or is never read
(:func:`check_unread_axes`), a ``router:`` key no policy of the sweep reads
(:func:`check_router_keys`), a ``workload.sessions`` key no source reads
(:func:`check_session_keys`)."""

from __future__ import annotations

from typing import Any

from tiersim.errors import ScenarioError
from tiersim.sweep import axes as ax
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner
from tiersim.sweep.provenance import _max_replicas, runner_name


def check_unread_axes(plan: SweepPlan, runner: PointRunner) -> None:
    """Refuse an axis no point reads, so that every point would run the same scenario under
    another label: a baseline-only tier's ``replicas`` (its uniform fleet is sized by
    simulation), and, where the points estimate their savings (``--no-baselines``) and size
    nothing, ``limits.gpus_per_replica`` (the sizes that sizing may use), ``limits.max_replicas``
    (the cap on it) or a whole ``limits`` map, unless some point's tier is above its own cap
    (the axis then decides which points run), and anything of a baseline-only tier (the
    estimate leaves them out). The scenario's ``name`` as an axis of
    its own only labels the points (zipped with another axis it labels that axis' values);
    an axis under ``plan:`` is read by ``tiersim plan`` alone (it labelled identical points)."""
    estimates = runner_name(runner) == "estimate_runner"
    sweep_map = plan.base.get("sweep")
    alone = {key for key in sweep_map if key != "zip"} if isinstance(sweep_map, dict) else set()
    for path in plan.axes:
        canon = ax.canonical_path(plan.base, path, plan.source)
        if canon == ("name",) and path in alone:
            raise ax.SweepError(plan.source, path, "only labels the results (the summary's "
                                "scenario name), so every point would run the same; drop the "
                                "axis, or zip it with the axis it labels")
        if canon[0] == "plan":
            raise ax.SweepError(plan.source, path, "is read by tiersim plan alone (a sweep's "
                                "points run as tiersim run does, which leaves plan: aside), so "
                                "every point would run the same; drop the axis, and give each "
                                "value to its own tiersim plan (--current, --hours-per-month)")
        if canon[0] == "baselines" and canon[2:] == ("replicas",):
            raise ax.SweepError(plan.source, path, "a baseline's replicas are never read (its "
                                "uniform fleet is sized by simulation), so every point would "
                                "run the same; sweep limits.max_replicas to cap that sizing, "
                                "or move the tier under tiers: to set its replicas")
        if estimates and (canon[0] == "baselines" or canon == ("limits", "gpus_per_replica")
                          or canon[0] == "limits" and not _a_cap_refuses_a_point(plan)):
            raise ax.SweepError(plan.source, path, "is read only when the simulated baselines "
                                "are sized, and --no-baselines estimates them instead, so every "
                                "point would run the same; drop --no-baselines, or the axis")
        unread = _unread_scheduler_key(plan, canon)
        if unread is not None:
            raise ax.SweepError(plan.source, path, unread)


def _a_cap_refuses_a_point(plan: SweepPlan) -> bool:
    """Whether some point has a tier (or baseline) of more replicas than its own
    ``limits.max_replicas`` allows, so that a ``limits`` axis decides which points fail; a
    limit or replica count that is no number counts too (the point's check names it)."""
    from tiersim.scenario import DEFAULT_MAX_REPLICAS

    for point in plan.points:
        doc = ax.apply(plan.base, point.values, plan.source)
        cap = _max_replicas(doc)
        cap = DEFAULT_MAX_REPLICAS if cap is None else cap
        entries = [*(doc.get("tiers") or []), *(doc.get("baselines") or [])]
        counts = [entry.get("replicas", 1) if isinstance(entry, dict) else None
                  for entry in entries]
        for count in [cap, *counts]:
            if not isinstance(count, int | float) or isinstance(count, bool):
                return True
        if any(count > cap for count in counts):
            return True
    return False


def _unread_scheduler_key(plan: SweepPlan, canon: tuple[str, ...]) -> str | None:
    """Why an axis over a tier's scheduler key of :data:`tiersim.scenario_checks.READ_ONLY_WITH` is
    never read (the key it needs is set at no point, so every point runs the same), else
    None."""
    from tiersim.scenario import READ_ONLY_WITH

    if len(canon) != 4 or canon[0] not in ("tiers", "baselines") or canon[2] != "scheduler":
        return None
    needed = READ_ONLY_WITH.get(canon[3])
    if needed is None:
        return None
    key, words = needed
    for point in plan.points:
        tiers = ax.apply(plan.base, point.values, plan.source).get(canon[0])
        tier = tiers[int(canon[1])] if isinstance(tiers, list) and canon[1].isdigit() and (
            int(canon[1]) < len(tiers)) else None
        scheduler = tier.get("scheduler") if isinstance(tier, dict) else None
        if not isinstance(scheduler, dict) or scheduler.get(key):
            return None  # read at this point (or not a map: the scenario check names it)
    return (f"{canon[3]} is read only with {words}, which no point of the sweep gives this "
            f"tier, so every point would run the same; set {key} on the tier (or sweep it), or "
            "drop the axis")


def check_router_keys(plan: SweepPlan) -> None:
    """Refuse a ``router:`` key the base scenario or an axis sets that no policy of the sweep
    reads (each point's ``policy``, and ``step_fallback`` of a step_type one): every point
    would ignore it. A key some point's policy reads stays (a sweep over ``router.policy``
    keeps each policy's options in the base)."""
    from tiersim.routing.config import policies_in_play, unread_key_problem, unread_router_key

    base = plan.base.get("router")
    base = base if isinstance(base, dict) else {}
    policies: set[str] = set()
    setters: dict[str, str | None] = {str(key): None for key in base}  # key -> axis, if any
    for point in _points_setting(plan, "router"):
        whole = point.values.get("router")
        if isinstance(whole, dict):  # a whole router map is one point's router: its own keys
            found = unread_router_key(whole)
            if found is not None:
                raise ax.SweepError(plan.source, "router", f"router.{found[0]}: {found[1]}")
        router = _map_at(base, point.values, setters, "router")
        policies |= policies_in_play(router)
    _refuse_unread(plan, setters, lambda key: unread_key_problem(key, policies), "router")


def _refuse_unread(plan: SweepPlan, setters: dict[str, str | None], problem_of,
                   target: str) -> None:
    """Refuse the first key of the ``target`` map that ``problem_of(key)`` finds unread: at
    the axis that sets it (``setters``), else at the base scenario's key."""
    for key, axis in setters.items():
        problem = problem_of(key)
        if problem is not None and axis is None:
            raise ScenarioError(plan.source, f"{target}.{key}", problem)
        if problem is not None:
            raise ax.SweepError(plan.source, axis, problem)


def _points_setting(plan: SweepPlan, target: str) -> list[ax.Point]:
    """The points a check of the ``target`` map (``router``, ``workload.sessions``) reads: one
    per combination of the value objects of the axes that can set it (an axis at ``target``,
    above it or below it); points holding the same objects there build the same map, so the
    others add nothing; all of one point when no axis sets it.

    NOTE (speed): a 10^6-point grid built a router map per point for a check that one
    point per router setting decides."""
    paths = [path for path in plan.axes if path == target or target.startswith(path + ".")
             or path.startswith(target + ".")]
    found: dict[tuple[int, ...], ax.Point] = {}
    for point in plan.points or [ax.Point("", 0, {})]:
        found.setdefault(tuple(id(point.values.get(path)) for path in paths), point)
        if not paths:
            break
    return list(found.values())


def _map_at(base: dict[str, Any], values: dict[str, Any], setters: dict[str, str | None],
            target: str) -> dict[str, Any]:
    """The ``target`` map (``router``, ``workload.sessions``) at a point, as far as its keys
    go: an axis at ``target`` or above it (``workload`` for ``workload.sessions``) replaces the
    map whole and sets its keys; a deeper one (``router.cascade.threshold``) sets its key. Each
    key an axis sets goes in ``setters`` with that axis."""
    depth = target.count(".") + 1
    out = dict(base)
    for path, value in values.items():
        if path == target or target.startswith(path + "."):
            for part in target[len(path):].split(".")[1:]:
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, dict):
                out = dict(value)
                setters.update({str(k): path for k in value if str(k) not in setters})
        elif path.startswith(target + "."):
            key = path.split(".")[depth]
            out[key] = value if path.count(".") == depth else out.get(key)
            setters.setdefault(key, path)
    return out


def check_session_keys(plan: SweepPlan) -> None:
    """Refuse a ``workload.sessions`` key the base scenario or an axis sets that no point's
    ``source`` reads: every point would ignore it. A key some point's source reads stays (a
    sweep over ``workload.sessions.source`` keeps the generator's settings in the base for its
    generating points), as :func:`check_router_keys` keeps a router key some policy reads."""
    from tiersim.workload.sessions import source_named, unread_session_key_problem

    workload = plan.base.get("workload")
    base = workload.get("sessions") if isinstance(workload, dict) else None
    base = base if isinstance(base, dict) else {}
    sources: set[str] = set()
    setters: dict[str, str | None] = {str(key): None for key in base}  # key -> axis, if any
    for point in _points_setting(plan, "workload.sessions"):
        sources.add(source_named(_map_at(base, point.values, setters,
                                         "workload.sessions").get("source")))
    _refuse_unread(plan, setters, lambda key: unread_session_key_problem(key, sources),
                   "workload.sessions")
