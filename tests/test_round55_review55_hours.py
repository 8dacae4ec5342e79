"""Round 55, review55: ``tiersim plan --hours-per-month`` just past its bound was refused with
the value rounded onto the bound it broke: "--hours-per-month 744: ... at most 744" (the refusal
wrote it with ``:g``). It now quotes the value as typed, as the other number flags' refusals do
(``tiersim.numbers.as_written``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def _said(capsys, path: Path, *args: str) -> str:
    """``tiersim plan path args`` (no other seed checked): exit 1 and its one line of text,
    nothing written."""
    assert main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out",
                 str(path.parent / "p"), *args]) == 1
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert not (path.parent / "p").exists()
    return text


@pytest.mark.parametrize("typed", ["744.0000001", "744.00000000001", "1e400"])
def test_hours_past_the_bound_are_quoted_as_typed(tmp_path, capsys, typed):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    said = _said(capsys, path, "--current", "bf16=2", "--hours-per-month", typed)
    assert said.startswith(f"Error: --hours-per-month {typed}"), said
    assert said.endswith(": give the hours a month is paid for, above 0 and at most 744 "
                         "(730: 24/7)"), said
