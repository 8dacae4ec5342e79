"""A new user's first hour: what `tiersim --help` and the docs tell a capacity planner who
installed the wheel, checked against what the commands and the shipped files do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiersim.cli import main
from tiersim.paths import available


def help_text(capsys, *argv: str) -> str:
    """``tiersim ARGV --help`` as printed, its box borders and line breaks read as spaces."""
    assert main([*argv, "--help"]) == 0
    return re.sub(r"[│\s]+", " ", capsys.readouterr().out)


@pytest.mark.parametrize("command", ["run", "plan", "sweep", "disagg", "analytic"])
def test_a_scenario_commands_help_names_the_bundled_scenarios(capsys, command):
    shown = help_text(capsys, command)
    names = [Path(name).stem for name in available("scenarios")]
    assert "tiny" in names and "default" in names
    missing = [name for name in names if not re.search(rf"\b{name}\b", shown)]
    assert missing == [], f"tiersim {command} --help does not name {missing}"
