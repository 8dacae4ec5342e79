"""The two-type closed form of precision-tier routing, its frontiers, and estimation from data.

Model: two tiers, cheap (cost ``c0`` per request) and top (``c0 + dc``). A request is easy with
probability ``p`` (the cheap tier loses ``eps`` of accuracy on it) or hard (loses ``delta >
eps``). Accuracy is measured relative to the top tier's, ``a_top``.

- Static split (blind random share ``f`` on the top tier): a straight line from (c0, a_top - L)
  to (c0 + dc, a_top), with ``L = p eps + (1 - p) delta`` the cheap tier's mean loss.
- Oracle routing (upgrade hard requests first): concave, piecewise linear, one kink at
  ``f = 1 - p``, cost ``c0 + (1 - p) dc``, accuracy ``a_top - p eps``.
- The largest cost gap between them at equal accuracy is at the kink:
  ``dC* = p (1 - p) (delta - eps) / (p eps + (1 - p) delta) x dc``; it vanishes as p -> 0 or 1.
- Real labels give ``eps < 0``: on some requests the cheap tier is right where the top tier is
  wrong. The model keeps that loss as it is (clipping it to 0 would put the all-cheap point below
  the cheap tier's real accuracy and invent a saving). The kink then lies above ``a_top`` (the
  oracle, which knows those requests, beats both tiers), the static split ends at ``a_top``, and
  the largest gap is there: ``dC* = p (delta - eps) / delta x dc``.

Savings are quoted against the cheapest uniform tier that already meets the accuracy floor: of
the model's two tiers (:func:`savings_at_floor`), or where a scenario prices every tier's
uniform fleet, of all of them (:func:`with_uniform`), as ``tiersim run`` picks its baseline.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from tiersim.results import FLOOR_TOLERANCE
from tiersim.results_figures import CLOSED_FORM, closed_form_words  # noqa: F401 (its names)

TOLERANCE = 1e-12
"""Accuracy differences below this are rounding (labels averaged in floats): a mean loss this
small is no loss. A floor is met by an accuracy within :data:`FLOOR_TOLERANCE` below it, the
rule of a run's floor verdict and savings (a floor copied from a printed accuracy)."""


@dataclass(frozen=True)
class TwoType:
    """Parameters of the two-type model (costs per request, accuracy of the top tier)."""

    p: float
    eps: float
    delta: float
    dc: float = 1.0
    c0: float = 0.0
    a_top: float = 1.0

    def __post_init__(self):
        """Reject parameters outside the model: p not a share, eps > delta, the cheap tier more
        accurate on average than the top (a negative mean loss), a negative dc."""
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"p must be in [0, 1] (got {self.p})")
        if self.delta < self.eps:
            raise ValueError(f"need eps <= delta (got eps={self.eps}, delta={self.delta})")
        if mean_loss(self.p, self.eps, self.delta) < -TOLERANCE:  # equal up to rounding: allowed
            raise ValueError(f"the cheap tier is the more accurate on average (p eps + (1 - p) "
                             f"delta < 0 with p={self.p}, eps={self.eps}, delta={self.delta})")
        if self.dc < 0:
            raise ValueError(f"dc must be >= 0 (got {self.dc})")


def mean_loss(p: float, eps: float, delta: float) -> float:
    """L = p eps + (1 - p) delta: the cheap tier's accuracy loss over all requests."""
    return p * eps + (1.0 - p) * delta


def accuracy_note(cheap: str, top: str, est: dict) -> str | None:
    """Why the closed form does not model the tiers ``cheap`` and ``top`` given their estimate
    ``est`` (:func:`estimate`): the cheap tier the more accurate (a negative delta or mean
    loss); None where it applies. ``tiersim run``'s summary and ``tiersim analytic`` both say
    this note."""
    loss = mean_loss(est["p"], est["eps"], est["delta"])
    if est["delta"] >= 0 and loss >= -TOLERANCE:
        return None
    return (f"{cheap} is more accurate than {top} (two-type delta {est['delta']:.3g}, mean loss "
            f"{loss:.3g}): the closed form assumes the top tier is the more accurate; not "
            "modelled")


