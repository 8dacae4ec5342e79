"""Round 31, tracecols: a trace's column read one way from CSV and another from Parquet (the
BurstGPT totals, the internal column names, the order of the columns noted), and numpy integers
in the results' figures."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

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


@pytest.mark.parametrize("name", ["follows_id", "output_hashes"])
def test_a_canonical_parquet_column_named_as_an_internal_one_is_refused(tmp_path, name):
    """A canonical trace read with ``keep=()`` (a run with a response cache) refused a CSV
    column ``follows_id`` by name (test_round30_rev2) but took the same Parquet file, noting
    the column as not read (left out of the read, so never checked): both are refused, in
    the same words."""
    from tiersim.errors import TraceError

    df = pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 1.0], "input_tokens": [10, 10],
                       "output_tokens": [5, 5], name: [-1, 0]})
    for path in _both(tmp_path, df):
        with pytest.raises(TraceError) as info:
            read_trace(path, keep=())
        assert str(info.value) == (
            f"{path}: column '{name}': {name} is the name of a column tiersim makes itself "
            "(for agentic sessions); rename the column, or remove it")


@pytest.mark.parametrize("value", [np.int64(17), np.int32(17), np.uint16(17), 17])
def test_a_numpy_integer_figure_reads_as_a_python_one(value):
    """A numpy integer (a count taken from an array) read "17.0" where the Python int 17 reads
    "17": both read as the whole number, with thousands separators past 999."""
    from tiersim.results import figure_text

    assert figure_text(value) == "17"
    assert figure_text(value, " requests") == "17 requests"
    assert figure_text(type(value)(12_345)) == "12,345"


def test_a_parquet_trace_names_its_columns_not_read_in_file_order(tmp_path):
    """A Parquet file's notes named the columns read (here ``request_id``, read for ``keep``)
    before those left out of the read (``arrival_s``), where the same CSV's name them in file
    order: both name them in file order."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "Timestamp": [0, 1], "Model": ["ChatGPT"] * 2,
                       "Request tokens": [10, 20], "Response tokens": [5, 6],
                       "request_id": [0, 1]})
    note = ("column(s) 'arrival_s', 'request_id' not read (canonical columns: this format's "
            "requests are read from its Timestamp, Request tokens and Response tokens, each "
            "request's id being its data row)")
    for path in _both(tmp_path, df):
        assert _notes(path, keep=("request_id",)) == [note], path


def test_a_parquet_trace_refuses_the_first_internal_column_in_file_order(tmp_path):
    """Of a canonical trace holding both internal columns, ``output_hashes`` read for ``keep``
    (a response cache's ``key:``), the Parquet file was refused for ``output_hashes`` (read)
    and the same CSV for ``follows_id`` (its first): both for the first in file order."""
    from tiersim.errors import TraceError

    df = pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 1.0], "input_tokens": [10, 10],
                       "output_tokens": [5, 5], "follows_id": [-1, 0], "output_hashes": [1, 2]})
    for path in _both(tmp_path, df):
        with pytest.raises(TraceError) as info:
            read_trace(path, keep=("output_hashes",))
        assert str(info.value).startswith(f"{path}: column 'follows_id': follows_id is"), path


@pytest.mark.parametrize("value", [np.float32("nan"), np.float16("nan"), float("nan")])
def test_a_narrow_float_nan_figure_reads_as_missing(value):
    """A NaN of a numpy float narrower than Python's (float32, float16) read "nan" ("nan s"
    with a unit) where a Python or float64 NaN reads '-' (missing): all read '-'."""
    from tiersim.results import figure_text

    assert figure_text(value) == "-"
    assert figure_text(value, " s") == "-"
