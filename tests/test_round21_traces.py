"""Round 21 of hostile input, request traces: each a failure found from outside and fixed, with
the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from test_round19 import error_line, run_cli

from tiersim.cli import main
from tiersim.trace import chunked, read_trace

# ------------------------------------------------------------------ Parquet range index


def test_an_arrival_index_of_whole_seconds_is_read_as_its_column(tmp_path, capsys):
    """pandas 3's ``set_index`` makes a RangeIndex of evenly spaced whole numbers, which
    pyarrow stores in the pandas metadata alone (no column in the schema): a trace saved with
    ``df.set_index("arrival_s")`` at whole seconds was refused as token lengths without
    arrival times."""
    path = tmp_path / "t.parquet"
    pd.DataFrame({"arrival_s": [0, 1, 2], "input_tokens": [10, 20, 30],
                  "output_tokens": [5, 5, 5]}).set_index("arrival_s").to_parquet(path)
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "canonical" and stats["span_s"] == 2.0 and stats["rows"] == 3


def test_a_request_id_range_index_is_read_in_every_chunk(tmp_path, monkeypatch):
    """A named RangeIndex (``request_id`` 100 ...) was read from a file of one chunk, but a
    file of more chunks (more than 262,144 rows) lost it silently: every id renumbered from
    0."""
    path = tmp_path / "t.parquet"
    n = 5
    pd.DataFrame({"arrival_s": np.arange(n) * 1.0, "input_tokens": np.arange(n) + 3,
                  "output_tokens": [5] * n}).set_index(
        pd.RangeIndex(100, 100 + 3 * n, 3, name="request_id")).to_parquet(path)
    whole = read_trace(path).table
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 2)
    chunks = read_trace(path).table
    assert whole["request_id"].tolist() == list(range(100, 100 + 3 * n, 3))
    pd.testing.assert_frame_equal(chunks, whole)


def test_a_range_index_named_as_a_column_is_named(tmp_path, capsys):
    """A RangeIndex named as a column is refused as any other such index is."""
    path = tmp_path / "t.parquet"
    frame = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 2],
                          "output_tokens": [1, 2]})
    frame.set_index(pd.RangeIndex(0, 2, name="arrival_s")).to_parquet(path)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: its pandas index and a column are both named 'arrival_s'; keep one "
        "(drop the index with reset_index(drop=True), or rename it) and write the file again")


# ------------------------------------------------------------------ BurstGPT Total tokens

BURST = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def test_burstgpt_totals_that_are_not_the_sum_are_noted(tmp_path):
    """BurstGPT's ``Total tokens`` is ``Request tokens + Response tokens``; a file where it is
    not (its columns shifted or swapped under the header) replayed its lengths without a
    word."""
    path = tmp_path / "bg.csv"
    path.write_text(BURST + "5,ChatGPT,472,18,490,Conversation log\n"
                    "6,ChatGPT,18,472,490,Conversation log\n"
                    "7,ChatGPT,490,18,472,Conversation log\n"
                    "8,ChatGPT,100,0,90,Conversation log\n"
                    "9,ChatGPT,10,2,20,Conversation log\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = read_trace(path)
    assert loaded.table["input_tokens"].tolist() == [472, 18, 490, 10]
    assert loaded.origin.notes[0] == (
        "its Total tokens is not Request tokens + Response tokens in 2 of 4 rows kept (first "
        "at row 3: 472 against 490 + 18): the run reads the request and response columns, so "
        "check that the file's columns are not shifted or swapped")


def test_burstgpt_totals_that_are_the_sum_or_blank_say_nothing(tmp_path):
    path = tmp_path / "bg.csv"
    path.write_text(BURST + "5,ChatGPT,472,18,490,Conversation log\n"
                    "6,ChatGPT,100,0,100,Conversation log\n7,ChatGPT,10,2,,API log\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = read_trace(path)
    assert loaded.origin.notes == ("dropped 1 of 3 rows with 0 response tokens (failed "
                                   "requests in BurstGPT; first at row 2)",)


# ------------------------------------------------------------------ CSV files joined whole

AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize(("header", "row"), [
    (AZURE, "2023-11-16 18:15:46.6805900,4808,10\n"),
    (BURST, "5,ChatGPT,472,18,490,Conversation log\n"),
    (" TIMESTAMP , ContextTokens,GeneratedTokens,\n", "2023-11-16 18:15:46,4808,10,\n"),
])
def test_a_header_repeated_inside_a_csv_is_named(tmp_path, capsys, header, row):
    """Two CSV files joined with ``cat`` (BurstGPT ships its log in two) hold the second's
    header as a data row: it was refused as an unreadable timestamp, a "text of 9
    characters"."""
    path = tmp_path / "joined.csv"
    path.write_text(header + row + row + header + row)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 3: repeats the header (CSV files joined with their headers?); "
        "remove the line (file line 4)")


def test_a_header_repeated_in_a_canonical_csv_with_a_blank_column_is_named(tmp_path):
    """A canonical CSV's columns are all read as they are: a trailing comma's blank column is
    numbers (all missing), and matches the repeated header's empty cell."""
    from tiersim.errors import TraceError

    header = "arrival_s,input_tokens,output_tokens,\n"
    path = tmp_path / "joined.csv"
    path.write_text(header + "0,10,5,\n" + header + "1,10,5,\n")
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == (f"{path}: row 2: repeats the header (CSV files joined with "
                               "their headers?); remove the line (file line 3)")