def max_saving(p: float, eps: float, delta: float, dc: float = 1.0) -> float:
    """dC*, the static split's largest extra cost over oracle routing at equal accuracy:
    ``p (delta - eps) x dc x min((1 - p) / L, 1 / delta)``, which is ``p (1 - p) (delta - eps) /
    L x dc`` for eps >= 0 (the gap at the kink) and ``p (delta - eps) / delta x dc`` for eps < 0
    (the gap at ``a_top``, where the static split ends). 0 when L or delta is 0."""
    loss = mean_loss(p, eps, delta)
    if loss <= TOLERANCE or delta <= 0:
        return 0.0
    return p * (delta - eps) * dc * min((1.0 - p) / loss, 1.0 / delta)


def kink(m: TwoType) -> tuple[float, float]:
    """(cost, accuracy) of the oracle frontier's kink: every hard request upgraded."""
    return m.c0 + (1.0 - m.p) * m.dc, m.a_top - m.p * m.eps


def oracle_frontier(m: TwoType) -> np.ndarray:
    """Vertices (cost, accuracy) of the oracle frontier: all cheap, kink, all top."""
    cheap = (m.c0, m.a_top - mean_loss(m.p, m.eps, m.delta))
    return np.array([cheap, kink(m), (m.c0 + m.dc, m.a_top)])


def static_frontier(m: TwoType) -> np.ndarray:
    """Vertices (cost, accuracy) of the static split: all cheap, all top."""
    return oracle_frontier(m)[[0, 2]]


def cost_at_accuracy(frontier: np.ndarray, accuracy) -> np.ndarray:
    """Least cost a piecewise-linear frontier needs to reach at least ``accuracy``: its cheapest
    vertex's cost below its accuracy range (that vertex already meets it), NaN above (out of
    reach, beyond the floor tolerance). Vertices that cost more without adding accuracy are
    ignored."""
    f = upper_hull(frontier)
    acc = np.asarray(accuracy, dtype=np.float64)
    out = np.interp(acc, f[:, 1], f[:, 0])  # below the range: the cheapest vertex's cost
    return np.where(acc > f[-1, 1] + FLOOR_TOLERANCE, np.nan, out)


def max_cost_gap(routed: np.ndarray, static: np.ndarray) -> tuple[float, float]:
    """Largest (static cost - routed cost) at equal accuracy, and the accuracy where it occurs.

    Both frontiers are piecewise linear, so the largest gap is at a vertex of one of them.
    """
    candidates = np.concatenate([np.asarray(routed)[:, 1], np.asarray(static)[:, 1]])
    gaps = cost_at_accuracy(static, candidates) - cost_at_accuracy(routed, candidates)
    if np.all(np.isnan(gaps)):
        return float("nan"), float("nan")
    i = int(np.nanargmax(gaps))
    return float(gaps[i]), float(candidates[i])


def upper_hull(points: np.ndarray) -> np.ndarray:
    """Upper-left concave hull of (cost, accuracy) points: the frontier that randomising between
    operating points reaches. Sorted by cost."""
    pts = np.unique(np.asarray(points, dtype=np.float64), axis=0)
    pts = pts[np.lexsort((-pts[:, 1], pts[:, 0]))]
    hull: list[np.ndarray] = []
    for pt in pts:
        if hull and pt[1] <= hull[-1][1]:
            continue
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], pt) >= 0:
            hull.pop()
        hull.append(pt)
    return np.array(hull)


