"""Round 22 (harness): an ``--out`` inside a sweep's points folder, a killed run's ``.ready``
leftovers that are links, and the calibration harness's hostile arguments and environments."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"


def _sweep(tmp_path: Path, capsys) -> Path:
    """A finished two-point sweep folder."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.read_text() + "\nsweep:\n  seed: [0, 1]\n")
    out = tmp_path / "sw"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    return out


@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
@pytest.mark.parametrize("below", ["points", "points/deeper/o"])
def test_an_out_inside_a_sweeps_points_folder_is_refused(tmp_path, capsys, command, below):
    """``tiersim run --out <sweep>/points`` wrote a run's files beside the sweep's point
    files, under a lock (points/.lock) the sweep never takes."""
    sweep = _sweep(tmp_path, capsys)
    before = sorted(p.name for p in (sweep / "points").iterdir())
    out = sweep / below
    scenario = TINY
    if command == "sweep":
        scenario = tmp_path / "s.yaml"
    assert error_line(*run_cli(capsys, command, scenario, "--out", out)) == (
        f"Error: {out}: lies inside {sweep / 'points'}, where the sweep in {sweep} keeps one "
        f"file per point; `tiersim {command}` would write beside them; use an --out folder "
        "outside it (nothing was written)")
    assert sorted(p.name for p in (sweep / "points").iterdir()) == before


def test_an_out_inside_a_sweeps_points_folder_through_a_link_is_refused(tmp_path, capsys):
    """The same folder reached through a link."""
    sweep = _sweep(tmp_path, capsys)
    link = tmp_path / "link"
    link.symlink_to(sweep / "points")
    assert error_line(*run_cli(capsys, "run", TINY, "--out", link)).startswith(
        f"Error: {link}: lies inside {sweep / 'points'}, where the sweep in {sweep} keeps")
    assert not (sweep / "points" / "summary.json").exists()


def test_a_folder_beside_a_sweeps_points_is_a_run_folder(tmp_path, capsys):
    """A folder of the sweep's other than points/ is no sweep's: a run writes there."""
    sweep = _sweep(tmp_path, capsys)
    assert run_cli(capsys, "run", TINY, "--out", sweep / "single", "--no-baselines")[0] == 0


def test_a_link_named_as_a_killed_runs_set_does_not_make_a_folder_a_runs(tmp_path, capsys):
    """A link named ``.tiersim-run-x.ready`` (to a folder) made ``refuse_foreign_files`` take
    the folder for a killed run's, while the recovery ignores links: the user's own
    report.html was overwritten."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.html").write_text("my own file\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / ".tiersim-run-x.ready").symlink_to(elsewhere)
    assert error_line(*run_cli(capsys, "run", TINY, "--out", out)) == (
        f"Error: {out / 'report.html'}: `tiersim run` would overwrite this file, and {out} "
        "holds no run's results (no tiersim manifest.json); move the file, or use another "
        "--out folder (nothing was written)")
    assert (out / "report.html").read_text() == "my own file\n"



def test_report_of_a_sweeps_points_folder_names_the_sweep(tmp_path, capsys):
    """``tiersim report <sweep>/points`` said to run ``tiersim run/sweep/plan --out`` into
    it first, which is refused there (and wrote beside the point files before)."""
    sweep = _sweep(tmp_path, capsys)
    assert error_line(*run_cli(capsys, "report", sweep / "points")) == (
        f"Error: {sweep / 'points'}: the folder where the sweep in {sweep} keeps one file per "
        f"point, not a result to report; report the sweep: tiersim report {sweep}")
    assert sorted(p.suffix for p in (sweep / "points").iterdir()) == [".json", ".json"]

# ------------------------------------------------------------------ the calibration harness


def _harness(capsys, *argv) -> tuple[int, str]:
    """``python -m tiersim.calibrate ARGV`` in this process: (exit status, stderr)."""
    from tiersim.calibrate import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse's usage errors exit from the parser
        code = exit_.code
    return code, capsys.readouterr().err


def test_a_torch_that_fails_to_load_its_libraries_is_one_line(tmp_path, capsys, monkeypatch):
    """``import torch`` raising OSError (a CUDA build whose libcudnn.so.9 is missing: torch's
    ``__init__`` loads it with ctypes) ended the harness in a traceback; only ImportError
    was caught."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        'raise OSError("libcudnn.so.9: cannot open shared object file: No such file or '
        'directory")\n')
    monkeypatch.syspath_prepend(str(fake.parent))
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    out = tmp_path / "p.json"
    assert error_line(*_harness(capsys, "--device", "cpu", "--quick", "--out", out)) == (
        "Error: torch cannot be imported (libcudnn.so.9: cannot open shared object file: No "
        "such file or directory); reinstall it: pip install 'tiersim[gpu]' (torch 2.13.0)")
    assert not out.exists()


