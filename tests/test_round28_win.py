"""Round 28 (win): the chunked trace reads agree with the whole read on the note of rows
without output (an Azure read that stops at the window's end counts the rows before its
stopping row, and says it as the whole read does where it read to the file's end); a
canonical Parquet file with two faults gets the whole read's one line whatever its chunks."""

from __future__ import annotations

import tracemalloc

import pandas as pd
import pytest
import test_round27_burstgpt as burstgpt
from test_memory_trace import trace, write_parquet
from test_round27_tracestream import _read

from tiersim.errors import TraceError
from tiersim.trace import chunked, read_trace

WHY = ("(requests that produced no token: failed or cancelled; only served requests are "
       "replayed; first at row 3)")
"""The end of the Azure drop note of :func:`_ten_rows` (its first row without output)."""


def _ten_rows(tmp_path, failed=(2, 4, 7)):
    """An Azure CSV of 10 rows a second apart, the rows ``failed`` (0-based) with 0 output."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    lines += [f"2023-11-16 18:15:{i:02d}.0000000,{100 + i},{0 if i in failed else 10}"
              for i in range(10)]
    path = tmp_path / "ten.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _dropped(read) -> list[str]:
    """The drop notes of a read (:func:`test_round27_tracestream._read`), without the path."""
    assert not isinstance(read, str), read
    return [n.split(": ", 1)[1] for n in read[1] if "dropped" in n]


READ_TO_THE_END = [(None, (0, 3)), (None, (0, 8.5)), (None, None), (4, (0, 8.5)), (4, None),
                   (20, (0, 3)), (20, (0, 8.5))]
"""Chunk sizes and windows of a read of :func:`_ten_rows` that stops in its last chunk (10
rows: one chunk; 4 rows: rows 8-9 hold the stopping row 9) or reads to the end."""


@pytest.mark.parametrize("chunk_rows, window", READ_TO_THE_END)
def test_azure_drop_note_of_a_read_to_the_files_end_is_the_whole_reads(tmp_path, chunk_rows,
                                                                      window):
    """A chunked read whose stopping row is in the file's last chunk (or that does not stop)
    read every row: its drop note is the whole read's, word for word. It said 'dropped 3 of
    the first 10 (read up to the window's end) rows' of a file read whole in one chunk."""
    path = _ten_rows(tmp_path)
    expected = [f"dropped 3 of 10 rows with 0 GeneratedTokens {WHY}"]
    assert _dropped(_read(path, window, True)) == expected
    assert _dropped(_read(path, window, False, chunk_rows)) == expected


@pytest.mark.parametrize("chunk_rows, window, counted, dropped", [
    (4, (0, 3), 3, 1),  # row 3 stops the read: rows 0-2, one without output
    (6, (0, 3), 3, 1),  # row 4 (no output) is in the chunk read, after the stopping row
    (5, (0, 8.5), 9, 3),  # a last chunk of a full chunk's rows is not known as the last
])
def test_azure_drop_note_stopped_early_counts_the_rows_before_the_stop(
        tmp_path, chunk_rows, window, counted, dropped):
    """A read stopped before the file's end counts the rows before its stopping row (the
    first served request at or past the window's end), not the whole last chunk: with
    6-row chunks and a window of 3 s it said 'dropped 2 of the first 6', rows 4 and 5 after
    the window's end counted."""
    path = _ten_rows(tmp_path)
    assert _dropped(_read(path, window, False, chunk_rows)) == [
        f"dropped {dropped} of the first {counted} (read up to the window's end) rows with 0 "
        f"GeneratedTokens {WHY}"]


@pytest.mark.parametrize("window", [(0, 3), None])
@pytest.mark.parametrize("chunk_rows", [None, 4])
def test_burstgpt_drop_note_is_the_whole_reads(tmp_path, window, chunk_rows):
    """The BurstGPT chunked read reads to the file's end, so its drop note is the whole
    read's, word for word, windowed or not."""
    raw = burstgpt._burstgpt(tmp_path, 10)
    assert (raw["Response tokens"] == 0).sum() == 2  # rows 0 and 5 (the seed's)
    whole, _ = burstgpt._read(tmp_path / "b.csv", window, True)
    got, chunked = burstgpt._read(tmp_path / "b.csv", window, False, chunk_rows)
    expected = ["dropped 2 of 10 rows with 0 response tokens (failed requests in BurstGPT; "
                "first at row 1)"]
    assert chunked and _dropped(got) == _dropped(whole) == expected


def _two_faults(n: int = 10) -> pd.DataFrame:
    """A canonical trace of ``n`` rows (:func:`test_memory_trace.trace`) with a prompt of -3
    at row 2 and an arrival earlier than the row before's at row 8 (file rows, 1-based)."""
    d = trace(n)
    d.loc[1, "input_tokens"] = -3
    d.loc[7, "arrival_s"] = 0.1
    return d


@pytest.mark.parametrize("chunk_rows", [2, 3, 4, 7, 10])
def test_parquet_with_two_faults_named_alike_by_either_read(tmp_path, monkeypatch,
                                                           chunk_rows):
    """A canonical Parquet file with two faults in different chunks gets the whole read's one
    line (the converter checks arrival_s before input_tokens), as the same table saved as
    canonical CSV does: the chunked read named the first bad chunk's fault ('row 2, column
    'input_tokens'') with chunks of 2 to 7 rows, 'row 8' with one chunk of 10."""
    d = _two_faults()
    path = write_parquet(tmp_path / "t.parquet", d, row_group=chunk_rows)
    d.to_csv(tmp_path / "t.csv", index=False)
    line = (f"{path}: row 8, column 'arrival_s': timestamp 0.1 is earlier than the row before "
            "(3); sort the file by arrival_s")
    with pytest.raises(TraceError) as as_csv:
        read_trace(tmp_path / "t.csv")
    # the CSV's cells as written: pandas writes the time before as 3.0 (Parquet has no text)
    assert str(as_csv.value) == (line.replace("t.parquet", "t.csv").replace("(3)", "(3.0)")
                                 + " (file line 9)")
    monkeypatch.setattr(chunked, "CHUNK_ROWS", chunk_rows)
    with pytest.raises(TraceError) as in_chunks:
        read_trace(path)
    assert str(in_chunks.value) == line


def test_parquet_fault_the_whole_read_passes_is_the_chunks(tmp_path, monkeypatch):
    """Were the whole read to pass a file a chunk refused, the chunk's fault is raised (the
    file is refused either way)."""
    path = write_parquet(tmp_path / "t.parquet", _two_faults())
    monkeypatch.setattr(chunked, "refuse_as_the_whole_read", lambda *args: None)
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 3)
    with pytest.raises(TraceError, match=r"row 2, column 'input_tokens'"):
        read_trace(path)


def test_parquet_whole_read_of_a_refused_file_holds_no_chunk(tmp_path, monkeypatch):
    """The chunks' full-length arrays (24 bytes a row here) are let go before the whole read
    of a refused file begins (the fault's traceback held them: 33 MB of 1M rows)."""
    n = 100_000
    d = trace(n)
    d.loc[n - 5, "input_tokens"] = -3  # in the last chunk
    path = write_parquet(tmp_path / "t.parquet", d, row_group=25_000)
    held = []
    whole_read = chunked.refuse_as_the_whole_read
    monkeypatch.setattr(chunked, "refuse_as_the_whole_read", lambda *args: (
        held.append(tracemalloc.get_traced_memory()[0]), whole_read(*args)))
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 25_000)
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match=f"row {n - 4}, column 'input_tokens'"):
            read_trace(path)
    finally:
        tracemalloc.stop()
    assert held and held[0] < 4 * n  # 2.4 MB of arrays were held
