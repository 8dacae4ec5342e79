"""Round 29 (harden): a bad prompt cell is described, never echoed; ``--out`` refuses a
folder a typo could scatter files into; old Ray sweep folders are ignored and removed on
resume; sweep values that resolve alike are refused as one value given twice."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def _prompt_trace(path, cells: pa.Array):
    """A one-row canonical Parquet trace whose prompt is ``cells``."""
    pq.write_table(pa.table({"arrival_s": [0.0], "input_tokens": [5], "output_tokens": [2],
                             "prompt": cells}), path)
    return path


@pytest.mark.parametrize(("cells", "shown"), [
    (pa.array([b"my password is hunter2"], pa.binary()), "binary data of 22 bytes"),
    (pa.array([b"\xff"], pa.binary()), "binary data of 1 byte"),
    (pa.array([4111111111111111]), "a number"),
    (pa.array([2.5]), "a number"),
    (pa.array([True]), "true/false"),
])
def test_a_prompt_that_is_not_text_is_described_not_echoed(tmp_path, cells, shown):
    """A prompt may hold a secret (docs/security.md: a bad text cell is described by its size,
    never quoted): the bytes' text and the number were echoed, cut to 40 characters."""
    path = _prompt_trace(tmp_path / "p.parquet", cells)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: row 1, column 'prompt': prompt must be text (got "
                               f"{shown}); write the prompt as a string, or leave the cell "
                               "empty")
    assert "hunter2" not in str(info.value) and "4111" not in str(info.value)


SWEEP_TAIL = "sweep:\n  seed: [1, 2]\n"


def _scenarios(folder):
    """The tiny scenario, and a two-point sweep of it, written in ``folder``."""
    from conftest import tiny_doc, write_yaml

    folder.mkdir(parents=True, exist_ok=True)
    plain = write_yaml(folder / "s.yaml", tiny_doc())
    swept = folder / "sw.yaml"
    swept.write_text(plain.read_text() + SWEEP_TAIL)
    return plain, swept


def _command(kind: str, plain, swept, out) -> list[str]:
    """The argv of ``tiersim kind`` into ``out`` (no simulation is reached when refused)."""
    scenario = swept if kind == "sweep" else plain
    extra = ["--no-baselines"] if kind == "run" else []
    return [kind, str(scenario), "--out", str(out), "--no-report", *extra]


def _refused(capsys, argv) -> str:
    """The one error line of ``tiersim ARGV`` (exit status 1, no traceback)."""
    from tiersim.cli.app import main

    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _listing(folder) -> dict:
    """Every entry under ``folder`` with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("kind", ["run", "plan", "sweep"])
def test_out_at_the_root_folder_is_refused(tmp_path, monkeypatch, kind):
    """``--out /`` wrote a run's files (and the .lock) at the top of the file system."""
    from pathlib import Path

    from tiersim.errors import TiersimError
    from tiersim.outputs import claim_out_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(TiersimError) as info:
        claim_out_dir(Path("/"), kind)
    assert str(info.value) == (f"/: --out is the file system's root folder, where `tiersim "
                               f"{kind}` would write its files among others; use a folder of "
                               f"their own, such as {tmp_path / 'tiersim-out'} (nothing was "
                               "written)")


@pytest.mark.parametrize("kind", ["run", "plan", "sweep"])
def test_out_at_the_home_folder_is_refused(tmp_path, monkeypatch, capsys, kind):
    """``--out ~`` wrote requests.parquet, summary.json ... among the home folder's files."""
    home = tmp_path / "home"
    plain, swept = _scenarios(home / "work")
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    before = _listing(home)
    line = _refused(capsys, _command(kind, plain, swept, "~"))
    assert line == (f"Error: {home}: --out is your home folder, where `tiersim {kind}` would "
                    f"write its files among others; use a folder of their own, such as "
                    f"{home / 'tiersim-out'} (nothing was written)")
    assert _listing(home) == before


def test_report_of_the_home_folder_is_refused(tmp_path, monkeypatch, capsys):
    """``tiersim report ~`` took the home folder's lock before looking for results there."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "summary.json").write_text("{}")
    monkeypatch.setenv("HOME", str(home))
    before = _listing(home)
    line = _refused(capsys, ["report", "~"])
    assert line == (f"Error: {home}: is your home folder, where no tiersim command writes "
                    "its results (each --out is a folder of its own); give the folder of a "
                    "run, sweep or plan (nothing was written)")
    assert _listing(home) == before


@pytest.mark.parametrize("kind", ["run", "plan", "sweep"])
def test_out_into_a_folder_of_other_files_is_refused(tmp_path, capsys, kind):
    """A typo naming an existing folder of the user's (say a project's) wrote the command's
    files among the user's own."""
    plain, swept = _scenarios(tmp_path / "in")
    out = tmp_path / "project"
    out.mkdir()
    for name in ("notes.txt", "b.csv", "a.py", ".git", "z"):
        (out / name).write_text("mine\n")
    before = _listing(out)
    line = _refused(capsys, _command(kind, plain, swept, out))
    assert line == (f"Error: {out}: --out holds what no tiersim command wrote (.git, a.py, "
                    f"b.csv and 2 more) and no tiersim results; `tiersim {kind}` would write "
                    "its files among them; use a new or empty --out folder (nothing was "
                    "written)")
    assert _listing(out) == before


