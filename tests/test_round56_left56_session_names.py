"""Round 56, left56: a session trace's errors named a session by the number tiersim gave it
("session 1 has step 0 twice") where the file wrote a text id (aiperf's ``conv_b``; text ids
are numbered in order of first appearance). They now name it as the file writes it. A
canonical Parquet trace read a row group at a time numbered each chunk's text ids from 0, so
``conv_b`` of a later chunk was replayed as the session ``conv_a`` was; the ids are now
numbered over the whole file, as a CSV's are.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from tiersim.cli import main
from tiersim.trace import read_trace
from tiersim.trace.chunked import read_canonical
from tiersim.trace.loader import TraceWarning


def _trace(sessions, steps, parents=None) -> pd.DataFrame:
    n = len(sessions)
    doc = {
        "request_id": list(range(n)),
        "arrival_s": [float(k) for k in range(n)],
        "input_tokens": [10] * n,
        "output_tokens": [5] * n,
        "session_id": sessions,
        "step": steps,
    }
    if parents is not None:
        doc["parent"] = parents
    return pd.DataFrame(doc)


def _said(capsys, path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        code = main(["trace", "inspect", str(path)])
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert code == 1 and len(text.splitlines()) == 1, text
    return text


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_step_twice_names_the_files_id(tmp_path, capsys, suffix):
    path = tmp_path / f"s.{suffix}"
    frame = _trace(["conv_a", "conv_b", "conv_b"], [0, 0, 0])
    frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path)
    assert _said(capsys, path) == (
        f"Error: {path}: row 3, column 'step': session 'conv_b' has step 0 twice"
        + (" (file line 4)" if suffix == "csv" else "")
    )


def test_a_parent_and_two_followers_name_the_files_id(tmp_path, capsys):
    path = tmp_path / "s.csv"
    _trace(["conv_a", "conv_b", "conv_b"], [0, 0, 1], [-1, -1, 5]).to_csv(path, index=False)
    assert _said(capsys, path) == (
        f"Error: {path}: row 3, column 'parent': parent 5 is not an earlier step of session "
        "'conv_b' (file line 4)"
    )
    _trace(["x", "conv_b", "conv_b", "conv_b"], [0, 0, 1, 2], [-1, -1, 0, 0]).to_csv(
        path, index=False
    )
    assert _said(capsys, path).startswith(
        f"Error: {path}: row 4, column 'parent': step 0 of session 'conv_b' has two followers "
        "(rows 3 and 4)"
    )


def test_numbered_ids_are_named_by_their_numbers_as_before(tmp_path, capsys):
    path = tmp_path / "s.csv"
    _trace([7, 1, 1], [0, 0, 0]).to_csv(path, index=False)
    assert _said(capsys, path) == (
        f"Error: {path}: row 3, column 'step': session 1 has step 0 twice (file line 4)"
    )


def test_a_long_id_is_cut(tmp_path, capsys):
    path = tmp_path / "s.csv"
    name = "conv_" + "x" * 100
    _trace(["a", name, name], [0, 0, 0]).to_csv(path, index=False)
    assert _said(capsys, path).endswith(f"session '{name[:37]}...' has step 0 twice (file line 4)")


def test_parquet_chunks_number_text_ids_over_the_whole_file(tmp_path):
    path = tmp_path / "s.parquet"
    sessions = ["conv_a", "conv_b", "conv_b", "conv_a", "conv_c", "conv_b"]
    _trace(sessions, [0, 0, 1, 1, 0, 2]).to_parquet(path, row_group_size=2)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", TraceWarning)
        whole = read_trace(tmp_path / "s.parquet")
    assert whole.table["session_id"].tolist() == [0, 1, 1, 0, 2, 1]
    assert whole.origin.session_names == ("conv_a", "conv_b", "conv_c")
    notes = [str(w.message) for w in said if "text ids" in str(w.message)]
    assert len(notes) == 1 and "0 to 2, one for each of its 3 distinct ids" in notes[0]


def test_chunked_reading_matches_a_whole_read(tmp_path):
    from tiersim.trace.filecheck import Source
    from tiersim.trace.formats import FORMATS

    path = tmp_path / "s.parquet"
    sessions = ["b", "a", "c", "a", "b", "d", "d", "c"]
    _trace(sessions, [0, 0, 0, 1, 1, 0, 1, 1]).to_parquet(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        table, _ = read_canonical(
            path, Source(str(path), None), FORMATS["canonical"].convert, 8, chunk_rows=3
        )
    assert table["session_id"].tolist() == [0, 1, 2, 1, 0, 3, 3, 2]
    assert table.attrs["session_names"] == ("b", "a", "c", "d")
