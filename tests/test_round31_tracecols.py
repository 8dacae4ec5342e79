"""Round 31, tracecols: a trace's column read one way from CSV and another from Parquet (the
BurstGPT totals, the internal column names, the order of the columns noted), and numpy integers
in the results' figures."""

from __future__ import annotations

import warnings

import pandas as pd

from tiersim.trace.loader import read_trace


def _notes(path, keep=None) -> list[str]:
    """The notes of reading the trace ``path`` (``keep``: as :func:`read_trace`'s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(read_trace(path, keep=keep).origin.notes)


def _both(tmp_path, df: pd.DataFrame) -> tuple:
    """``df`` written as a CSV and as a Parquet file, their paths."""
    csv, parquet = tmp_path / "t.csv", tmp_path / "t.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(parquet, index=False)
    return csv, parquet


def test_a_burstgpt_parquet_notes_a_total_that_is_not_the_sum(tmp_path):
    """A BurstGPT log as Parquet lost the note on a Total tokens that is not the sum (the
    column was never decoded from Parquet; the CSV reads it): both give it now."""
    df = pd.DataFrame({"Timestamp": [0, 1, 2], "Model": ["ChatGPT"] * 3,
                       "Request tokens": [10, 20, 30], "Response tokens": [5, 6, 7],
                       "Total tokens": [15, 99, 37], "Log Type": ["Conversation log"] * 3})
    note = ("its Total tokens is not Request tokens + Response tokens in 1 of 3 rows kept "
            "(first at row 2: 99 against 20 + 6): the run reads the request and response "
            "columns, so check that the file's columns are not shifted or swapped")
    for path in _both(tmp_path, df):
        assert _notes(path) == [note], path
