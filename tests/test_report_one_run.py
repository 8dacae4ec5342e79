"""``tiersim report`` on a run folder without manifest.json: files that describe different runs
(a summary.json copied in from another run) are refused, and the page is noted as unchecked."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli


def _summary_edit(folder, key, value):
    """Set ``key`` of the folder's summary.json to ``value``."""
    doc = json.loads((folder / "summary.json").read_text())
    doc[key] = value
    (folder / "summary.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(("key", "value", "file", "what", "theirs"), [
    ("scenario", "response_cache", "scenario.yaml", "scenario", "'tiny'"),
    ("seed", 7, "scenario.yaml", "seed", "0"),
    ("requests", 9, "requests.parquet", "requests", None),
])
def test_report_refuses_a_summary_of_another_run(hand_edited_run, tmp_path, capsys, key, value,
                                                 file, what, theirs):
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    _summary_edit(folder, key, value)
    if theirs is None:
        theirs = str(len(pd.read_parquet(folder / "requests.parquet")))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder}: summary.json and {file} describe different runs ({what} "
                    f"{value!r} in summary.json, {theirs} in {file}) and there is no "
                    f"manifest.json to tell which is right; rerun `tiersim run --out {folder}` "
                    "to write one run's files")


def test_report_notes_a_folder_no_manifest_checked(hand_edited_run, tmp_path, capsys):
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    code, err = run_cli(capsys, "report", folder)
    assert code == 0
    # round 48 checks the GPU, SLOs and each tier's precision and replicas too, and round 49
    # its prices (a summary recording them), and round 49 (left49b) its cost model: the note
    # says so
    assert err == (f"note: {folder}: no manifest.json, so only the scenario name, seed, GPU, "
                   "SLOs, cost model, tiers (their precision, replicas and prices) and request "
                   "count show "
                   "that its "
                   "files come from one run; rerun `tiersim run` into it for a checked folder\n")
