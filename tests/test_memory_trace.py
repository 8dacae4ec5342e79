"""Issue 13, memory: a canonical Parquet trace read a chunk at a time gives the table and the
errors of the whole-file read, with rows numbered in the file across chunk seams."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.errors import TraceError
from tiersim.trace import chunked, read_trace
from tiersim.trace.filecheck import Source
from tiersim.trace.formats import FORMATS
from tiersim.trace.source import read_raw


def write_parquet(path, table: pd.DataFrame | pa.Table, row_group: int = 4):
    """``table`` as a Parquet file of ``row_group``-row groups."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    pq.write_table(table, path, row_group_size=row_group)
    return path


def whole(path) -> pd.DataFrame:
    """The canonical table as the whole-file path builds it."""
    raw, src = read_raw(path)
    return FORMATS["canonical"].convert(raw, src)[0]


def chunks(path, rows: int = 3) -> pd.DataFrame:
    """The canonical table read ``rows`` rows at a time."""
    n = pq.ParquetFile(path).metadata.num_rows
    return chunked.read_canonical(path, Source(str(path), None), FORMATS["canonical"].convert,
                                  n, chunk_rows=rows)[0]


def trace(n: int = 10, **extra) -> pd.DataFrame:
    """A valid canonical trace of ``n`` rows with ``extra`` columns."""
    return pd.DataFrame({"request_id": np.arange(100, 100 + n), "arrival_s": np.arange(n) * 0.5,
                         "input_tokens": np.arange(1, n + 1, dtype=np.int32) * 10,
                         "output_tokens": np.full(n, 7, np.int32), **extra})


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal columns, dtypes and values (lists of hashes compared cell by cell)."""
    assert list(a.columns) == list(b.columns)
    for name in a.columns:
        assert a[name].dtype == b[name].dtype, name
        if name == "prefix_hashes":
            assert all(np.array_equal(x, y) for x, y in zip(a[name], b[name], strict=True))
        else:
            pd.testing.assert_series_equal(a[name], b[name], check_exact=True)


def test_load_trace_reads_canonical_parquet_in_chunks(tmp_path, monkeypatch):
    path = write_parquet(tmp_path / "t.parquet", trace(10))
    seen = []
    original = chunked.parquet_chunks

    def spy(p, rows, used=None):
        for start, raw in original(p, rows, used):
            seen.append((start, len(raw)))
            yield start, raw

    monkeypatch.setattr(chunked, "CHUNK_ROWS", 4)
    monkeypatch.setattr(chunked, "parquet_chunks", spy)
    loaded = read_trace(path)
    assert seen == [(0, 4), (4, 4), (8, 2)]
    assert_same(loaded.table, whole(path))
    assert loaded.origin.format == "canonical"


def test_optional_columns_join_across_chunks(tmp_path):
    n = 10
    df = trace(n, session_id=np.arange(n) // 3, step=np.arange(n) % 3,
               task_type=["code", "conv", "plan", "code", "code", "zeta", "conv", "a", "b", "c"],
               difficulty=np.linspace(0, 1, n), correct_bf16=np.ones(n),
               feat_len=np.arange(n, dtype=np.float64), note=[f"n{i}" for i in range(n)],
               prefix_hashes=[list(range(i % 2)) for i in range(n)])
    path = write_parquet(tmp_path / "t.parquet", df)
    table = chunks(path, rows=3)
    assert_same(table, whole(path))
    assert list(table["task_type"].cat.categories) == sorted(set(df["task_type"]))


def test_a_column_with_gaps_in_a_later_chunk_reads_as_the_whole_file_does(tmp_path):
    values = pa.array([1, 2, 3, 4, 5, None, 7, 8], type=pa.int64())
    table = pa.Table.from_pandas(trace(8), preserve_index=False).append_column("extra", values)
    path = write_parquet(tmp_path / "t.parquet", table, row_group=4)
    got = chunks(path, rows=4)
    assert got["extra"].dtype == np.float64
    assert_same(got, whole(path))


def test_request_ids_default_to_the_file_row(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", trace(7).drop(columns="request_id"))
    assert chunks(path, rows=3)["request_id"].tolist() == list(range(7))


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.assign(arrival_s=np.r_[d.arrival_s[:6], [0.1], d.arrival_s[7:]]),
     "row 7, column 'arrival_s': timestamp 0.1 is earlier than the row before (2.5); sort the "
     "file by arrival_s"),
    (lambda d: d.assign(request_id=np.r_[d.request_id[:8], [101], d.request_id[9:]]),
     "row 9, column 'request_id': duplicate request_id 101; ids must be unique"),
    (lambda d: d.assign(input_tokens=np.r_[d.input_tokens[:7], [-3], d.input_tokens[8:]]),
     "row 8, column 'input_tokens': token count must be > 0 (got -3); fix or remove the row"),
])
def test_errors_name_the_files_row_across_chunk_seams(tmp_path, edit, message):
    path = write_parquet(tmp_path / "t.parquet", edit(trace(10)))
    with pytest.raises(TraceError) as whole_file:
        whole(path)
    with pytest.raises(TraceError) as in_chunks:
        chunks(path, rows=3)
    assert str(in_chunks.value) == str(whole_file.value) == f"{path}: {message}"


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), rows=st.integers(1, 12), group=st.integers(1, 12),
       gaps=st.lists(st.floats(0, 5), min_size=40, max_size=40))
def test_chunked_equals_whole_file(tmp_path_factory, n, rows, group, gaps):
    df = trace(n).assign(arrival_s=np.cumsum(gaps[:n]))
    path = write_parquet(tmp_path_factory.mktemp("t") / "t.parquet", df, row_group=group)
    assert_same(chunks(path, rows=rows), whole(path))