def test_a_folder_of_tiersims_own_files_is_still_run_into(tmp_path, capsys):
    """A lock a finished command left, or a run's results beside a note of the user's, is a
    folder tiersim may write: only a folder of nothing but other files is refused."""
    from tiersim.cli.app import main

    plain, _ = _scenarios(tmp_path / "in")
    out = tmp_path / "o"
    out.mkdir()
    (out / ".lock").write_text("")
    argv = ["run", str(plain), "--out", str(out), "--no-report", "--no-baselines"]
    assert main(argv) == 0
    (out / "notes.txt").write_text("mine\n")
    assert main(argv) == 0
    assert (out / "notes.txt").read_text() == "mine\n"


def _sweep_of_trace_paths(folder, *paths: str):
    """The tiny scenario in ``folder`` reading ``folder/t.parquet``, swept over ``paths``."""
    import shutil

    from conftest import REPO, tiny_doc, write_yaml

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "tiersim" / "traces" / "azure2023_code.parquet", folder / "t.parquet")
    doc = tiny_doc()
    doc["trace"]["path"] = "t.parquet"
    doc["sweep"] = {"trace.path": list(paths)}
    return write_yaml(folder / "s.yaml", doc)


@pytest.mark.parametrize("other", ["../sw/t.parquet", "link.parquet", "hard.parquet",
                                   "sub/../t.parquet"])
def test_one_trace_named_two_ways_is_one_setting_listed_twice(tmp_path, other):
    """``t.parquet`` and ``./t.parquet`` were refused as one setting, but a path through
    ``..``, a symbolic link or a hard link to the same file ran as a second point of the same
    scenario (two rows of one result in sweep.parquet under two labels)."""
    import os

    from tiersim.sweep.axes import SweepError
    from tiersim.sweep.run import prepare

    folder = tmp_path / "sw"
    scenario = _sweep_of_trace_paths(folder, "t.parquet", other)
    (folder / "link.parquet").symlink_to("t.parquet")
    os.link(folder / "t.parquet", folder / "hard.parquet")
    (folder / "sub").mkdir()
    with pytest.raises(SweepError) as info:
        prepare(scenario)
    assert str(info.value) == (f"{scenario}: sweep: 'trace.path': values 't.parquet' and "
                               f"'{other}' are the same setting once read; list it once")


def test_two_trace_files_of_one_content_stay_two_points(tmp_path):
    """Two files are two settings, even of the same bytes: only one file named two ways is
    refused."""
    import shutil

    from tiersim.sweep.run import prepare

    folder = tmp_path / "sw"
    scenario = _sweep_of_trace_paths(folder, "t.parquet", "copy.parquet")
    shutil.copy(folder / "t.parquet", folder / "copy.parquet")
    assert len(prepare(scenario).points) == 2


HOUR_AGO = 2 * 3600


def _ray_folder(parent, name: str, session_pid: int | None, age_s: float):
    """A local Ray folder ``parent/name`` as a sweep left it: a Ray session in it named after
    ``session_pid`` (none: Ray never started there), every entry last changed ``age_s`` ago."""
    import os
    import time

    folder = parent / name
    folder.mkdir()
    if session_pid is not None:
        logs = folder / f"session_2026-12-05_03-30-01_123456_{session_pid}" / "logs"
        logs.mkdir(parents=True)
        (logs / "debug_state.txt").write_text("raylet\n")
        (folder / "session_latest").symlink_to(logs.parent.name)
    then = time.time() - age_s
    for path in [*folder.rglob("*"), folder]:
        os.utime(path, (then, then), follow_symlinks=False)
    return folder


def _gone_pid() -> int:
    """The pid of a process that has ended."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_old_unnamed_ray_folders_are_removed_once_provably_stale(tmp_path):
    """Folders a local Ray kept its session in, named before they carried their sweep's pid
    (``tiersim-ray-XXXXXXXX``, tiersim 3850db9 to 810dd13) or left by a kill before the rename
    (``tiersim-ray-new-XXXXXXXX``), were passed over for good: each kept its Ray logs (0.2 MB
    or more) however long its sweep had been gone. Now one is removed where its Ray session
    names a sweep that is gone (or none started there), no process holds it, and nothing in
    it changed for an hour (a live Ray rewrites its debug state every 10 s); a folder of
    another tool stays."""
    import os

    from tiersim.sweep import executors

    gone = _gone_pid()
    stale = [_ray_folder(tmp_path, "tiersim-ray-ab12cd34", gone, HOUR_AGO),
             _ray_folder(tmp_path, "tiersim-ray-zz9_x0y1", None, HOUR_AGO),
             _ray_folder(tmp_path, "tiersim-ray-new-q1w2e3r4", None, HOUR_AGO)]
    kept = [_ray_folder(tmp_path, "tiersim-ray-live0001", os.getpid(), HOUR_AGO),
            _ray_folder(tmp_path, "tiersim-ray-recent01", gone, 60),
            _ray_folder(tmp_path, "tiersim-ray-empty001", None, 60),
            _ray_folder(tmp_path, "other-ray-ab12cd34", gone, HOUR_AGO)]
    assert sorted(executors.remove_stale_ray_folders(str(tmp_path))) == sorted(map(str, stale))
    assert [p.exists() for p in stale] == [False] * 3
    assert [p.is_dir() for p in kept] == [True] * 4


def test_an_old_ray_folder_a_process_holds_stays(tmp_path):
    """A process holding the folder's lock (as a sweep holds its own) keeps it, however old."""
    import os

    from tiersim.sweep import executors

    folder = _ray_folder(tmp_path, "tiersim-ray-held0001", _gone_pid(), HOUR_AGO)
    handle = executors._hold(str(folder))
    try:
        assert executors.remove_stale_ray_folders(str(tmp_path)) == []
    finally:
        os.close(handle)
    assert folder.is_dir()
