"""Round 29 (pq): the trace readers' memory and passes. A Parquet trace read whole is decoded
once; a Mooncake JSON-lines trace is read a block of lines at a time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.errors import TraceError
from tiersim.trace import canonical, filecheck, read_jsonl, read_trace
from tiersim.trace.filecheck import Source
from tiersim.trace.source import read_raw


def _azure_parquet(path, rows: int = 50):
    """An Azure-format Parquet trace with an extra text column."""
    pq.write_table(pa.table({
        "TIMESTAMP": [f"2023-11-16 18:15:{i % 60:02d}.{i:06d}" for i in range(rows)],
        "ContextTokens": list(range(1, rows + 1)),
        "GeneratedTokens": [5] * rows,
        "note": [f"{i:09d}" + "x" * 290 for i in range(rows)]}), path)
    return path


def test_a_parquet_trace_read_whole_is_decoded_once(tmp_path, monkeypatch):
    """Its text columns were read twice: once to check their UTF-8, once by pandas."""
    path = _azure_parquet(tmp_path / "az.parquet")
    calls = []
    real = pq.read_table

    def counted(*args, **kwargs):
        calls.append(kwargs.get("columns"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pq, "read_table", counted)
    df, _ = read_raw(path)
    assert len(calls) == 1
    assert list(df.columns) == ["TIMESTAMP", "ContextTokens", "GeneratedTokens", "note"]
    assert df["note"].iloc[7] == "000000007" + "x" * 290


def _mooncake_lines(rows: int, seed: int = 0) -> list[str]:
    """Mooncake JSON lines: each prompt's hash ids (30 on average) share a prefix with
    others (an id keeps its place), some requests without output (dropped when read)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 60, rows)
    shared = np.minimum(lengths, rng.integers(0, 8, rows))
    fresh = 1_000_000 + np.r_[0, np.cumsum(lengths - shared)[:-1]]
    return [json.dumps({"timestamp": 3 * i, "input_length": int(n) * 512 - 7,
                        "output_length": int(rng.integers(0, 50)),
                        "hash_ids": [*range(int(s)), *range(int(f), int(f + n - s))]})
            for i, (n, s, f) in enumerate(zip(lengths, shared, fresh, strict=True))]


def _whole(monkeypatch, path):
    """``read_raw`` of ``path`` as the whole read gives it (no block read)."""
    with monkeypatch.context() as m:
        m.setattr(read_jsonl, "_jsonl_in_blocks", lambda p: None)
        return read_raw(path)[0]


