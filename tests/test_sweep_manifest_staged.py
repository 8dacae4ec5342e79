"""A sweep that cannot write its new manifest leaves the folder's finished sweep as it was."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import yaml

from tiersim import atomic
from tiersim.errors import TiersimError
from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner


def scenario(tmp_path: Path, values: list[int]) -> Path:
    """A synthetic-runner scenario YAML sweeping bf16's replicas over ``values``."""
    doc = {"seed": 1, "tiers": [{"name": "w4a16", "replicas": 2},
                                {"name": "bf16", "replicas": 2}],
           "sweep": {"tiers.bf16.replicas": values}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def sweep(path: Path, out: Path, report: bool = False):
    """A sweep with the synthetic runner, no validator, one worker."""
    return run_sweep(path, out, workers=1, runner=synthetic_runner, validator=None,
                     report=report)


def full_disk(fd: int) -> None:
    """``os.fsync`` on a full disk."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_at_the_manifest_keeps_the_old_table_report_and_manifest(tmp_path,
                                                                             monkeypatch):
    """Before, the old sweep.parquet and report.html were removed first, then writing the new
    scenario.yaml failed: the folder lost its table and report and gained nothing."""
    out = tmp_path / "out"
    sweep(scenario(tmp_path, [1, 2, 3]), out)
    (out / "report.html").write_text("<p>3 points</p>")
    before = {name: (out / name).read_bytes()
              for name in ("sweep.parquet", "report.html", "sweep.json", "scenario.yaml")}
    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(TiersimError) as info:
        sweep(scenario(tmp_path, [1, 2]), out)
    assert str(info.value) == (f"{out / 'scenario.yaml'}: cannot write (No space left on "
                               f"device); check that {out} is writable and has free space, "
                               "then rerun to resume")
    assert {name: (out / name).read_bytes() for name in before} == before
    assert not list(out.glob(".*.tmp"))


def test_a_changed_grid_still_replaces_the_manifest_and_drops_the_stale_table(tmp_path):
    """With room to write, the new grid's manifest is in place and the old table is gone
    before any point runs, as before."""
    out = tmp_path / "out"
    sweep(scenario(tmp_path, [1, 2, 3]), out)
    table = sweep(scenario(tmp_path, [3, 2]), out)
    assert table["tiers.bf16.replicas"].tolist() == [3, 2]
    assert yaml.safe_load((out / "scenario.yaml").read_text())["sweep"] == {
        "tiers.bf16.replicas": [3, 2]}
    assert not list(out.glob(".*.tmp"))
