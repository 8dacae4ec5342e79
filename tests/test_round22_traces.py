"""Round 22 of hostile input, request traces: each a failure found from outside and fixed, with
the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_round19 import error_line, run_cli

from tiersim.cli import main
from tiersim.trace import read_trace

# ------------------------------------------------------------------ label columns


def _table(**extra) -> pa.Table:
    return pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [10, 20],
                     "output_tokens": [5, 5], **extra})


@pytest.mark.parametrize(("column", "cells", "got"), [
    ("task_type", [["code"], ["chat"]], "a list of 1 item"),
    ("step_type", [{"k": "plan"}, {"k": "act"}], "an object of 1 key"),
])
def test_a_label_cell_holding_a_list_or_object_is_refused(tmp_path, capsys, column, cells, got):
    """A Parquet list or struct (a JSON array or object) in ``task_type`` or ``step_type`` was
    read as its Python text (``"['plan']"``): a router's ``step_tiers: {plan: ...}`` then met
    no such step ("did you mean \\"['plan']\\"?"), and task labels read as ``{'k': 'plan'}``."""
    path = tmp_path / "t.parquet"
    pq.write_table(_table(**{column: cells}), path)
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column '{column}': {column} must be one number or "
                    f"text per row (got {got}); write each row's {column} as one value")


def test_a_label_cell_holding_a_json_array_is_refused(tmp_path, capsys):
    """The same from JSON lines: ``"task_type": ["code"]``."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s":0,"input_tokens":10,"output_tokens":5,"task_type":["code"]}\n'
                    '{"arrival_s":1,"input_tokens":10,"output_tokens":5,"task_type":["chat"]}\n')
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column 'task_type': task_type must be one number or "
                    "text per row (got a list of 1 item); write each row's task_type as one "
                    "value (file line 1)")


# ------------------------------------------------------------------ a misnamed arrival column


@pytest.mark.parametrize(("name", "shown"), [
    ("arival_s", "'arival_s'"),               # a typo
    # the name as Python writes it (round 49: repr of the escaped name wrote each backslash
    # twice, 'arrival_s\\\\u200b', of a column no file names so)
    ("arrival_s\u200b", "'arrival_s\\u200b'"),  # a zero-width space after the name
    ("\ufeff\ufeffarrival_s", "'\\ufeffarrival_s'"),  # a second byte-order mark
])
def test_a_misnamed_arrival_column_is_named_not_taken_for_lengths(tmp_path, capsys, name,
                                                                  shown):
    """A CSV whose ``arrival_s`` is misspelt, or carries an invisible character, was read as a
    file of token lengths: ``tiersim run`` said it "has token lengths but no arrival times"
    (it has a column of them) and ``trace inspect`` printed lengths, exit 0, without a word
    on the column it dropped."""
    path = tmp_path / "t.csv"
    path.write_text(f"{name},input_tokens,output_tokens\n0,10,5\n1,20,5\n", encoding="utf-8")
    code, err = run_cli(capsys, "run", _scenario(tmp_path, path), "--no-baselines")
    assert error_line(code, err) == (
        f"Error: {path}: has token lengths but no arrival times: no column is named arrival_s, "
        f"but column {shown} (arrival_s?) may hold them; rename it arrival_s (seconds from the "
        "trace's start) to replay the file as a trace, or use it with synthetic arrivals: "
        "write tiersim.workload.synthetic.poisson_arrivals(tiersim.trace.load_lengths(path), "
        "rate_rps, numpy.random.default_rng(seed)).to_parquet(FILE) and name FILE as the "
        "scenario's trace.path, or give its lengths a logged trace's arrival times "
        "(tiersim/traces/README.md, \"Token lengths at a logged trace's arrival times\")")
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "lengths (no arrival times)"
    assert stats["notes"] == [f"column {shown} (arrival_s?) is not read: a file of token "
                              "lengths has no arrival times; rename it arrival_s (seconds from "
                              "the trace's start) to read the file as a trace"]


def _scenario(tmp_path, trace) -> str:
    """A scenario of tiny.yaml's tiers replaying ``trace`` whole."""
    path = tmp_path / "s.yaml"
    path.write_text(f"""name: t
model: Qwen3-Coder-30B-A3B
gpu: H200
profile: null
trace:
  path: {trace}
tiers:
  - {{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}}
router:
  policy: static_split
  fractions: [1.0]
slo:
  ttft_p99_s: 2.0
  tpot_p99_s: 0.1
""")
    return str(path)


# ------------------------------------------------------------------ files joined with their BOMs


def test_a_header_repeated_with_its_byte_order_mark_is_named(tmp_path, capsys):
    """Two CSV files saved with a byte-order mark (Excel's "CSV UTF-8") joined with ``cat``
    hold the second's mark before its repeated header: the row was not seen as the header and
    was refused as an arrival time that is "text of 10 characters"."""
    path = tmp_path / "joined.csv"
    part = "\ufeffarrival_s,input_tokens,output_tokens\n0,10,5\n1,20,5\n"
    path.write_text(part + part, encoding="utf-8")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 3: repeats the header (CSV files joined with their headers?); "
        "remove the line (file line 4)")


# ------------------------------------------------------------------ a character cut in two


