"""Round 55, review55: ``--hours-per-month`` without a fleet named today was refused ("names no
fleet run today, so there is no month to price"), but only where the hours differed from the
default 730. Since round 56 (left56) the hours stand alone, typed at 730 or not: they set the
month of the plan's saving against its baseline (tests/test_round56_left56_month.py).
"""

from __future__ import annotations

import json

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def test_the_default_hours_typed_without_a_fleet_are_taken_and_recorded(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "p"
    assert (
        main(
            [
                "plan",
                str(path),
                "--check-seeds",
                "0",
                "--no-report",
                "--out",
                str(out),
                "--hours-per-month",
                "730",
            ]
        )
        == 0
    )
    text = capsys.readouterr()
    assert "no month to price" not in text.out + text.err
    data = json.loads((out / "plan.json").read_text())
    assert (data["hours_per_month"], "current" in data) == (730.0, False)
