"""A scenario's trace window or path that the trace refuses names the scenario file, its line
and the key (trace.window, trace.path), as every other scenario key does; the window's ends are
printed with every digit given (1e9 and 1e9 + 10 printed alike as 1e+09)."""

from __future__ import annotations

from conftest import TINY
from test_hostile_inputs import one_error_line, run_cli


def edited(tmp_path, old: str, new: str):
    """The tiny scenario with one text edit, and the line of the edit."""
    text = TINY.read_text()
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new, 1))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if new in t)
    return path, line


def test_a_window_past_the_trace_names_the_key_and_its_ends(tmp_path, capsys):
    path, line = edited(tmp_path, "window: [240, 360]", "window: [1e9, 1000000010]")
    out = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o"))
    assert out.startswith(f"Error: {path}: line {line}: trace.window: ")
    assert out.endswith("azure2023_code.parquet: window [1000000000, 1000000010) s selects no "
                        "requests: the trace spans 0 to 3,435.9 s; choose a window inside "
                        "0 - 3,435.9 s")  # round 50: span as `trace inspect` prints it, and the fix


def test_a_missing_trace_names_the_key(tmp_path, capsys):
    path, line = edited(tmp_path, "path: azure2023_code.parquet", "path: nope.parquet")
    out = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o"))
    assert out.startswith(f"Error: {path}: line {line}: trace.path: nope.parquet: trace file "
                          f"not found in {tmp_path} and the bundled traces/; bundled traces: ")
