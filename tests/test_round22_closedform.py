"""Round 22, closed forms: the expected accuracy and cost of two-tier routing with injected
confusion (``router.confusion: {fpr, fnr}``), derived by hand and checked against the router.

test_routing.py pins that the injected rates are realised and test_routing_fpr.py that cost
and accuracy fall as fpr rises; neither pins the figures themselves, which this file does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.routing import TierInfo, build_router, score
from tiersim.routing.frontier import fixed_cost

C0, C1 = 1.0, 3.0  # fixed prices per pass of the cheap and the top tier
TIERS = [TierInfo("cheap", cost_weight=C0), TierInfo("top", cost_weight=C1)]
N = 100_000


def _labelled(seed: int = 0) -> tuple[pd.DataFrame, tuple[float, float, float, float]]:
    """Realised 0/1 labels of N requests in four kinds (cheap, top) = (1, 1), (0, 1), (1, 0),
    (0, 0), drawn with shares 0.5, 0.2, 0.1, 0.2; returns the table and the realised shares
    (a, b, c, d) of the four kinds."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(4, N, p=[0.5, 0.2, 0.1, 0.2])
    df = pd.DataFrame({"input_tokens": np.full(N, 100), "output_tokens": np.full(N, 10),
                       "correct_cheap": np.array([1, 0, 1, 0])[kind],
                       "correct_top": np.array([1, 1, 0, 0])[kind]})
    a, b, c, d = (float((kind == i).mean()) for i in range(4))
    return df, (a, b, c, d)


CASES = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.3, 0.2), (0.5, 0.5), (0.1, 0.0), (0.0, 0.15)]


@pytest.mark.parametrize("fpr,fnr", CASES)
def test_oracle_with_confusion_matches_the_hand_derivation(fpr, fnr):
    """On labels a request *needs* the top tier when only the top tier is right (kind (0, 1),
    share b); the oracle sends exactly those to the top tier and the rest (a + c + d) to the
    cheap one. Injected confusion draws one uniform u per request:

    - a needed request routed to the top tier goes to the cheap one when u < fpr
      (probability fpr): it is then wrong;
    - any other request (need = cheap, routed there) goes to the top tier when u >= 1 - fnr
      (probability fnr): kind (1, 0) is then wrong, kinds (1, 1) and (0, 0) score the same.

    So  E[accuracy] = a + b (1 - fpr) + c (1 - fnr)
        E[cost]     = C0 + (C1 - C0) (b (1 - fpr) + (1 - b) fnr).
    At fpr = 1 everything is on the cheap tier (accuracy a + c, cost C0), at fnr = 1 on the
    top one (a + b, C1), exactly. Elsewhere within 4 standard errors of N draws."""
    df, (a, b, c, _) = _labelled()
    router = build_router({"policy": "oracle", "confusion": {"fpr": fpr, "fnr": fnr}}, TIERS)
    chosen = router.assign(df, np.random.default_rng(1))
    accuracy = score(df, chosen, TIERS)["accuracy"]
    cost = float(fixed_cost(chosen, TIERS).mean())
    want_acc = a + b * (1 - fpr) + c * (1 - fnr)
    want_cost = C0 + (C1 - C0) * (b * (1 - fpr) + (1 - b) * fnr)
    if (fpr, fnr) in ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0)):
        assert accuracy == pytest.approx(want_acc, abs=1e-12)
        assert cost == pytest.approx(want_cost, abs=1e-12)
    else:
        assert accuracy == pytest.approx(want_acc, abs=4 * 0.5 / np.sqrt(N))
        assert cost == pytest.approx(want_cost, abs=4 * (C1 - C0) * 0.5 / np.sqrt(N))


@pytest.mark.parametrize("fpr,fnr", CASES)
def test_cascade_with_confusion_matches_the_hand_derivation(fpr, fnr):
    """A cascade with a perfect signal (noise 0, threshold 0.5) answers on the cheap tier and
    escalates exactly the requests the cheap tier gets wrong: kinds (0, 1) and (0, 0), shares
    b and d; an escalation pays both passes (C0 + C1). Confusion acts on the escalation:

    - a needed escalation (kind (0, 1): need is the top tier) is cancelled when u < fpr;
    - a request the cheap tier answers and need not leave (kinds (1, 1), (1, 0)) is escalated
      anyway when u >= 1 - fnr; kind (0, 0) needs nothing and is already escalated.

    So  E[accuracy] = a + b (1 - fpr) + c (1 - fnr)
        E[cost]     = C0 + C1 (b (1 - fpr) + d + (a + c) fnr)."""
    df, (a, b, c, d) = _labelled()
    router = build_router({"policy": "cascade", "confusion": {"fpr": fpr, "fnr": fnr},
                           "cascade": {"threshold": 0.5, "signal_noise": 0.0}}, TIERS)
    chosen = router.assign(df, np.random.default_rng(1))
    accuracy = score(df, chosen, TIERS)["accuracy"]
    cost = float(fixed_cost(chosen, TIERS).mean())
    want_acc = a + b * (1 - fpr) + c * (1 - fnr)
    want_cost = C0 + C1 * (b * (1 - fpr) + d + (a + c) * fnr)
    if (fpr, fnr) in ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0)):
        assert accuracy == pytest.approx(want_acc, abs=1e-12)
        assert cost == pytest.approx(want_cost, abs=1e-12)
    else:
        assert accuracy == pytest.approx(want_acc, abs=4 * 0.5 / np.sqrt(N))
        assert cost == pytest.approx(want_cost, abs=4 * C1 * 0.5 / np.sqrt(N))


