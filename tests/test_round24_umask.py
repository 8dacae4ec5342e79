"""Round 24 (umask): tiersim's file writes never change the process-wide umask.

The umask is one per process: a write that set it for a moment (to read it) gave a file another
thread created meanwhile the wrong mode (a private 0600 file came out 0644)."""

from __future__ import annotations

import importlib
import os
import stat
import threading
import time
from pathlib import Path

import pytest

import tiersim.atomic
from tiersim.perf.profile import profile_from_json, save_profile
from tiersim.report import page

#: A small valid profile document.
PROFILE = {
    "schema": "tiersim.profile/1", "name": "tiny", "gpu": "H200",
    "provenance": {"source": "harness", "date": "2026-01-01"},
    "overhead_s": {"value": 0.002, "source": "harness"},
    "tables": [{"op": "gemm", "precision": "bf16", "source": "harness",
                "key": {"n": 64, "k": 32}, "axes": {"m": [1, 10, 100]},
                "latency_s": [1e-5, 1e-5, 1e-4]}],
}

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def _writers(folder: Path):
    """One call of each tiersim write path, writing into ``folder``."""
    profile = profile_from_json(PROFILE)
    return {
        "report page": lambda: page._write_atomic(folder / "report.html", "<html></html>"),
        "profile": lambda: save_profile(profile, folder / "p.json"),
        "json": lambda: tiersim.atomic.write_json_atomic(folder / "a.json", {"x": 1}),
        "text": lambda: tiersim.atomic.write_text_atomic(folder / "a.txt", "x"),
        "bytes": lambda: tiersim.atomic.write_with_atomic(folder / "a.bin",
                                                          lambda h: h.write(b"x")),
        "import": lambda: importlib.reload(tiersim.atomic),
    }


@pytest.fixture
def umask_077():
    """The process umask set to 077 (private files) for the test, then restored."""
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_no_write_path_touches_the_umask(tmp_path, monkeypatch, umask_077):
    calls = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
    for name, write in _writers(tmp_path).items():
        write()
        assert calls == [], f"{name} changed the process umask: os.umask{tuple(calls)}"


def test_files_made_by_another_thread_keep_their_mode(tmp_path, umask_077):
    """A thread creating private files while another writes reports and profiles."""
    out, mine = tmp_path / "out", tmp_path / "mine"
    out.mkdir()
    mine.mkdir()
    writers = _writers(out)
    stop, wrong = threading.Event(), []

    def loop():
        while not stop.is_set():
            writers["report page"]()
            writers["profile"]()

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        deadline = time.monotonic() + 3.0
        n = 0
        while time.monotonic() < deadline and not wrong:
            path = mine / f"f{n}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.close(fd)
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode != 0o600:
                wrong.append((path.name, oct(mode)))
            path.unlink()
            n += 1
    finally:
        stop.set()
        thread.join()
    assert wrong == [], f"files created while tiersim wrote got other modes: {wrong[:3]}"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002, 0o027])
def test_written_files_get_a_plain_files_mode(tmp_path, umask):
    """The modes stay those of a plain open(): 0666 less the umask (0644 under 022), not
    mkstemp's 0600, and no temporary file is left."""
    old = os.umask(umask)
    try:
        for write in _writers(tmp_path).values():
            write()
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == dict.fromkeys(["report.html", "p.json", "a.json", "a.txt", "a.bin"],
                                  0o666 & ~umask), modes
