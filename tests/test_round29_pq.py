"""Round 29 (pq): the trace readers' memory and passes. A Parquet trace read whole is decoded
once; a Mooncake JSON-lines trace is read a block of lines at a time."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

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
