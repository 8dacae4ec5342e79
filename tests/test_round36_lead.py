"""Round 36, lead: a match budget whose timeout lands where it is swallowed still ends the read."""

from __future__ import annotations

import signal
import time

import pytest

from tiersim.hardware.hf_modules import RegexTimeout, regex_budget

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGVTALRM"), reason="no CPU-time timer")


def test_a_timeout_raised_inside_code_that_swallows_it_is_raised_at_the_blocks_end():
    """The full suite once ran the budget test while hypothesis' garbage-collector callback
    was running: the timer's RegexTimeout was raised inside that callback, which swallows
    exceptions ("Exception ignored in gc_callback"), and the 0.001 s budget let a read of
    0.38 s of CPU through. Here the block swallows the timeout itself, as that callback did."""
    swallowed = []
    with pytest.raises(RegexTimeout), regex_budget(0.001):
        start = time.process_time()
        while time.process_time() - start < 0.05 and not swallowed:
            try:
                sum(range(10_000))
            except RegexTimeout:
                swallowed.append(True)
    assert swallowed
    assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0


def test_a_block_within_its_budget_raises_nothing():
    with regex_budget(5.0):
        sum(range(1000))
    assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0
