"""Round 28 (rev2): review of round 28's changes; each test failed before its fix."""

from __future__ import annotations

import os
import tempfile

import pytest
from test_memory_trace import write_parquet
from test_round28_win import _two_faults

from tiersim import outputs
from tiersim.errors import TraceError
from tiersim.sweep import executors
from tiersim.trace import chunked, read_trace


def test_a_new_ray_folder_is_never_another_sweeps_stale_one(tmp_path, monkeypatch):
    """A sweep in another pid namespace sharing the temporary folder sees no live pid in a new
    folder's name: between its making and its lock, that sweep's cleanup removed it (then
    FileNotFoundError, or Ray's sockets in a removed folder). Simulated: the other sweep's
    cleanup runs right after the folder is made, with every pid reading as gone."""
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
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

    def out_of_memory(*args, **kwargs):
        raise MemoryError("stopped with 128 MiB left")

    monkeypatch.setattr(chunked, "read_raw", out_of_memory)
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 3)
    with pytest.raises(TraceError, match=r"row 2, column 'input_tokens'"):
        read_trace(path)
