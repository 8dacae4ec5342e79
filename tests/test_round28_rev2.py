"""Round 28 (rev2): review of round 28's changes; each test failed before its fix."""

from __future__ import annotations

import os
import tempfile

from tiersim import outputs
from tiersim.sweep import executors


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
