"""Round 31 (rev): a review of round 30's planner words, engine board and trace reading; each
test failed before its fix."""

from __future__ import annotations

from test_round30_tie import _plan


def test_dearer_per_hour_prints_the_two_rates_apart():
    # fp8 at 1.0005 USD/hour: fp8 8 + bf16 4 cost 12.004 USD/hour against bf16 12's 12; to 3
    # figures both read 12.0 ("dearer per hour: 12.0 against 12.0 USD/hour")
    result = _plan(fp8_price=1.0005, routed_s=3400.0)
    assert result.plan["design"] == "bf16"
    routed = {r["design"]: r for r in result.runners_up}["fp8+bf16"]
    assert routed["missed"].endswith("but dearer per hour: 12.004 against 12.000 USD/hour")
