"""Round 28 (helper fzt): hostile trace files through ``tiersim trace inspect`` and ``run``.

Each test drives the command line as a user would and asserts one ``Error:`` line naming the
file, the place and the fix (:func:`test_hostile_inputs.one_error_line`), or the right result.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.errors import TraceError
from tiersim.trace import read_trace

BURSTGPT_ROW = {"Timestamp": 0, "Model": "ChatGPT", "Request tokens": 5, "Response tokens": 3,
                "Total tokens": 8, "Log Type": "Conversation log"}


def _burstgpt_rows(model, rows: int = 3) -> list[dict]:
    """BurstGPT rows one second apart whose ``Model`` cell is ``model``."""
    return [{**BURSTGPT_ROW, "Timestamp": i, "Model": model} for i in range(rows)]


@pytest.mark.parametrize("model,got", [([1], "a list of 1 item"),
                                       ({"name": "x"}, "an object of 1 key")])
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_burstgpt_model_cell_holding_a_list_or_object_is_one_line(tmp_path, capsys, model, got,
                                                                   suffix):
    """Such a cell gave a traceback (TypeError: unhashable type) from the model-mix note."""
    path = tmp_path / f"b.{suffix}"
    if suffix == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in _burstgpt_rows(model)))
    else:
        pq.write_table(pa.Table.from_pylist(_burstgpt_rows(model)), path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert str(path) in line and "row 1, column 'Model'" in line and got in line
    assert "one number or text per row" in line


@pytest.mark.parametrize("cell,got", [([], "a list of 0 items"), ([1], "a list of 1 item")])
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_an_azure_timestamp_holding_a_list_is_one_line_saying_so(tmp_path, capsys, cell, got,
                                                                suffix):
    """An empty list gave a traceback (the truth value of an empty array is ambiguous); a list
    of one item was described as text ("text of 3 characters", its printed form)."""
    rows = [{"TIMESTAMP": cell, "ContextTokens": 5, "GeneratedTokens": 3}] * 2
    path = tmp_path / f"a.{suffix}"
    if suffix == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert str(path) in line and "row 1, column 'TIMESTAMP'" in line
    assert f"cannot parse timestamp (got {got})" in line and "one date-time a row" in line


@pytest.mark.parametrize("column,label", [("input_tokens", "token count"),
                                          ("arrival_s", "arrival time in seconds")])
def test_a_whole_number_of_5000_digits_in_a_csv_is_named_as_a_number(tmp_path, capsys, column,
                                                                     label):
    """pandas reads no whole number of more than 4,300 digits (Python's limit), so such a cell
    was refused as "not a number (got text of 5,000 characters); write a number"."""
    cells = {"arrival_s": "1", "input_tokens": "5", "output_tokens": "3", column: "9" * 5000}
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,5,3\n" + ",".join(cells.values())
                    + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert str(path) in line and f"row 2, column '{column}'" in line and "(file line 3)" in line
    assert f"{label} is beyond the range of numbers (got 999999999999... (5,000 digits))" in line


@pytest.mark.parametrize("cell", ["\u0665", "\uff15", "\u0660\u0665"])
def test_digits_of_another_script_stay_no_number(tmp_path, capsys, cell):
    """Python's float reads Arabic-Indic or full-width digits; pandas does not, and a trace
    cell of them stays refused (not read as 5)."""
    path = tmp_path / "t.csv"
    path.write_text(f"arrival_s,input_tokens,output_tokens\n0,5,3\n1,{cell},3\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    # round 55 (fuzz22): the line says what the digits are and the number to write in 0-9
    assert ("row 2, column 'input_tokens': token count is written in digits other than 0-9 "
            "(full-width, or another script's), which tiersim does not read (got text of "
            f"{len(cell)} character{'s' if len(cell) > 1 else ''}); write "
            f"{'05' if len(cell) > 1 else '5'}") in line
def _arrow_out_of_memory(*_args, **_kwargs):
    """What pyarrow raises when a column does not fit in the memory the process may use: a
    60 KB Parquet trace of 20,000 rows whose dictionary-encoded text column holds one
    100,000-character value decodes to 2 GB (under ``ulimit -v 6000000``: this message)."""
    raise pa.ArrowMemoryError("realloc of size 3277848576 failed")


@pytest.mark.parametrize("columns,reader", [
    ({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5], "output_tokens": [3, 3]},
     "_parquet_batches"),
    ({"TIMESTAMP": ["2024-01-01 00:00:00", "2024-01-01 00:00:01"], "ContextTokens": [5, 5],
      "GeneratedTokens": [3, 3]}, "read_table")])
def test_a_parquet_trace_out_of_memory_is_not_called_unreadable(tmp_path, capsys, monkeypatch,
                                                                columns, reader):
    """pyarrow's ArrowMemoryError (a MemoryError) was caught as the file's damage: "not a
    readable Parquet file (realloc of size 3277848576 failed)", sending the user to a file
    that is whole; now the loader's out-of-memory line with its fix."""
    import tiersim.trace.read_parquet as source

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(columns), path)
    if reader == "read_table":  # the whole read decodes the file once, with pq.read_table
        monkeypatch.setattr(source.pq, "read_table", _arrow_out_of_memory)
    else:
        monkeypatch.setattr(source, reader, _arrow_out_of_memory)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: reading this trace ran out of memory (realloc of size "
                    "3277848576 failed); read it where the process may use more memory (ulimit "
                    "-v, a container's limit), or cut it to the rows you need")


