"""Streamed run outputs: Parquet written a row group at a time reads back the same table (and a
one-group table gets ``to_parquet``'s exact bytes); the manifest hashed from files equals the
manifest of their bytes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from tiersim import outputs
from tiersim.manifest import manifest


def _table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    return pd.DataFrame({"request_id": np.arange(n, dtype=np.int64),
                         "ttft_s": rng.random(n),
                         "tier": pd.Categorical(rng.choice(["a", "b"], n)),
                         "output_tokens": rng.integers(1, 100, n).astype(np.int32)})


def test_streamed_parquet_reads_back_the_same_table(tmp_path):
    table = _table(1000)
    table.attrs["note"] = "kept"
    path = tmp_path / "t.parquet"
    outputs.write_parquet(path, table, rows=300)
    assert pq.ParquetFile(path).num_row_groups == 4
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, table)
    assert back.attrs == {"note": "kept"}


def test_one_group_is_to_parquet_bytes(tmp_path):
    table = _table(50)
    outputs.write_parquet(tmp_path / "a.parquet", table)
    table.to_parquet(tmp_path / "b.parquet", index=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_manifest_of_files_equals_manifest_of_bytes(tmp_path):
    files = {"requests.parquet": b"x" * (3 << 20) + b"tail", "timeseries.parquet": b"",
             "summary.json": b"{}\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    assert outputs.manifest_of(tmp_path) == manifest(files)
    (tmp_path / "summary.json").write_bytes(b"{ }\n")
    assert outputs.manifest_of(tmp_path) != manifest(files)
