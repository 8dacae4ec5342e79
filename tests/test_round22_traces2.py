"""Round 22 of hostile input, request traces (second pass): each a failure found from outside
and fixed, with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

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
