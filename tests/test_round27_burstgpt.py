"""Round 27 (burstgpt): a BurstGPT CSV is read a chunk at a time, keeping only the requests its
window holds; the table, origin and notes are the whole read's, or the whole read is taken."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from test_round27_tracestream import _same  # the same comparison as the Azure read

from tiersim.errors import TraceError
from tiersim.trace import read_trace, windowed_burstgpt
from tiersim.trace.loader import TraceWarning

WINDOWS = [None, (0, None), (0, 60), (600, 900), (1000.5, 1000.7), (2300, 1e6), (0, 1e9),
           (1e6, 2e6)]
"""Whole, from 0 with no end, the first minute, five minutes inside, one that may hold no
request, to past the end, one holding all, one after the trace."""


def _burstgpt(tmp_path, rows: int = 3000, name: str = "b.csv", seed: int = 0,
              gap: float = 0.8) -> pd.DataFrame:
    """A BurstGPT log of ``rows`` rows (whole-second times, three spellings of two models,
    failed requests, one Total tokens off by one), written to ``tmp_path / name``."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(gap, rows)).round().astype(np.int64) + 1_000
    out = rng.integers(0, 500, rows)
    out[rng.random(rows) < 0.05] = 0
    out[0] = 0
    inp = np.where(out == 0, 0, rng.integers(1, 3000, rows))
    total = inp + out
    total[7] += 1
    raw = pd.DataFrame({"Timestamp": t, "Model": rng.choice(["ChatGPT", "GPT-4", " chatgpt "],
                                                           rows, p=[0.7, 0.25, 0.05]),
                        "Request tokens": inp, "Response tokens": out, "Total tokens": total,
                        "Log Type": "Conversation log"})
    raw.to_csv(tmp_path / name, index=False)
    return raw


def _read(path, window, whole: bool, chunk_rows: int | None = None):
    """``read_trace`` of ``path`` by the whole read (``whole``) or the chunked one
    (``chunk_rows`` rows a chunk), with its notes, or the error's text; and whether the
    chunked read gave the result (not the whole read it falls back to)."""
    chunked = []
    with pytest.MonkeyPatch.context() as mp:
        if whole:
            mp.setattr(windowed_burstgpt, "suits", lambda path, format: False)
        else:
            read = windowed_burstgpt.read

            def counted(path, window):
                part = read(path, window, chunk_rows)
                chunked.append(part is not None)
                return part
            mp.setattr(windowed_burstgpt, "read", counted)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceWarning)
            try:
                loaded = read_trace(path, window=window)
            except TraceError as err:
                return str(err), any(chunked)
    return (loaded, [str(w.message) for w in caught]), any(chunked)


@pytest.mark.parametrize("chunk_rows", [None, 7, 1000])
@pytest.mark.parametrize("window", WINDOWS)
def test_chunked_read_is_the_whole_read(tmp_path, window, chunk_rows):
    """Every window of a BurstGPT log gives the requests, arrivals (bit for bit), origin and
    notes (dropped rows, Total tokens, models, coarse times) or error of the whole read,
    whatever the chunks' size; the chunked read gives it where the window holds requests (a
    window of none: the whole read's error)."""
    _burstgpt(tmp_path)
    got, chunked = _read(tmp_path / "b.csv", window, False, chunk_rows)
    _same(got, _read(tmp_path / "b.csv", window, True)[0])
    assert chunked == (not isinstance(got, str))  # a window of no request: the whole read
    if window is None:
        assert any("names 2 models" in n for n in got[1])
        assert any("Total tokens is not" in n for n in got[1])
        assert any("rows with 0 response tokens" in n for n in got[1])


def _edited(tmp_path, row: int, column: str, cell: str, **kwargs):
    """The log with data row ``row`` (0-based) of ``column`` written as ``cell``."""
    raw = _burstgpt(tmp_path, **kwargs).astype({column: object})
    raw.loc[row, column] = cell
    raw.to_csv(tmp_path / "b.csv", index=False)
    return tmp_path / "b.csv"


@pytest.mark.parametrize("cell, chunked", [
    (".0", True),  # a decimal in one chunk: the whole column is decimals, whole seconds
    (".5", False),  # ... not whole seconds: the coarse note needs the instants' median gap
    ("9007199254740993", False),  # unsorted, and past 2**53
    ("x", False),  # text: the whole read names the cell
    ("", False)])
