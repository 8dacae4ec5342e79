"""Round 55, review55: ``--hours-per-month`` without a fleet named today is refused ("names no
fleet run today, so there is no month to price"), but only where the hours differed from the
default 730: a typed ``--hours-per-month 730`` was taken silently, though it prices no month
either (``tiersim.cli.plan_current.today_fleet``'s docstring: one line where it is given without
one).
"""

from __future__ import annotations

from conftest import tiny_doc, write_yaml
from test_round55_review55_hours import _said


def test_the_default_hours_typed_without_a_fleet_are_refused_too(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    assert _said(capsys, path, "--hours-per-month", "730") == (
        f"Error: --hours-per-month: {path} names no fleet run today, so there is no month to "
        "price; name it with plan.current in the scenario or --current TIER=REPLICASxGPUS")
