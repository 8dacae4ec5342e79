"""Round 27 (helper pipes): command-line hygiene - a reader gone from the output pipe, Ray's
temporary folders, the KV blocks a prefill holds for a decode that never reads them."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import nullcontext

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
    # stderr holds tiny's own tier-order note alone (round 53: W4A16 listed first costs more
    # per request at tiny's load): no traceback, no Error line
    assert done.returncode == READER_GONE
    assert [line for line in done.stderr.splitlines() if not line.startswith("note: ")] == []


def test_a_run_whose_reader_left_writes_its_folder_and_ends_with_sigpipes_status(tmp_path):
    """The run's files are written before its summary is printed; the summary meeting a closed
    pipe ends it with 141 (status 1 before) and no traceback or Error line."""
    out = tmp_path / "o"
    done = into_closed_pipe("run", REPO / "scenarios" / "tiny.yaml", "--out", out,
                            "--no-baselines")
    # stderr holds tiny's own tier-order note alone (round 53: W4A16 listed first costs more
    # per request at tiny's load): no traceback, no Error line
    assert done.returncode == READER_GONE
    assert [line for line in done.stderr.splitlines() if not line.startswith("note: ")] == []
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


# ---------------------------------------------------------------------------------------------
# Ray's session folder


class FolderRay:
    """Enough of ``ray`` for :func:`executors.ray_session`: records the folder ``init`` is
    given and writes a session file there, as Ray does; ``fail`` makes ``init`` raise."""

    def __init__(self, fail: BaseException | None = None):
        self.folders: list[str] = []
        self.fail = fail
        self.shut = 0

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        folder = kwargs.get("_temp_dir")
        self.folders.append(folder)
        if folder is not None:
            os.makedirs(os.path.join(folder, "session_x", "logs"))
        if self.fail is not None:
            raise self.fail

    def shutdown(self):
        self.shut += 1


@pytest.fixture
def ray_tmpdir(monkeypatch):
    """A short, empty folder as ``RAY_TMPDIR`` (Ray's sockets live under it: a Unix socket's
    path may not pass 107 bytes, which pytest's tmp_path nearly does), removed afterwards."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="r27-", dir="/tmp")
    monkeypatch.setenv("RAY_TMPDIR", folder)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("fail", [None, SystemExit(143)], ids=["finished", "stopped-in-init"])
def test_a_local_ray_keeps_its_session_in_a_folder_removed_on_exit(monkeypatch, ray_tmpdir,
                                                                   fail):
    """A local Ray gets a folder of its own under ``RAY_TMPDIR`` (else the system's temporary
    folder), removed with what Ray wrote there once Ray is shut down, even where the sweep
    stopped while Ray started."""
    from tiersim.sweep import executors

    fake = FolderRay(fail)
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    with pytest.raises(SystemExit) if fail else nullcontext(), executors.ray_session(None, 1):
        assert os.listdir(fake.folders[0]) == ["session_x"]
    assert os.path.dirname(fake.folders[0]) == ray_tmpdir
    assert os.listdir(ray_tmpdir) == [] and fake.shut == (0 if fail else 1)


def test_a_joined_ray_cluster_gets_no_folder_of_ours(monkeypatch, ray_tmpdir):
    """Joining a cluster (``--address``) passes no session folder: the cluster has its own."""
    from tiersim.sweep import executors

    fake = FolderRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    monkeypatch.setattr(executors, "probe_address", lambda address, *a: None)
    with executors.ray_session("10.0.0.2:6379", None):
        pass
    assert fake.folders == [None] and os.listdir(ray_tmpdir) == []


def test_a_real_local_ray_leaves_no_session_folder_behind(ray_tmpdir):
    """``tiersim sweep --executor ray`` left ``/tmp/ray/session_*`` (0.19 MB of logs for a
    two-point sweep, one folder per sweep) after it finished; nothing is left now. A local Ray
    of one CPU runs one task."""
    ray = pytest.importorskip("ray")
    from tiersim.sweep import executors

    with executors.ray_session(None, 1):
        assert ray.get(ray.remote(lambda x: -x).remote(3)) == -3
        (ours,) = os.listdir(ray_tmpdir)
        assert any(name.startswith("session_") for name in os.listdir(os.path.join(ray_tmpdir,
                                                                                   ours)))
    assert os.listdir(ray_tmpdir) == []


# ---------------------------------------------------------------------------------------------
# KV blocks a prefill replica holds for a decoder


def test_a_request_the_decoders_refuse_is_never_prefilled_so_holds_no_blocks():
    """vLLM's NixlConnector frees a prefill's blocks once the decode side has read them, or
    after VLLM_NIXL_ABORT_REQUEST_TIMEOUT (480 s) where it never does (a request the decoder
    refuses or a client aborts). tiersim has no such request: one its decoders could never
    hold is dropped on arrival, before any prefill (``_Fleet._decodable``), and every
    prefilled one is read when its transfer ends. So the request after a refused one is
    prefilled at once, and the prefill replica never held more than that one's 25 blocks."""
    import numpy as np

    from tiersim.engine import Disagg, SchedulerLimits, TierSpec, Workload, simulate
    from tiersim.perf.base import LinearStepModel, StepShape

    prompt = 400  # 25 blocks of 16; 40 blocks (640 tokens) hold 400 + 4, not 400 + 300
    limits = SchedulerLimits(max_num_seqs=16, max_num_batched_tokens=prompt, block_size=16,
                             watermark=0.0)
    tier = TierSpec("t", 2, 40, LinearStepModel(), limits,
                    disagg=Disagg(1, 1, 1e4, 0.0, 100.0))
    work = Workload(np.zeros(2), np.full(2, prompt), np.array([300, 4]),
                    np.zeros(2, np.int64))
    res = simulate([tier], work)
    t1 = LinearStepModel().step_time(StepShape(((prompt, 0),), 0, 0))
    assert res.dropped.tolist() == [True, False]
    assert res.first_token_s[1] == pytest.approx(t1)
    assert res.kv_peak_blocks["t"][0] == 25
