"""``tiersim run --out DIR`` writes atomically: a failed or interrupted rerun leaves the previous
complete run, a full or read-only disk is one line with nothing left behind, and the report
refuses files from two different runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY, run_cli, tiny_doc, write_yaml

from tiersim import outputs
from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.manifest import check_manifest
from tiersim.results import RunResult
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny scenario run once into a folder (no report: fast)."""
    out = tmp_path_factory.mktemp("run")
    run = run_scenario(load_scenario(TINY), out_dir=out, scenario_path=TINY)
    return run, out


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes by name (hidden temporary folders included)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} | {
        p.name: b"<dir>" for p in folder.iterdir() if p.is_dir()}


def test_a_run_writes_its_files_and_a_manifest(tiny_run):
    run, out = tiny_run
    names = {p.name for p in out.iterdir()}
    assert names == {"requests.parquet", "timeseries.parquet", "summary.json", "scenario.yaml",
                     "manifest.json", ".lock"}  # the folder's lock, as `tiersim run` leaves it
    info = json.loads((out / "manifest.json").read_text())
    assert check_manifest(out) == info["run_id"]
    assert RunResult.read(out / "summary.json").to_json() == run.to_json()
    ran = load_scenario(out / "scenario.yaml").model_dump()
    assert ran == load_scenario(TINY).model_dump()  # what ran, reloadable


def test_a_failing_rerun_leaves_the_previous_run_intact(tiny_run, tmp_path, monkeypatch):
    run, out = tiny_run
    target = tmp_path / "out"
    run_scenario(load_scenario(TINY), out_dir=target, scenario_path=TINY)
    before = snapshot(target)
    real = Path.write_bytes
    calls = []

    def fail_on_the_third(self, data):
        calls.append(self.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", fail_on_the_third)
    doc = tiny_doc(seed=5)
    with pytest.raises(TiersimError) as err:
        outputs.write_run(target, run, pd.DataFrame({"a": [1]}), pd.DataFrame({"b": [2]}),
                          json.dumps(doc))
    assert str(err.value) == (f"{target}: cannot write results (No space left on device); free "
                              "space or choose another --out folder")
    assert snapshot(target) == before  # nothing half-written, no temporary folder left


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_one_line(tiny_run, tmp_path):
    run, _ = tiny_run
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(0o500)
    try:
        with pytest.raises(TiersimError, match="cannot write results"):
            outputs.write_run(target, run, pd.DataFrame(), pd.DataFrame(), "")
        assert list(target.iterdir()) == []
    finally:
        target.chmod(0o700)


def test_files_from_two_runs_are_refused_by_the_report(tiny_run, tmp_path):
    _, out = tiny_run
    other = tmp_path / "other"
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(seed=3))
    run_scenario(load_scenario(path), out_dir=other, scenario_path=path)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("requests.parquet", "timeseries.parquet", "manifest.json", "scenario.yaml"):
        (mixed / name).write_bytes((out / name).read_bytes())
    (mixed / "summary.json").write_bytes((other / "summary.json").read_bytes())  # interrupted
    result = run_cli("report", str(mixed))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"Error: {mixed / 'summary.json'}: does not belong to run "
        f"{json.loads((out / 'manifest.json').read_text())['run_id']} named in manifest.json (an "
        f"interrupted rerun?); rerun `tiersim run --out {mixed}`")


def test_stale_temporary_folders_are_cleared(tiny_run, tmp_path):
    run, out = tiny_run
    target = tmp_path / "t"
    (target / ".tiersim-run-dead.tmp").mkdir(parents=True)
    outputs.write_run(target, run, pd.DataFrame({"a": [1]}), pd.DataFrame({"b": [1]}), "x: 1\n")
    assert not list(target.glob(".tiersim-run-*"))


