"""Round 22 of hostile input, request traces (second pass): each a failure found from outside
and fixed, with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_round19 import error_line, run_cli

from tiersim.trace import read_trace

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


# ------------------------------------------------------------------ one limit on a JSON line

_SHORT = '{"arrival_s":0,"input_tokens":1,"output_tokens":1}\n'


def _long(size: int) -> str:
    """A JSON line of ``size`` bytes (its line end not counted) holding a long prompt."""
    head, tail = '{"arrival_s":0,"input_tokens":1,"output_tokens":1,"prompt":"', '"}'
    return head + "x" * (size - len(head) - len(tail)) + tail


@pytest.mark.parametrize("first", [True, False])
def test_a_long_json_line_reads_wherever_it_is(tmp_path, capsys, first):
    """A 9 MB line (a long prompt) read as the second line was refused as the first: "first
    line is longer than 8,000,000 bytes; not a trace header"."""
    path = tmp_path / "t.jsonl"
    path.write_text(_long(9_000_000) + "\n" + _SHORT if first else _SHORT + _long(9_000_000))
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 0, err


@pytest.mark.parametrize(("text", "row", "line"), [
    ("{long}\n" + _SHORT, 1, 1),
    (_SHORT + "\n{long}\n" + _SHORT, 2, 3),
    (_SHORT + "{long}", 2, 2),                       # the last line, without its end
])
def test_a_json_line_over_the_limit_is_one_message_wherever_it_is(tmp_path, capsys, text, row,
                                                                  line):
    """A line over 16 MiB was refused by one rule and message as the first line (over 8 MB,
    "not a trace header") and by another later, or read, by luck of where the reader's blocks
    fell: one limit and one line now, before the file is parsed."""
    path = tmp_path / "t.jsonl"
    path.write_text(text.replace("{long}", _long((1 << 24) + 1)))
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row {row}: longer than 16,777,216 bytes, more than a trace line "
        f"holds; split or shorten it (file line {line})")


# ------------------------------------------------------------------ Mooncake ids of larger blocks


def test_mooncake_hash_ids_fewer_than_its_blocks_are_noted(tmp_path):
    """Mooncake writes one hash id per 512-token block of each prompt (every line of its
    FAST'25 trace: ``len(hash_ids) == ceil(input_length / 512)``). A file with fewer, such as
    ids of 4,096-token blocks, was read without a word: each id counted as 512 tokens, so the
    cached tokens were a fraction of the logged reuse."""
    path = tmp_path / "m.jsonl"
    path.write_text("".join(
        f'{{"timestamp": {1000 * i}, "input_length": 5000, "output_length": 10, '
        f'"hash_ids": [{i}, {i + 10}]}}\n' for i in range(3))
        + '{"timestamp": 3000, "input_length": 100, "output_length": 10, "hash_ids": [9]}\n'
        + '{"timestamp": 4000, "input_length": 900, "output_length": 10, "hash_ids": []}\n')
    notes = list(read_trace(path).origin.notes)  # [] says: no prefix blocks, and is no fault
    assert notes == ["hash_ids holds fewer ids than the prompt's 512-token blocks in 3 of 5 "
                     "rows (first at row 1: 2 ids for 5000 tokens, 10 blocks); Mooncake writes "
                     "one id per 512-token block, so a block without one is never cached: if "
                     "the ids are of larger blocks, cache hits are undercounted (no setting "
                     "changes the block size)"]


def test_mooncake_hash_ids_one_per_block_have_no_note():
    """The real FAST'25 trace gives no such note."""
    from pathlib import Path

    path = Path(__file__).parents[2] / "shared" / "data" / "traces" / "synthetic_trace.jsonl"
    if not path.exists():
        pytest.skip("no shared data")
    assert not [n for n in read_trace(path).origin.notes if "hash_ids" in n]


# ------------------------------------------------------------------ tool time on a first step


def test_tool_time_on_a_step_that_follows_none_is_noted(tmp_path):
    """``tool_s`` is the time from a step's predecessor's finish to its arrival, so a first
    step's (one that follows none) is never read. A file that gives each step the tool time
    *after* it (the call it makes) has tool_s on every first step: each was dropped without a
    word and every later step waited its predecessor's tool time instead of its own."""
    path = tmp_path / "s.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,parent,tool_s\n"
                    "0,10,5,1,0,-1,30\n0,20,5,1,1,0,2\n1,10,5,2,0,,0\n2,10,5,2,1,0,4\n"
                    "3,10,5,2,2,-1,7\n")
    notes = [n for n in read_trace(path).origin.notes if "tool_s" in n and "first" in n]
    assert notes == ["tool_s is above 0 on 2 of 3 steps that follow none (first at row 1, "
                     "30 s): a step's tool_s is the time from its predecessor's finish to its "
                     "own arrival, so such a step's is not read; if the file gives each step "
                     "the tool time after it, move each session's tool_s down one step "
                     "(docs/agentic.md in tiersim's source repository)"]


def test_tool_time_on_a_first_step_without_a_parent_column_is_noted(tmp_path):
    """Without a ``parent`` column each session's lowest step follows none."""
    path = tmp_path / "s.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,tool_s\n"
                    "0,10,5,1,0,0\n0,20,5,1,1,2\n1,10,5,2,3,1.5\n2,10,5,2,4,4\n")
    notes = [n for n in read_trace(path).origin.notes if "tool_s is above 0" in n]
    assert len(notes) == 1 and notes[0].startswith(
        "tool_s is above 0 on 1 of 2 steps that follow none (first at row 3, 1.5 s)")


# ---------------------------------------------------- a BurstGPT step after a failed one


def test_a_burstgpt_step_whose_parent_failed_is_named_as_such(tmp_path, capsys):
    """BurstGPT's failed requests (0 response tokens) are dropped; a session step whose
    ``parent`` is one was refused as "parent 1 is not an earlier step of session 1", though
    the file holds step 1 two lines above."""
    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
                    "session_id,step,parent\n"
                    "0,ChatGPT,10,5,15,Conversation log,1,0,-1\n"
                    "1,ChatGPT,10,0,10,Conversation log,1,1,0\n"
                    "2,ChatGPT,10,5,15,Conversation log,1,2,1\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 3, column 'parent': parent 1 is a failed request (row 2: 0 "
        "response tokens), which tiersim drops, so this step cannot follow it; remove this "
        "step, or leave its parent empty to replay it as a new root (file line 4)")


# ------------------------------------------------------------------ one field more on every row


@pytest.mark.parametrize("first", ["0", "5", "10"])
def test_rows_one_field_longer_than_the_header_are_refused_whatever_their_first_cells(
        tmp_path, capsys, first):
    """Rows that each hold one field more than the header make pandas take their first cells
    as an index. That was refused only when the index was no run of whole numbers: first
    cells 0, 1, 2 (or 5, 6, 7) were dropped as an index and every column read one to the
    left, exit 0: arrival_s from input_tokens' cells, and so on."""
    path = tmp_path / "t.csv"
    start = int(first)
    path.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(
        f"{start + k},{k},{100 * (k + 1)},{10 * (k + 1)}\n" for k in range(3)))
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 1: has 4 fields where the header has 3 (file line 2); fix the "
        "separators or quoting")
