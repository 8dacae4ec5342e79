"""Round 27 (tracestream): an Azure CSV is read a chunk at a time, keeping only the requests
its window holds and stopping at the window's end; the result is the whole read's."""

from __future__ import annotations

import os
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace import read_trace, windowed
from tiersim.trace.loader import TraceWarning

AZURE = "../shared/data/traces/AzureLLMInferenceTrace_conv.csv"
WINDOWS = [None, (0, None), (0, 60), (600, 900), (1000.5, 1000.7), (3590, 1e6), (0, 1e9),
           (1e6, 2e6)]
"""Whole, from 0 with no end, the first minute, five minutes inside, one that may hold no
request, past the end, one holding all, one after the trace."""


def _azure(tmp_path, rows: int = 3000, failed=(), name: str = "t.csv"):
    """The first ``rows`` rows of the real Azure conversation trace, the rows ``failed`` given
    0 output tokens."""
    if not os.path.exists(AZURE):  # the raw trace is shared data, not in the checkout
        pytest.skip(f"{AZURE} not checked out beside the repository (../shared/data)")
    raw = pd.read_csv(AZURE, nrows=rows)
    raw.loc[list(failed), "GeneratedTokens"] = 0
    path = tmp_path / name
    raw.to_csv(path, index=False)
    return path


def _read(path, window, whole: bool, chunk_rows: int | None = None):
    """``read_trace`` of ``path`` with the whole-file read (``whole``) or the chunked one (of
    ``chunk_rows`` rows a chunk), with its notes; or the error's text."""
    with pytest.MonkeyPatch.context() as mp:
        if whole:
            mp.setattr(windowed, "suits", lambda path, format: False)
        else:
            read = windowed.read
            mp.setattr(windowed, "read", lambda path, window: read(path, window, chunk_rows))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceWarning)
            try:
                loaded = read_trace(path, window=window)
            except TraceError as err:
                return str(err)
    return loaded, [str(w.message) for w in caught]


def _same(a, b, end: float | None = None) -> None:
    """Two reads are the same: their tables bit for bit, origins and notes, or errors; of the
    first, a chunked read of a window ending at ``end``, the last arrival may be the last read
    (at or past ``end``)."""
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    (one, notes_one), (two, notes_two) = a, b
    pd.testing.assert_frame_equal(one.table, two.table, check_exact=True)
    if end is not None and one.origin.arrivals != two.origin.arrivals:
        # a read stopped at the window's end knows a last arrival at or past it, and no later
        # one: the window cut to the trace's arrivals (trace inspect) is the same
        first, last = one.origin.arrivals
        assert first == two.origin.arrivals[0] and end <= last <= two.origin.arrivals[1]
        one = replace(one, origin=replace(one.origin, arrivals=two.origin.arrivals))
    assert one.origin == two.origin
    assert (one.origin.rows is None) == (two.origin.rows is None)
    if one.origin.rows is not None:
        np.testing.assert_array_equal(one.origin.rows, two.origin.rows)
    assert notes_one == notes_two


@pytest.mark.parametrize("chunk_rows", [None, 7, 1000])
@pytest.mark.parametrize("window", WINDOWS)
def test_chunked_read_is_the_whole_read(tmp_path, window, chunk_rows):
    """Every window of a real Azure trace gives the requests, arrivals (bit for bit), origin,
    notes or error of the whole read, whatever the chunks' size."""
    path = _azure(tmp_path)
    got = _read(path, window, False, chunk_rows)
    _same(got, _read(path, window, True), None if window is None else window[1])
    if window == (600, 900):
        assert len(got[0].table) > 100


@pytest.mark.parametrize("window", [None, (0, 1e6)])
def test_rows_without_output_noted_as_before_when_read_to_the_end(tmp_path, window):
    """Rows without output (the first rows too) are dropped and noted as the whole read notes
    them where every row is read; times count from the first request kept."""
    path = _azure(tmp_path, 400, failed=(0, 1, 5, 399))
    got = _read(path, window, False, 16)
    _same(got, _read(path, window, True), None if window is None else window[1])
    assert any("times count from the first request kept (row 3," in n for n in got[1])
    assert any("dropped 4 of 400 rows" in n for n in got[1])


def test_read_stops_at_the_window_end(tmp_path):
    """The rows after the window's end are not read: a malformed row there (a prompt of text)
    refused the windowed read of a sorted file that reads the rows it needs without it; the
    note on rows without output counts the rows before the stopping row (the first served
    request at or past the window's end, row 191, in the second 100-row chunk) and says so."""
    path = _azure(tmp_path, 3000, failed=(4,))
    text = path.read_text().splitlines()
    text[2500] = text[2500].rsplit(",", 2)[0] + ",many,10"
    path.write_text("\n".join(text) + "\n")
    whole = _read(path, (0, 60), True)
    assert "row 2500" in whole and "(file line 2501)" in whole
    loaded, notes = _read(path, (0, 60), False, 100)
    assert loaded.table["request_id"].tolist()[:3] == [0, 1, 2]
    assert float(loaded.table["arrival_s"].iloc[-1]) < 60
    assert float(loaded.origin.arrivals[1]) >= 60 > float(loaded.table["arrival_s"].iloc[-1])
    assert loaded.table["request_id"].iloc[-1] == 190  # every row before 191 served
    assert any(n.endswith("dropped 1 of the first 191 (read up to the window's end) rows with "
                          "0 GeneratedTokens (requests that produced no token: failed or "
                          "cancelled; only served requests are replayed; first at row 5)")
               for n in notes), notes


