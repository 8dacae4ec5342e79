"""Round 33, hostile input (helper fuzz6): what the terminal-size variables, hand-edited run
folders ... hold."""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO, copy_folder, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.cli import main
from tiersim.results import RunResult


@pytest.mark.parametrize("name", ["COLUMNS", "LINES"])
def test_a_terminal_size_of_superscript_digits_is_no_traceback(capsys, monkeypatch, name):
    """``COLUMNS=² tiersim --help`` ended in "ValueError: invalid literal for int() with base
    10: '²'" (tiersim's width check), and ``LINES=² tiersim run tiny`` in the same from rich's
    Console: both take any text ``str.isdigit`` accepts for a number. Such a value is no size
    now, as a word is, and the user's setting is back afterwards."""
    from tiersim.cli import main

    monkeypatch.setenv(name, "²")
    capsys.readouterr()
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--accuracy-floor" in out
    assert os.environ[name] == "²"


@pytest.mark.parametrize("duration", [10**20, 2**64])
def test_a_hand_edited_duration_of_a_whole_number_past_64_bits_gives_a_page(
        hand_edited_run, tmp_path, capsys, duration):
    """``"duration_s": 100000000000000000000`` (a whole number, hand-edited) in summary.json
    ended ``tiersim report`` in "numpy._core._exceptions._UFuncInputCastingError: Cannot cast
    ufunc 'subtract' input 0 from dtype('O') to dtype('float64')": the summary kept it an int,
    which numpy holds as an object past 64 bits (1e20 written as a float was read). A number
    of a float field is read as a float now."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["duration_s"] = duration
    (folder / "summary.json").write_text(json.dumps(doc))
    code, err = run_cli(capsys, "report", folder)
    assert "Traceback" not in err
    assert code == 0, err[-1000:]
    assert (folder / "report.html").is_file()
    assert RunResult.read(folder / "summary.json").duration_s == float(duration)


CHOSEN = {"design": "bf16", "replicas": {"bf16": 2}, "gpus_per_replica": {"bf16": 1},
          "tiers": ["bf16"], "cost_usd": 1.0, "cost_per_hour_usd": 7.0,
          "accuracy_sources": {"basis": "expected", "source": "prior"},
          "margins": {"ttft_p99_s": {"limit": 2.0, "value": 0.5, "margin": 1.5, "met": True}},
          "one_fewer": {"bf16": {"replicas": 1, "verdict": "misses the TTFT SLO"}}}
SPLIT = {"tier": "bf16", "chosen": {"label": "1P+1D", "score": 0.5},
         "splits": [{"label": "1P+1D", "ttft_p99_s": 0.4, "tpot_p99_s": 0.02, "score": 0.5}]}
PLANNED = {"scenario": "s.yaml", "constraints": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1},
           "plan": CHOSEN, "simulations": 3, "wall_s": 0.5, "runners_up": [], "uniform": [],
           "evaluated": [], "disaggregation": SPLIT, "other_splits": []}


def _planned(**change) -> dict:
    """plan.json of a chosen one-tier plan with a prefill/decode split, changed."""
    return {**PLANNED, **change}


@pytest.mark.parametrize(("doc", "message"), [
    (_planned(plan={**CHOSEN, "accuracy_sources": "x"}),
     "plan.accuracy_sources: expected an object, got the text 'x'"),
    (_planned(plan={**CHOSEN, "accuracy_sources": {"basis": 1}}),
     "plan.accuracy_sources.basis: expected a text, got the number 1"),
    (_planned(plan={**CHOSEN, "margins": {"ttft_p99_s": None}}),
     "plan.margins.ttft_p99_s: expected an object, got null"),
    (_planned(plan={**CHOSEN, "one_fewer": {"bf16": None}}),
     "plan.one_fewer.bf16: expected an object, got null"),
    (_planned(other_splits="x"), "other_splits: expected a list, got the text 'x'"),
    (_planned(other_splits=["x"]), "other_splits[0]: expected an object, got the text 'x'"),
    (_planned(disaggregation={**SPLIT, "chosen": "1P+1D"}),
     "disaggregation.chosen: expected an object, got the text '1P+1D'"),
    (_planned(disaggregation={**SPLIT, "splits": [{**SPLIT["splits"][0], "score": "low"}]}),
     "disaggregation.splits[0].score: expected a number, got the text 'low'"),
])
def test_a_plan_json_whose_chosen_plan_or_splits_are_malformed_is_one_line(capsys, tmp_path,
                                                                           doc, message):
    """``tiersim report`` of a plan folder whose plan.json (no manifest covers it) holds text
    where the chosen plan's ``accuracy_sources``, ``other_splits``, a split's ``chosen`` or its
    score go, or a null margin or one-fewer check, ended in a traceback ("AttributeError: 'str'
    object has no attribute 'get'", "'NoneType' object has no attribute 'get'", "TypeError:
    must be real number, not str"), and a number as the accuracy's basis was drawn (exit 0) as
    "expected accuracy": the report's shape check did not look at them. Each is one line
    naming the key now."""
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps(doc))
    code, err = run_cli(capsys, "report", folder)
    assert one_error_line(code, err) == (
        f"Error: {folder / 'plan.json'}: {message}; rerun `tiersim plan` to rewrite it")


def test_a_plan_json_with_its_splits_as_a_plan_writes_them_gives_a_page(capsys, tmp_path):
    """The well-formed plan the cases above change is drawn, its split table with it (a null
    score is an infinite one, as plan.json stores it)."""
    folder = tmp_path / "pl"
    folder.mkdir()
    row = {**SPLIT["splits"][0], "score": None}
    (folder / "plan.json").write_text(json.dumps(_planned(other_splits=[
        {**SPLIT, "tier": "fp8", "splits": [row]}])))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err
    page = (folder / "report.html").read_text()
    assert "Prefill/decode split of tier bf16" in page
    assert "Prefill/decode split of tier fp8" in page


@pytest.mark.parametrize(("value", "problem"), [
    ('!!float ""', "the !!float tag cannot read an empty value; remove the tag (YAML then reads "
                   "the value as it looks), or write a value of that type"),
    ("!!int 1.5", "the !!int tag cannot read '1.5'; remove the tag (YAML then reads the value "
                  "as it looks), or write a value of that type"),
    ("&a !!int 1.5", "the !!int tag cannot read '1.5'; remove the tag (YAML then reads the "
                     "value as it looks), or write a value of that type"),
    ("2001-02-30", "'2001-02-30' is no date or time (day is out of range for month); YAML "
                   "reads it as one: quote it if it is text, or write a real date"),
    # untagged it fails the same, so "remove the tag" is no fix (round 34)
    ("!!timestamp 2001-02-30", "'2001-02-30' is no date (day is out of range for month); write "
                               "a real date, or remove the !!timestamp tag and quote the value "
                               "if it is text"),
    ("!!timestamp abc", "the !!timestamp tag cannot read 'abc'; remove the tag (YAML then reads "
                        "the value as it looks), or write a value of that type"),
])
def test_a_value_its_yaml_type_cannot_hold_names_the_tag_and_the_fix(tmp_path, capsys, value,
                                                                      problem):
    """``seed: !!float ""`` ended ``tiersim run`` in "IndexError: string index out of range"
    (PyYAML's float constructor reads the empty text's first character), and so did the same
    value on a sweep axis or in ``plan --choose``. ``seed: !!int 1.5`` read "invalid YAML:
    cannot read this value as its type (invalid literal for int() with base 10: '...", Python's
    words cut short with no fix, and ``seed: 2001-02-30`` "cannot read this value as its type
    (day is out of range for month)". Each names the tag or the date, and the fix, now."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("seed: 0", f"seed: {value}")))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == f"Error: {path}: line 4: invalid YAML: {problem}"