@pytest.mark.parametrize("name,text,expected", [
    ("summary.json", "{not json", "summary.json: line 1: not valid JSON"),
    ("summary.json", '{"requests": 1}', "summary.json: malformed summary (missing key"),
    ("scenario.yaml", "a: [1,\n", "scenario.yaml: line 2: invalid YAML"),
    ("scenario.yaml", "- just\n- a list\n", "scenario.yaml: not a scenario"),
])
def test_report_of_a_malformed_file_is_one_line_naming_it(tiny_run, tmp_path, name, text,
                                                          expected):
    _, out = tiny_run
    folder = tmp_path / "bad"
    folder.mkdir()
    for f in ("summary.json", "scenario.yaml"):
        (folder / f).write_bytes((out / f).read_bytes())
    (folder / name).write_text(text)
    result = run_cli("report", str(folder))
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {folder / expected.split(':')[0]}")
    assert expected.split(": ", 1)[1] in lines[0]


def test_cli_run_writes_the_report_with_the_run(tmp_path):
    result = run_cli("run", str(TINY), "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    run_id = json.loads((tmp_path / "o" / "manifest.json").read_text())["run_id"]
    page = (tmp_path / "o" / "report.html").read_text()
    assert f"(run {run_id})" in page and str(tmp_path / "o") in page
    assert ".tiersim-run-" not in page  # the page names the folder, not the temporary one


def test_a_rerun_without_a_report_removes_the_stale_one(tiny_run, tmp_path):
    run, _ = tiny_run
    target = tmp_path / "r"
    target.mkdir()
    (target / "report.html").write_text("<html>an earlier run</html>")
    outputs.write_run(target, run, pd.DataFrame({"a": [1]}), pd.DataFrame({"b": [1]}), "x: 1\n")
    assert not (target / "report.html").exists()


def identities(folder: Path) -> dict[str, tuple[int, int]]:
    """Each entry's inode and modification time: a file replaced by one of equal bytes shows."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_a_folder_in_the_way_refuses_the_rerun_before_anything_changes(tmp_path, capsys):
    """A folder named summary.json let the rerun replace requests.parquet and
    timeseries.parquet, then fail saying "free space"."""
    target = tmp_path / "out"
    first = write_yaml(tmp_path / "first.yaml", tiny_doc(seed=5))
    assert main(["run", str(first), "--out", str(target), "--no-report", "--no-baselines"]) == 0
    (target / "summary.json").unlink()
    (target / "summary.json").mkdir()
    before, ids = snapshot(target), identities(target)
    capsys.readouterr()
    assert main(["run", str(TINY), "--out", str(target), "--no-report", "--no-baselines"]) == 1
    assert capsys.readouterr().err == (
        f"Error: {target / 'summary.json'}: a folder is in the way of the summary.json that "
        "`tiersim run` writes; move or remove that folder, or use another --out folder "
        "(nothing was written)\n")
    assert snapshot(target) == before and identities(target) == ids


def test_write_run_refuses_a_folder_in_the_way_before_writing(tiny_run, tmp_path):
    run, _ = tiny_run
    target = tmp_path / "r"
    (target / "report.html").mkdir(parents=True)
    with pytest.raises(TiersimError, match=r"report.html: a folder is in the way"):
        outputs.write_run(target, run, pd.DataFrame({"a": [1]}), pd.DataFrame({"b": [1]}), "")
    assert [p.name for p in target.iterdir()] == ["report.html"]


@pytest.fixture
def failing_scenario(tmp_path) -> Path:
    """A scenario whose run fails after its --out folder is taken (a trace row is bad)."""
    trace = tmp_path / "bad.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,10,abc\n")
    return write_yaml(tmp_path / "bad.yaml", tiny_doc(trace={"path": str(trace)}))


def test_a_failed_run_into_a_new_folder_leaves_nothing(failing_scenario, tmp_path, capsys):
    """The lock file (and so the folders made for it) stayed behind."""
    out = tmp_path / "new" / "sub"
    assert main(["run", str(failing_scenario), "--out", str(out), "--no-baselines"]) == 1
    assert "token count is not a number" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_a_failed_run_into_an_empty_folder_leaves_it_empty(failing_scenario, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["run", str(failing_scenario), "--out", str(out), "--no-baselines"]) == 1
    assert list(out.iterdir()) == []
