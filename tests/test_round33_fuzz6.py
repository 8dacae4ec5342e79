"""Round 33, hostile input (helper fuzz6): what the terminal-size variables, hand-edited run
folders ... hold."""

from __future__ import annotations

import json
import os

import pytest
from conftest import copy_folder
from test_hostile_inputs import run_cli

from tiersim.results import RunResult


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


@pytest.mark.parametrize("duration", [10**20, 2**64])
def test_a_hand_edited_duration_of_a_whole_number_past_64_bits_gives_a_page(
        hand_edited_run, tmp_path, capsys, duration):
    """``"duration_s": 100000000000000000000`` (a whole number, hand-edited) in summary.json
    ended ``tiersim report`` in "numpy._core._exceptions._UFuncInputCastingError: Cannot cast
    ufunc 'subtract' input 0 from dtype('O') to dtype('float64')": the summary kept it an int,
    which numpy holds as an object past 64 bits (1e20 written as a float was read). A number
    of a float field is read as a float now."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["duration_s"] = duration
    (folder / "summary.json").write_text(json.dumps(doc))
    code, err = run_cli(capsys, "report", folder)
    assert "Traceback" not in err
    assert code == 0, err[-1000:]
    assert (folder / "report.html").is_file()
    assert RunResult.read(folder / "summary.json").duration_s == float(duration)
