"""Round 56 (lead, after ids56): a canonical Parquet trace read a chunk at a time reads its
text session ids as the whole file does.

Whether a typed file's text session ids are names is the whole column's to decide
(:func:`tiersim.trace.canonical.text_ids`: one id that is no number makes them all names).
A chunk of ids of digits alone (``"0"``) read them as the number 0, and a later chunk's names
were numbered from 0 too, so two sessions were one, without a word. A file whose chunks
disagree is now read whole, as a file of one chunk is."""

from __future__ import annotations

import warnings

import pandas as pd

from tiersim.trace import read_trace
from tiersim.trace.chunked import read_canonical
from tiersim.trace.formats import FORMATS
from tiersim.trace.loader import TraceWarning
from tiersim.trace.read_parquet import parquet_source


def _write(path, sessions) -> None:
    n = len(sessions)
    pd.DataFrame(
        {
            "request_id": list(range(n)),
            "arrival_s": [float(k) for k in range(n)],
            "input_tokens": [10] * n,
            "output_tokens": [5] * n,
            "session_id": sessions,
            "step": [0, 1] * (n // 2),
        }
    ).to_parquet(path, row_group_size=2)


def _chunked(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return read_canonical(
            path, parquet_source(path), FORMATS["canonical"].convert, 4, chunk_rows=2
        )[0]


def test_digits_then_names_in_chunks_are_two_sessions(tmp_path):
    path = tmp_path / "s.parquet"
    _write(path, ["0", "0", "a3f9c2d1", "a3f9c2d1"])
    table = _chunked(path)
    assert table["session_id"].tolist() == [0, 0, 1, 1]
    assert table.attrs["session_names"] == ("0", "a3f9c2d1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        whole = read_trace(path)
    assert whole.table["session_id"].tolist() == table["session_id"].tolist()


def test_names_then_digits_in_chunks_are_two_sessions(tmp_path):
    path = tmp_path / "s.parquet"
    _write(path, ["conv_a", "conv_a", "7", "7"])
    table = _chunked(path)
    assert table["session_id"].tolist() == [0, 0, 1, 1]
    assert table.attrs["session_names"] == ("conv_a", "7")


def test_chunks_that_agree_are_read_a_chunk_at_a_time_as_before(tmp_path):
    path = tmp_path / "s.parquet"
    _write(path, ["conv_b", "conv_b", "conv_a", "conv_a"])
    assert _chunked(path)["session_id"].tolist() == [0, 0, 1, 1]
    _write(path, ["5", "5", "3", "3"])
    assert _chunked(path)["session_id"].tolist() == [5, 5, 3, 3]