@pytest.mark.parametrize("argv,shown", [
    (["--device", "cpu", "--quick", "--out", "no\nfolder\x1b[31m/p.json"],
     "Error: --out no\\nfolder\\x1b[31m/p.json: folder no\\nfolder\\x1b[31m does not exist; "
     "create it first"),
    (["--device", "cpu", "--config", "a\nb.json", "--out", "p.json"],
     "Error: a\\nb.json: cannot read a config.json (No such file or directory)"),
    (["--device", "cpu", "--quick", "--out", "p.json", "--o\x1b[2Jut"],
     "Error: unrecognized arguments: --o\\x1b[2Jut; see tiersim calibrate --help"),
])
def test_a_control_character_in_a_harness_error_is_escaped(tmp_path, capsys, monkeypatch,
                                                            argv, shown):
    """A path or option holding a line break or a terminal escape was printed raw by the
    harness: its one error line became two (or three), and ESC sequences reached the
    terminal; tiersim's other commands escape them (``tiersim.errors.escaped``)."""
    monkeypatch.chdir(tmp_path)
    assert error_line(*_harness(capsys, *argv)) == shown
    assert list(tmp_path.iterdir()) == []


def test_a_profile_that_cannot_be_written_is_kept_under_the_partial_name(tmp_path, capsys,
                                                                        monkeypatch):
    """The disk filled before the complete profile was written to ``--out`` (every partial
    save had fit): the line said the complete profile was lost, while ``P.partial.json``
    held every table under a status saying the run stopped after its last section. The
    complete profile goes to the partial name, and the line says so."""
    import json

    from test_calibrate_round7 import _failing_write

    pytest.importorskip("torch")
    out = tmp_path / "p.json"
    _failing_write(monkeypatch, lambda path: path == out)
    code, err = _harness(capsys, "--device", "cpu", "--quick", "--ops", "overhead,attn_decode",
                         "--out", out)
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"Error: cannot write {out} (No space left on device); the complete profile (2 tables "
        f"and the overhead) is in {tmp_path / 'p.partial.json'} instead, {out} not written; "
        f"rename it to {out} once there is room")
    doc = json.loads((tmp_path / "p.partial.json").read_text())
    assert doc["provenance"]["status"] == "complete" and len(doc["tables"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.partial.json"]


def test_a_profile_that_cannot_be_written_names_the_earlier_save_left(tmp_path, capsys,
                                                                      monkeypatch):
    """The disk filled after the first tables were saved: the line said the complete profile
    was lost, saying nothing of the ``P.partial.json`` left with those tables."""
    from test_calibrate_round7 import _failing_write

    pytest.importorskip("torch")
    out = tmp_path / "p.json"
    saves = []

    def fails(path: Path) -> bool:
        saves.append(path)
        return path == out or len(saves) > 1  # the first partial save fits, no later one
    _failing_write(monkeypatch, fails)
    code, err = _harness(capsys, "--device", "cpu", "--quick", "--ops", "overhead,attn_decode",
                         "--out", out)
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"Error: cannot write {out} (No space left on device); the complete profile (2 tables "
        f"and the overhead) is lost, {out} not written; {tmp_path / 'p.partial.json'} holds "
        "what was saved before (the overhead); write it where a file can be created, and run again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.partial.json"]


def _device_script(tmp_path: Path, **env) -> tuple[int, str]:
    """``bash tiersim/calibrate/device_run.sh`` with ``env``: (exit status, stdout + stderr)."""
    import subprocess
    import sys

    base = {"OUT": str(tmp_path / "o"), "DEVICE": "cpu", "QUICK": "1",
            "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(["bash", str(ROOT / "tiersim" / "calibrate" / "device_run.sh")],
                          env={**base, **env}, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("name,value", [("BUDGET_S", "1.5"), ("LIMIT_S", "abc"),
                                        ("TOTAL_S", "-5"), ("BLOCKFP8", "yes"),
                                        ("TP", "two")])
def test_the_device_script_refuses_a_setting_that_is_no_whole_number(tmp_path, name, value):
    """``BUDGET_S=1.5`` (or ``LIMIT_S=abc``) passed bash's integer tests as errors ('integer
    expression expected'): the budget was never shrunk to the hard limit, or ``timeout abc``
    ran nothing, each after the first phase had spent its minutes of the device's."""
    code, text = _device_script(tmp_path, **{name: value})
    assert code == 1
    assert text.strip() == (f"Error: {name}={value!r}: must be "
                            + ("0 or 1" if name == "BLOCKFP8" else "a whole number above 0")
                            + "; set it so, or leave it unset for the default")
    assert not (tmp_path / "o").exists()


def test_the_device_script_refuses_an_out_that_is_a_file(tmp_path):
    """``OUT`` naming a file: mkdir failed unnoticed, then tee and the harness each said so,
    the script listing the file and going on through every phase."""
    (tmp_path / "o").write_text("mine\n")
    code, text = _device_script(tmp_path)
    assert code == 1
    assert text.strip() == (f"Error: OUT={str(tmp_path / 'o')!r}: cannot make that folder "
                            "(a file is in the way, or no permission); set OUT to a folder")
    assert (tmp_path / "o").read_text() == "mine\n"