def _trace_or_error(path):
    """The table and notes of ``path``, or its error line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            loaded = read_trace(path)
        except TraceError as err:
            return str(err)
    return loaded.table, loaded.origin.notes


def test_a_mooncake_file_read_in_blocks_is_the_whole_reads(tmp_path, monkeypatch):
    """Blank lines, a BOM and CRLF line ends, blocks of a few lines: the same frame (each
    row's ids an int64 array), the same canonical table and notes."""
    lines = _mooncake_lines(300)
    lines[40:40] = ["", "  "]
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    monkeypatch.setattr(read_jsonl, "JSONL_READ_BYTES", 2000)
    blocks = read_jsonl._jsonl_in_blocks(path)
    assert blocks is not None and len(blocks) == 300
    whole = _whole(monkeypatch, path)
    pd.testing.assert_frame_equal(read_raw(path)[0], whole)
    assert all(c.dtype == np.int64 for c in blocks["hash_ids"])
    table, notes = _trace_or_error(path)
    with monkeypatch.context() as m:
        m.setattr(read_jsonl, "_jsonl_in_blocks", lambda p: None)
        whole_table, whole_notes = _trace_or_error(path)
    pd.testing.assert_frame_equal(table, whole_table)
    assert notes == whole_notes and "prefix_hashes" in table.columns


def _straddled(tmp_path, bad: str):
    """Eight Mooncake lines, a blank third line; line 7 (row 6) replaced by ``bad``, which
    may be two lines; the bytes of the file up to the end of ``bad``'s first line."""
    lines = [json.dumps({"timestamp": i, "input_length": 600, "output_length": 3,
                         "hash_ids": [i, 1000 + i]}) for i in range(8)]
    lines[2:2] = [""]
    lines[6] = bad
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, len(("\n".join(lines[:6]) + "\n" + bad.split("\n")[0] + "\n").encode())


def test_an_object_split_across_a_block_boundary_names_its_line(tmp_path, monkeypatch):
    """A block ends inside the object (after its first line): the file line and row named
    are the object's, as the whole read names them."""
    path, cut = _straddled(tmp_path, '{"timestamp": 5, "input_length": 600,\n'
                                     ' "output_length": 3, "hash_ids": [5, 1005]}')
    monkeypatch.setattr(read_jsonl, "JSONL_READ_BYTES", cut)
    assert next(filecheck.line_chunks(path, cut)).endswith(b'"input_length": 600,\n')
    message = _trace_or_error(path)
    assert message == (f"{path}: row 6: holds the start of a JSON value that the line does "
                       "not end (JSON written over several lines, or a line cut short?); write "
                       "one object a line, e.g. jq -c . FILE (file line 7)")
    with monkeypatch.context() as m:
        m.setattr(read_jsonl, "_jsonl_in_blocks", lambda p: None)
        assert _trace_or_error(path) == message


@pytest.mark.parametrize("size", [1, 90, 200, 400, 1 << 20])
def test_a_bad_value_in_a_later_block_names_its_row_and_line(tmp_path, monkeypatch, size):
    """The rows of every block before it (a blank line among them) are counted: row 6,
    file line 7, whatever the blocks' size."""
    path, _ = _straddled(tmp_path, json.dumps({"timestamp": 5, "input_length": 600,
                                               "output_length": -3, "hash_ids": [5, 1005]}))
    monkeypatch.setattr(read_jsonl, "JSONL_READ_BYTES", size)
    assert len(read_jsonl._jsonl_in_blocks(path)) == 8  # read in blocks, not whole
    assert _trace_or_error(path) == (f"{path}: row 6, column 'output_length': token count "
                                     "must be >= 0 (got -3); fix or remove the row (file "
                                     "line 7)")


@pytest.mark.parametrize("later", [
    '{"timestamp": 99, "input_length": 600, "output_length": 3, "hash_ids": [], "x": 1}',
    '{"timestamp": 99.5, "input_length": 600, "output_length": 3, "hash_ids": [9]}',
    '{"timestamp": 99, "input_length": null, "output_length": 3, "hash_ids": [9]}',
    '{"timestamp": 99, "input_length": 600, "output_length": 3, "hash_ids": [9, null]}',
    '{"timestamp": 99, "input_length": 600, "output_length": 3, "hash_ids": []}',
    '{"timestamp": 99, "input_length": 600, "output_length": 3} {"timestamp": 100}'])
def test_a_block_unlike_the_first_is_read_whole(tmp_path, monkeypatch, later):
    """Another key, a float, a missing value, a block of empty lists (typed apart), two
    objects on a line: the whole read's frame, or its error."""
    path = tmp_path / "u.jsonl"
    path.write_text("\n".join([*_mooncake_lines(20), later]) + "\n")
    monkeypatch.setattr(read_jsonl, "JSONL_READ_BYTES", len(later) + 1)
    assert read_jsonl._jsonl_in_blocks(path) is None
    try:
        got = read_raw(path)[0]
    except TraceError as err:
        got = str(err)
    try:
        whole = _whole(monkeypatch, path)
    except TraceError as err:
        whole = str(err)
    if isinstance(whole, str):
        assert got == whole
    else:
        pd.testing.assert_frame_equal(got, whole)


BLOCK_PEAK = textwrap.dedent("""
    import sys, tracemalloc
    import pyarrow as pa
    from tiersim.trace import filecheck, read_jsonl, source
    read_jsonl.JSONL_READ_BYTES = 1 << 20
    filecheck.open_checked(sys.argv[1])  # the checks made before any parse: not measured
    tracemalloc.start()
    df = source.read_raw(sys.argv[1])[0]
    peak = tracemalloc.get_traced_memory()[1] + pa.default_memory_pool().max_memory()
    ids = sum(len(h) for h in df["hash_ids"])
    print(peak, ids * 8 + len(df) * 24)
""")
"""A child's peak of Python and numpy memory (tracemalloc) and of Arrow's (its pool), while
reading a JSON-lines trace, and the bytes of the values kept (ids and three int64 columns)."""


def test_a_mooncake_file_is_read_in_memory_near_its_columns(tmp_path):
    """40,000 lines of 30 hash ids on average (10 MB of values): 75 MB (7.3 times the values:
    the whole file's Arrow table, the JSON reader's work on it) before, 19 MB after."""
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(_mooncake_lines(40_000)) + "\n")
    run = subprocess.run([sys.executable, "-c", BLOCK_PEAK, str(path)], capture_output=True,
                         text=True, check=True)
    peak, values = map(int, run.stdout.split())
    assert values > 8 << 20
    assert peak < 2 * values + (4 << 20), (peak, values)


