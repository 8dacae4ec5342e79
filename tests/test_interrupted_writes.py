"""A command interrupted while it writes its --out folder leaves one command's files there,
never a mix of two runs', and no temporary file the next command does not remove
(docs/security.md, "Nothing is written half-way")."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

from tiersim.cli.plan import plan_capacity
from tiersim.manifest import MANIFEST
from tiersim.outputs import DATA_FILES

SHORT = {"window": [240, 330], "path": "azure2023_code.parquet"}


def _without_wall_time(value):
    """plan.json as compared: its wall-clock seconds dropped (they differ between runs)."""
    if isinstance(value, dict):
        return {k: _without_wall_time(v) for k, v in value.items() if k != "wall_s"}
    if isinstance(value, list):
        return [_without_wall_time(v) for v in value]
    return value


def _plan_json(folder) -> dict:
    return _without_wall_time(json.loads((folder / "plan.json").read_text()))


def _interrupt_after_manifest(monkeypatch) -> None:
    """Ctrl-C the moment the run's manifest.json has been renamed into place: any later rename
    raises KeyboardInterrupt, as a signal arriving then would end the command."""
    real = os.replace
    landed = []

    def replace(src, dst, *args, **kwargs):
        if landed:
            raise KeyboardInterrupt
        real(src, dst, *args, **kwargs)
        if os.path.basename(dst) == MANIFEST:
            landed.append(dst)

    monkeypatch.setattr(os, "replace", replace)


def test_a_plan_interrupted_after_its_run_landed_keeps_plan_and_run_together(
        tmp_path, monkeypatch):
    # a kill or Ctrl-C between the planned run's files and plan.json left the new run beside
    # the earlier plan's plan.json (and `tiersim report` showed both as one plan)
    first = write_yaml(tmp_path / "a.yaml", tiny_doc())
    second = write_yaml(tmp_path / "b.yaml", tiny_doc(seed=1, trace=SHORT))
    plan_capacity(second, out_dir=tmp_path / "ref", report=False)
    out = tmp_path / "p"
    plan_capacity(first, out_dir=out, report=False)
    before = _plan_json(out)
    _interrupt_after_manifest(monkeypatch)
    with contextlib.suppress(KeyboardInterrupt):
        plan_capacity(second, out_dir=out, report=False)
    summary = (out / "summary.json").read_bytes()
    if summary == (tmp_path / "ref" / "summary.json").read_bytes():
        assert _plan_json(out) == _plan_json(tmp_path / "ref")
        assert (out / "scenario.yaml").read_bytes() == \
            (tmp_path / "ref" / "scenario.yaml").read_bytes()
    else:
        assert _plan_json(out) == before


@pytest.mark.parametrize("name", ["plan.json", "scenario.yaml", "summary.json"])
def test_a_temporary_file_a_kill_left_is_removed_by_the_next_command(tmp_path, name):
    # `kill -9` while plan.json or the planned scenario.yaml was being written left
    # .plan.json.XXXX.tmp in the folder for good: the next command removed only its own
    # temporary folders
    out = tmp_path / "p"
    out.mkdir()
    left = out / f".{name}.k3x9q2.tmp"
    left.write_text("half")
    kept = out / ".mine.tmp"  # a file of the user's, not one tiersim writes
    kept.write_text("keep")
    plan_capacity(write_yaml(tmp_path / "a.yaml", tiny_doc()), out_dir=out, report=False)
    assert not left.exists()
    assert kept.read_text() == "keep"


KILL_AFTER_RENAMES = """
import os, signal, sys
out, n = os.path.realpath(sys.argv[1]), int(sys.argv[2])
real, landed = os.replace, []
def replace(src, dst, *args, **kwargs):
    if os.path.dirname(os.path.realpath(dst)) == out:
        if len(landed) == n:
            os.kill(os.getpid(), signal.SIGKILL)
        landed.append(dst)
    return real(src, dst, *args, **kwargs)
