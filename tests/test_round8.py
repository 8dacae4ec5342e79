"""Round 8 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from test_hostile_inputs import TINY, one_error_line, run_cli, tiny_with

import tiersim
from tiersim.cli import main
from tiersim.sweep import axes as ax
from tiersim.sweep.run import tiersim_version


def _sweep(tmp_path: Path, sweep: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(TINY + sweep)
    return path


def test_a_sweep_that_renames_a_tier_by_its_name_runs(tmp_path, capsys):
    """The saved copy looked the renamed tier up under its old name: a traceback."""
    path = _sweep(tmp_path, "sweep:\n  tiers.w4a16.name: [x, y]\n  tiers.bf16.replicas: [1, 2]\n")
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "w", "--no-report",
                        "--no-baselines")
    assert code == 0 and "Traceback" not in err
    saved = yaml.safe_load((tmp_path / "w" / "scenario.yaml").read_text())
    assert saved["sweep"]["tiers.w4a16.name"] == ["x", "y"]


def test_one_value_of_a_list_can_be_swept_by_its_index(tmp_path, capsys):
    """It said "no item '1' in 'trace.window' (has items: 0, 1)"."""
    doc = {"trace": {"window": [240, 360]}, "router": {"fractions": [0.5, None]}}
    ax.set_path(doc, "trace.window.1", 300)
    ax.set_path(doc, "router.fractions.1", 0.5)  # an element that is null is still there
    assert doc == {"trace": {"window": [240, 300]}, "router": {"fractions": [0.5, 0.5]}}
    path = _sweep(tmp_path, "sweep:\n  trace.window.1: [300, 360]\n")
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "w", "--no-report",
                        "--no-baselines")
    assert code == 0, err


def test_analytic_notes_a_top_tier_less_accurate_than_the_cheap_one(tmp_path, capsys):
    """It printed "oracle out of reach" at a floor the cheap tier alone met (90% against 50%);
    it says the note ``tiersim run`` writes in its summary's ``analytic`` instead (it was an
    error, where the run goes on)."""
    n = 100
    trace = tmp_path / "lab.parquet"
    pd.DataFrame({"arrival_s": np.arange(n, dtype=float), "input_tokens": 10,
                  "output_tokens": 5, "correct_a": np.r_[np.ones(90), np.zeros(10)],
                  "correct_b": np.r_[np.zeros(50), np.ones(50)]}).to_parquet(trace)
    capsys.readouterr()
    code = main(["analytic", "--trace", str(trace), "--cheap", "a", "--top", "b",
                 "--dc", "1", "--c0", "1", "--floor", "0.8"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == ("a is more accurate than b (two-type delta 1, mean loss "
                                    "-0.4): the closed form assumes the top tier is the more "
                                    "accurate; not modelled")
    code, _ = run_cli(capsys, "analytic", "--trace", trace, "--cheap", "b", "--top", "a",
                      "--dc", "1", "--c0", "1")
    assert code == 0


def test_a_step_or_task_type_with_a_terminal_escape_is_refused(tmp_path, capsys):
    """``step_type`` cells were printed raw to the terminal (it turned red) and into the report;
    tier names already refused such characters."""

    steps = tmp_path / "esc.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 5], "output_tokens": [1, 2],
                  "session_id": [1, 1], "step": [0, 1],
                  "step_type": ["plan", "\x1b[31mevil\u202e"]}).to_parquet(steps)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", steps))
    assert line == (f"Error: {steps}: row 2, column 'step_type': step_type contains the control "
                    "or format character U+001B; use printable text")
    tasks = tmp_path / "tt.csv"
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 5], "output_tokens": [1, 2],
                  "task_type": ["a", "b\u200b"]}).to_csv(tasks, index=False)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", tasks))
    assert line == (f"Error: {tasks}: row 2, column 'task_type': task_type contains the control "
                    "or format character U+200B; use printable text (file line 3)")
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 5], "output_tokens": [1, 2],
                  "task_type": ["a", "b\u2029c"]}).to_parquet(steps)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", steps))
    assert line == (f"Error: {steps}: row 2, column 'task_type': task_type contains the line or "
                    "paragraph separator U+2029; use printable text")  # it broke a table's row


def test_a_negative_fraction_is_named(tmp_path, capsys):
    """[-0.5, 1.5] said "must be >= 0 and sum to 1 (got sum 1)", naming neither value."""

    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("fractions: [0.5, 0.5]", "fractions: [-0.5, 1.5]")))
    line = one_error_line(*run_cli(capsys, "run", path))
    assert line.endswith("fractions must be >= 0 and sum to 1 (got -0.5)")


def test_points_another_tiersim_version_ran_are_run_again(tmp_path, capsys):
    """A resume after an upgrade kept the old version's points beside the new one's in one
    table; points now record the version, and another version's are run again."""

    path = _sweep(tmp_path, "sweep:\n  seed: [0, 1]\n")
    out = tmp_path / "w"
    assert run_cli(capsys, "sweep", path, "--out", out, "--no-report", "--no-baselines")[0] == 0
    old = sorted((out / "points").iterdir())[0]
    record = json.loads(old.read_text())
    now = tiersim_version()  # the version and a digest of the code and packaged data
    assert record["tiersim"] == now and now.startswith(tiersim.__version__ + "+")
    record["tiersim"] = "0.0.1"
    old.write_text(json.dumps(record))
    code, err = run_cli(capsys, "sweep", path, "--out", out, "--no-report", "--no-baselines")
    assert code == 0
    assert ("note: 1 stored point(s) were run by tiersim 0.0.1; they run again with "
            f"{now}, so the table holds one version") in err
    assert json.loads(old.read_text())["tiersim"] == now
