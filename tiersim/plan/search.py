"""The replica search: the fewest replicas per tier that meet the latency SLOs.

Pure: the fleet is judged by a callable ``judge(replicas) -> Verdict``, so the algorithm is
tested with a synthetic, monotone latency function and no simulation.

Monotonicity: routing is decided before the simulation, so a tier's latencies depend only on
its own replica count and the requests sent to it, and more replicas never make them worse.

1. *Doubling*: start every tier at ``start`` replicas; while latency misses, double the tiers
   that miss on their own (every tier when none does alone). Stop as hopeless when a tier would
   pass ``limit`` or two doublings in a row have stopped closing the gap (:func:`hopeless`).
2. *Bisection*: with the others fixed, lower each tier (most expensive replica first) to its
   smallest count that keeps latency met, by bisection on ``[0, r]``, then up to :data:`BELOW`
   counts under it while the fleets tried miss by no more than :data:`NOISE` (a simulated p99
   is not quite monotone in replicas). Lowering a later tier never makes an earlier tier's
   count - 1 feasible again (the tiers are independent), so one pass gives a fleet where one
   replica fewer in any tier misses.

3. *Trade*: one replica of a dearer tier for up to :data:`TRADE` of a cheaper one where they
   cost less together and meet latency, then step 2's second pass again (:func:`_trade`):
   tiers of one fleet are not quite independent (agent sessions, a pooled p99).

For K tiers needing up to R replicas each this makes O(K log R) judgements, against R^K for the
blind grid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Verdict:
    """How one fleet did: latency met, the tiers that miss on their own, and the worst
    overshoot (the largest latency over its SLO, as a fraction of the SLO; <= 0 when met)."""

    ok: bool
    violators: tuple[str, ...] = ()
    overshoot: float = 0.0


@dataclass
class Sizing:
    """The outcome of one search: the replicas found (None when hopeless), why not, and every
    fleet judged in order."""

    replicas: dict[str, int] | None
    reason: str = ""
    judged: list[dict[str, int]] = field(default_factory=list)


Judge = Callable[[dict[str, int]], Verdict]


def hopeless(history: list[float]) -> bool:
    """True when doubling has stopped closing the gap to the SLO.

    ``history`` holds the worst overshoot after each doubling. Hopeless when each of the last
    two doublings closed less than :data:`FLAT` of the overshoot left: replicas no longer
    help. No extrapolation: a p99 can sit above its SLO for several doublings and then fall
    through it at once (p99 TPOT, when the share of decode steps that wait behind a long
    prefill chunk drops under 1%), so a geometric tail fitted to the drops so far is no guide.
    """
    if len(history) < 3:
        return False
    d1, d2, left = history[-3] - history[-2], history[-2] - history[-1], history[-1]
    return d1 <= FLAT * left and d2 <= FLAT * left


HOPELESS = "more replicas do not help"
"""How a sizing's reason starts where the p99 is set by what replicas cannot shorten (a step
itself): the planner then names the larger GPU counts per replica it left out (round 57)."""

#: The share of the remaining overshoot a doubling must close to count as progress.
FLAT = 0.02


def size_replicas(names: list[str], judge: Judge, unit_cost: dict[str, float],
                  start: int = 1, limit: int = 1024) -> Sizing:
    """The fewest replicas per tier meeting latency (see the module docstring)."""
    judged: list[dict[str, int]] = []
    seen: dict[tuple, Verdict] = {}

    def look(replicas: dict[str, int]) -> Verdict:
        """Judge one fleet and remember it (a fleet judged before is not judged again)."""
        key = tuple(sorted(replicas.items()))
        if key not in seen:
            judged.append(dict(replicas))
            seen[key] = judge(dict(replicas))
        return seen[key]

    replicas = dict.fromkeys(names, start)
    grown, why = _double(names, replicas, look, limit)
    if grown is None:
        return Sizing(None, why, judged)
    return Sizing(_bisect(names, grown, look, unit_cost, limit), "", judged)


def _double(names: list[str], replicas: dict[str, int], look, limit: int):
    """Double the replicas of missing tiers until latency is met; (None, why) when hopeless.

    The tiers whose requests miss are grown first; when that stops helping, every tier is
    (a cascade's escalated requests miss on the tier they end on, but wait on the first
    pass's queue too, which only the first tier's replicas shorten)."""
    verdict = look(replicas)
    history, grow_all = [verdict.overshoot], False
    while not verdict.ok:
        grow = list(names) if grow_all else (
            [n for n in names if n in verdict.violators] or list(names))
        if all(replicas[n] >= limit for n in grow):
            return None, (f"latency still missed at {fleet_words(replicas)} (limit {limit} per "
                          "tier)")
        for n in grow:  # the limit itself is tried last, a power of two or not
            replicas[n] = min(replicas[n] * 2, max(limit, replicas[n]))
        verdict = look(replicas)
        history.append(verdict.overshoot)
        if not verdict.ok and hopeless(history):
            if not grow_all and len(grow) < len(names):
                grow_all, history = True, [verdict.overshoot]
                continue
            return None, (f"{HOPELESS} at {fleet_words(replicas)}: the p99 is set "
                          "by what replicas cannot shorten (a single request's step, or in a "
                          "cascade the first pass an escalated request waits for)")
    return replicas, ""


def fleet_words(replicas: dict[str, int]) -> str:
    """A fleet's replicas in words: ``8 w4a16 replicas``, ``4 w4a16 + 2 bf16 replicas``,
    ``1 bf16 replica``."""
    one = len(replicas) == 1 and next(iter(replicas.values())) == 1
    return (" + ".join(f"{count:,} {name}" for name, count in replicas.items())
            + (" replica" if one else " replicas"))


def _bisect(names: list[str], replicas: dict[str, int], look, unit_cost: dict[str, float],
            limit: int = 1024):
    """Lower each tier to its smallest count keeping latency met (most expensive first), then
    trade dear replicas for cheaper ones while that meets latency (:func:`_trade`)."""
    order = sorted(names, key=lambda n: unit_cost[n], reverse=True)
    for name in order:
        lo, hi = 0, replicas[name]  # lo: known too few (0 serves nothing), hi: known enough
        missed_by = None  # how far lo's fleet missed
        while hi - lo > 1:
            mid = (lo + hi) // 2
            verdict = look({**replicas, name: mid})
            if verdict.ok:
                hi = mid
            else:
                lo, missed_by = mid, verdict.overshoot
        replicas[name] = _below(name, replicas, hi, missed_by, look)
    if len(order) < 2:
        return replicas
    replicas = _settle(order, replicas, look)
    while _trade(order, replicas, look, unit_cost, limit):
        replicas = _settle(order, replicas, look)
    return replicas


#: At most this many cheaper replicas are tried in place of one dearer replica.
TRADE = 4


def _trade(order: list[str], replicas: dict[str, int], look, unit_cost: dict[str, float],
           limit: int) -> bool:
    """One replica fewer of a dearer tier for up to :data:`TRADE` more of a cheaper one, where
    they cost less together and meet latency; True when a trade was made (``replicas``
    updated). Tiers of one fleet are not independent (agent sessions: a step waits for the one
    before it, perhaps on the other tier; the fleet's p99 pools every tier), so the dear tier
    may need the cheap one larger: sessions over fp8 (1 USD/hour a replica) and bf16 (3.5)
    settled at 2 + 2 (bf16 at 1 missed beside fp8 at 2), 9 USD/hour, where fp8 3 + bf16 1,
    6.5 USD/hour, met latency."""
    for dear in order:  # most expensive replica first
        if replicas[dear] < 2:
            continue  # zero replicas drops the tier: another design
        for cheap in reversed(order):
            extra = 1
            while (extra <= TRADE and extra * unit_cost[cheap] < unit_cost[dear]
                   and replicas[cheap] + extra <= limit):
                trial = {**replicas, dear: replicas[dear] - 1, cheap: replicas[cheap] + extra}
                if look(trial).ok:
                    replicas.update(trial)
                    return True
                extra += 1
    return False


def _settle(order: list[str], replicas: dict[str, int], look) -> dict[str, int]:
    """Each tier lowered again, with every other at its final count, until a pass over them
    lowers none. The fleet's p99 pools every tier's requests, and a simulated p99 is not quite
    monotone, so a tier judged beside another's doubled count may keep more replicas than it
    needs beside that tier's final one (10 minutes of plan_default.yaml at --slo-tpot-p99 0.06
    sized nvfp4+bf16 at 10 + 14: bf16's p99 TPOT was 0.0603 s at 16 replicas, 0.0575 s at 14,
    and 9 + 14 met the SLO). Tiers simulated alone are judged again from the cache."""
    lowered = True
    while lowered:
        lowered = False
        for name in order:
            r = hi = replicas[name]
            verdict = look({**replicas, name: hi - 1}) if hi > 1 else None
            while verdict is not None and verdict.ok:  # one fewer meets latency: lower it
                hi -= 1
                verdict = look({**replicas, name: hi - 1}) if hi > 1 else None
            replicas[name] = _below(name, replicas, hi,
                                    None if verdict is None else verdict.overshoot, look)
            lowered = lowered or replicas[name] < r
    return replicas


#: A fleet that misses its SLOs by at most this share of them (its overshoot) is within the
#: noise of a simulated p99: a smaller fleet may still meet them, so the search looks below it.
NOISE = 0.10

#: How many counts under the one just below the bisection's answer the search looks at.
BELOW = 2


def _below(name: str, replicas: dict[str, int], hi: int, missed_by: float | None, look) -> int:
    """The smallest count meeting latency at most :data:`BELOW` under the one below ``hi``
    (which missed by ``missed_by``; None: not tried), looking on while each count tried misses
    by no more than :data:`NOISE`: a simulated p99 is not quite monotone in replicas (uniform
    fp8 on 2 minutes of plan_default.yaml: p99 TPOT 0.0353 s at 5 replicas, 0.0379 s at 6;
    bisection under a 0.036 s SLO kept 7, though 5 met it)."""
    count, floor = hi - 2, hi - 1 - BELOW  # hi - 1 missed by missed_by
    while missed_by is not None and missed_by <= NOISE and count >= max(1, floor):
        verdict = look({**replicas, name: count})
        if verdict.ok:  # a new answer: the count below it is looked at too
            hi, floor, missed_by = count, count - 1 - BELOW, 0.0
        else:
            missed_by = verdict.overshoot
        count -= 1
    return hi
