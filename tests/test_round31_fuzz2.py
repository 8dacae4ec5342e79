"""Round 31 (helper fuzz2): hostile-input leftovers of the last fuzz round, through the CLI
(pandas metadata that pyarrow cannot apply, ...)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import cheap_first_tiers, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

import tiersim.trace.chunked

UNREADABLE_METADATA = ("its pandas metadata is unreadable; write the file again without that "
                       "metadata (pyarrow: table.replace_schema_metadata())")


def _with_pandas_metadata(path, edit) -> None:
    """A three-request canonical Parquet trace at ``path`` whose pandas metadata (a map) is
    ``edit(metadata)``."""
    frame = pd.DataFrame({"request_id": range(3), "arrival_s": [0.0, 1.0, 2.0],
                          "input_tokens": 100, "output_tokens": 10})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = edit(json.loads(table.schema.metadata[b"pandas"]))
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}), path)


def _two_column_levels(meta: dict) -> dict:
    """Two column index levels: pyarrow reads each column name with ast.literal_eval."""
    level = {"name": None, "field_name": None, "pandas_type": "unicode", "numpy_type": "object",
             "metadata": None}
    return {**meta, "column_indexes": [level, level]}


METADATA_EDITS = {
    # was: not a readable Parquet file (malformed node or string on line 1: <ast.Name object
    # at 0x7fa8a88f7040>)
    "two column levels": _two_column_levels,
    # was: not a readable Parquet file (TypeError: 'int' object is not subscriptable)
    "index column of a number": lambda meta: {**meta, "index_columns": [5]},
    # was: not a readable Parquet file ('list' object has no attribute 'get')
    "column of a list": lambda meta: {**meta, "columns": [["x"]]},
    # was: not a readable Parquet file (KeyError: 'nonexistent')
    "missing index column": lambda meta: {**meta, "index_columns": ["nonexistent"]},
    # was: a traceback (OverflowError: cannot convert float infinity to integer)
    "range from infinity": lambda meta: {**meta, "index_columns": [
        {"kind": "range", "name": "rid", "start": float("inf"), "stop": 3, "step": 1}]},
}


@pytest.mark.parametrize("edit", METADATA_EDITS.values(), ids=METADATA_EDITS.keys())
def test_pandas_metadata_that_cannot_be_applied_is_one_plain_line(tmp_path, capsys,
                                                                  monkeypatch, edit):
    """Pandas metadata that pyarrow cannot apply read as whatever its parse met (a memory
    address, Python type names) or a traceback; it is now one plain line naming the file, from
    trace inspect and from run, whole or read in chunks."""
    trace = tmp_path / "t.parquet"
    _with_pandas_metadata(trace, edit)
    expected = f"Error: {trace}: {UNREADABLE_METADATA}"
    assert one_error_line(*run_cli(capsys, "trace", "inspect", trace)) == expected
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace)}))
    assert one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == expected
    monkeypatch.setattr(tiersim.trace.chunked, "CHUNK_ROWS", 2)
    assert one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == expected


def test_pandas_metadata_that_applies_is_still_read(tmp_path, capsys):
    """The check costs nothing to a file whose metadata applies: pandas' own is read."""
    trace = tmp_path / "t.parquet"
    _with_pandas_metadata(trace, lambda meta: meta)
    code, err = run_cli(capsys, "trace", "inspect", trace)
    assert (code, err) == (0, "")


def _interrupt_with(stop: BaseException):
    """A stand-in for a step of a command that is interrupted there (raises ``stop``)."""
    def stopped(*args, **kwargs):
        raise stop
    return stopped


@pytest.mark.parametrize(("stop", "status"), [(KeyboardInterrupt(), 130), (SystemExit(143), 143)])
def test_an_interrupted_run_says_nothing_was_written(tmp_path, capsys, monkeypatch, stop,
                                                     status):
    """``tiersim run`` stopped by Ctrl-C or SIGTERM while simulating ended without a word
    (``tiersim sweep`` says what it stored); it now says that --out holds nothing of it, and a
    rerun into a run's folder leaves that run's files as they were."""
    import tiersim.runner

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "o"
    monkeypatch.setattr(tiersim.runner, "run_into", _interrupt_with(stop))
    code, err = run_cli(capsys, "run", scenario, "--out", out, "--no-baselines")
    assert (code, err) == (status, f"interrupted: nothing was written to {out}; run the same "
                                    "command again\n")
    assert not out.exists()
    monkeypatch.undo()
    assert run_cli(capsys, "run", scenario, "--out", out, "--no-baselines")[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(tiersim.runner, "run_into", _interrupt_with(stop))
    code, err = run_cli(capsys, "run", scenario, "--out", out, "--no-baselines")
    assert (code, err) == (status, f"interrupted: nothing was written to {out}; run the same "
                                    "command again\n")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_run_interrupted_after_its_files_landed_says_they_were_written(tmp_path, capsys,
                                                                         monkeypatch):
    """A signal that comes while the run's files are renamed into place waits for the last
    rename: the line then names the files written, not 'nothing'."""
    import tiersim.cli.run

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(tiers=cheap_first_tiers()))
    out = tmp_path / "o"  # (cheap first: no tier-order note on stderr, round 53)
    monkeypatch.setattr(tiersim.cli.run, "print_summary", _interrupt_with(KeyboardInterrupt()))
    code, err = run_cli(capsys, "run", scenario, "--out", out, "--no-baselines")
    assert (code, err) == (130, f"interrupted after this run's files were written to {out} "
                                "(manifest.json, report.html, requests.parquet and 3 more)\n")


