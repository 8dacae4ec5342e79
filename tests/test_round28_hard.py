"""Round 28, hardening: a sweep resumed after an edit that names an input file that cannot be
read is refused naming that file, not resumed over points it cannot check."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_round19 import error_line, run_cli
from test_round23_sweepkill import ROOT, _scenario
from test_round27_pipes import FolderRay, ray_tmpdir

short_ray_tmpdir = ray_tmpdir
"""``RAY_TMPDIR`` a short, empty folder (test_round27_pipes' fixture, under a name of ours)."""

ARGS = ("-w", "1", "--no-baselines", "--no-report")
BUNDLED = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
NO_ROOT_READS = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
"""Run as root without the capabilities that let root read a ``chmod 000`` file."""


def _swept(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """A finished two-point sweep (folder ``o``) of ``s.yaml`` over ``t.parquet`` beside it."""
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    scenario.write_text(scenario.read_text().replace("path: azure2023_code.parquet",
                                                     "path: t.parquet"))
    (tmp_path / "t.parquet").write_bytes(BUNDLED.read_bytes())
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, *ARGS)
    assert code == 0, err
    return scenario, out


def _folder(out: Path) -> dict[str, bytes]:
    """Every file of a sweep folder, by its path in it, with its bytes (but ``.lock``: each
    sweep writes its pid there while it holds the folder)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _named(scenario: Path, trace: str) -> Path:
    """``e.yaml`` beside ``scenario``: the same scenario with its trace named ``trace``."""
    edited = scenario.with_name("e.yaml")
    edited.write_text(scenario.read_text().replace("path: t.parquet", f"path: {trace}"))
    return edited


def _sweep_without_root_reads(scenario: Path, out: Path) -> tuple[int, str]:
    """``tiersim sweep SCENARIO --out OUT`` in a process that a ``chmod 000`` file refuses
    (as root: without the capabilities that read it anyway)."""
    prefix = NO_ROOT_READS if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("root reads a chmod 000 file, and setpriv is not here to stop it")
    done = subprocess.run([*prefix, sys.executable, "-m", "tiersim", "sweep", str(scenario),
                           "--out", str(out), *ARGS], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    if prefix and done.stderr.startswith("setpriv:"):  # not allowed to drop them here
        pytest.skip(f"root reads a chmod 000 file: {done.stderr.strip()}")
    return done.returncode, done.stderr


def test_an_edit_naming_an_unreadable_trace_is_refused_and_the_folder_kept(tmp_path, capsys):
    """The trace swapped for a file of other content that cannot be read (``chmod 000``): its
    content was never compared (a file that cannot be read was skipped), so the sweep resumed
    "0 run, 2 already done" over points of the old trace and took the edit as its source. It is
    refused naming the file, and the folder is left as it was."""
    scenario, out = _swept(tmp_path, capsys)
    pd.read_parquet(BUNDLED).iloc[::2].to_parquet(tmp_path / "u.parquet")
    (tmp_path / "u.parquet").chmod(0)
    before = _folder(out)
    assert error_line(*_sweep_without_root_reads(_named(scenario, "u.parquet"), out)) == (
        f"Error: {out}: this scenario's trace cannot be read ({tmp_path / 'u.parquet'}: "
        f"Permission denied), so the finished points, which read {tmp_path / 't.parquet'}, "
        "cannot be checked against it (the folder is left as it was); make it readable or "
        "name the file they read, or use a new --out folder")
    assert _folder(out) == before


def test_an_edit_elsewhere_beside_an_unreadable_trace_still_resumes(tmp_path, capsys):
    """The trace the points read cannot be read now, under the name they read it by, and the
    scenario is edited elsewhere (a comment, ``gpu: h200``): no file was swapped, so the
    points stay, as they do without the edit (a file that cannot be read under the name it
    ran with is no change: a point still to run says what is wrong with it)."""
    scenario, out = _swept(tmp_path, capsys)
    scenario.write_text("# edited\n" + scenario.read_text().replace("gpu: H200", "gpu: h200"))
    (tmp_path / "t.parquet").chmod(0)
    code, err = _sweep_without_root_reads(scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err


@pytest.mark.parametrize("kind", ["folder", "dangling link", "fifo"])
def test_an_edit_naming_a_trace_that_is_no_file_is_refused_naming_it(tmp_path, capsys, kind):
    """The trace swapped for a folder, a link to nothing or a FIFO: refused as "a sweep of a
    different scenario (trace.path is 'gone.parquet' here, '<a file, compared by its
    content>' when its point ... ran); ... delete o/points to start over", which names no
    problem and advises losing every point. The line says what is wrong with the file."""
    scenario, out = _swept(tmp_path, capsys)
    gone = tmp_path / "gone.parquet"
    {"folder": gone.mkdir, "dangling link": lambda: gone.symlink_to("nowhere.parquet"),
     "fifo": lambda: os.mkfifo(gone)}[kind]()
    why = {"folder": "is a folder; give the trace file in it",
           "dangling link": "a link that leads to no file (its target is missing, or the "
                            "links loop); point it at the trace file, or give the file itself",
           "fifo": "not a regular file (a device or pipe); give a trace file"}[kind]
    before = _folder(out)
    assert error_line(*run_cli(capsys, "sweep", _named(scenario, "gone.parquet"), "--out", out,
                               *ARGS)) == (
        f"Error: {out}: this scenario's trace cannot be read (gone.parquet: {why}), so the "
        f"finished points, which read {tmp_path / 't.parquet'}, cannot be checked against it "
        "(the folder is left as it was); make it readable or name the file they read, or use "
        "a new --out folder")
    assert _folder(out) == before


# ---------------------------------------------------------------------------------------------
# A local Ray's folder left by a killed sweep


def _ended() -> int:
    """The pid of a child process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _ray_folder(parent: str, name: str) -> str:
    """A folder ``name`` in ``parent`` holding what a local Ray leaves (a session's log)."""
    folder = os.path.join(parent, name)
    os.makedirs(os.path.join(folder, "session_x", "logs"))
    Path(folder, "session_x", "logs", "raylet.out").write_text("log\n")
    return folder


def test_a_killed_sweeps_ray_folder_is_removed_by_the_next_and_no_live_one(monkeypatch,
                                                                          short_ray_tmpdir):
    """``kill -9`` of a sweep on a local Ray leaves its ``tiersim-ray-*`` folder (Ray's logs,
    sockets, spilled objects), which nothing removed. The folder's name now carries the pid of
    the sweep that made it, and the next local Ray removes each folder whose sweep is gone;
    one whose sweep is alive stays, as does one a process holds a lock on, as its sweep does (a
    sweep in another pid namespace sharing the folder), and one named before pids were (owner
    unknown)."""
    from tiersim.sweep import executors

    ray_tmpdir = short_ray_tmpdir
    live = subprocess.Popen(["sleep", "60"])
    try:
        stale = _ray_folder(ray_tmpdir, f"tiersim-ray-{_ended()}-k2j4h7x1")
        alive = _ray_folder(ray_tmpdir, f"tiersim-ray-{live.pid}-a8d0q3zz")
        held = _ray_folder(ray_tmpdir, f"tiersim-ray-{_ended()}-b7c1m2nn")
        unknown = _ray_folder(ray_tmpdir, "tiersim-ray-q0w9e8r7")
        owner = os.open(held, os.O_RDONLY)
        try:
            fcntl.flock(owner, fcntl.LOCK_EX)
            fake = FolderRay()
            monkeypatch.setattr(executors, "_ray", lambda: fake)
            with executors.ray_session(None, 1):
                ours = os.path.basename(fake.folders[0])
                assert sorted(os.listdir(ray_tmpdir)) == sorted(
                    os.path.basename(f) for f in (alive, held, unknown, ours))
        finally:
            os.close(owner)
        assert ours.startswith(f"tiersim-ray-{os.getpid()}-")
        assert not os.path.exists(stale)
        assert sorted(os.listdir(ray_tmpdir)) == sorted(
            os.path.basename(f) for f in (alive, held, unknown))
    finally:
        live.kill()
        live.wait()
