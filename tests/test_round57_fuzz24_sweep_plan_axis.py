"""Round 57, hostile-input round (fuzz24): a sweep axis under ``plan:``.

``plan:`` (today's fleet, the hours a month is paid for) is read by ``tiersim plan`` alone; a
sweep runs each point as ``tiersim run`` does, which leaves it aside. ``sweep:
{plan.hours_per_month: [100, 200]}`` (or ``plan.current``) ran every point the same, each
labelled with its value in the sweep table, as if the value had been used. It is refused, as
an axis of the scenario's ``name`` alone is.
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import TINY, run_cli

CURRENT = "plan:\n  current:\n    - {tier: bf16, replicas: 2}\n"


@pytest.mark.parametrize(
    ("axis", "values"),
    [
        ("plan.hours_per_month", "[100, 200]"),
        ("plan.current", "[[{tier: bf16, replicas: 1}], [{tier: bf16, replicas: 3}]]"),
    ],
)
def test_a_plan_axis_is_refused(tmp_path, capsys, axis, values):
    """The exact line, naming the axis and its line; nothing written."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + CURRENT + f"sweep:\n  {axis}: {values}\n")
    line = len((TINY + CURRENT).splitlines()) + 2
    code, err = run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o", "--no-baselines")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {scenario}: line {line}: sweep: '{axis}': is read by tiersim plan alone (a "
        "sweep's points run as tiersim run does, which leaves plan: aside), so every point "
        "would run the same; drop the axis, and give each value to its own tiersim plan "
        "(--current, --hours-per-month)"
    )
    assert not (tmp_path / "o").exists()
