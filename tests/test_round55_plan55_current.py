"""Round 55, plan55: ``plan: {hours_per_month: N}`` in a scenario without ``plan.current`` was
refused at load ("plan.current: required key is missing") even when ``tiersim plan --current
TIER=...`` named today's fleet on the command line: the key was checked before the flag merged.
Now the flag counts as giving ``current``; with neither, ``tiersim plan`` takes the hours alone
since round 56 (the month of its saving against its baseline), and ``tiersim run`` and
``tiersim sweep`` leave it aside (refused there until review56d).

Figures are modelled (tiny's two minutes of Azure code traffic, roofline step times): today's
bf16 2 x 1 GPU costs 7.00 USD/hour, the plan (bf16 1 x 1 GPU) 3.50 USD/hour.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.scenario import EMPTY_PLAN

HOURS = {"plan": {"hours_per_month": 100}}


def _refusal(path: Path) -> str:
    """The one line a scenario lacking ``plan.current`` under ``plan`` is refused with: the
    line of its ``plan`` block, as pydantic's "required key" words it."""
    line = 1 + next(k for k, text in enumerate(path.read_text().splitlines())
                    if text.startswith("plan:"))
    return f"Error: {path}: line {line}: plan: {EMPTY_PLAN}"


def _said(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


def test_the_flag_gives_current_and_the_scenarios_hours_price_the_month(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**HOURS))
    out = tmp_path / "p"
    code, text = _said(capsys, "plan", str(path), "--current", "bf16=2", "--check-seeds", "0",
                       "--no-report", "--out", str(out))
    assert code == 0, text
    current = json.loads((out / "plan.json").read_text())["current"]
    assert (current["given"], current["hours_per_month"]) == ("--current", 100.0)
    assert (current["cost_per_hour_usd"], current["vs_current_per_hour_usd"]) == (7.0, 3.5)
    assert current["vs_current_per_month_usd"] == 350.0
    assert ("  the plan saves 50.0 % per hour against today's fleet: 3.50 USD/hour less, 350 USD "
            "less a month of 100 hours (both fleets provisioned for the trace's load; modelled)"
            in text.splitlines())


def test_neither_the_key_nor_the_flag_lets_the_plans_hours_stand_alone(tmp_path, capsys):
    """Refused ("plan.current: required key is missing") until round 56 (left56): the hours
    now set the month of the plan's saving against its baseline, with no fleet named today."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**HOURS))
    out = tmp_path / "p"
    code, text = _said(capsys, "plan", str(path), "--check-seeds", "0", "--no-report", "--out",
                       str(out))
    assert code == 0, text
    data = json.loads((out / "plan.json").read_text())
    assert (data["hours_per_month"], "current" in data) == (100.0, False)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_run_and_sweep_refuse_a_plan_block_giving_neither_key(tmp_path, capsys, command):
    """The hours alone were refused here too until review56d: run and sweep leave the block
    aside (tests/test_round56_review56d.py); a block that gives nothing is still refused, its
    line naming both keys since round 57."""
    doc = tiny_doc(plan={})
    if command == "sweep":
        doc["sweep"] = {"seed": [0, 1]}
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, text = _said(capsys, command, str(path), "--out", str(tmp_path / "o"))
    assert (code, text.splitlines()[-1]) == (1, _refusal(path))


def test_current_null_is_still_no_list(tmp_path, capsys):
    """``current: null`` is a key written with no value, not a key left out: the flag does not
    make it valid (pydantic never checks the default that stands for the missing key)."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan={"current": None}))
    code, text = _said(capsys, "plan", str(path), "--current", "bf16=2", "--check-seeds", "0",
                       "--no-report", "--out", str(tmp_path / "p"))
    line = 2 + path.read_text().splitlines().index("plan:")
    assert (code, text) == (1, f"Error: {path}: line {line}: plan.current: must be a list (got "
                               "null); null is YAML's null (no value): write the value")
