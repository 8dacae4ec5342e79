"""``tiersim report`` on a run folder whose summary.json was edited by hand (no manifest.json
to refuse the edit): every figure the page shows must be one tiersim could have written, or the
command says in one line what is wrong with the file."""

from __future__ import annotations

import json

from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli


def _edited(run, folder, text: str):
    """A copy of ``run`` at ``folder`` whose summary.json holds ``text``."""
    copy_folder(run, folder)
    (folder / "summary.json").write_text(text)
    return folder


def test_a_key_written_twice_in_summary_json_is_refused(hand_edited_run, tmp_path, capsys):
    """The second "cost_usd" silently replaced the first on the page."""
    text = (hand_edited_run / "summary.json").read_text()
    text = text.replace('"cost_model":', '"cost_usd": 99.0,\n  "cost_model":', 1)
    folder = _edited(hand_edited_run, tmp_path / "r", text)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: key 'cost_usd' appears twice in one "
                    "object; keep one (which was meant cannot be known); rerun `tiersim run` to "
                    "rewrite it")


def test_a_summary_nested_too_deeply_is_one_line(hand_edited_run, tmp_path, capsys):
    """A RecursionError traceback from the JSON parser."""
    folder = _edited(hand_edited_run, tmp_path / "r", "[" * 100_000 + "]" * 100_000)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: JSON nested too deeply to be a run "
                    "summary; rerun `tiersim run` to rewrite it")


def test_summary_json_that_is_not_json_names_its_line(hand_edited_run, tmp_path, capsys):
    folder = _edited(hand_edited_run, tmp_path / "r", '{\n"requests": }')
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: line 2: not valid JSON (Expecting "
                    "value); rerun `tiersim run` to rewrite it")
    assert json.loads((hand_edited_run / "summary.json").read_text())["requests"] > 0
