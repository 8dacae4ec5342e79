"""Round 34, hostile input (helper fuzz7): a profile beside the scenario that is no file, YAML
syntax errors that named no fix or the wrong line."""

from __future__ import annotations

import os

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli


@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_a_profile_beside_the_scenario_that_is_no_file_is_named_so(tmp_path, capsys, kind):
    """``profile: pdir`` where pdir is a folder (or a named pipe) beside the scenario read
    'profile: pdir: no such profile file or bundled profile; bundled: ...', though it is there:
    only a file beside the scenario was taken as found there. It is now refused as what it is,
    as the same path given in full and a model config beside the scenario are."""
    if kind == "folder":
        (tmp_path / "pdir").mkdir()
    else:
        os.mkfifo(tmp_path / "pdir")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(profile="pdir"))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 5: profile: {tmp_path / 'pdir'}: not a regular "
                    "file (a folder, device or pipe); give a profile JSON file or a bundled "
                    "profile's name")
