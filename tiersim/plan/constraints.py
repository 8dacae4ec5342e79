"""What a plan must meet and how a simulated fleet is held against it: the p99 latency limits,
the accuracy floor and no request dropped (:class:`Constraints`); per constraint the limit,
value and margin (:func:`margins`), the replica search's verdict on one fleet
(:func:`verdict`) and the constraints a fleet misses, in words (:func:`_missed`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tiersim.plan.evaluate import Outcome
from tiersim.plan.search import Verdict
from tiersim.results import (
    figure_text,
    floor_pair,
    over_digits,
    reaches_floor,
    round_sig,
    whose_p99,
    within_limit,
)

FLEET_P99S = ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s")
"""The p99s held over the fleet's requests, or its agent tasks (a limit of None is not held);
under ``slo_scope: tier`` each tier's own TTFT, TPOT and end-to-end p99 are held too (a
request is its final tier's, as for each tier's p99s), not its task one (a task's steps may
be served by several tiers)."""

TIER_P99S = ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s")
"""The p99s each tier has of its own (:data:`FLEET_P99S` but the task latency): held under
``slo_scope: tier``, and noted under ``fleet`` where a tier's is over a limit the fleet's
meets. Before round 55's e2e55 the end-to-end one was neither."""

OVERSHOOT_CAP = 1e6
"""The overshoot of a latency nothing finished to measure (every request dropped), or one
too far over its limit for a float (:func:`_overshoot`)."""


@dataclass(frozen=True)
class Constraints:
    """What a plan must meet: p99 latencies (seconds), the accuracy floor, and no request
    dropped."""

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    accuracy_floor: float | None = None
    slo_scope: str = "fleet"  # "tier": every tier's own p99 within the limits too
    e2e_p99_s: float | None = None  # end-to-end per request (an agent turn): the fleet's p99
    session_p99_s: float | None = None  # per agent task, first arrival to last finish

    @classmethod
    def of(cls, scenario, ttft: float | None = None, tpot: float | None = None,
           floor: float | None = None, e2e: float | None = None,
           session: float | None = None) -> Constraints:
        """Given values, else the scenario's ``slo`` (its limits and ``scope``) and
        ``accuracy_floor``."""
        return cls(ttft if ttft is not None else scenario.slo.ttft_p99_s,
                   tpot if tpot is not None else scenario.slo.tpot_p99_s,
                   floor if floor is not None else scenario.accuracy_floor,
                   getattr(scenario.slo, "scope", "fleet"),  # a stand-in scenario may lack it
                   e2e if e2e is not None else getattr(scenario.slo, "e2e_p99_s", None),
                   session if session is not None else getattr(scenario.slo, "session_p99_s",
                                                               None))

    def as_dict(self) -> dict[str, float | str | None]:
        """JSON form (no dropped request is always required too; see ``margins``); the SLO's
        scope only where it is ``tier``, and the end-to-end limit only where one is set (a
        plan of neither reads as before)."""
        out = {"ttft_p99_s": self.ttft_p99_s, "tpot_p99_s": self.tpot_p99_s,
               "accuracy_floor": self.accuracy_floor}
        for key in ("e2e_p99_s", "session_p99_s"):  # where set
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out if self.slo_scope == "fleet" else {**out, "slo_scope": self.slo_scope}


def held_figures(o: Outcome, c: Constraints) -> dict[str, float | None]:
    """``o``'s end-to-end and task p99s whose limits ``c`` holds, by key: a seed check's rows
    and a robust plan's give them only then (:data:`tiersim.results_seeds.HELD_P99S`)."""
    return {key: getattr(o, key) for key in ("e2e_p99_s", "session_p99_s")
            if getattr(c, key) is not None}


def held_p99(o: Outcome, c: Constraints, key: str) -> float | None:
    """The p99 ``key`` held against its limit: the fleet's, or under ``slo_scope: tier`` the
    worst of the fleet's and every tier's that served requests (the task latency p99 is the
    fleet's under either scope)."""
    value = getattr(o, key)
    if c.slo_scope != "tier" or key not in TIER_P99S:
        return value
    own = [getattr(t, key) for t in o.tiers.values() if t.requests]
    known = [v for v in (value, *own) if v is not None]
    return max(known) if known else value


