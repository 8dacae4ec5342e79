"""A scenario's file paths that name no file (blank, a folder) are refused at their key, with
the scenario file's name and line and what to give instead, for run and sweep alike."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

TRACE_FIX = "give the trace file's path (from the scenario's folder) or a bundled trace's name"


@pytest.mark.parametrize("path", ['""', '" "', "'\t'"])
def test_a_blank_trace_path_is_named_at_its_key(tmp_path, capsys, path):
    """It said `Error:  : trace.path is empty; give the trace file` (no file, no line)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", f"path: {path}")))
    line = one_error_line(*run_cli(capsys, "run", scenario))
    assert line == f"Error: {scenario}: line 10: trace.path: is empty; {TRACE_FIX}"


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_trace_path_naming_a_folder_is_named_at_its_key(tmp_path, capsys, command):
    """It said `Error: .: is a folder; give the trace file in it` (no scenario, no key)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", "path: .")))
    out = tmp_path / "out"
    line = one_error_line(*run_cli(capsys, command, scenario, "--out", out, "--no-report"))
    assert line == (f"Error: {scenario}: line 10: trace.path: '.' is a folder; give the trace "
                    "file in it (a relative path starts at the scenario's folder)")
    assert not out.exists()


def test_a_trace_path_naming_an_absolute_folder_says_no_more(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", f"path: {tmp_path}")))
    line = one_error_line(*run_cli(capsys, "run", scenario))
    assert line == (f"Error: {scenario}: line 10: trace.path: '{tmp_path}' is a folder; give "
                    "the trace file in it")


@pytest.mark.parametrize("profile", ['""', '"  "'])
def test_a_blank_profile_is_named_as_empty(tmp_path, capsys, profile):
    """It said `profile: : not a regular file (a folder, device or pipe)`: "" read as `.`."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("profile: null", f"profile: {profile}")))
    line = one_error_line(*run_cli(capsys, "run", scenario))
    assert line == (f"Error: {scenario}: line 7: profile: is empty; give a profile JSON file or "
                    "a bundled profile's name, or null for the roofline")
