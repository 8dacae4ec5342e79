"""Round 22 of hostile input, request traces (second pass): each a failure found from outside
and fixed, with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_round19 import error_line, run_cli

# ------------------------------------------------------------------ a CSV row short of fields


@pytest.mark.parametrize(("rows", "row", "line", "got"), [
    ("0,10,5,1,0,0\n1,20,5,1,1\n", 2, 3, 5),       # tool_s left off: read as 0 s
    ("0,10,5,1,0,0\n\n1,20,5\n", 2, 4, 3),         # a blank line before it: its own line named
    ('0,10,5,1,0," 0\n"\n1,20,5,1\n', 2, 4, 4),  # a quoted line end: the record's line
])
def test_a_csv_row_short_of_fields_is_refused(tmp_path, capsys, rows, row, line, got):
    """A CSV row with fewer fields than the header was read as if its last cells were blank:
    an optional column took its default (``tool_s`` 0 s, ``prompt`` empty), exit 0, while a
    row with more fields was refused. No producer of a shipped format writes short rows (the
    Azure and Sarathi/Vidur files have none), so it is refused likewise."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,tool_s\n" + rows)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row {row}: has {got} fields where the header has 6; fix the "
        f"separators or quoting, or write an empty cell for each one left out (file line {line})")


def test_a_header_ending_in_a_blank_cell_does_not_count_it(tmp_path, capsys):
    """A spreadsheet's header with a trailing comma names no column there: a row without that
    last, blank-named, field is no short row."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,\n0,10,5\n1,20,5\n")
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 0, err


# ------------------------------------------------------------------ a parent column of times


@pytest.mark.parametrize(("column", "kind", "label", "cells"), [
    ("parent", "duration column (timedelta64[ns])", "parent",
     pa.array([None, 1], pa.duration("ns"))),           # 1 ns read as step 1
    ("parent", "date-time column (datetime64[ns])", "parent",
     pa.array([-1, 0], pa.int64()).cast(pa.timestamp("ns"))),
    ("tool_s", "duration column (timedelta64[s])", "tool time in seconds",
     pa.array([None, 1], pa.duration("s"))),
])
def test_a_parent_or_tool_time_column_of_times_is_refused(tmp_path, capsys, column, kind,
                                                           label, cells):
    """A Parquet ``parent`` stored as a duration or timestamp was read as its integer (1 ns as
    step 1), where every other number column refuses date-time types; ``tool_s`` as a
    duration was refused as "not a number (got a Timedelta value)", its first cell filled."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [10, 20],
                             "output_tokens": [5, 5], "session_id": [1, 1], "step": [0, 1],
                             column: cells}), path)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: column '{column}': is a {kind}, and {label} must be a plain "
        "number; write it as numbers")
