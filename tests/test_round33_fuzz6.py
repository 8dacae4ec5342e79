"""Round 33, hostile input (helper fuzz6): environment variables, ..."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize("name", ["COLUMNS", "LINES"])
def test_a_terminal_size_of_superscript_digits_is_no_traceback(capsys, monkeypatch, name):
    """``COLUMNS=² tiersim --help`` ended in "ValueError: invalid literal for int() with base
    10: '²'" (tiersim's width check), and ``LINES=² tiersim run tiny`` in the same from rich's
    Console: both take any text ``str.isdigit`` accepts for a number. Such a value is no size
    now, as a word is, and the user's setting is back afterwards."""
    from tiersim.cli import main

    monkeypatch.setenv(name, "²")
    capsys.readouterr()
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--accuracy-floor" in out
    assert os.environ[name] == "²"
