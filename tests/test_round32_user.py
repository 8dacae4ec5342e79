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


def test_the_traces_readme_quotes_mooncakes_prefix_reuse_as_trace_inspect_prints_it():
    from tiersim.paths import bundled
    from tiersim.trace import load_trace, trace_stats

    readme = bundled("traces", "mooncake_synthetic").parent / "README.md"
    row = next(line for line in readme.read_text().splitlines()
               if line.startswith("| `mooncake_synthetic.parquet`"))
    reuse = trace_stats(load_trace(bundled("traces", "mooncake_synthetic")))["prefix_reuse"]
    printed = f"{100 * reuse:.1f}%"  # tiersim trace inspect's "prefix hits, unbounded cache"
    assert printed in row, f"traces/README.md's Mooncake row does not quote {printed}: {row}"
