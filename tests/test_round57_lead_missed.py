"""Round 57, lead (fresh57b, review57): the words of what a fleet missed printed its p99 with
Python's ``g``, which drops trailing zeros: "task latency p99 68 s over its 60 s" beside the
agentic table's "68.0", "TPOT p99 0.12 s" beside the console's "0.120". They now print as every
console figure does, trailing zeros kept, more digits only where 3 would read as the limit."""

from __future__ import annotations

import pytest

from tiersim.results_figures import missed_figure


@pytest.mark.parametrize(
    ("value", "limit", "text"),
    [(68.0, 60.0, "68.0"), (3.7, 2.0, "3.70"), (0.12, 0.1, "0.120"), (2.0004, 2.0, "2.0004"),
     (0.0614, 0.06, "0.0614"), (1234.5, 60.0, "1,234")],
)
def test_a_missed_p99_keeps_its_trailing_zeros(value, limit, text):
    assert missed_figure(value, limit) == text