def test_the_lowest_hash_id_is_found_a_slice_of_rows_at_a_time(monkeypatch):
    """A column of int64 hash arrays checked for ids below the lowest allowed: every id was
    copied into one array (16 MB here, 2M ids); now a slice of rows at a time."""
    rng = np.random.default_rng(1)
    cells = pd.Series([rng.integers(0, 1 << 40, 100) for _ in range(20_000)])
    values = 20_000 * 100 * 8
    monkeypatch.setattr(canonical, "LOWEST_CELLS", 1000, raising=False)
    where = Source("t.jsonl", 0)
    tracemalloc.start()
    try:
        kept = canonical.hash_column(cells, where, "hash_ids", low=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < values // 8, (peak, values)
    assert all(a is b for a, b in zip(kept, cells, strict=True))  # the arrays kept as read
    cells.iat[15_000] = np.r_[cells.iat[15_000], -4]
    with pytest.raises(TraceError, match=r"row 15001, column 'hash_ids': hash id -4 out of "):
        canonical.hash_column(cells, where, "hash_ids", low=0)


@pytest.mark.parametrize("rows", [1, 3, 7])
@pytest.mark.parametrize("bucket", [None, 1, 5])
@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_hash_places_joined_a_few_rows_at_a_time_name_what_the_lexsort_named(
        seed, bucket, rows, monkeypatch):
    """Round 28's random tables of hash ids (moved and repeated ids, empty lists) against its
    reference check, each bucket's ids picked out of ``rows`` rows joined at a time."""
    from test_round28_stream import test_hash_places_check_names_what_the_lexsort_named as same

    monkeypatch.setattr(canonical, "PLACES_JOINED_ROWS", rows, raising=False)
    same(seed, bucket, monkeypatch)


def test_hash_places_check_holds_a_buckets_ids_not_every_id(monkeypatch):
    """1,000,000 ids (100,000 prompts of 10 blocks sharing prefixes), 100,000 sorted at a
    time: every id was joined, with its place and bucket (13 bytes an id, 16 MB at the peak);
    now only a bucket's are, picked out of 1,000 rows at a time."""
    hashes = np.empty(100_000, dtype=object)
    hashes[:] = [np.arange(10, dtype=np.int64) + (i % 1000) * 10 for i in range(100_000)]
    monkeypatch.setattr(canonical, "PLACES_SORTED_IDS", 100_000)
    monkeypatch.setattr(canonical, "PLACES_JOINED_ROWS", 1000, raising=False)
    tracemalloc.start()
    try:
        canonical.check_hash_places(Source("t", 0), hashes, "hash_ids")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / 1_000_000 < 8, f"{peak / 1_000_000:.1f} bytes an id"
