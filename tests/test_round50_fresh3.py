"""Round 50, a new user's trial: three lines that read differently from the rest of the tool."""

from __future__ import annotations

import pandas as pd
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main


def _trace(tmp_path, times: list[float]):
    """A canonical trace with one request at each of ``times`` (seconds)."""
    path = tmp_path / "t.parquet"
    pd.DataFrame({"arrival_s": times, "input_tokens": 10, "output_tokens": 5}).to_parquet(path)
    return path


def test_a_window_past_the_trace_gives_the_span_as_inspect_prints_it_and_the_fix(tmp_path,
                                                                                  capsys):
    """The line read "... selects no requests; the trace spans 0 to 3501.721937 s": every digit
    of the last arrival and no fix. The span is now written as `trace inspect` prints it."""
    path = _trace(tmp_path, [0.0, 1.5, 3501.721937])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "4000", "5000"))
    assert line == (f"Error: {path}: window [4000, 5000) s selects no requests: the trace spans "
                    "0 to 3,501.7 s; choose a window inside 0 - 3,501.7 s")


def test_a_span_that_would_round_past_the_window_start_is_written_exactly(tmp_path, capsys):
    """3,501.8 s would seem to hold a window starting at 3501.77 s: the exact end is given."""
    path = _trace(tmp_path, [0.0, 3501.76])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "3501.77",
                                   "3600"))
    assert line == (f"Error: {path}: window [3501.77, 3600) s selects no requests: the trace "
                    "spans 0 to 3501.76 s; choose a window inside 0 - 3501.76 s")


def test_a_window_in_a_gap_names_the_gap(tmp_path, capsys):
    """A window inside the trace that falls between two requests names them and the fix."""
    path = _trace(tmp_path, [0.0, 100.0, 2000.0])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "200", "300"))
    assert line == (f"Error: {path}: window [200, 300) s selects no requests: the trace spans "
                    "0 to 2,000.0 s, with no request from 100 to 2000 s; choose a window that "
                    "holds one")


def test_plan_reason_words_a_missed_floor_alike_for_uniform_and_routed_designs(tmp_path,
                                                                                  capsys):
    """The "no fleet" line read "w4a16: accuracy 93.36% vs limit 99.00%" for a uniform design
    and "w4a16+bf16: accuracy 95.00% < floor 99.00%" for a routed one: one wording now.
    (Figures: tiny.yaml's first minute, roofline, the precision priors.)"""
    import yaml
    from conftest import TINY

    doc = yaml.safe_load(TINY.read_text())
    doc["trace"]["window"] = [240, 300]
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code = main(["plan", str(path), "--accuracy-floor", "0.99", "--out", str(tmp_path / "p"),
                 "--max-replicas", "2", "--gpus-per-replica", "1", "--no-report"])
    out = capsys.readouterr().out
    assert code == 1
    assert ("w4a16: accuracy 93.36% < floor 99.00%; bf16: accuracy 95.00% < floor 99.00%; "
            "w4a16+bf16: accuracy 95.00% < floor 99.00%; every design misses") in out
    assert "vs limit" not in out
