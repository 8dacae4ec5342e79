"""Round 55, review55: the plan's "no better than chance" line and the 100-per-class rule.

auroc54 judges the AUROC asked against the realised AUROC's 95% interval only from 100
requests of each class ("no verdict: 8 requests hard or hopeless, under the 100 of each class
a verdict needs ..."), since with fewer the interval held the true AUROC in as few as 31 % of
simulated samples. spec54's plan line read the same interval with no such rule, so one run's
router could get "no verdict" on its AUROC asked and, from the same interval, "its choices are
no better than chance on this trace" in the plan console. With fewer than 100 of a class the
plan line now gives the same "no verdict" and its reason; from 100 of each, the verdict as
before (test_round54_spec54_chance).
"""

from __future__ import annotations

from tiersim.cli.plan_text import _chance_line
from tiersim.results import RouterQuality


def _quality(positives: int, requests: int = 1000) -> RouterQuality:
    return RouterQuality(truth="drawn difficulty", requests=requests, target="hard or hopeless",
                         positives=positives, auroc=0.7, auroc_ci95=(0.45, 0.88),
                         auroc_asked=0.7, asked_from="workload.difficulty.hint_auroc")


def test_too_few_of_a_class_gives_no_verdict_on_chance_either():
    q = _quality(8)
    assert q.asked_text().startswith("0.7 (workload.difficulty.hint_auroc; no verdict: 8 "
                                     "requests hard or hopeless, under the 100 of each class")
    assert _chance_line(q, {}) == [
        "  router: its realised AUROC, 0.700 (95% CI 0.450 - 0.880) for hard or hopeless, has "
        "0.5 inside its 95% CI: no verdict on chance: 8 requests hard or hopeless, under the "
        "100 of each class a verdict needs (with fewer, the 95% CI held the true AUROC in as "
        "few as 31 % of simulated samples: docs/metrics.md in tiersim's source repository) "
        "(modelled)"]


def test_too_few_of_the_other_class_too():
    q = _quality(995)
    assert _chance_line(q, {})[0].startswith(
        "  router: its realised AUROC, 0.700 (95% CI 0.450 - 0.880) for hard or hopeless, has "
        "0.5 inside its 95% CI: no verdict on chance: 5 requests not hard or hopeless, under "
        "the 100 of each class")


def test_from_100_of_each_class_the_verdict_stands():
    q = _quality(100)
    assert q.asked_text() == "0.7 (workload.difficulty.hint_auroc; within the 95% CI)"
    assert _chance_line(q, {}) == [
        "  router: its realised AUROC, 0.700 (95% CI 0.450 - 0.880) for hard or hopeless, has "
        "0.5 inside its 95% CI: its choices are no better than chance on this trace "
        "(modelled)"]
