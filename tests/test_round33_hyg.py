"""Round 33, resource hygiene: a command that cannot write its folder, or is interrupted, says
so in one line naming the folder, and leaves nothing behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _no_file_bytes() -> None:
    """In the child: no regular file may grow past 0 bytes (a write fails with EFBIG, as on a
    full disk; Python ignores SIGXFSZ), while empty files can still be created."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _cli_on_a_full_disk(*args: str) -> subprocess.CompletedProcess:
    """``python -m tiersim ARGS`` where no file may be written to (see :func:`_no_file_bytes`)."""
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "tiersim", *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=300,
                          preexec_fn=_no_file_bytes)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE's EFBIG, as on Linux")
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_lock_that_cannot_be_written_is_one_line_naming_the_folder(tmp_path, command):
    """The pid written into ``DIR/.lock`` went through the text layer's buffer: on a full disk
    its flush failed, then its close failed again, and that error, which names no file,
    replaced the first: 'Error: No space left on device; free some space on that disk or write
    elsewhere' was all `tiersim run --out DIR` (and plan) said, the folder unnamed. Now the
    line names the folder, and the command leaves no lock and no folder behind."""
    out = tmp_path / "o"
    done = _cli_on_a_full_disk(command, "tiny", "--out", str(out), "--no-report")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"Error: {out}: cannot write to this folder (File too large); choose another --out "
        "folder")
    assert not out.exists()
