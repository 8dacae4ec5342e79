"""A trace with some session columns but not both ``session_id`` and ``step`` is replayed as
independent requests; a note says so, where the columns were dropped without a word."""

from __future__ import annotations

import json
import warnings

import pytest

from tiersim.cli import main
from tiersim.trace import TraceWarning, read_trace


def notes_of(path, sessions: bool = True) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return list(read_trace(path, sessions=sessions).origin.notes)


@pytest.mark.parametrize(("header", "cells", "named", "missing"), [
    ("session_id", "1", "session_id", "step"),
    ("step,parent,tool_s", "0,,", "step, parent, tool_s", "session_id"),
    ("parent", "", "parent", "session_id and step"),
])
def test_half_a_session_trace_is_noted(tmp_path, header, cells, named, missing):
    path = tmp_path / "t.csv"
    path.write_text(f"arrival_s,input_tokens,output_tokens,{header}\n0,100,10,{cells}\n")
    assert notes_of(path) == [
        f"column(s) {named} describe agentic sessions, but the trace has no {missing} (a "
        "session trace needs both session_id and step): every row is replayed as an "
        "independent request at its own arrival_s; add the missing column(s) to replay "
        "sessions (docs/agentic.md in tiersim's source repository)"]


def test_no_note_without_session_columns_or_when_sessions_are_off(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("arrival_s,input_tokens,output_tokens,step_type\n0,100,10,code\n")
    half = tmp_path / "half.csv"
    half.write_text("arrival_s,input_tokens,output_tokens,session_id\n0,100,10,1\n")
    assert notes_of(plain) == [] and notes_of(half, sessions=False) == []


def test_inspect_shows_the_note(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id\n0,100,10,1\n1,100,10,1\n")
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes[0].startswith("column(s) session_id describe agentic sessions, but the trace "
                               "has no step")
