"""Round 28, hostile scenarios, sweeps, command lines and output folders (helper fzs): each
test names what the command did before its fix."""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import REPO, TINY, axis_line
from test_hostile_inputs import one_error_line, run_cli

BUNDLED_TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def tiny_sweep(tmp_path, sweep: dict):
    """tiny.yaml copied to ``tmp_path`` (its trace resolves from the bundled traces) with
    ``sweep`` as its sweep map."""
    path = tmp_path / "tiny.yaml"
    shutil.copy(TINY, path)
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = sweep
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("sweep", [{"limits.max_replicas": [4, 2000]},
                                   {"limits": [{"max_replicas": 4}, {"max_replicas": 8}]}])
def test_a_limits_axis_under_no_baselines_is_refused(tmp_path, capsys, sweep):
    """``limits.max_replicas`` caps only the simulated baselines' sizing, which --no-baselines
    skips: the sweep ran every point the same under different labels, without a word (as
    ``limits.gpus_per_replica`` once did)."""
    path = tiny_sweep(tmp_path, sweep)
    out = tmp_path / "o"
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", out, "--no-baselines",
                                   "--no-report"))
    axis = next(iter(sweep))
    assert line == (f"Error: {path}: line {axis_line(path, axis)}: sweep: {axis!r}: is read "
                    "only when the simulated baselines are sized, and --no-baselines estimates "
                    "them instead, so every point would run the same; drop --no-baselines, or "
                    "the axis")
    assert not out.exists()


@pytest.mark.parametrize(("window", "typed"), [(["5", "1"], "5 1"), (["-5", "-1"], "-5 -1"),
                                               (["3", "3"], "3 3")])
def test_trace_inspect_window_out_of_order_names_the_option(capsys, window, typed):
    """It named the trace file, as if the file were at fault ("azure2023_code.parquet: window
    must satisfy 0 <= start_s < end_s, got (5, 1)"), and not --window."""
    line = one_error_line(*run_cli(capsys, "trace", "inspect", BUNDLED_TRACE, "--window",
                                   *window))
    assert line == (f"Error: --window: START must be >= 0 and below END (got {typed}); give "
                    "the window's start and end in seconds of the trace")
