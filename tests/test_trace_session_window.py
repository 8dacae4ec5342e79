"""A trace window over agentic sessions keeps whole sessions, chosen by their first step's
arrival (a later step's own arrival_s is not used: it arrives when its predecessor finishes)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tiersim.cli.trace import trace_app
from tiersim.errors import TraceError
from tiersim.trace import TraceWarning, read_trace
from tiersim.trace.filecheck import Source
from tiersim.trace.loader import apply_window

HEADER = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def write(tmp_path, rows: str):
    path = tmp_path / "tr.csv"
    path.write_text(HEADER + rows)
    return path


def test_a_window_that_holds_no_first_step_is_refused(tmp_path):
    """Step 0 is before the window: its later steps are not served as a session of their own."""
    path = write(tmp_path, "0,1000,100,1,0\n10,50,100,1,1\n20,50,100,1,2\n")
    with pytest.raises(TraceError) as err:
        read_trace(path, window=(5, 100))
    # Round 51: worded as the window that selects no requests is (span as trace inspect prints
    # it, then the fix), where it read "...; the sessions start from 0 to 0 s" with no fix.
    assert str(err.value) == (
        f"{path}: window [5, 100) s holds no session's first step (a window keeps whole "
        "sessions by their first step's arrival): the sessions start from 0 to 0.0 s; choose "
        "a window inside 0 - 0.0 s")


def test_a_window_keeps_whole_sessions_with_a_note(tmp_path):
    """Session 1 starts before the window (dropped with its steps inside it); session 2 starts
    inside it (kept with its step logged after the end); the file rows are remembered."""
    path = write(tmp_path, "0,1000,100,1,0\n6,800,100,2,0\n10,50,100,1,1\n20,50,100,1,2\n"
                           "200,50,100,2,1\n")
    with pytest.warns(TraceWarning) as caught:
        loaded = read_trace(path, window=(5, 100))
    table = loaded.table
    assert table["session_id"].tolist() == [2, 2] and table["step"].tolist() == [0, 1]
    assert table["arrival_s"].tolist() == [1, 195]
    note = ("window [5, 100) s keeps whole sessions by their first step's arrival: 2 step(s) "
            "logged inside it belong to sessions that start outside it and are dropped; 1 later "
            "step(s) logged outside it are kept")
    assert loaded.origin.notes == (note,)
    assert str(caught[0].message) == f"{path}: {note}"
    assert str(loaded.origin.error("bad", 1, "step")) == (
        f"{path}: row 5, column 'step': bad (file line 6)")


def test_unordered_rows_keep_the_session_of_a_first_step_inside(tmp_path):
    """A later step logged (and listed) before its session's first step is kept with it, at
    time 0 (its own arrival is not used)."""
    path = write(tmp_path, "0,50,100,1,1\n6,1000,100,1,0\n7,60,100,2,1\n120,900,100,2,0\n")
    with pytest.warns(TraceWarning, match="1 step\\(s\\) logged inside it belong to sessions "
                      "that start outside it and are dropped; 1 later step"):
        table = read_trace(path, window=(5, 100)).table
    assert table["step"].tolist() == [1, 0] and table["session_id"].tolist() == [1, 1]
    assert table["arrival_s"].tolist() == [0, 1]


def test_a_window_cutting_no_session_adds_no_note(tmp_path):
    path = write(tmp_path, "0,1000,100,1,0\n1,50,100,1,1\n6,800,100,2,0\n7,50,100,2,1\n")
    loaded = read_trace(path, window=(5, 100))
    assert loaded.origin.notes == () and loaded.table["session_id"].tolist() == [2, 2]


@given(st.lists(st.tuples(st.floats(0, 100), st.integers(0, 4), st.integers(0, 3)),
                min_size=1, max_size=40, unique_by=lambda r: (r[1], r[2])),
       st.floats(0, 100), st.floats(0.01, 100))
def test_every_session_is_kept_whole_or_dropped_whole(rows, start, length):
    """Kept: exactly the sessions whose lowest step's arrival is in [start, start + length)."""
    rows = sorted(rows)
    t = np.array([r[0] for r in rows])
    table = pd.DataFrame({"request_id": np.arange(len(rows)), "arrival_s": t,
                          "session_id": [r[1] for r in rows], "step": [r[2] for r in rows]})
    first = table.sort_values("step").groupby("session_id")["arrival_s"].first()
    wanted = set(first[(first >= start) & (first < start + length)].index)
    if not wanted:
        with pytest.raises(TraceError, match="holds no session's first step"):
            apply_window(table, (start, start + length), Source("mem", None))
        return
    out = apply_window(table, (start, start + length), Source("mem", None))
    assert out["request_id"].tolist() == table.index[table["session_id"].isin(wanted)].tolist()
    assert (out["arrival_s"] >= 0).all()


