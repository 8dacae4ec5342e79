"""``tiersim report`` on a run folder whose summary.json was edited by hand (no manifest.json
to refuse the edit): every figure the page shows must be one tiersim could have written, or the
command says in one line what is wrong with the file."""

from __future__ import annotations

import json

import pytest
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


# NaN and Infinity as the file writes them since round 53 (they were Python's nan and inf)
@pytest.mark.parametrize(("key", "text", "problem"), [
    ("cost_usd", "NaN", "'run.cost_usd' is NaN, a number tiersim never writes: a missing figure "
                        "is null"),  # was shown as "-", a missing figure
    ("ttft_p99_s", "Infinity", "'run.ttft_p99_s' is Infinity, a number tiersim never writes: a "
                               "missing figure is null"),
    # as written (round 49: read as infinite, it was named "inf", which the file does not hold)
    ("slo_attainment", "1e400", "'run.slo_attainment' is 1e400, a number tiersim never writes: "
                                "a missing figure is null"),
    ("duration_s", "-1", "'run.duration_s' must be >= 0, got -1"),  # "simulated duration -1 s"
    ("accuracy", "7.5", "'run.accuracy' must be a fraction between 0 and 1, got 7.5"),
])
def test_a_number_no_run_writes_is_refused(hand_edited_run, tmp_path, capsys, key, text,
                                           problem):
    doc = json.loads((hand_edited_run / "summary.json").read_text())
    doc[key] = "@@"
    folder = _edited(hand_edited_run, tmp_path / "r", json.dumps(doc).replace('"@@"', text))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def test_a_nested_non_finite_number_is_named_by_its_path(hand_edited_run, tmp_path, capsys):
    doc = json.loads((hand_edited_run / "summary.json").read_text())
    doc["router"]["accuracy_ci95"][1] = float("-inf")
    doc["tiers"]["bf16"]["tpot_p99_s"] = -0.5
    folder = _edited(hand_edited_run, tmp_path / "r", json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert "('router.accuracy_ci95[1]' is -Infinity, a number tiersim never writes" in line
    doc["router"]["accuracy_ci95"][1] = 1.0
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert "('tiers.bf16.tpot_p99_s' must be >= 0, got -0.5)" in line


def test_a_saving_may_be_negative(hand_edited_run, tmp_path, capsys):
    """A loss is a negative saving: the page shows it."""
    from tiersim.report.load import load_dir

    doc = json.loads((hand_edited_run / "summary.json").read_text())
    doc["savings"]["vs_uniform_frac"], doc["savings"]["vs_uniform_usd"] = -0.5, -0.01
    folder = _edited(hand_edited_run, tmp_path / "r", json.dumps(doc))
    assert load_dir(folder).run.savings.vs_uniform_frac == -0.5


@pytest.mark.parametrize(("column", "value", "problem"), [
    ("cost_usd", float("inf"), "holds inf (row 1): a number the sweep never writes"),
    ("accuracy", -3.0, "holds -3 (row 1): must be a fraction between 0 and 1"),
    ("ttft_p99_s", -0.2, "holds -0.2 (row 1): must be >= 0"),
])
def test_a_sweep_number_no_point_writes_is_refused(tmp_path, capsys, column, value, problem):
    """They were drawn: an infinite cost, a negative accuracy."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "sw"
    folder.mkdir()
    values = [0.5, value]
    table = pa.table({"point_id": ["a", "b"], "status": ["ok", "ok"], "seed": [1, 2],
                      "cost_usd": [1.0, 2.0], "accuracy": [0.9, 0.8], "ttft_p99_s": [0.1, 0.2],
                      column: values})
    pq.write_table(table.replace_schema_metadata({"tiersim.sweep.axes": '["seed"]'}),
                   folder / "sweep.parquet")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'sweep.parquet'}: column {column!r} {problem}; rerun the "
                    "sweep")