def _cross(o, a, b) -> float:
    """z of (a - o) x (b - o): >= 0 when a lies on or below segment o-b (not concave)."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def savings_at_floor(m: TwoType, floor: float) -> dict:
    """Oracle cost to reach ``floor`` vs the cheapest uniform tier meeting it and the static
    split; ``None`` entries where the floor is out of reach."""
    oracle = cost_at_accuracy(oracle_frontier(m), floor)
    static = cost_at_accuracy(static_frontier(m), floor)
    cheap_acc = oracle_frontier(m)[0, 1]
    uniform = (m.c0 if floor <= cheap_acc + FLOOR_TOLERANCE else
               m.c0 + m.dc if floor <= m.a_top + FLOOR_TOLERANCE else None)
    oracle = None if np.isnan(oracle) else float(oracle)
    static = None if np.isnan(static) else float(static)
    return {
        "floor": floor,
        "oracle_cost": oracle,
        "uniform_cost": uniform,
        "static_split_cost": static,
        "vs_uniform": None if None in (oracle, uniform) else uniform - oracle,
        "vs_static_split": None if None in (oracle, static) else static - oracle,
    }


def with_uniform(at_floor: dict, tier: str | None, cost: float | None, among: list[str],
                 every: bool) -> dict:
    """``at_floor`` (:func:`savings_at_floor`) quoting its cheapest uniform fleet as the
    uniform fleet of ``tier`` costing ``cost`` (None, None: none meets the floor), chosen among
    the tiers ``among``: every tier of a scenario (``every``, as ``tiersim run`` chooses its
    baseline) or only the two compared. The saving against it is recomputed; the model's own
    two tiers price the oracle and the static split as before."""
    oracle = at_floor["oracle_cost"]
    return {**at_floor, "uniform_cost": cost, "uniform_tier": tier, "uniform_among": among,
            "uniform_among_every_tier": every,
            "vs_uniform": None if None in (oracle, cost) else cost - oracle}


def summary(m: TwoType, floor: float | None = None) -> dict:
    """Everything ``tiersim analytic`` prints: dC*, kink, both frontiers, floor savings."""
    cost, acc = kink(m)
    out = {
        "params": asdict(m),
        "dC_star": max_saving(m.p, m.eps, m.delta, m.dc),
        "kink": {"cost": cost, "accuracy": acc, "top_share": 1.0 - m.p},
        "oracle_frontier": oracle_frontier(m).tolist(),
        "static_frontier": static_frontier(m).tolist(),
    }
    if floor is not None:
        out["at_floor"] = savings_at_floor(m, floor)
    return out


def estimate(expected: np.ndarray, realised: np.ndarray, easy: np.ndarray | None = None) -> dict:
    """Estimate p, eps, delta from per-request correctness of the cheap and top tiers.

    ``expected`` and ``realised`` are (n, 2) arrays (cheap, top). A request is easy when the
    cheap tier is good enough (realised cheap >= realised top) unless ``easy`` is given (e.g. a
    generator's classes). eps and delta are the mean loss ``expected_top - expected_cheap`` over
    easy and hard requests. A negative eps (the cheap tier better on easy requests, as happens
    with real labels) is kept: the model's all-cheap point is then the cheap tier's real
    accuracy. ``eps_raw`` is eps before it is capped at delta (which only given classes need).
    With requests of one class only, the other class's loss is taken equal to it (one type: no
    gap to route on); a loss of 0 there would cap eps at 0 and put the all-cheap point at the
    top tier's accuracy.
    """
    expected = np.asarray(expected, dtype=np.float64)
    realised = np.asarray(realised, dtype=np.float64)
    is_easy = realised[:, 0] >= realised[:, 1] if easy is None else np.asarray(easy, bool)
    loss = expected[:, 1] - expected[:, 0]
    eps_raw, delta = _class_loss(loss, is_easy), _class_loss(loss, ~is_easy)
    eps_raw = delta if eps_raw is None else eps_raw
    delta = eps_raw if delta is None else delta
    eps_raw, delta = eps_raw or 0.0, delta or 0.0  # no request at all: no loss
    return {
        "p": float(is_easy.mean()),
        "eps": min(eps_raw, delta),
        "eps_raw": eps_raw,
        "delta": delta,
        "a_top": float(expected[:, 1].mean()),
        "n": int(len(loss)),
    }


def _class_loss(loss: np.ndarray, members: np.ndarray) -> float | None:
    """The mean of ``loss`` over a class's requests; None when the class has none."""
    return float(loss[members].mean()) if members.any() else None