@pytest.mark.parametrize("column", ["task_type", "step_type", "prompt_hash", "subject"])
def test_a_parquet_label_of_bytes_that_are_not_utf8_is_one_line(tmp_path, capsys, column):
    """A Parquet binary column read as a label or key (task_type, step_type, prompt_hash; the
    classifier's subject, in a run) whose bytes are not UTF-8 gave a traceback,
    UnicodeDecodeError, from pandas' text conversion; bytes that are UTF-8 stay read as text."""
    base = {"arrival_s": [0.0, 1.0], "input_tokens": [5, 5], "output_tokens": [3, 3]}
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({**base, column: [b"chat", b"chat"]}), good)
    pq.write_table(pa.table({**base, column: [b"chat", b"\x80\xff"]}), bad)
    assert run_cli(capsys, "trace", "inspect", good)[0] == 0
    line = one_error_line(*run_cli(capsys, "trace", "inspect", bad))
    assert line == (f"Error: {bad}: row 2, column '{column}': {column} holds bytes that are not "
                    "UTF-8 text (byte 1 of 2 is not); write the column as UTF-8 text")


def test_a_subject_cell_holding_a_list_is_one_line(tmp_path, capsys):
    """The classifier's subject was not checked: a list was read as the category "[0]"."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5],
                             "output_tokens": [3, 3], "subject": [["math"], ["law"]]}), path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column 'subject': subject must be one number or text "
                    "per row (got a list of 1 item); write each row's subject as one value")


def test_an_azure_timestamp_of_bytes_that_are_not_utf8_is_one_line(tmp_path, capsys):
    """A Parquet binary TIMESTAMP column is read as its text; bytes that are not UTF-8 gave a
    traceback (UnicodeDecodeError from pandas' text conversion)."""
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"TIMESTAMP": [b"2024-01-01 00:00:00", b"\x80\xff"],
                             "ContextTokens": [5, 5], "GeneratedTokens": [3, 3]}), path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 2, column 'TIMESTAMP': timestamp holds bytes that are "
                    "not UTF-8 text (byte 1 of 2 is not); write the column as UTF-8 text")


def _text_column_not_utf8() -> pa.Array:
    """A Parquet text (UTF8-annotated) column whose second value is not UTF-8: pyarrow writes
    it unchecked, as another writer may."""
    raw = pa.array([b"chat", b"\x80\xff", b"chat"])
    return pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())


def _refused(capsys, path, unread: bool) -> str:
    """The one error line for the trace ``path`` from ``tiersim trace inspect``; for a column
    nothing reads (``unread``), which inspect never decodes (round 30: it passes), from
    ``read_trace``, whose table carries it."""
    if not unread:
        return one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert run_cli(capsys, "trace", "inspect", path)[0] == 0
    with pytest.raises(TraceError) as info:
        read_trace(path)
    return f"Error: {info.value}"


@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize("column", ["task_type", "prompt", "note"])
def test_a_parquet_text_column_that_is_not_utf8_is_one_line(tmp_path, capsys, column,
                                                            dictionary):
    """It gave a traceback (UnicodeDecodeError) wherever the column was read as Python text,
    even a column nothing reads, or, dictionary-encoded, "not a readable Parquet file (Unknown
    error: Wrapping ... failed)" with the bad bytes in it; now one line naming the row."""
    path = tmp_path / "t.parquet"
    text = _text_column_not_utf8()
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [5, 5, 5],
                             "output_tokens": [3, 3, 3],
                             column: text.dictionary_encode() if dictionary else text}), path)
    line = _refused(capsys, path, column == "note")
    where = f"column '{column}'" if column != "note" else "column 4"
    assert line.startswith(f"Error: {path}: row 2")
    assert f"{where} holds text that is not UTF-8" in line and "write the file again" in line


def test_text_that_is_not_utf8_inside_a_parquet_list_column_is_one_line(tmp_path, capsys):
    """Inside a list it was refused as damage, with the bad bytes shown: "not a readable
    Parquet file (Unknown error: Wrapping \\ufffd\\ufffd failed)"."""
    path = tmp_path / "t.parquet"
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), _text_column_not_utf8())
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [5, 5, 5],
                             "output_tokens": [3, 3, 3], "tags": lists}), path)
    line = _refused(capsys, path, True)
    assert line == (f"Error: {path}: column 4 holds text that is not UTF-8; write the file again "
                    "with its text in UTF-8")