def test_a_tagged_value_no_yaml_type_holds_is_one_line_on_a_sweep_axis_or_choose(tmp_path,
                                                                                  capsys):
    """The sweep axis ``seed: [!!float "", 1]`` and ``--choose 'router.fractions=[!!float
    "",1]'`` ended in "IndexError: string index out of range" too."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(extra='sweep: {seed: [!!float "", 1]}\n'))
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "sw", "--no-report")
    assert one_error_line(code, err).endswith(
        "invalid YAML: the !!float tag cannot read an empty value; remove the tag (YAML then "
        "reads the value as it looks), or write a value of that type")
    code, err = run_cli(capsys, "plan", path, "--no-report", "--out", tmp_path / "pl",
                        "--choose", 'router.fractions=[!!float "",1]')
    assert one_error_line(code, err).startswith(
        "Error: --choose router.fractions: cannot read '[!!float \"\",1]' as YAML values")
    assert not (tmp_path / "sw").exists() and not (tmp_path / "pl").exists()


@pytest.mark.parametrize("column", ["cost_model", "savings.cost_model"])
def test_a_sweep_column_of_lists_that_is_no_axis_is_named(tmp_path, capsys, column):
    """The store writes every list value as JSON text; a sweep.parquet whose ``cost_model``
    column held lists ended ``tiersim report`` in "TypeError: unhashable type:
    'numpy.ndarray'", and so did ``savings.cost_model`` in a real sweep's table (grouping its
    points; in this small table it was drawn, exit 0): only the axis columns were checked for
    lists."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "sw"
    folder.mkdir()
    table = pa.table({"point_id": ["a", "b"], "status": ["ok", "ok"], "seed": [1, 2],
                      "cost_usd": [1.0, 2.0], column: [["provisioned"]] * 2})
    pq.write_table(table.replace_schema_metadata({"tiersim.sweep.axes": '["seed"]'}),
                   folder / "sweep.parquet")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'sweep.parquet'}: column {column!r} holds a list (row "
                    "0), where the sweep writes a number or text; rerun the sweep")


