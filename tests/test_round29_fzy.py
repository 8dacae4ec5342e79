"""Round 29, hostile command lines, environments, scenarios and result folders (helper fzy):
each test names what the command did before its fix."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize("columns", ["10000000", "99999999999999999999"])
def test_a_huge_terminal_width_is_laid_out_for_at_most_1000_columns(capsys, monkeypatch,
                                                                    columns):
    """``COLUMNS=10000000 tiersim plan --help`` printed 280 MB of padding (38 s, 580 MB of
    memory); ``COLUMNS=99999999999999999999`` was an OverflowError traceback from rich."""
    from tiersim.cli import main

    monkeypatch.setenv("COLUMNS", columns)
    capsys.readouterr()
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--accuracy-floor" in out
    assert max(len(line) for line in out.splitlines()) <= 1000
    assert os.environ["COLUMNS"] == columns  # the user's setting again afterwards
