"""Review of the CSV path that leaves unread columns out of pandas' parse (helper rev2): each
test holds a file to what the parse of every column (cc5383f) said of it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tiersim.errors import TraceError
from tiersim.trace import read_trace, windowed
from tiersim.trace.read_csv import csv_chunks

MOONCAKE = "timestamp,input_length,output_length,hash_ids,notes"


def mooncake(tmp_path, rows: list[bytes]):
    """A Mooncake CSV with a ``notes`` column nothing reads: rows 0-9, then ``rows``, then
    rows 10-19."""
    good = [f'{i * 1000},{100 + i},{10 + i},"[{i},{i + 1}]",note {i}'.encode() for i in range(20)]
    path = tmp_path / "t.csv"
    path.write_bytes(b"\n".join([MOONCAKE.encode(), *good[:10], *rows, *good[10:]]) + b"\n")
    return path


def test_a_row_repeating_the_header_but_in_a_column_left_out_is_no_repeated_header(tmp_path):
    """The header of another file, whose last column is named apart, is refused as a bad cell
    (as the parse of every column refused it), not as a repeat of this file's header: the
    columns left out were not compared."""
    path = mooncake(tmp_path, [b"timestamp,input_length,output_length,hash_ids,other"])
    with pytest.raises(TraceError) as err:
        read_trace(path, "mooncake")
    assert "repeats the header" not in str(err.value)
    assert "timestamp in milliseconds is not a number (got text of 9 characters)" in str(
        err.value)


def test_a_row_repeating_the_header_whole_is_still_refused_so(tmp_path):
    """The check above is kept where every cell repeats the header."""
    path = mooncake(tmp_path, [MOONCAKE.encode()])
    with pytest.raises(TraceError, match="row 11: repeats the header"):
        read_trace(path, "mooncake")


def test_a_short_row_not_utf8_prints_no_traceback(tmp_path):
    """A row of the wrong width holding a byte that is not UTF-8 is refused in one line;
    pyarrow decoded it for the handler of such rows, and printed 'Exception ignored ...' and
    a traceback (twice) before it."""
    path = mooncake(tmp_path, [b"10500,10\xe9,5,x"])
    done = subprocess.run([sys.executable, "-m", "tiersim", "trace", "inspect", str(path),
                           "--format", "mooncake"], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr == (f"Error: {path}: not a text CSV file (cannot decode it as UTF-8 at "
                           "file line 12); save the trace as UTF-8\n")


def test_a_chunk_with_a_row_repeating_the_header_in_the_columns_read_alone_is_parsed_whole(
        tmp_path):
    """The same, read a chunk at a time (an Azure CSV's windowed read): the chunk is parsed
    with every column, as the whole file was, and its cell is refused by the converter, not
    the chunk as a repeat of the header."""
    header = "TIMESTAMP,ContextTokens,GeneratedTokens,notes"
    rows = [f"2023-11-16 00:00:{i:02d}.0000000,{100 + i},{10 + i},note {i}" for i in range(20)]
    rows[12] = "TIMESTAMP,ContextTokens,GeneratedTokens,other"
    path = tmp_path / "t.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    chunks = list(csv_chunks(path, 5, windowed._used, windowed._left_out))
    assert [first for first, _ in chunks] == [0, 5, 10, 15]
    assert chunks[2][1]["TIMESTAMP"].iloc[2] == "TIMESTAMP"  # refused as a bad cell, later