os.replace = replace
from tiersim.cli.app import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("renamed", [1, 3])
def test_a_run_killed_while_renaming_its_files_is_finished_by_the_next_command(
        tmp_path, capsys, renamed):
    # kill -9 between two renames of a rerun's files left new requests.parquet beside the
    # earlier run's summary.json and manifest; the next command deleted the rest of the new
    # set, so the folder stayed a mix (tiersim report: "does not belong to run ...")
    first = write_yaml(tmp_path / "a.yaml", tiny_doc())
    second = write_yaml(tmp_path / "b.yaml", tiny_doc(seed=1, trace=SHORT))
    out, ref = tmp_path / "r", tmp_path / "ref"
    assert run_cli(capsys, "run", second, "--out", ref, "--no-report")[0] == 0
    assert run_cli(capsys, "run", first, "--out", out, "--no-report")[0] == 0
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_RENAMES, str(out), str(renamed),
                             "run", str(second), "--out", str(out), "--no-report"],
                            capture_output=True, check=False)
    assert killed.returncode == -signal.SIGKILL
    code, err = run_cli(capsys, "report", out)
    assert code == 0, err
    for name in (*DATA_FILES, MANIFEST):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    assert not [p.name for p in out.iterdir() if p.name.endswith((".tmp", ".ready"))]


def test_a_sweep_that_finished_while_a_run_waited_for_the_lock_is_not_overwritten(
        tmp_path, capsys, monkeypatch):
    # the folder was claimed before its lock was taken: a sweep that wrote it in between (its
    # lock released a moment before the run's was taken) got a run's summary.json beside its
    # sweep.json, one folder holding two commands' results
    from tiersim import outputs

    out = tmp_path / "f"
    out.mkdir()
    real = outputs._take

    def take(handle, folder, kind):
        (folder / "sweep.json").write_text("{}")  # the other command's results, just written
        return real(handle, folder, kind)

    monkeypatch.setattr(outputs, "_take", take)
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "a.yaml", tiny_doc()), "--out",
                        out, "--no-report")
    assert code == 1
    assert err == (f"Error: {out}: holds a sweep's results (sweep.json); `tiersim run` would "
                   "overwrite some of them; use another --out folder\n")
    assert sorted(p.name for p in out.iterdir()) == ["sweep.json"]


def test_a_report_refuses_an_earlier_plans_run_beside_a_plan_json_with_no_plan(tmp_path, capsys):
    # a plan that found none writes plan.json, then removes the earlier plan's run: killed in
    # between, the folder held the earlier run beside "no plan", and the report showed that
    # run's headline under a capacity plan that had none
    scenario = write_yaml(tmp_path / "a.yaml", tiny_doc())
    out, none = tmp_path / "p", tmp_path / "none"
    plan_capacity(scenario, out_dir=out, report=False)
    assert plan_capacity(scenario, ttft=0.001, out_dir=none, report=False).plan is None
    (out / "plan.json").write_bytes((none / "plan.json").read_bytes())
    code, err = run_cli(capsys, "report", out)
    assert code == 1
    assert err == (f"Error: {out / 'summary.json'}: a run beside a plan.json that holds no "
                   "plan, so it is an earlier plan's (left by a plan stopped while removing "
                   f"it); rerun `tiersim plan --out {out}`\n")
    assert not (out / "report.html").exists()


def test_a_plan_with_none_stopped_before_its_report_leaves_no_earlier_report(
        tmp_path, monkeypatch):
    # stopped after writing plan.json (no plan), the folder kept the earlier plan's
    # report.html, which showed a plan beside a plan.json that holds none
    from tiersim.cli import plan as plan_cli

    scenario = write_yaml(tmp_path / "a.yaml", tiny_doc())
    out = tmp_path / "p"
    plan_capacity(scenario, out_dir=out, report=True)
    assert (out / "report.html").exists()

    def stopped(folder, report):
        raise KeyboardInterrupt

    monkeypatch.setattr(plan_cli, "_remove_planned_run", stopped)
    with contextlib.suppress(KeyboardInterrupt):
        plan_capacity(scenario, ttft=0.001, out_dir=out, report=True)
    assert json.loads((out / "plan.json").read_text())["plan"] is None
    assert not (out / "report.html").exists()
