"""Round 23, found while reviewing: command-line behaviour a user could not see before."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"
NOTE = "note: --report writes report.html only with --out DIR; this run writes no files"


def test_report_asked_for_without_out_is_noted(tmp_path, capsys, monkeypatch):
    """``tiersim run --report`` without ``--out`` wrote nothing and said nothing, though the
    flag asks for a file: one note says why none is written."""
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "run", TINY, "--report")
    assert code == 0
    assert NOTE in err.splitlines()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flags", [[], ["--no-report"]])
def test_no_report_note_where_none_was_asked_for(tmp_path, capsys, monkeypatch, flags):
    """The default (and ``--no-report``) without ``--out`` stays quiet: nothing was asked
    that the run does not do."""
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "run", TINY, *flags)
    assert code == 0
    assert "--report" not in err
