"""Round 52 (review52b): ``tiersim plan --robust`` on a fleet no request reaches.

A response cache that answers every request leaves each seed's fleet an accuracy of None
(round 52's "accuracy of a run no request reached"). The robust evaluator took the lowest
accuracy over the seeds with ``min`` over them, None included, so ``plan --robust`` stopped on
a TypeError (``'<' not supported between 'NoneType' and 'NoneType'``) in the search; the worst
accuracy is now the lowest known one (None where none is known), as its p99s are.
"""

from __future__ import annotations

import warnings

from tests.test_round52_left52_accuracy import _scenario
from tiersim.cli.plan import plan_capacity
from tiersim.errors import Note
from tiersim.plan.evaluate import Outcome, TierOutcome
from tiersim.plan.robust import worst_outcome


def _outcome(accuracy):
    tier = TierOutcome(replicas=1, requests=0, ttft_p99_s=None, tpot_p99_s=None, dropped=0,
                       utilization=0.0)
    return Outcome(ttft_p99_s=None, tpot_p99_s=None, dropped=0, accuracy=accuracy,
                   cost_usd=1.0, cost_per_hour_usd=1.0, duration_s=1.0, tiers={"a": tier})


def test_worst_accuracy_skips_none():
    assert worst_outcome([_outcome(None), _outcome(None)]).accuracy is None
    assert worst_outcome([_outcome(None), _outcome(0.8), _outcome(0.9)]).accuracy == 0.8


def test_robust_plan_of_a_fleet_no_request_reaches(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        result = plan_capacity(_scenario(tmp_path, True), out_dir=tmp_path / "plan",
                               report=False, check_seeds=1, robust=True)
    assert result.plan["accuracy"] is None
    assert [r["accuracy"] for r in result.robust["per_seed"]] == [None, None]
    assert result.robust["worst_seed"]["accuracy"] is None