def test_a_load_series_column_of_empty_text_cells_is_named(hand_edited_run, tmp_path, capsys):
    """A timeseries.parquet whose ``kv_capacity`` column was typed as text with every cell
    empty passed the check of numeric columns (a column of no value passed, of any type) and
    ended ``tiersim report`` in "TypeError: operation 'rtruediv' not supported for dtype 'str'
    with dtype 'float64'"; a column of no type (all null) is still drawn."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    path = folder / "timeseries.parquet"
    table = pq.read_table(path)
    at = table.column_names.index("kv_capacity")
    for kind in (pa.null(), pa.string()):
        empty = pa.array([None] * table.num_rows, kind)
        pq.write_table(table.set_column(at, "kv_capacity", empty), path)
        code, err = run_cli(capsys, "report", folder)
        if kind == pa.null():
            assert code == 0, err
            continue
        assert one_error_line(code, err) == (
            f"Error: {path}: column 'kv_capacity' holds str values, not numbers; rerun the "
            "command that wrote it")


@pytest.mark.parametrize("tool", ["", "   "])
def test_a_profile_naming_an_empty_tool_is_read_as_naming_none(tmp_path, capsys, tool):
    """A profile whose ``provenance.tool`` was empty (or blank) ended ``tiersim run`` in
    "IndexError: list index out of range" when it named the tables' source (the tool's first
    word); it reads as a profile that names no tool now, whose tables are labelled the same."""
    profile = json.loads((REPO / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json")
                         .read_text())
    lines = {}
    for given in (tool, None):
        if given is None:
            del profile["provenance"]["tool"]
        else:
            profile["provenance"]["tool"] = given
        (tmp_path / "p.json").write_text(json.dumps(profile))
        doc = tiny_doc(profile=str(tmp_path / "p.json"))
        doc["trace"]["path"] = str(REPO / "traces" / "azure2023_code.parquet")
        path = write_yaml(tmp_path / "s.yaml", doc)
        capsys.readouterr()
        code = main(["run", str(path), "--no-baselines"])
        out, err = capsys.readouterr()
        assert code == 0, err
        lines[given] = next(line for line in out.splitlines() if "step times" in line)
    assert lines[tool] == lines[None]