def test_estimated_savings_hold_a_uniform_tier_to_the_floor_as_the_simulated_ones_do():
    """A floor copied from a printed accuracy (10 significant digits: 2/3 reads 0.6666666667)
    is met by the tier that scored it, in the run's floor verdict and its simulated savings
    (:func:`tiersim.results.reaches_floor`, 1e-9). The estimated savings (``--no-baselines``)
    held the uniform tiers to 1e-12, so the all-bf16 run that met the floor found no uniform
    fleet meeting it: no baseline, "no uniform fleet meets the SLOs"."""
    from tiersim.results import reaches_floor
    from tiersim.routing import savings

    df = pd.DataFrame({"input_tokens": [500] * 3, "output_tokens": [20] * 3,
                       "correct_cheap": [1, 0, 0], "correct_top": [1, 1, 0]})
    floor = float(f"{2 / 3:.10g}")
    assert reaches_floor(2 / 3, floor)
    out = savings(df, np.ones(3, dtype=np.int64), np.full(3, 0.001), TIERS,
                  accuracy_floor=floor)
    assert out["baseline_uniform_tier"] == "top"
    assert out["vs_uniform_usd"] == pytest.approx(0.0, abs=1e-12)


def test_the_floor_router_meets_a_floor_its_routing_reaches_up_to_rounding():
    """The floor router sums each cut vector's accuracy over its calibration rows by prefix
    sums: 100,000 rows of 0.95 sum to 0.95 - 1.7e-12 a row. At a floor of 0.95 (a top tier of
    0.95 on every request) the router warned that 'router.floor 0.95 is above the most accurate
    routing the router finds (0.95 ...)', routed every request the most accurate way and said
    the floor was missed, as it held accuracies to the floor within 1e-12, where the run's
    verdict and the savings allow :data:`tiersim.results.FLOOR_TOLERANCE` (1e-9)."""
    import warnings

    prefix = np.concatenate([[0.0], np.cumsum(np.full(100_000, 0.95))])
    acc = (prefix[-1] - prefix[0]) / 100_000
    assert acc < 0.95 - 1e-12  # the rounding the router meets
    tiers = [TierInfo("cheap", accuracy={"easy": 0.95, "hard": 0.6}, cost_weight=1.0),
             TierInfo("top", accuracy={"easy": 0.95, "hard": 0.95}, cost_weight=2.0)]
    router = build_router({"policy": "floor", "floor": 0.95}, tiers)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 'above the most accurate routing' warning
        best, feasible = router.pick(np.array([0.9, acc]), np.array([1.0, 2.0]))
    assert (best, feasible) == (1, True)


def test_the_closed_form_meets_a_floor_copied_from_a_printed_accuracy():
    """Labels where the cheap tier is right on 1 of 3 requests and the top on 2 (p = 2/3,
    eps = 0, delta = 1, a_top = 2/3) at the floor 0.6666666667 that summary.json prints for
    2/3: the run says the floor is met and uniform top is its baseline (the floor rule
    :func:`tiersim.results.reaches_floor`, 1e-9); ``tiersim analytic --scenario`` said 'at floor
    0.6667: oracle out of reach, cheapest uniform out of reach, static split out of reach',
    holding the floor to 1e-12. By hand at that floor: every route ends on the top tier's
    accuracy, so the oracle pays c0 + (1 - p) dc (the kink, which reaches a_top - p eps = a_top),
    the uniform and the static split c0 + dc."""
    from tiersim.analytic import TwoType, savings_at_floor

    floor = float(f"{2 / 3:.10g}")
    m = TwoType(p=2 / 3, eps=0.0, delta=1.0, dc=3.0, c0=1.0, a_top=2 / 3)
    out = savings_at_floor(m, floor)
    assert out["uniform_cost"] == pytest.approx(4.0)
    assert out["oracle_cost"] == pytest.approx(1.0 + 3.0 / 3)
    assert out["static_split_cost"] == pytest.approx(4.0)
    assert out["vs_uniform"] == pytest.approx(2.0)
