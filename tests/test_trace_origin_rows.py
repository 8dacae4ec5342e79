"""An error found after a trace is loaded (a session's bad parent) names the file's own row,
also where the converter dropped rows before it (BurstGPT's failed requests)."""

from __future__ import annotations

import warnings

import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.trace import TraceWarning, read_trace

HEADER = "Timestamp,Model,Request tokens,Response tokens,session_id,step,parent\n"
ROWS = ("1,ChatGPT,100,0,9,0,\n"  # failed (0 response tokens): dropped
        "2,ChatGPT,100,0,9,1,\n"  # failed: dropped
        "3,ChatGPT,100,10,1,0,\n"
        "4,ChatGPT,100,10,1,1,0\n"
        "5,ChatGPT,100,10,1,2,5\n")  # data row 5, file line 6: parent 5 is no earlier step


def write(tmp_path):
    path = tmp_path / "burst.csv"
    path.write_text(HEADER + ROWS)
    return path


@pytest.mark.parametrize("window", [None, (0, 100)])
def test_a_dropped_row_does_not_shift_the_row_named(tmp_path, window):
    """Table row 2 is the file's data row 5 (rows 1 and 2 failed and were dropped)."""
    path = write(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        origin = read_trace(path, window=window).origin
    assert [origin.row(i) for i in range(3)] == [3, 4, 5]


def test_inspect_names_the_file_row_of_a_bad_parent(tmp_path, capsys):
    path = write(tmp_path)
    assert one_error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 5, column 'parent': parent 5 is not an earlier step of session 1 "
        "(file line 6)")
