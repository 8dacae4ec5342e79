"""Routing metrics of one run, each with its formula.

- ``accuracy``: mean over requests of the expected correctness of the final tier (the tier whose
  answer the user gets); 95% interval (:func:`accuracy_ci`): Wilson's score interval when
  every request scores 0 or 1 (realised correctness), else Agresti and Coull's interval of a
  mean of scores in [0, 1] (:func:`bounded_mean_ci`).
- ``fpr``: among requests whose needed tier is above the cheapest, the share whose final tier is
  below it. ``fnr``: among requests whose needed tier is below the top, the share whose final
  tier is above it. The needed tier is the cheapest whose realised correctness is at least the
  top tier's.
- ``silent_failure_rate``: share of all requests answered wrong on a tier below the top that the
  top tier would have answered right (realised).
- ``escalation_rate``: share of requests that ran a second pass.
- ``savings``: cost against (i) the cheapest uniform tier whose accuracy meets the floor and
  (ii) the cheapest static split between uniform tiers with the routed accuracy.
- ``apgr`` / ``cpt``: RouteLLM's average performance gap recovered and call-performance threshold
  for a weak/strong pair (see :func:`routellm_metrics`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tiersim.results import FLOOR_TOLERANCE, PER_HOUR, paid_share, saved_share, saving_basis
from tiersim.routing.accuracy import expected_matrix, needed_tier, realised_matrix
from tiersim.routing.types import Assignment, Basis, TierInfo

Z_975 = 1.959963984540054
"""The standard normal quantile at 0.975, the z of a two-sided 95% interval: SciPy's
``ndtri(0.975)`` to the bit (tests check), written out so that a run's interval does not
import SciPy (0.4 s) for it."""


def normal_quantile(p: float) -> float:
    """The standard normal quantile at ``p`` (SciPy's ``ndtri``; :data:`Z_975` at 0.975)."""
    if p == 0.975:
        return Z_975
    from scipy.special import ndtri  # lazy: scipy is a heavy import

    return float(ndtri(p))


def bounded_mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Agresti and Coull's interval of the mean of ``values`` (scores in [0, 1]): the normal
    interval, mean +- z x sd / sqrt(n), of the values with z^2 / 2 pseudo-values of 0 and
    z^2 / 2 of 1 added (Agresti & Coull 1998, "Approximate is better than 'exact' for interval
    estimation of binomial proportions"; for 0/1 values it is their interval exactly), within
    [0, 1]. The pseudo-values widen it where a sample is small or alike (one value, or ten
    all at 1, which a sample of ten from scores 90% at 1 is 35% of the time) and vanish as it
    grows. No random numbers; one pass over the values. NaN for no values."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return (float("nan"), float("nan"))
    z = normal_quantile(0.5 + level / 2.0)
    extra = z * z / 2.0  # pseudo-values at each end
    total = len(values) + 2.0 * extra
    mean = (float(values.sum()) + extra) / total
    spread = float(np.square(values - mean).sum()) + extra * (mean**2 + (1.0 - mean) ** 2)
    half = z * np.sqrt(spread) / total
    return (float(max(mean - half, 0.0)), float(min(mean + half, 1.0)))


def wilson_ci(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion: ``successes`` of ``n`` 0/1 values. Unlike a
    bootstrap of 0/1 values it is not zero-wide when every value is alike, and it holds the
    true proportion about ``level`` of the time even for small ``n`` near 0 or 1. With no
    success its low end is 0, with all its high end 1, exactly."""
    z = normal_quantile(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    # the bound at an end is that end exactly: centre - half is 0 in exact arithmetic where
    # no value is 1, but came out 5.6e-17 above an accuracy of 0 (a hopeless class's)
    lo = 0.0 if successes <= 0 else float(max(centre - half, 0.0))
    hi = 1.0 if successes >= n else float(min(centre + half, 1.0))
    return (lo, hi)


def accuracy_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The interval ``router.accuracy_ci95`` reports for per-request accuracies ``values``:
    :func:`wilson_ci` when every value is 0 or 1 (a percentile bootstrap of such values
    covered a known accuracy of 0.95 in 79 % of samples of 30, and gave [1, 1] when all were
    right), else :func:`bounded_mean_ci`, which has Wilson's centre on 0/1 values (the
    percentile bootstrap of 200 resamples it replaced held the mean of the default job's
    values in 78 % of samples of 10 and 92 % of 30; ``benchmarks/ci_coverage.py``). NaN for
    no values."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) and np.all((values == 0.0) | (values == 1.0)):
        return wilson_ci(float(values.sum()), len(values), level)
    return bounded_mean_ci(values, level)


def _rate(mask: np.ndarray, among: np.ndarray) -> float | None:
    """Share of ``among`` where ``mask`` holds; None when ``among`` is empty."""
    count = int(among.sum())
    return float((mask & among).sum() / count) if count else None


def error_rates(final_tier: np.ndarray, realised: np.ndarray, dropped=None) -> dict:
    """Realised FPR, FNR and silent-failure rate of final tiers (see module docstring), with
    how many requests each rate is a share of (``fpr_among``: those that needed a tier above
    the cheapest; ``fnr_among``: those that did not need the top tier).

    FPR and FNR judge the routing decision, so dropped requests count by the tier they were
    sent to; a dropped request is a visible failure, not a silent one.
    """
    k = realised.shape[1]
    need = needed_tier(realised)
    wrong_here = _pick(realised, final_tier) < 0.5
    if dropped is not None:
        wrong_here &= ~np.asarray(dropped, bool)
    top_right = realised[:, -1] >= 0.5
    return {
        "fpr": _rate(final_tier < need, need > 0),
        "fnr": _rate(final_tier > need, need < k - 1),
        "fpr_among": int((need > 0).sum()),
        "fnr_among": int((need < k - 1).sum()),
        "silent_failure_rate": float(np.mean(wrong_here & top_right & (final_tier < k - 1))),
    }


def score(
    df: pd.DataFrame,
    final_tier,
    first_tier=None,
    escalated=None,
    tiers: list[TierInfo] | None = None,
    dropped=None,
    basis: Basis = "expected",
) -> dict:
    """Accuracy (with its 95% interval, :func:`accuracy_ci`), FPR, FNR, silent failures,
    escalation rate, shares.

    Call as ``score(df, final_tier, first_tier, escalated, tiers, basis=...)`` or, with a
    router's :class:`Assignment` (which carries its basis), as ``score(df, assignment, tiers)``.
    ``basis`` is what accuracy is scored on (:func:`~tiersim.routing.accuracy.expected_matrix`).
    A ``dropped`` request (never answered) counts as wrong in the accuracy.
    """
    if isinstance(final_tier, Assignment):
        a, tiers = final_tier, first_tier if tiers is None else tiers
        final_tier, first_tier, escalated, basis = a.final_tier, a.tier, a.escalated, a.basis
    final_tier = np.asarray(final_tier, dtype=np.int64)
    first = final_tier if first_tier is None else np.asarray(first_tier, dtype=np.int64)
    esc = np.zeros(len(final_tier), bool) if escalated is None else np.asarray(escalated, bool)
    exp = expected_matrix(df, tiers, basis)
    per_request = _answered(_pick(exp, final_tier), dropped)
    lo, hi = accuracy_ci(per_request)
    k = len(tiers)
    out = {
        "accuracy": float(per_request.mean()) if len(per_request) else float("nan"),
        "accuracy_ci95": [lo, hi],
        "escalation_rate": float(esc.mean()) if len(esc) else 0.0,
        "tier_shares": _shares(final_tier, tiers),
        "first_tier_shares": _shares(first, tiers),
        "uniform_accuracy": {
            t.name: float(v) for t, v in zip(tiers, exp.mean(0), strict=True)
        },
    }
    out.update(error_rates(final_tier, realised_matrix(df, tiers), dropped))
    out["tiers"] = k
    return out


def _pick(matrix: np.ndarray, column: np.ndarray) -> np.ndarray:
    """``matrix[i, column[i]]`` for every row ``i`` (without an index array of every row)."""
    return np.take_along_axis(matrix, np.asarray(column)[:, None], axis=1)[:, 0]


def _kept(dropped):
    """A function giving an array's answered rows (the array itself when none was dropped)."""
    if dropped is None or not np.asarray(dropped, bool).any():
        return lambda values: values
    keep = ~np.asarray(dropped, bool)
    return lambda values: values[keep]


def _answered(per_request: np.ndarray, dropped) -> np.ndarray:
    """Per-request accuracy with dropped requests (never answered) scored 0."""
    return per_request if dropped is None else np.where(np.asarray(dropped, bool), 0.0,
                                                        per_request)


def _shares(tier: np.ndarray, tiers: list[TierInfo]) -> dict:
    """Share of requests per tier name."""
    counts = np.bincount(tier, minlength=len(tiers)) / max(len(tier), 1)
    return {t.name: float(c) for t, c in zip(tiers, counts, strict=True)}


MIN_MEASURED_SHARE = 0.05
"""A tier's own cost per token is trusted when it served at least this share of the tokens."""


def uniform_cost_estimates(
    tokens: np.ndarray,
    first_tier: np.ndarray,
    escalated: np.ndarray,
    cost_usd: np.ndarray,
    tiers: list[TierInfo],
    escalate_to: np.ndarray | None = None,
) -> np.ndarray:
    """Estimated total cost of serving every request uniformly on each tier.

    A tier that served at least :data:`MIN_MEASURED_SHARE` of the single-pass tokens uses its own
    attributed cost per token. Any other tier (a few requests alone on a tier run in tiny,
    dear batches) uses ``cost_weight`` x one scale fitted to the whole run (total cost over the
    sum of weight x tokens of every pass). The estimate ignores that load, and so batching
    efficiency, would change under uniform routing; uniform runs give exact baselines.
    """
    k = len(tiers)
    weight = np.array([t.cost_weight for t in tiers], dtype=np.float64)
    single = ~escalated
    cost = np.bincount(first_tier[single], weights=cost_usd[single], minlength=k)
    toks = np.bincount(first_tier[single], weights=tokens[single], minlength=k)
    measured = toks >= MIN_MEASURED_SHARE * max(toks.sum(), 1e-300)
    rate = np.divide(cost, toks, out=np.full(k, np.nan), where=measured)
    passes = weight[first_tier] * tokens
    if escalate_to is not None:
        passes = passes + np.where(escalated, weight[np.maximum(escalate_to, 0)], 0.0) * tokens
    scale = cost_usd.sum() / passes.sum() if passes.sum() > 0 else np.nan
    rate[~measured] = scale * weight[~measured]
    return rate * tokens.sum()


def split_mixes(accuracy: float, uni_acc) -> list[tuple[int, int, float | None]]:
    """Every random split between uniform tiers that reaches ``accuracy`` (at least) at its
    cheapest, as ``(i, j, f)``: tier ``j`` alone (``i == j``, ``f`` None) where it does, or
    tier ``i`` below it mixed with ``j`` above at the fraction ``f`` of ``j`` that lands on it
    exactly (a linear mix's cheapest point is one of these). A tier within
    :data:`~tiersim.results.FLOOR_TOLERANCE` of ``accuracy`` reaches it alone, as the uniform
    baseline's floor rule has it (the two means of one column differ in their last bits)."""
    out = []
    for j in range(len(uni_acc)):
        if uni_acc[j] >= accuracy - FLOOR_TOLERANCE:  # alone
            out.append((j, j, None))
        for i in range(len(uni_acc)):
            lo_acc, hi_acc = uni_acc[i], uni_acc[j]
            if lo_acc < accuracy <= hi_acc:
                out.append((i, j, (accuracy - lo_acc) / (hi_acc - lo_acc)))
    return out


def mix_cost(mix: tuple[int, int, float | None], costs) -> float:
    """The cost of the split ``mix`` (:func:`split_mixes`) of tiers costing ``costs``."""
    i, j, f = mix
    return float(costs[j] if f is None else (1.0 - f) * costs[i] + f * costs[j])


def static_split_cost(accuracy: float, uni_cost: np.ndarray, uni_acc: np.ndarray) -> float | None:
    """Cheapest cost of a random split between uniform tiers that reaches ``accuracy`` (at
    least), over :func:`split_mixes`; None where none does."""
    costs = [mix_cost(mix, uni_cost) for mix in split_mixes(accuracy, uni_acc)]
    return min(costs) if costs else None


STATIC_SPLIT_FIELDS = ("static_split_cost_usd", "static_split_cost_per_hour_usd",
                       "vs_static_split_usd", "vs_static_split_frac",
                       "vs_static_split_over_trace_frac", "static_split_mix")
"""The fields of a saving against a static split (:func:`static_split_saving`)."""


def mix_shares(mix: tuple[int, int, float | None] | None,
               names: list[str]) -> dict[str, float] | None:
    """The split ``mix`` (:func:`split_mixes`) as uniform fleet name -> its share of the
    requests (one fleet alone: 1.0); None for no split."""
    if mix is None:
        return None
    i, j, f = mix
    return {names[j]: 1.0} if f is None else {names[i]: 1.0 - f, names[j]: f}


def static_split_saving(cost_model: str | None, accuracy: float,
                        routed: tuple[float, float | None],
                        uniform: list[tuple[float, float | None, float]],
                        names: list[str] | None = None) -> dict:
    """The routed fleet against the cheapest static split of the ``uniform`` fleets (each
    ``(cost over the trace, USD/hour, accuracy)``) at the routed ``accuracy``
    (:func:`static_split_cost`), on the basis the plan ranks fleets by
    (:func:`~tiersim.results.saving_basis`), for ``tiersim plan`` and ``tiersim run`` alike.
    ``routed``: its ``(cost over the trace, USD/hour)``.

    Under ``provisioned`` cost the split is the cheapest per hour (then over the trace), made
    of the fleets' USD/hour (``static_split_cost_per_hour_usd``; None where a rate is unknown,
    and under any other cost model, where the split is the cheapest over the trace), and
    ``vs_static_split_frac`` is the share per hour; the share over the trace is kept beside it
    (``vs_static_split_over_trace_frac``, as ``vs_uniform_over_trace_frac``), and
    ``static_split_cost_usd`` / ``vs_static_split_usd`` are over the trace, all of the one
    split, as the uniform baseline is one fleet on both bases. Before, the share was over the
    trace under provisioned cost too, so a plan costing 13.0 % more per hour than a split read
    "saves 6.17 %" against it where the split's fleets drained longer; and then the figures
    over the trace came from the split cheapest over the trace, another one (uniform d alone,
    18 USD, beside 14.16 USD/hour of 40 % a + 60 % c).

    ``names``: the uniform fleets' names, in ``uniform``'s order; ``static_split_mix`` names the
    fleets the split mixes and each one's share (:func:`mix_shares`; None without ``names``), so
    that two splits of the same routed fleet over different candidate fleets (``tiersim run``'s
    uniform fleets are the scenario's tiers, ``tiersim plan``'s also its baselines) say why
    they differ."""
    costs, rates = [u[0] for u in uniform], [u[1] for u in uniform]
    mixes = split_mixes(accuracy, [u[2] for u in uniform])
    hourly = saving_basis(cost_model) == PER_HOUR and None not in rates
    key = ((lambda mix: (mix_cost(mix, rates), mix_cost(mix, costs))) if hourly else
           (lambda mix: mix_cost(mix, costs)))
    mix = min(mixes, key=key, default=None)
    split = None if mix is None else mix_cost(mix, costs)
    per_hour = None if mix is None or not hourly else mix_cost(mix, rates)
    return {
        "static_split_cost_usd": split,
        "static_split_cost_per_hour_usd": per_hour,
        "vs_static_split_usd": None if split is None else float(split - routed[0]),
        "vs_static_split_frac": paid_share(cost_model, routed, (split, per_hour)),
        "vs_static_split_over_trace_frac": saved_share(routed[0], split),
        "static_split_mix": mix_shares(mix, names) if names is not None else None,
    }


def savings(
    df: pd.DataFrame,
    final_tier: np.ndarray,
    cost_usd: np.ndarray,
    tiers: list[TierInfo],
    accuracy_floor: float | None = None,
    first_tier: np.ndarray | None = None,
    escalated: np.ndarray | None = None,
    uniform_costs: np.ndarray | None = None,
    tolerance: float = 0.0,
    dropped: np.ndarray | None = None,
    basis: Basis = "expected",
    unservable: np.ndarray | None = None,
) -> dict:
    """Routed cost against the cheapest uniform tier meeting the floor and the static split.

    Without ``accuracy_floor`` the floor is the routed accuracy less ``tolerance`` (e.g. 0.001
    lets a uniform tier as accurate as the routed mix within 0.1 pp be the baseline).

    ``cost_usd`` is the per-request attributed cost of the simulated run (both passes for an
    escalated request). ``uniform_costs`` (total cost per tier if every request ran there) may
    come from separate uniform runs; otherwise they are estimated by
    :func:`uniform_cost_estimates` from the answered requests and flagged ``"estimated"``
    (with no answered request there is nothing to scale: every uniform cost is None, and no
    tier is the baseline or in the static split).
    A ``dropped`` request counts as wrong in the routed accuracy and is left out of the
    estimate (it has tokens but no cost). ``basis``: what accuracy is scored on (the
    assignment's). ``unservable`` (requests x tiers, optional): a request a uniform fleet of
    that tier could never serve (longer than its context): it counts as wrong in that tier's
    uniform accuracy, and the tier has no uniform cost (it is no baseline, nor in the split).
    """
    final_tier = np.asarray(final_tier, dtype=np.int64)
    first = final_tier if first_tier is None else np.asarray(first_tier, dtype=np.int64)
    esc = np.zeros(len(final_tier), bool) if escalated is None else np.asarray(escalated, bool)
    cost_usd = np.asarray(cost_usd, dtype=np.float64)
    exp = expected_matrix(df, tiers, basis)
    accuracy = float(_answered(_pick(exp, final_tier), dropped).mean())
    never = None if unservable is None else np.asarray(unservable, dtype=bool)
    uni_acc = exp.mean(axis=0) if never is None else np.where(never, 0.0, exp).mean(axis=0)
    estimated = uniform_costs is None
    if estimated:
        keep = _kept(dropped)
        tokens = np.add(df["input_tokens"].to_numpy(), df["output_tokens"].to_numpy(),
                        dtype=np.float64)  # the counts as float64, summed (no int64 copies)
        uniform_costs = uniform_cost_estimates(
            keep(tokens), keep(first), keep(esc), keep(cost_usd), tiers,
            escalate_to=keep(np.where(esc, final_tier, -1)),
        )
    uni_cost = np.asarray(uniform_costs, dtype=np.float64)
    if never is not None:
        uni_cost = np.where(never.any(axis=0), np.nan, uni_cost)
    priced = np.isfinite(uni_cost)  # an estimate from no answered request has no cost
    routed = float(cost_usd.sum())
    floor = accuracy - tolerance if accuracy_floor is None else accuracy_floor
    # the floor rule of the run's verdict and its simulated savings (results.reaches_floor)
    meets = np.flatnonzero((uni_acc >= floor - FLOOR_TOLERANCE) & priced)
    base_i = int(meets[np.argmin(uni_cost[meets])]) if len(meets) else None
    split = static_split_saving(None, accuracy, (routed, None),  # attributed: over the trace
                                [(c, None, a) for c, a in zip(uni_cost[priced], uni_acc[priced],
                                                              strict=True)],
                                [t.name for t, p in zip(tiers, priced, strict=True) if p])
    return {
        "routed_cost_usd": routed,
        "accuracy": accuracy,
        "accuracy_floor": floor,
        "uniform": {
            t.name: {"accuracy": float(a), "cost_usd": float(c) if np.isfinite(c) else None}
            for t, a, c in zip(tiers, uni_acc, uni_cost, strict=True)
        },
        "uniform_costs_estimated": estimated,
        "baseline_uniform_tier": None if base_i is None else tiers[base_i].name,
        "vs_uniform_usd": None if base_i is None else float(uni_cost[base_i] - routed),
        "vs_uniform_frac": None if base_i is None else saved_share(routed, uni_cost[base_i]),
        **split,
    }


def routellm_curve(strong_score: np.ndarray, weak: np.ndarray, strong: np.ndarray, num=10):
    """RouteLLM's evaluation curve: thresholds at the ``num``-quantile edges of the router's
    score; requests with score >= threshold go to the strong model (strictly > at the last edge).
    Returns (strong share in [0, 1], accuracy) sorted by share."""
    strong_score = np.asarray(strong_score, dtype=np.float64)
    edges = np.quantile(strong_score, np.linspace(0, 1, num + 1))
    shares, accs = [], []
    for i, thr in enumerate(edges):
        sel = strong_score > thr if i == len(edges) - 1 else strong_score >= thr
        shares.append(sel.mean())
        accs.append(np.where(sel, strong, weak).mean())
    order = np.argsort(shares, kind="stable")
    return np.asarray(shares)[order], np.asarray(accs)[order]


def routellm_metrics(strong_score, weak_correct, strong_correct, num: int = 10) -> dict:
    """APGR and CPT(50%) as RouteLLM's ``evaluate.py`` computes them.

    APGR = (AUC - weak x span) / ((strong - weak) x span), AUC the trapezoid area of accuracy over
    strong-call share along :func:`routellm_curve`, span its share range. CPT(x) is the strong
    share at which accuracy reaches weak + x (strong - weak), by linear interpolation.
    """
    weak = np.asarray(weak_correct, dtype=np.float64)
    strong = np.asarray(strong_correct, dtype=np.float64)
    share, acc = routellm_curve(strong_score, weak, strong, num)
    acc_w, acc_s = weak.mean(), strong.mean()
    span = np.trapezoid(np.ones_like(share), share)
    auc = np.trapezoid(acc, share)
    gap = (acc_s - acc_w) * span  # 0 when both tiers score the same: APGR is undefined
    apgr = (auc - acc_w * span) / gap if gap else float("nan")
    order = np.argsort(acc, kind="stable")
    cpt = {
        f"cpt_{int(q * 100)}": _cpt(q, acc_w, acc_s, acc[order], share[order])
        for q in (0.2, 0.5, 0.8)
    }
    return {"apgr": float(apgr), **cpt, "weak_accuracy": float(acc_w),
            "strong_accuracy": float(acc_s)}


def _cpt(q: float, acc_w: float, acc_s: float, acc: np.ndarray, share: np.ndarray) -> float:
    """Strong share where accuracy reaches weak + q x (strong - weak), interpolated."""
    return float(np.interp(acc_w + q * (acc_s - acc_w), acc, share))
