"""Paths that start with ``~``: ``~user`` naming no user is the file's own one-line error (a
trace, a profile; in a sweep, a point's error, not a worker that died), and ``~/folder`` names
a model config folder under the home directory as it does everywhere else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_hostile_inputs import TINY, one_error_line, run_cli, tiny_with

from tiersim.hardware import get_model

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "benchmarks" / "data" / "configs"


def test_a_trace_under_a_user_that_does_not_exist_names_the_scenario_key(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", "path: ~nosuchuser9/t.parquet")))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "o"))
    assert line == (f"Error: {scenario}: line 10: trace.path: ~nosuchuser9/t.parquet: trace file "
                    "not found (a path starts with ~ and a user that does not exist); write the "
                    "path in full")


def test_a_profile_under_a_user_that_does_not_exist_names_it(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("profile: null", "profile: ~nosuchuser9/p.json"))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "o"))
    assert line.startswith(f"Error: {scenario}: line 7: profile: ~nosuchuser9/p.json: no such "
                           "profile file or bundled profile")


def test_a_swept_trace_under_no_user_is_a_point_error_not_a_dead_worker(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + "sweep:\n  trace.path: [azure2023_code.parquet, "
                        "~nosuchuser9/t.parquet]\n")
    code, err = run_cli(capsys, "sweep", scenario, "--out", tmp_path / "w", "--no-report",
                        "--workers", "2")
    assert code == 1 and "Traceback" not in err
    assert "worker process died" not in err
    assert "~nosuchuser9/t.parquet: trace file not found (a path starts with ~" in err


def test_a_model_folder_under_home_loads(tmp_path, monkeypatch):
    folder = next(p for p in sorted(CONFIG.iterdir()) if (p / "config.json").is_file())
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(folder, tmp_path / "m")
    arch = get_model("~/m")
    assert arch == get_model(str(tmp_path / "m"))
    assert json.loads((tmp_path / "m" / "config.json").read_text())  # a real config was read