@pytest.mark.parametrize(("key", "words"), [
    ("prompt", "key 'prompt'"),
    ("note", "key 4 of this line"),  # not a trace column: named by its place
])
def test_a_json_surrogate_escape_without_its_pair_is_named(tmp_path, capsys, key, words):
    """A prompt cut in the middle of a character written as a surrogate pair (JavaScript's
    ``JSON.stringify`` of ``text.slice(0, n)`` writes a lone ``\\ud83d``) made the JSON reader
    refuse the file with its own words and a 0-based row: "cannot read the JSON lines (JSON
    parse error: The surrogate pair in string is invalid. in row 1)", for the line tiersim
    calls row 2."""
    path = tmp_path / "t.jsonl"
    lines = [f'{{"arrival_s":{t},"input_tokens":10,"output_tokens":5,"{key}":"{text}"}}\n'
             for t, text in ((0, "ok"), (1, "cut \\ud83d"))]
    path.write_text("".join(lines))
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 2: {words} holds half of a character (a surrogate escape, "
        "\\ud800 to \\udfff, without its pair: text cut in two); remove it or write the whole "
        "character (file line 2)")


# ------------------------------------------------------------------ hash ids written as text


@pytest.mark.parametrize("item", ["1_23", "12_3"])
def test_a_hash_id_with_an_underscore_is_refused_not_joined(tmp_path, capsys, item):
    """A hash id written as text was read with Python's ``int``, which takes ``_`` between
    digits: ``1_23`` and ``12_3`` (block 23 of session 1, block 3 of session 12) both read as
    123, one id, so one prompt's cached blocks were counted for the other (a number column
    refuses ``1_000``)."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prefix_hashes\n"
                    f'0,1024,5,"[7, {item}]"\n')
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 1, column 'prefix_hashes': prefix_hashes must be a list of "
        "integers, such as [1, 2, 3] (got text of 9 characters whose item 2 is not a whole "
        "number) (file line 2)")


def test_a_json_hash_id_with_an_underscore_is_refused(tmp_path, capsys):
    """The same in a Mooncake line whose ids are strings."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp":0,"input_length":1024,"output_length":5,'
                    '"hash_ids":["7","1_23"]}\n')
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 1, column 'hash_ids': hash_ids must be a list of integers, such "
        "as [1, 2, 3] (got a list of 2 items) (file line 1)")


# ------------------------------------------------------------------ two blank column names


def test_two_blank_parquet_column_names_are_one_line(tmp_path, capsys):
    """A blank name is skipped by the check for a name given twice (a CSV's trailing commas
    make blank header cells, which pandas names apart); but two blank Parquet columns keep
    one name, and a canonical trace then crashed: "ValueError: Per-column arrays must each be
    1-dimensional"."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_arrays(
        [pa.array([0.0, 1.0]), pa.array([10, 20]), pa.array([5, 5]), pa.array([1, 2]),
         pa.array([3, 4])], names=["arrival_s", "input_tokens", "output_tokens", "", " "]), path)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: columns 4 and 5 share a name (a blank one); keep one, or name them "
        "apart")


def test_two_blank_json_keys_are_one_line(tmp_path, capsys):
    """The same from JSON lines: keys ``""`` and ``" "`` read as one blank column name."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s":0,"input_tokens":10,"output_tokens":5,"":1," ":2}\n')
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: columns 4 and 5 share a name (a blank one); keep one, or name them "
        "apart")


# ------------------------------------------------------------------ a line of other white space


@pytest.mark.parametrize("space", ["\f", "\v", "\u00a0", "\u2028", "\x1c"])
def test_a_json_line_of_white_space_json_does_not_allow_is_named(tmp_path, capsys, space):
    """A line holding only a form feed, a no-break space or another character Python strips
    but JSON does not take as white space was skipped as blank when the failing line was
    looked for, so none was found: "cannot read the JSON lines (JSON parse error: Invalid
    value. in row 1)", naming no line, and a 0-based row."""
    path = tmp_path / "t.jsonl"
    line = '{"arrival_s":0,"input_tokens":10,"output_tokens":5}\n'
    path.write_text(line + space + "\n" + line, encoding="utf-8")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 2: not a JSON object (Expecting value: line 1 column 1 (char 0)); "
        "each line must be one JSON object (file line 2)")


# ------------------------------------------------------------------ JSON text like a date


def test_json_text_that_looks_like_a_date_stays_text(tmp_path, capsys):
    """Arrow's JSON reader types a key whose every string is an ISO date-time as
    timestamps: a ``task_type`` of "2024-01-01 12:00:00" read back as the label
    "2024-01-01 12:00:00" only by luck of its time, "2024-01-01 00:00:00" became
    "2024-01-01", and ``prompt`` text of dates was refused as "got Timestamp", though the
    file holds strings."""
    path = tmp_path / "t.jsonl"
    path.write_text("".join(
        f'{{"arrival_s":{t},"input_tokens":10,"output_tokens":5,'
        f'"task_type":"2024-01-01 00:00:00","prompt":"2024-01-0{t + 1} 00:00:00+01:00"}}\n'
        for t in range(2)))
    table = read_trace(path).table
    assert list(table.columns)[-2:] == ["task_type", "prompt"]  # in the file's order
    assert table["task_type"].astype(str).tolist() == ["2024-01-01 00:00:00"] * 2
    assert table["prompt"].tolist() == ["2024-01-01 00:00:00+01:00", "2024-01-02 00:00:00+01:00"]
