"""Round 27 review: findings of the review of this round's changes, each with the test that
failed before its fix."""

from __future__ import annotations

import re

from tiersim.plan.planner import _tie


def _shown(line: str) -> list[str]:
    """The two accuracies a tie's words print."""
    return re.findall(r"([0-9.]+)%", line)


def test_a_tie_kept_for_higher_accuracy_prints_two_different_accuracies():
    """The plan's tie line moved to percent at ``significant digits - 2`` decimals, right for
    accuracies of 10% and up only: a plan at 5.123% beside 5.122% read "kept for its higher
    accuracy, 5.12% against 5.12%" (it read "0.05123 against 0.05122" before), and 1.00%
    against 1.00% at 0.999%; now enough decimals to tell them apart."""
    for plans, accuracy in [(0.05123, 0.05122), (0.009993, 0.009991), (0.8, 0.8 - 1e-9)]:
        line = _tie(accuracy, plans)
        high, low = _shown(line)
        assert high != low, line
        assert float(high) > float(low), line


def test_a_tie_at_common_accuracies_keeps_two_decimals():
    """Accuracies of 10% and up keep the plan's two percent decimals (the fix adds none)."""
    assert _shown(_tie(0.9499, 0.95)) == ["95.00", "94.99"]
    assert _shown(_tie(0.7, 0.8)) == ["80.00", "70.00"]