def test_a_window_cuts_by_row_when_the_run_does_not_replay_sessions(tmp_path):
    """``sessions=False`` (the scenario's ``workload.sessions.source`` is off or generate):
    every row arrives at its own time, so the window keeps exactly the rows logged inside it."""
    path = write(tmp_path, "0,1000,100,1,0\n6,800,100,2,0\n10,50,100,1,1\n200,50,100,2,1\n")
    table = read_trace(path, window=(5, 100), sessions=False).table
    assert table["arrival_s"].tolist() == [1, 5]
    assert table["session_id"].tolist() == [2, 1] and table["step"].tolist() == [0, 1]


@pytest.mark.parametrize("source,kept", [("off", [1, 5]), ("generate", [1, 5]),
                                         ("trace", [1, 195]), ("auto", [1, 195])])
def test_the_scenario_window_follows_workload_sessions_source(tmp_path, source, kept):
    """A scenario's trace window keeps whole sessions only when the run replays them."""
    from conftest import tiny_doc, write_yaml

    from tiersim.inputs import load_scenario_trace
    from tiersim.scenario import load_scenario

    write(tmp_path, "0,1000,100,1,0\n6,800,100,2,0\n10,50,100,1,1\n200,50,100,2,1\n")
    doc = tiny_doc(trace={"path": "tr.csv", "format": "canonical", "window": [5, 100]},
                   workload={"sessions": {"source": source}})
    path = write_yaml(tmp_path / "s.yaml", doc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        table = load_scenario_trace(load_scenario(path), str(path)).table
    assert table["arrival_s"].tolist() == kept


def test_inspect_times_a_session_trace_by_its_first_steps(tmp_path):
    """A later step's arrival_s is a placeholder (it arrives its tool_s after its predecessor
    finishes): inspect said "span 0.0 s" for a run that lasted 1,000,000 s. Timing now counts
    the sessions' first steps, says so, and names the rate sessions/s."""
    path = tmp_path / "s.csv"
    path.write_text("request_id,arrival_s,input_tokens,output_tokens,session_id,step,parent,"
                    "tool_s\n0,0,100,10,1,0,-1,0\n1,0,50,10,1,1,0,1000000\n"
                    "2,4,100,10,2,0,-1,0\n3,4,50,10,2,1,0,5\n4,8,100,10,3,0,-1,0\n")
    result = CliRunner().invoke(trace_app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    # round 56: the 3 sessions' 2 gaps over the span, the rate a run's price reads (was 3 / 8)
    assert (stats["rows"], stats["sessions"], stats["span_s"], stats["rate_rps"]) == (5, 3, 8.0,
                                                                                      2 / 8)
    assert stats["notes"][-1].startswith("session trace: span, rate and inter-arrival CV count "
                                         "the first step of each session")
    table = CliRunner().invoke(trace_app, ["inspect", str(path)])
    assert "rate ((sessions - 1) / span)" in table.output and "0.25 sessions/s" in table.output