def test_time_typed_apart_in_one_chunk(tmp_path, cell, chunked):
    """A Timestamp chunk typed apart from the others (decimals, text, blank) gives the whole
    read's result: whole-second decimals below 2**53 by the chunked read, the rest by the
    whole read."""
    raw = _burstgpt(tmp_path)
    if cell.startswith("."):
        cell = f"{raw.loc[1500, 'Timestamp']}{cell}"
    path = _edited(tmp_path, 1500, "Timestamp", cell)
    for window in (None, (600, 900)):
        got, used = _read(path, window, False, 64)
        _same(got, _read(path, window, True)[0])
        assert used == chunked


def test_big_whole_times_with_decimals_read_whole(tmp_path):
    """Whole-number times at or past 2**53 in a file whose other chunk holds decimals: the
    whole column is decimals (rounded), so the whole read is taken."""
    raw = pd.DataFrame({"Timestamp": [2**53 + 2, 2**53 + 4, 2**53 + 6, 2**53 + 8],
                        "Request tokens": [5, 6, 7, 8], "Response tokens": [1, 2, 3, 4]})
    raw.astype({"Timestamp": object}).to_csv(tmp_path / "b.csv", index=False)
    text = (tmp_path / "b.csv").read_text().replace(str(2**53 + 8), f"{float(2**53 + 8)}")
    (tmp_path / "b.csv").write_text(text)
    got, used = _read(tmp_path / "b.csv", None, False, 2)
    _same(got, _read(tmp_path / "b.csv", None, True)[0])
    assert not used


def test_model_of_numbers_in_one_chunk_read_whole(tmp_path):
    """A chunk whose Model cells are all numbers (text in the whole column) is read whole."""
    raw = _burstgpt(tmp_path, 200)
    raw["Model"] = raw["Model"].astype(object)
    raw.loc[64:127, "Model"] = "4"
    raw.to_csv(tmp_path / "b.csv", index=False)
    got, used = _read(tmp_path / "b.csv", None, False, 64)
    _same(got, _read(tmp_path / "b.csv", None, True)[0])
    assert not used and any("names 3 models" in n for n in got[1])


@pytest.mark.parametrize("shift, gap, chunked", [(1000, 0.8, True), (1, 400.0, False),
                                                 (1, 12.0, True)])
def test_unit_notes_as_the_whole_read(tmp_path, shift, gap, chunked):
    """The Timestamp unit notes are the whole file's: Unix milliseconds (said from the first
    time), a span over a day with gaps of minutes (the median gap: read whole), and a span
    over a day whose gaps are surely short (no note, read in chunks)."""
    raw = _burstgpt(tmp_path, 8000, gap=gap)
    raw["Timestamp"] = raw["Timestamp"] * shift + (1_700_000_000_000 if shift > 1 else 0)
    if gap == 12.0:
        raw.loc[7999, "Timestamp"] = 100_000
    raw.to_csv(tmp_path / "b.csv", index=False)
    for window in (None, (6000, 90000)):
        got, used = _read(tmp_path / "b.csv", window, False, 500)
        _same(got, _read(tmp_path / "b.csv", window, True)[0])
        assert used == chunked


@pytest.mark.parametrize("row", [63, 64, 1500])
def test_unsorted_and_bad_rows_as_the_whole_read(tmp_path, row):
    """A time earlier than the row before's (at a seam or inside a chunk) and a prompt of
    text give the whole read's error."""
    path = _edited(tmp_path, row, "Timestamp", "5")
    got, _ = _read(path, (0, 60), False, 64)
    assert isinstance(got, str) and "sort the file by Timestamp" in got
    _same(got, _read(path, (0, 60), True)[0])
    path = _edited(tmp_path, row, "Request tokens", "many")
    got, _ = _read(path, (0, 60), False, 64)
    assert isinstance(got, str) and f"row {row + 1}" in got
    _same(got, _read(path, (0, 60), True)[0])


def test_other_columns_read_whole(tmp_path):
    """A BurstGPT CSV with a column beyond its own is read whole; its own columns less
    Model, Total tokens and Log Type are read in chunks."""
    raw = _burstgpt(tmp_path, 50)
    raw.assign(prompt_hash=np.arange(50)).to_csv(tmp_path / "c.csv", index=False)
    assert not windowed_burstgpt.suits(tmp_path / "c.csv", "auto")
    assert windowed_burstgpt.suits(tmp_path / "b.csv", "burstgpt")
    assert not windowed_burstgpt.suits(tmp_path / "b.csv", "azure")
    raw[["Timestamp", "Request tokens", "Response tokens"]].to_csv(tmp_path / "d.csv",
                                                                   index=False)
    got, used = _read(tmp_path / "d.csv", (0, 20), False, 8)
    _same(got, _read(tmp_path / "d.csv", (0, 20), True)[0])
    assert used
