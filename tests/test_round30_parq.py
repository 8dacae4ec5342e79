"""Round 30 (parq): a Parquet trace is read for the columns tiersim uses; a column nothing
reads is named in a note from the file's schema, its values never decoded."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import tiny_doc

from tiersim.cli.app import main
from tiersim.errors import TraceError
from tiersim.inputs import load_scenario_trace
from tiersim.scenario import scenario_from_dict
from tiersim.trace import read_trace

NOTE = "x" * 290


def _canonical(path, rows: int = 40, **extra):
    """A canonical Parquet trace with a 300-byte text column ``note`` and ``extra`` columns."""
    pq.write_table(pa.table({
        "request_id": list(range(rows)),
        "arrival_s": [i * 0.5 for i in range(rows)],
        "input_tokens": pa.array([100 + i for i in range(rows)], pa.int32()),
        "output_tokens": pa.array([10] * rows, pa.int32()),
        "note": [f"{i:09d}{NOTE}" for i in range(rows)],
        **extra}), path)
    return path


def _azure(path, rows: int = 40):
    """An Azure-format Parquet trace with the same text column."""
    pq.write_table(pa.table({
        "TIMESTAMP": [f"2023-11-16 18:15:{i % 60:02d}.{i:06d}" for i in range(rows)],
        "ContextTokens": list(range(1, rows + 1)),
        "GeneratedTokens": [5] * rows,
        "note": [f"{i:09d}{NOTE}" for i in range(rows)]}), path)
    return path


def test_trace_inspect_never_decodes_a_column_nothing_reads(tmp_path, decoded, capsys):
    """A 1M-row trace's extra 300-byte column was decoded whole: 3.8 GB peak, now 0.2 GB."""
    path = _canonical(tmp_path / "t.parquet")
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    assert decoded and all(c is not None and "note" not in c for c in decoded), decoded
    assert "column(s) 'note' not read (not a canonical column: left out of the table, used " \
           "by nothing)" in capsys.readouterr().out


def test_a_run_reads_the_canonical_columns_and_the_response_cache_key(tmp_path, decoded):
    """A scenario's run reads its response cache's key column (any name), and no other."""
    path = _canonical(tmp_path / "t.parquet", mykey=[i % 3 for i in range(40)],
                      task_type=["code"] * 40, feat_len=[1.0] * 40)
    doc = tiny_doc(trace={"path": str(path)},
                   router={"policy": "static_split", "fractions": [0.5, 0.5],
                           "response_cache": {"size": 5, "key": "mykey"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = load_scenario_trace(scenario_from_dict(doc, "s.yaml"), "s.yaml").table
    assert list(table.columns) == ["request_id", "arrival_s", "input_tokens", "output_tokens",
                                   "mykey", "task_type", "feat_len"]
    assert decoded and all(c is not None and "note" not in c for c in decoded), decoded


def test_read_trace_still_carries_every_column_by_default(tmp_path, decoded):
    """``tiersim.trace.read_trace`` keeps a canonical table's other columns, as documented."""
    path = _canonical(tmp_path / "t.parquet")
    with pytest.warns(UserWarning, match="carried in the table, used by nothing"):
        loaded = read_trace(path)
    assert loaded.table["note"].iloc[2] == f"{2:09d}{NOTE}"
    assert decoded == [None]


def test_columns_left_out_are_noted_as_the_columns_read_were(tmp_path):
    """The note names them from the schema, in file order, with the name each is close to
    (and ``hash_ids``'s own note), as when they were read."""
    path = _canonical(tmp_path / "t.parquet", sesion_id=[1] * 40, hash_ids=[[1]] * 40,
                      prompt_hashes=[5] * 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        carried = read_trace(path).origin.notes
        left = read_trace(path, keep=()).origin.notes
    names = "'note', 'sesion_id' (session_id?), 'prompt_hashes' (prompt_hash or prefix_hashes?)"
    assert carried[0] == (f"column(s) {names} not read (not a canonical column: carried in "
                          "the table, used by nothing)")
    assert left[0] == (f"column(s) {names} not read (not a canonical column: left out of the "
                       "table, used by nothing)")
    assert carried[1:] == left[1:] and "'hash_ids' is not read" in left[1]


def test_a_logged_parquet_read_whole_decodes_its_own_columns_alone(tmp_path, decoded):
    """An Azure Parquet trace's extra column: the same note as when it was decoded."""
    path = _azure(tmp_path / "az.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = read_trace(path)
    assert decoded == [["TIMESTAMP", "ContextTokens", "GeneratedTokens"]]
    assert loaded.origin.notes[0] == (
        "column(s) 'note' not read (neither this format's nor a canonical optional column such "
        "as prompt_hash or correct_<tier>)")
    assert len(loaded.table) == 40


def test_a_column_read_after_one_left_out_is_named_by_its_place_in_the_file(tmp_path):
    """Text that is not UTF-8 in a column read is refused at the file's column number, the
    columns left out counted."""
    bad = pa.array([b"ok"] * 39 + [b"\xff"], pa.binary()).cast(pa.string(), safe=False)
    path = _canonical(tmp_path / "t.parquet", feat_text=bad)
    with pytest.raises(TraceError) as info:
        read_trace(path, keep=())
    assert str(info.value) == (f"{path}: row 40: column 6 holds text that is not UTF-8; write "
                               "the file again with its text in UTF-8")


def test_text_that_is_not_utf8_in_a_column_left_out_is_never_read(tmp_path):
    """Nothing decodes the column, so nothing can fail on it (read whole, it is refused)."""
    bad = pa.array([b"ok"] * 39 + [b"\xff"], pa.binary()).cast(pa.string(), safe=False)
    path = _canonical(tmp_path / "t.parquet", other=bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(read_trace(path, keep=()).table) == 40
    with pytest.raises(TraceError, match="column 6 holds text that is not UTF-8"):
        read_trace(path)