def held_tier(o: Outcome, c: Constraints, key: str) -> str | None:
    """Under ``slo_scope: tier``, the tier whose own p99 ``key`` is the one held
    (:func:`held_p99`) where it is over the fleet's; None where the fleet's is held."""
    if c.slo_scope != "tier" or key not in TIER_P99S:
        return None
    own = {n: getattr(t, key) for n, t in o.tiers.items()
           if t.requests and getattr(t, key) is not None}
    if not own:
        return None
    name = max(own, key=own.__getitem__)
    fleet = getattr(o, key)
    return name if fleet is None or own[name] > fleet else None


def margins(o: Outcome, c: Constraints) -> dict[str, dict[str, Any]]:
    """Per constraint: limit, value, margin (positive = slack) and whether it is met; under
    ``slo_scope: tier`` a latency's value is its worst tier's (:func:`held_p99`), that tier
    named as ``tier`` where it is over the fleet's (:func:`held_tier`): the value then is not
    the fleet's p99 plan.json and summary.json give beside it."""
    out = {}
    for key in FLEET_P99S:
        limit = getattr(c, key)
        if limit is None:  # a p99 no limit holds is not read (an outcome may not carry it)
            continue
        value = held_p99(o, c, key)
        v = _measured(value, o.dropped, _finished(o))
        shown = round_sig(v) if math.isfinite(v) else v  # as met is judged: never < 0 if met
        tier = held_tier(o, c, key)
        out[key] = {"limit": limit, "value": value, "margin": limit - shown,
                    "margin_frac": (limit - shown) / limit, "met": within_limit(v, limit),
                    **({"tier": tier} if tier else {})}
    if c.accuracy_floor is not None and o.accuracy is None:  # no request reached the fleet
        out["accuracy"] = {"limit": c.accuracy_floor, "value": None, "margin": None, "met": True}
    elif c.accuracy_floor is not None:
        out["accuracy"] = {"limit": c.accuracy_floor, "value": o.accuracy,
                           "margin": o.accuracy - c.accuracy_floor,
                           "met": reaches_floor(o.accuracy, c.accuracy_floor)}
    out["dropped"] = {"limit": 0, "value": o.dropped, "met": o.dropped == 0}
    return out


def verdict(o: Outcome, c: Constraints) -> Verdict:
    """Latency (and drops) of one simulated fleet, for the replica search."""
    over = [_overshoot(getattr(o, k), getattr(c, k), o.dropped, _finished(o))
            for k in FLEET_P99S]
    violators = tuple(n for n, t in o.tiers.items() if t.dropped or not all(
        _within(getattr(t, k), getattr(c, k), t.dropped, t.requests - t.dropped)
        for k in TIER_P99S if t.requests))
    worst = max(over + [10.0 * o.dropped / max(sum(t.requests for t in o.tiers.values()), 1)])
    met = o.dropped == 0 and all(_within(getattr(o, k), getattr(c, k), o.dropped, _finished(o))
                                 for k in FLEET_P99S)
    if c.slo_scope == "tier" and violators:  # a tier's own p99 over a limit misses it
        met = False
        worst = max(worst, *(_overshoot(held_p99(o, c, k), getattr(c, k), o.dropped,
                                        _finished(o)) for k in TIER_P99S))
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


def missed_keys(o: Outcome, c: Constraints) -> list[str]:
    """The keys of the constraints an outcome misses (``ttft_p99_s``, ``accuracy``, ...), in
    the order :func:`_missed` words them: plan.json ``current.missed_keys``, which the seed
    check reads (it read the keys out of the words, where a new wording read as "other")."""
    return [key for key, m in margins(o, c).items() if not m["met"]]


def _missed(o: Outcome, c: Constraints) -> str | None:
    """The constraints an outcome misses, in words (None when it meets them all)."""
    words = []
    for key, m in margins(o, c).items():
        if not m["met"]:
            value, limit = m["value"], m["limit"]
            if key == "accuracy" and value is not None:  # in percent, as the plan's own line;
                # worded as a routed design's missed floor (planner), one line lists both
                words.append("accuracy {} < floor {}".format(*floor_pair(value, limit)))
                continue
            # to 3 figures as the plan's margins and tiersim run print a p99 (figure_text: 1,500
            # s and 1,234 dropped, not 1.5e+03 and 1.23e+03); one over its limit by less than
            # they show, to more
            shown = ("none finished" if value is None else
                     figure_text(value, digits=over_digits(value, limit, 3)))
            words.append(f"{key} {shown} vs limit {limit:.10g}{whose_p99(m)}")
    return "; ".join(words) or None
