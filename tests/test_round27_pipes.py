"""Round 27 (helper pipes): command-line hygiene - a reader gone from the output pipe, Ray's
temporary folders, the KV blocks a prefill holds for a decode that never reads them."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from conftest import REPO

READER_GONE = 128 + 13  # what the shell reports for a program SIGPIPE ended

TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """``python -m tiersim ARGS`` with standard output a pipe whose reader has already left
    (``| head -1`` once head has its line)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "tiersim", *map(str, args)], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300, cwd=REPO,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("trace", "inspect", TRACE)],
                         ids=["version", "help", "trace-inspect"])
def test_a_reader_gone_from_the_pipe_ends_the_command_quietly_with_sigpipes_status(args):
    """``tiersim ... | head -1`` ended with status 1 (click's and rich's answer to a broken
    pipe), as an error would; it is now 128 + SIGPIPE, as git's or seq's, with nothing on
    stderr."""
    done = into_closed_pipe(*args)
    assert (done.returncode, done.stderr) == (READER_GONE, "")


def test_a_run_whose_reader_left_writes_its_folder_and_ends_with_sigpipes_status(tmp_path):
    """The run's files are written before its summary is printed; the summary meeting a closed
    pipe ends it with 141 (status 1 before) and no traceback or Error line."""
    out = tmp_path / "o"
    done = into_closed_pipe("run", REPO / "scenarios" / "tiny.yaml", "--out", out,
                            "--no-baselines")
    assert (done.returncode, done.stderr) == (READER_GONE, "")
    assert (out / "summary.json").is_file()


def test_a_broken_pipe_to_another_process_is_no_reader_gone():
    """Only a write to standard output or error counts: a broken pipe to a worker process is
    an error of its own, not a reason to stop quietly."""
    from tiersim.cli.app import _reader_gone

    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb", buffering=0) as other, pytest.raises(BrokenPipeError) as raised:
        other.write(b"x")
    assert not _reader_gone(raised.value)
    try:
        try:
            raise raised.value
        except BrokenPipeError:
            raise SystemExit(1)  # noqa: B904 - what click does with one
    except SystemExit as ended:
        assert not _reader_gone(ended)


class _GoneReader(io.StringIO):
    """A standard output whose reader has left."""

    def write(self, text: str) -> int:
        """Refuse as a closed pipe does."""
        raise BrokenPipeError(32, "Broken pipe")


def test_the_calibration_harness_ends_with_sigpipes_status_when_its_reader_left(monkeypatch,
                                                                               capsys):
    """``tiersim calibrate ... | head -1`` wrote its profile, then said nothing and ended with
    status 1, as a failed measurement does; its summary's closed pipe is now 141 too."""
    from tiersim.calibrate.cli import _say

    monkeypatch.setattr(sys, "stdout", _GoneReader())
    assert _say("summary", "the profile is written: p.json") == READER_GONE
    monkeypatch.undo()
    assert capsys.readouterr().err == ""
    assert _say("summary") == 0