def test_a_row_that_repeats_only_some_header_cells_is_read_as_data(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,task_type\n"
                    "0,10,5,task_type\n1,10,5,output_tokens\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_trace(path).table["task_type"].tolist() == ["task_type", "output_tokens"]


# ------------------------------------------------------------------ dictionary-encoded Parquet


@pytest.mark.parametrize(("column", "cells", "read"), [
    ("spec_acceptance", ["0.5", None, "0.7"], [0.5, np.nan, 0.7]),
    ("spec_acceptance", [0.5, None, 0.7], [0.5, np.nan, 0.7]),
    ("tool_s", ["1", None, "2"], [1.0, 0.0, 2.0]),
])
def test_a_dictionary_encoded_column_with_a_gap_is_read(tmp_path, column, cells, read):
    """A dictionary-encoded Parquet column (pandas reads it as categories) of spec_acceptance
    or tool_s with a missing cell crashed: "TypeError: Cannot setitem on a Categorical with a
    new category (0.0)"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [10, 20, 30],
                             "output_tokens": [5, 5, 5],
                             column: pa.array(cells).dictionary_encode()}), path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = read_trace(path).table
    np.testing.assert_array_equal(table[column].to_numpy(np.float64), read)


# ------------------------------------------------------------------ JSON lines, one a line

MOONCAKE = [{"timestamp": 0, "input_length": 600, "output_length": 5},
            {"timestamp": 10, "input_length": 600, "output_length": 5},
            {"timestamp": 20, "input_length": -6, "output_length": 5}]


@pytest.mark.parametrize(("text", "fault"), [
    ("\n".join(json.dumps(r, indent=2) for r in MOONCAKE) + "\n",
     "row 1: holds the start of a JSON value that the line does not end (JSON written over "
     "several lines, or a line cut short?); write one object a line, e.g. jq -c . FILE (file "
     "line 1)"),
    (json.dumps(MOONCAKE[0]) + " " + json.dumps(MOONCAKE[1]) + "\n\n" + json.dumps(MOONCAKE[2])
     + "\n", "row 1: holds more than one JSON value (one ends at character 57); write one "
     "object a line, e.g. jq -c . FILE (file line 1)"),
])
def test_json_objects_not_one_a_line_are_refused_whatever_the_size(tmp_path, capsys, text,
                                                                   fault):
    """Pretty-printed JSON objects, or two on a line, were read below 16 MB (Arrow's block) and
    refused above it; read, their errors named the wrong row and file line (``row 3 ... (file
    line 3)`` for an object on line 11)."""
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == f"Error: {path}: {fault}"


def test_json_lines_with_blank_lines_and_crlf_are_read(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\r\n" + b"\r\n \t\r\n".join(
        json.dumps(r).encode() for r in MOONCAKE[:2]) + b"\r\n\r\n")
    assert read_trace(path).table["arrival_s"].tolist() == [0.0, 0.01]


# ------------------------------------------------------------------ Parquet period columns


@pytest.mark.parametrize("column", ["arrival_s", "input_tokens"])
def test_a_period_column_is_refused_as_date_times_are(tmp_path, capsys, column):
    """A pandas period column (stored in Parquet as its integer ordinals) was read as those
    integers: dates a day apart replayed one second apart, or became token counts."""
    path = tmp_path / "t.parquet"
    frame = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [1, 2, 3],
                          "output_tokens": [1, 2, 3]})
    frame[column] = pd.period_range("1970-01-02", periods=3, freq="D")
    frame.to_parquet(path)
    label = {"arrival_s": "arrival time in seconds", "input_tokens": "token count"}[column]
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: column {column!r}: is a period column (period[D]), and {label} must "
        "be a plain number; write it as numbers")


# ------------------------------------------------------------------ paths the reader is given


@pytest.mark.parametrize("target", ["missing.csv", "loop.csv"])
def test_the_reader_names_a_link_that_leads_to_no_file(tmp_path, target):
    """``read_trace`` called a dangling or looping link "file not found; check the path" (the
    command line's own check names it a link)."""
    from tiersim.errors import TraceError

    link = tmp_path / "loop.csv"
    link.symlink_to(tmp_path / target)
    with pytest.raises(TraceError) as info:
        read_trace(link)
    assert str(info.value) == (f"{link}: a link that leads to no file (its target is missing, "
                               "or the links loop); point it at the trace file, or give the "
                               "file itself")


def test_the_reader_names_a_path_it_may_not_look_at(tmp_path, monkeypatch):
    """A trace in a folder the user may not enter raised PermissionError from ``is_dir``: a
    traceback from ``read_trace``."""
    import errno
    import os
    from pathlib import Path

    from tiersim.errors import TraceError

    path = tmp_path / "locked" / "t.csv"
    real = Path.stat

    def stat(self, *args, **kwargs):
        if str(self).startswith(str(path.parent)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}: cannot read the file (Permission denied)"