@pytest.mark.parametrize("line, cell", [(1500, "-3"), (901, "2.5"), (1200, "")])
@pytest.mark.parametrize("chunk_rows", [None, 64])
def test_malformed_row_named_as_before(tmp_path, line, cell, chunk_rows):
    """A bad token count inside the rows read names the file, its row and line and the fix,
    as the whole read names it."""
    path = _azure(tmp_path, 2000)
    text = path.read_text().splitlines()
    text[line - 1] = text[line - 1].rsplit(",", 1)[0] + f",{cell}"
    path.write_text("\n".join(text) + "\n")
    got = _read(path, (0, 1e6), False, chunk_rows)
    assert isinstance(got, str) and f"row {line - 1}" in got and f"(file line {line})" in got
    _same(got, _read(path, (0, 1e6), True))


@pytest.mark.parametrize("line", [65, 66, 300])
def test_unsorted_refused_as_before(tmp_path, line):
    """A time earlier than the row before's, at a seam of chunks or inside one, is refused at
    the same row as by the whole read."""
    path = _azure(tmp_path, 400)
    text = path.read_text().splitlines()
    text[line - 1] = "2023-11-16 18:00:00.0000000," + text[line - 1].split(",", 1)[1]
    path.write_text("\n".join(text) + "\n")
    got = _read(path, (0, 1e6), False, 64)
    assert isinstance(got, str) and "sort the file by TIMESTAMP" in got
    _same(got, _read(path, (0, 1e6), True))


@pytest.mark.parametrize("cell", ["2023-11-16 18:40:00.0000000+00:00", "2023-11-16",
                                  "2023-11-16 18:40:00 ", "now"])
def test_cells_judged_on_the_whole_column_read_whole(tmp_path, cell):
    """A chunk of other timestamps (an offset among times without one, a date alone, a
    space, a relative word) sends the file to the whole read: its error or acceptance is the
    whole column's (the window reaches past the cell: a read that stops before it does not
    see it)."""
    path = _azure(tmp_path, 400)
    text = path.read_text().splitlines()
    text[300] = cell + "," + text[300].split(",", 1)[1]
    path.write_text("\n".join(text) + "\n")
    for window in (None, (0, 1e6)):
        _same(_read(path, window, False, 64), _read(path, window, True))


def test_other_columns_read_whole(tmp_path):
    """An Azure CSV with a column beyond its three is read whole (its optional columns are
    checked against rows far apart)."""
    path = _azure(tmp_path, 50)
    raw = pd.read_csv(path)
    raw["prompt_hash"] = np.arange(50)
    raw.to_csv(path, index=False)
    assert not windowed.suits(path, "auto")
    assert windowed.suits(_azure(tmp_path, 50, name="u.csv"), "azure")
    assert not windowed.suits(_azure(tmp_path, 50, name="v.csv"), "canonical")


EDITS = {"a field more": lambda line, header: line + ",7",
         "a field less": lambda line, header: line.rsplit(",", 1)[0],
         "a stray quote": lambda line, header: line + '"',
         "the header again": lambda line, header: header,
         "a blank line": lambda line, header: ""}


@pytest.mark.parametrize("edit", EDITS)
def test_malformed_line_named_as_before(tmp_path, edit):
    """A line the CSV parser or the raw checks refuse inside a later chunk (more or fewer
    fields than the header, a repeated header) is named by its row and file line, as the whole
    read names it; a blank line is skipped by both."""
    path = _azure(tmp_path, 2000)
    text = path.read_text().splitlines()
    text[1499] = EDITS[edit](text[1499], text[0])
    path.write_text("\n".join(text) + "\n")
    got = _read(path, (0, 1e6), False, 64)
    _same(got, _read(path, (0, 1e6), True))
    if edit != "a blank line":
        assert "row 1499" in got and "file line 1500" in got


def test_chunks_parsed_stop_after_the_window(tmp_path, monkeypatch):
    """A window of the first minute parses the chunks up to its end, not the file's 30."""
    path = _azure(tmp_path, 3000)
    parsed = []
    chunks = windowed.csv_chunks

    def counted(*args):
        for first, raw in chunks(*args):
            parsed.append(first)
            yield first, raw

    monkeypatch.setattr(windowed, "csv_chunks", counted)
    loaded = windowed.read(path, (0.0, 60.0), 100)
    assert parsed == [0, 100]
    assert 0 < float(loaded.table["arrival_s"].iloc[-1]) < 60 <= loaded.arrivals[1]


@pytest.mark.parametrize("line", [2, 1500])
def test_bytes_not_utf8_named_as_before(tmp_path, line):
    """A byte that is not UTF-8 in a data line is refused naming that line, as the whole read
    refuses it (the header's reader decoded the lines after it and raised a traceback)."""
    path = _azure(tmp_path, 2000)
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = b"\x80" + lines[line - 1]
    path.write_bytes(b"\n".join(lines))
    got = _read(path, (0, 1e6), False, 64)
    assert isinstance(got, str) and f"file line {line}" in got
    _same(got, _read(path, (0, 1e6), True))
