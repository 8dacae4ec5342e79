"""Round 53, helper left53b: items a code review left.

1. :func:`tiersim.cli.plan_seeds._robust_row` took the plan's own row as its saving's baseline
   where ``baseline_per_seed`` lacked the seed (a 0 % saving from no baseline figure): it now
   refuses.
"""

from __future__ import annotations

import pytest

from tiersim.cli.plan_seeds import _robust_row


def _row(seed: int, cost: float, missed: list[str]) -> dict:
    """One ``robust.per_seed`` row."""
    return {"seed": seed, "ttft_p99_s": 1.0, "tpot_p99_s": 0.05, "accuracy": 0.9, "dropped": 0,
            "cost_usd": cost, "cost_per_hour_usd": cost * 10, "missed": missed,
            "shares": {"fp8": 1.0}}


def test_robust_row_reads_the_baselines_own_row():
    """The saving at the plan's seed is against the baseline's row there (8 against 10: 20 %)."""
    robust = {"per_seed": [_row(3, 8.0, []), _row(4, 9.0, [])],
              "baseline_per_seed": [_row(3, 10.0, ["accuracy"]), _row(4, 10.0, [])]}
    row = _robust_row(3, robust, True, None)
    assert row["baseline_missed"] == ["accuracy"]
    assert row["vs_uniform_frac"] == pytest.approx(0.2)


@pytest.mark.parametrize("baseline", [None, [], [{**_row(4, 10.0, [])}]])
def test_robust_row_refuses_a_saving_with_no_baseline_row(baseline):
    """No baseline row at the plan's seed (none at all, or only another seed's): refused, not
    the plan against itself (it read a 0 % saving)."""
    robust = {"per_seed": [_row(3, 8.0, []), _row(4, 9.0, [])]}
    if baseline is not None:
        robust["baseline_per_seed"] = baseline
    with pytest.raises(RuntimeError, match="no baseline_per_seed row for seed 3"):
        _robust_row(3, robust, True, None)


def test_robust_row_without_a_saving_needs_no_baseline():
    """No saving quoted: no baseline row read, none asked for."""
    row = _robust_row(3, {"per_seed": [_row(3, 8.0, ["accuracy"])]}, False, None)
    assert row["missed"] == ["accuracy"] and "vs_uniform_frac" not in row
