"""Round 24: a Ray sweep joins Ray only when a point is left to run."""

from __future__ import annotations

import sys

import pandas as pd
from test_round19 import run_cli
from test_round24_raysweep import _scenario

from tiersim.sweep import executors


def test_a_finished_sweep_reruns_under_ray_without_ray(tmp_path, capsys, monkeypatch):
    """Rerunning a finished sweep with ``--executor ray`` started (or joined) Ray, 10-18 s,
    although no point was left to run, and without Ray installed it failed with
    ``--executor ray needs Ray``. It rewrites the table and report as the in-process rerun
    does now, with the same lines, and never imports Ray."""
    scenario, out = _scenario(tmp_path), tmp_path / "o"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1")
    assert code == 0, err
    code, local = run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1")
    assert code == 0, local
    table = pd.read_parquet(out / "sweep.parquet")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails: Ray not installed
    joined, real = [], executors._ray
    monkeypatch.setattr(executors, "_ray", lambda: joined.append(1) or real())
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "--executor", "ray")
    assert code == 0, err
    assert not joined
    assert err == local and "2 already done" in err
    pd.testing.assert_frame_equal(pd.read_parquet(out / "sweep.parquet"), table)
    assert (out / "report.html").is_file()


def test_a_dead_address_is_refused_even_with_nothing_left_to_run(tmp_path, capsys):
    """The address named is checked (a socket probe, no Ray) whether or not a point is left,
    so a typo is refused the same way every time; the finished folder is left as it was."""
    scenario, out = _scenario(tmp_path), tmp_path / "o"
    assert run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1")[0] == 0
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "--executor", "ray",
                        "--address", "127.0.0.1:1")
    assert code == 1 and err.startswith("Error: --address '127.0.0.1:1': nothing answers there")
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == before