def test_a_run_without_out_says_it_wrote_nothing(tmp_path, capsys, monkeypatch):
    """Without --out the line says the run writes no files."""
    import tiersim.runner

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc())
    monkeypatch.setattr(tiersim.runner, "run_into", _interrupt_with(SystemExit(143)))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert (code, err) == (143, "interrupted: this run wrote no files (no --out was given)\n")


def test_an_interrupted_plan_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    """``tiersim plan`` stopped while planning ended without a word, as run did."""
    import tiersim.cli.plan

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "p"
    monkeypatch.setattr(tiersim.cli.plan, "_plan", _interrupt_with(KeyboardInterrupt()))
    code, err = run_cli(capsys, "plan", scenario, "--out", out)
    assert (code, err) == (130, f"interrupted: nothing was written to {out}; run the same "
                                "command again\n")
    assert not out.exists()


def _link_loop(folder, name: str) -> None:
    """``folder/name`` and ``folder/name.other``: two links that lead to each other."""
    (folder / name).symlink_to(f"{name}.other")
    (folder / f"{name}.other").symlink_to(name)


@pytest.mark.parametrize("given", ["absolute", "beside the scenario"])
def test_a_profile_link_that_loops_says_so_as_a_models_does(tmp_path, capsys, given):
    """A profile given as a link loop read 'no such profile file or bundled profile' (and, given
    beside the scenario, where a relative path is looked for), where a model's says 'a link that
    leads to no file (or the links loop)'; the profile's now says that too."""
    _link_loop(tmp_path, "p.json")
    _link_loop(tmp_path, "m.json")
    name = str(tmp_path / "p.json") if given == "absolute" else "p.json"
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(profile=name))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 5: profile: {tmp_path / 'p.json'}: a link that "
                    "leads to no file (or the links loop); point it at a profile JSON file")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(model=str(tmp_path / "m.json")))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 3: model: {tmp_path / 'm.json'}: a link that "
                    "leads to no file (or the links loop); point it at a config.json")


def test_a_profile_link_to_a_missing_file_says_so(tmp_path, capsys):
    """A link whose target is gone reads as the loop does (both: no file at its end)."""
    (tmp_path / "p.json").symlink_to(tmp_path / "gone.json")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(profile=str(tmp_path / "p.json")))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 5: profile: {tmp_path / 'p.json'}: a link that "
                    "leads to no file (or the links loop); point it at a profile JSON file")


def _burstgpt_log(path, models: list) -> None:
    """A BurstGPT CSV log at ``path`` of one served request a second, a row per ``models``
    cell (None: an empty cell)."""
    rows = [f"{i},{model or ''},100,10,110,Conversation log" for i, model in enumerate(models)]
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                    + "\n".join(rows) + "\n")


def _run_notes(capsys, tmp_path, trace, **trace_keys) -> list[str]:
    """The notes on stderr of a run of a tiny scenario over ``trace`` (its tiers cheapest
    first: no tier-order note, round 53)."""
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace),
                                                               **trace_keys},
                                                        tiers=cheap_first_tiers()))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    return [line for line in err.splitlines() if line.startswith("note: ")]


@pytest.mark.parametrize("window", [None, [0, 3.5]], ids=["whole", "windowed"])
def test_a_burstgpt_model_column_blank_in_every_row_is_noted(tmp_path, capsys, window):
    """A Model column blank in some rows is noted as a mix with '(blank)' among its models, but
    one blank in every row was read without a word (as if it named one model); it now says it
    names no model, by the whole read and the chunked windowed one alike."""
    trace = tmp_path / "b.csv"
    keys = {} if window is None else {"window": window}
    where = "" if window is None else " in the window's requests"
    _burstgpt_log(trace, [None] * 4)
    assert _run_notes(capsys, tmp_path, trace, **keys) == [
        f"note: {trace}: its Model column names no model{where} (every cell is blank); the "
        "requests are served by the scenario's model"]
    _burstgpt_log(trace, [None, "ChatGPT", None, "ChatGPT"])
    assert _run_notes(capsys, tmp_path, trace, **keys) == [
        f"note: {trace}: its Model column names 2 models ((blank) 50%, ChatGPT 50%){where}; "
        "their requests are served as one stream by the scenario's model (filter the rows to "
        "study one)"]
    _burstgpt_log(trace, ["ChatGPT"] * 4)
    assert _run_notes(capsys, tmp_path, trace, **keys) == []


def test_a_model_link_that_loops_beside_the_scenario_says_so(tmp_path, capsys):
    """A relative model config path that is a link loop beside the scenario read 'cannot read
    a model config (No such file or directory)' and where a relative path is looked for; it is
    now found there and refused as the link it is, as a profile's is."""
    _link_loop(tmp_path, "m.json")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(model="m.json"))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 3: model: {tmp_path / 'm.json'}: a link that "
                    "leads to no file (or the links loop); point it at a config.json")


def test_a_run_whose_stderr_is_gone_when_interrupted_keeps_the_signals_status(
        tmp_path, capsys, monkeypatch):
    """A run stopped by SIGHUP (its terminal gone) cannot write the interrupted line: the write's
    error must not replace status 129 (128 + SIGHUP)."""
    import tiersim.cli.interrupted
    import tiersim.runner

    def gone(*args, **kwargs):
        raise OSError(5, "Input/output error")

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc())
    monkeypatch.setattr(tiersim.runner, "run_into", _interrupt_with(SystemExit(129)))
    # round 54: the interrupted line is written by tiersim.cli.interrupted (a light module, so
    # that a stop while a command loads is said too)
    monkeypatch.setattr(tiersim.cli.interrupted, "echo", gone)
    assert run_cli(capsys, "run", scenario, "--out", tmp_path / "o", "--no-baselines") == (
        129, "")
