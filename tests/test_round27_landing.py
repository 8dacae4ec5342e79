"""Round 27: a rerun whose renaming into its folder is refused midway keeps the rest of its
files for the next command, as a kill among the renames does. Before, the rest was deleted:
the folder held half the new run and half the earlier one, and the new run's other files were
lost."""

from __future__ import annotations

import errno
import json
import os

from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

import tiersim.outputs as outputs


def _refuse_second_rename(monkeypatch, out):
    """Make the second rename of a ready set into ``out`` fail as a file the user may not
    replace does (EPERM)."""
    real, calls = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if outputs.READY_SUFFIX in str(src) and os.path.dirname(dst) == str(out):
            calls.append(dst)
            if len(calls) == 2:
                raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(outputs.os, "replace", replace)


def test_a_rename_refused_midway_keeps_the_rest_for_the_next_command(tmp_path, monkeypatch,
                                                                     capsys):
    out = tmp_path / "out"
    first = write_yaml(tmp_path / "a.yaml", tiny_doc(seed=1))
    second = write_yaml(tmp_path / "b.yaml", tiny_doc(seed=2))
    code, err = run_cli(capsys, "run", first, "--out", out, "--no-report", "--no-baselines")
    assert code == 0, err
    with monkeypatch.context() as patch:
        _refuse_second_rename(patch, out)
        code, err = run_cli(capsys, "run", second, "--out", out, "--no-report",
                            "--no-baselines")
    assert code == 1
    assert "the rest of this run's files wait in .tiersim-run-" in err
    assert "and are moved in by the next tiersim command on this folder" in err
    assert len(outputs.killed_sets(out)) == 1
    code, err = run_cli(capsys, "report", out)  # takes the folder's lock: finishes the set
    assert code == 0, err
    assert outputs.killed_sets(out) == []
    assert json.loads((out / "summary.json").read_text())["seed"] == 2
    assert "seed: 2" in (out / "scenario.yaml").read_text()


def test_a_rename_refused_first_leaves_the_earlier_run_whole(tmp_path, monkeypatch, capsys):
    """Nothing moved yet: the set goes and the earlier run stays as it was."""
    out = tmp_path / "out"
    first = write_yaml(tmp_path / "a.yaml", tiny_doc(seed=1))
    code, err = run_cli(capsys, "run", first, "--out", out, "--no-report", "--no-baselines")
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with monkeypatch.context() as patch:
        real = os.replace

        def refuse(src, dst, *args, **kwargs):
            if outputs.READY_SUFFIX in str(src):
                raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
            return real(src, dst, *args, **kwargs)

        patch.setattr(outputs.os, "replace", refuse)
        code, err = run_cli(capsys, "run", write_yaml(tmp_path / "b.yaml", tiny_doc(seed=2)),
                            "--out", out, "--no-report", "--no-baselines")
    assert code == 1
    assert "wait in" not in err
    assert outputs.killed_sets(out) == []
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != ".lock"} == \
        {k: v for k, v in before.items() if k != ".lock"}
