"""Round 53 (check53): an independent check, by other paths, of what landed in ``tiersim plan``
this round: the seed check's re-check of fleets turned away at the plan's seed
(``seed_check.rejected``), ``--robust``'s shared engine runs and idle tiers, and the router's
realised AUROC (``router.quality``).

Every figure is modelled (the roofline's and the floor router's on three minutes of the Azure
code trace at 5x, 2026-12-07): a recalibration moves them, and the scenarios below then need
their floors or windows moved to show their case again.
"""

from __future__ import annotations

import pytest


def _baseline_record(vs: list[float]) -> dict:
    """A seed check with one baseline-only fleet turned away at seed 1 that meets every
    constraint at the seeds checked, the plan's saving against it ``vs`` there."""
    return {"planned_seed": 1, "seeds": [1, 2, 3, 4][:len(vs) + 1], "saving_basis": "per_hour",
            "baseline_uniform_tier": "bf16", "accuracy_floor": 0.791,
            "rejected": [{"design": "fp8x", "tiers": ["fp8x"], "replicas": {"fp8x": 2},
                          "gpus_per_replica": {"fp8x": 4}, "ranks_before": "baseline",
                          "missed_at_planned_seed": ["accuracy"],
                          "dearer_than_plan_frac": -0.4285714286,
                          "dearer_than_baseline_frac": -0.4285714286,
                          "met_seeds": list(range(2, 2 + len(vs))),
                          "per_seed": [{"seed": 2 + k, "vs_fleet_frac": v}
                                       for k, v in enumerate(vs)]}]}


HEAD = ("    uniform fp8x (2 x 4 GPU, 42.9 % cheaper per hour than uniform bf16) was turned away "
        "at seed 1 (accuracy floor missed) but meets the SLOs and the accuracy floor at ")
TAIL = " (`tiersim plan --robust` sizes every fleet for every seed checked)"


@pytest.mark.parametrize(("vs", "said"), [
    ([-0.75, -0.75, -0.75], "every seed checked (2, 3, 4): the saving's baseline hinges on seed "
                            "1's draws; against it the plan costs 75.0 % more per hour there"),
    ([0.05, 0.05], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                   "against it the plan saves 5.00 % per hour there"),
    ([-0.1, -0.2], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                   "against it the plan costs 10.0 % to 20.0 % more per hour there"),
    ([-0.1, 0.2], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                  "against it the plan's saving per hour is -10.0 % to 20.0 % there"),
    ([0.0, 0.0], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                 "against it the plan costs the same per hour there"),
])
def test_a_baseline_cheaper_than_the_plan_reads_costs_more(vs, said):
    """A baseline-only tier's fleet cheaper than the plan (uniform fp8x 2 x 4 GPU at 2.00
    USD/GPU-hour, 16 USD/hour, beside the plan, uniform bf16@4 2 x 4 GPU at 28 USD/hour: the
    scenario of :func:`b_doc`) ranks before the saving's baseline and, meeting every
    constraint at seeds 2-4, is where the baseline hinges. The line read "against it the plan
    saves -75.0 % per hour there": a saving's word beside a loss. It now reads as the plan's
    own saving line words one (``saving_verdict``: "costs ... more")."""
    from tiersim.results_seeds import rejected_lines

    assert rejected_lines(_baseline_record(vs)) == [HEAD + said + TAIL]
