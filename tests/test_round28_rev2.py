"""Round 28 (rev2): review of round 28's changes; each test failed before its fix."""

from __future__ import annotations

import os
import tempfile

import pandas as pd
import pytest
from test_memory_trace import write_parquet
from test_round27_pipes import ray_tmpdir
from test_round27_tracestream import _read
from test_round28_stream import _two_faults as _azure_two_faults
from test_round28_win import _two_faults

from tiersim import outputs
from tiersim.errors import TraceError
from tiersim.sweep import executors
from tiersim.trace import chunked, loader, read_trace


def out_of_memory(*args, **kwargs):
    """A whole read that cannot be held."""
    raise MemoryError("stopped with 128 MiB left")


short_ray_tmpdir = ray_tmpdir
"""``RAY_TMPDIR`` a short, empty folder (test_round27_pipes' fixture, under a name of ours)."""


def test_a_new_ray_folder_is_never_another_sweeps_stale_one(short_ray_tmpdir, monkeypatch):
    """A sweep in another pid namespace sharing the temporary folder sees no live pid in a new
    folder's name: between its making and its lock, that sweep's cleanup removed it (then
    FileNotFoundError, or Ray's sockets in a removed folder). Simulated: the other sweep's
    cleanup runs right after the folder is made, with every pid reading as gone."""
    tmp_path = short_ray_tmpdir  # short enough for Ray's sockets, as RAY_TMPDIR must now be
    monkeypatch.setattr(outputs, "pid_alive", lambda pid: False)
    made = tempfile.mkdtemp

    def make_then_clean(*args, **kwargs):
        folder = made(*args, **kwargs)
        executors.remove_stale_ray_folders(str(tmp_path))  # the other namespace's sweep
        return folder

    monkeypatch.setattr(executors.tempfile, "mkdtemp", make_then_clean)
    with executors.local_ray_folder() as folder:
        assert os.path.isdir(folder)
        assert os.path.basename(folder).startswith(f"{executors.RAY_FOLDER_PREFIX}{os.getpid()}-")
        assert executors.remove_stale_ray_folders(str(tmp_path)) == []  # held: it stays
        assert os.path.isdir(folder)
    assert os.listdir(tmp_path) == []


def test_a_chunk_fault_is_named_where_the_whole_read_cannot_be_held(tmp_path, monkeypatch):
    """A canonical Parquet file is read a chunk at a time so that it fits; a fault a chunk
    finds is handed to the whole read (round 28), which for a file too big to hold whole ran
    out of memory: the line said 'reading this trace ran out of memory', not the row at
    fault. Now the chunk's fault is raised (the whole read simulated out of memory)."""
    path = write_parquet(tmp_path / "t.parquet", _two_faults())

    monkeypatch.setattr(chunked, "read_raw", out_of_memory)
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 3)
    with pytest.raises(TraceError, match=r"row 2, column 'input_tokens'"):
        read_trace(path)


def test_an_azure_chunk_fault_is_named_where_the_whole_read_cannot_be_held(tmp_path,
                                                                           monkeypatch):
    """An Azure CSV read a chunk at a time (to its window's end) hands a fault to the whole
    read (round 28), which for a file too big to hold whole read 'ran out of memory'; now the
    chunk's fault (the prompt of -5 at row 11 in 16-row chunks) is named."""
    path = _azure_two_faults(tmp_path)
    monkeypatch.setattr(chunked, "read_raw", out_of_memory)
    monkeypatch.setattr(loader, "read_raw", out_of_memory)
    got = _read(path, None, False, 16)
    assert "row 11, column 'ContextTokens'" in got and "ran out of memory" not in got, got


def test_a_column_of_text_alone_is_not_checked_for_bytes_cell_by_cell(monkeypatch):
    """utf8_bytes (round 28) looked at every cell of every text timestamp, prompt_hash,
    subject or label column in Python (0.37 s a million cells, more than parsing them as
    times); a column of text alone holds no bytes. Bytes among text are still refused."""
    from tiersim.trace import checks
    from tiersim.trace.filecheck import Source

    looked = []
    at = checks._not_utf8_at
    monkeypatch.setattr(checks, "_not_utf8_at", lambda cell: (looked.append(cell), at(cell))[1])
    src = Source("t.csv", 1)
    checks.utf8_bytes(src, pd.Series(["2023-11-16 18:15:46", None, "x"], dtype=object),
                      "TIMESTAMP", "timestamp")
    assert looked == []
    with pytest.raises(TraceError, match=r"row 2, column 'TIMESTAMP': timestamp holds bytes "
                       r"that are not UTF-8 text \(byte 1 of 1 is not\)"):
        checks.utf8_bytes(src, pd.Series(["x", b"\xff"], dtype=object), "TIMESTAMP",
                          "timestamp")


@pytest.mark.parametrize("column", ["step_type", "task_type", "prompt_hash", "subject"])
def test_a_dictionary_encoded_binary_label_that_is_not_utf8_is_one_line(tmp_path, column):
    """Round 28 refused a Parquet binary label or key whose bytes are not UTF-8, but not one
    written dictionary-encoded (pandas reads it as categories of bytes, which the check passed
    over): step_type, task_type and prompt_hash gave a traceback (UnicodeDecodeError from
    astype("string")), subject passed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 4
    cells = pa.array([b"a", b"\xff", b"a", b"b"], pa.binary()).dictionary_encode()
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"request_id": np.arange(n), "arrival_s": np.arange(n, dtype=float),
                             "input_tokens": [5] * n, "output_tokens": [5] * n,
                             column: cells}), path)
    with pytest.raises(TraceError, match=rf"row 2, column '{column}': {column} holds bytes "
                       r"that are not UTF-8 text \(byte 1 of 1 is not\)"):
        read_trace(path)


def test_a_dictionary_encoded_binary_azure_timestamp_that_is_not_utf8_is_one_line(tmp_path):
    """The same for an Azure Parquet TIMESTAMP written dictionary-encoded (a traceback)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cells = pa.array([b"2023-11-16 18:15:46", b"\xff", b"2023-11-16 18:15:48"],
                     pa.binary()).dictionary_encode()
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"TIMESTAMP": cells, "ContextTokens": [5] * 3,
                             "GeneratedTokens": [5] * 3}), path)
    with pytest.raises(TraceError, match=r"row 2, column 'TIMESTAMP': timestamp holds bytes "
                       r"that are not UTF-8 text \(byte 1 of 1 is not\)"):
        read_trace(path)


def test_a_key_or_label_column_of_text_alone_is_not_looked_at_cell_by_cell(monkeypatch):
    """one_value_each looked at every cell of a text key or label column in Python for a list
    (0.66 s a million: round 28 added BurstGPT's Model column and subject to it); a column of
    text alone holds none. A list among text is still refused."""
    from tiersim.trace import canonical
    from tiersim.trace.filecheck import Source

    mapped = []
    series_map = pd.Series.map
    monkeypatch.setattr(pd.Series, "map", lambda self, *args, **kwargs: (
        mapped.append(len(self)), series_map(self, *args, **kwargs))[1])
    src = Source("t.csv", 1)
    canonical.one_value_each(pd.Series(["gpt-4", None, "ChatGPT"], dtype=object), src, "Model",
                             "request's model name")
    assert mapped == []
    with pytest.raises(TraceError, match=r"row 2, column 'Model': Model must be one number or "
                       r"text per row \(got a list of 1 item\)"):
        canonical.one_value_each(pd.Series(["gpt-4", ["x"]], dtype=object), src, "Model",
                                 "request's model name")
