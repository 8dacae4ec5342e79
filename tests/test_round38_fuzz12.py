"""Round 38, hostile input (helper fuzz12): characters and files an error line must survive.
Each test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"], ids=["line", "paragraph"])
def test_a_line_separator_in_a_path_is_written_as_its_escape(tmp_path, capsys, monkeypatch,
                                                              separator):
    """``tiersim report`` of a folder whose name holds U+2028 (or U+2029) printed the
    character as it is: the one error line was two for any reader that honours Unicode's line
    breaks (Python's splitlines, an editor). Such a separator is now written as its escape, as
    a control or format character is."""
    monkeypatch.chdir(tmp_path)
    name = f"d{separator}ir"
    line = one_error_line(*run_cli(capsys, "report", name))
    shown = name.encode("unicode_escape").decode("ascii")
    assert line == (f"Error: {shown}: no such folder; give the --out folder of a run, sweep "
                    "or plan")
