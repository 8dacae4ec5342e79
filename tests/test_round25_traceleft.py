"""Round 25 of hostile input, trace readers (traceleft): requests that produced no output,
coarse timestamps, and other logged-trace shapes; each a failure found from outside and fixed,
with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import json

import pytest
from test_round19 import error_line, run_cli

from tiersim.cli.app import main


def _inspect(capsys, path, *options) -> dict:
    """``tiersim trace inspect PATH --json`` (exit 0), as read."""
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------- requests that produced no output, in every format

AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _azure(rows) -> str:
    return AZURE + "".join(f"2023-11-16 18:17:{s:010.7f},{i},{o}\n" for s, i, o in rows)


def _burst(rows) -> str:
    return "Timestamp,Model,Request tokens,Response tokens\n" + "".join(
        f"{s:g},ChatGPT,{i},{o}\n" for s, i, o in rows)


def _mooncake(rows) -> str:
    return "".join(json.dumps({"timestamp": int(s * 1000), "input_length": i,
                               "output_length": o}) + "\n" for s, i, o in rows)


WRITERS = {"a.csv": (_azure, "GeneratedTokens", "ContextTokens"),
           "b.csv": (_burst, "response tokens", "Request tokens"),
           "m.jsonl": (_mooncake, "output_length", "input_length")}


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_logged_request_without_output_is_dropped_with_a_note_in_every_format(
        tmp_path, capsys, name):
    """Real logs hold requests that produced no token (failed, cancelled before the first
    token): BurstGPT's were dropped with a note, but one such row in an Azure or Mooncake
    trace refused the whole file ('token count must be > 0 (got 0)'). Every logged format
    now drops them, counted, and times count from the first request kept."""
    write, label, _ = WRITERS[name]
    path = tmp_path / name
    path.write_text(write([(0.5, 100, 0), (1.5, 200, 10), (2.5, 0, 0), (3.5, 300, 20)]))
    stats = _inspect(capsys, path)
    assert stats["rows"] == 2
    why = ("failed requests in BurstGPT" if name == "b.csv" else
           "requests that produced no token: failed or cancelled; only served requests are "
           "replayed")
    assert stats["notes"][:2] == [
        f"dropped 2 of 4 rows with 0 {label} ({why}; first at row 1)",
        "times count from the first request kept (row 2, 1 s after the first row)"]


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_logged_request_with_output_but_no_prompt_is_refused_in_every_format(
        tmp_path, capsys, name):
    """A request that produced tokens from an empty prompt is no request an engine serves
    (vLLM refuses an empty prompt): the row is wrong, in every format, and named."""
    write, _, column = WRITERS[name]
    path = tmp_path / name
    path.write_text(write([(0.5, 100, 5), (1.5, 0, 10)]))
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 2, column '{column}': token count must be > 0 (got 0) "
                    "in a request that did not fail; fix or remove the row"
                    + (" (file line 3)" if name.endswith(".csv") else " (file line 2)"))


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_log_of_nothing_but_requests_without_output_is_refused(tmp_path, capsys, name):
    write, label, _ = WRITERS[name]
    path = tmp_path / name
    path.write_text(write([(0.5, 100, 0), (1.5, 200, 0)]))
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    column = {"a.csv": "GeneratedTokens", "b.csv": "Response tokens",
              "m.jsonl": "output_length"}[name]
    assert line.startswith(f"Error: {path}: column '{column}': every row has 0 ")


def test_a_mooncake_request_without_output_keeps_the_others_hash_ids(tmp_path):
    """The dropped row's hash_ids go with it; the kept rows keep theirs, checked at their own
    file rows."""
    from tiersim.trace import read_trace
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"timestamp": 0, "input_length": 600, "output_length": 0, "hash_ids": [7, 8]},
        {"timestamp": 5, "input_length": 600, "output_length": 3, "hash_ids": [1, 2]},
        {"timestamp": 9, "input_length": 100, "output_length": 3, "hash_ids": [1]}]))
    with pytest.warns(UserWarning):
        loaded = read_trace(path)
    table = loaded.table
    assert table["request_id"].tolist() == [1, 2]
    assert [list(h) for h in table["prefix_hashes"]] == [[1, 2], [1]]
    assert table["arrival_s"].tolist() == [0.0, 0.004]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().replace("[1, 2]", "[1, -2]"))
    with pytest.raises(Exception, match=r"row 2, column 'hash_ids'"):
        read_trace(bad)


def test_an_azure_parquet_request_without_output_is_dropped(tmp_path, capsys):
    import pandas as pd
    path = tmp_path / "a.parquet"
    pd.DataFrame({"TIMESTAMP": pd.to_datetime(["2024-05-10 00:00:00.5", "2024-05-10 00:00:01.25",
                                               "2024-05-10 00:00:02.75"]),
                  "ContextTokens": [100, 200, 300],
                  "GeneratedTokens": [5, 0, 7]}).to_parquet(path)
    stats = _inspect(capsys, path)
    assert stats["rows"] == 2
    assert stats["notes"] == [
        "dropped 1 of 3 rows with 0 GeneratedTokens (requests that produced no token: failed "
        "or cancelled; only served requests are replayed; first at row 2)"]


# ------------------------------------------------------------------ coarse timestamps


@pytest.mark.parametrize(("name", "step", "unit"), [
    ("a.csv", 3600, "hour"), ("a.csv", 60, "minute"), ("a.csv", 1, "second"),
    ("b.csv", 3600, "hour"), ("b.csv", 1, "second"), ("m.jsonl", 60, "minute")])
def test_timestamps_of_a_coarse_precision_that_make_bursts_are_noted(tmp_path, capsys, name,
                                                                      step, unit):
    """Timestamps logged to the whole hour (or minute, or second) put every request of an hour
    at one instant: the replay served 40 requests at once, a burst that the log's coarse times
    made, without a word. The count of requests tied to the one before and the precision are
    one note; the file is read as written."""
    write = WRITERS[name][0]
    rows = [(step * (k // 10), 100, 5) for k in range(40)]  # 10 requests per tick
    path = tmp_path / name
    if name == "a.csv":
        from datetime import datetime, timedelta
        base = datetime(2024, 5, 10, 3)
        path.write_text(AZURE + "".join(f"{base + timedelta(seconds=s)},{i},{o}\n"
                                        for s, i, o in rows))
    else:
        path.write_text(write(rows))
    column = {"a.csv": "TIMESTAMP", "b.csv": "Timestamp", "m.jsonl": "timestamp"}[name]
    stats = _inspect(capsys, path)
    assert stats["rows"] == 40
    assert stats["notes"] == [
        f"{column} is given to the whole {unit}: 36 of 40 requests arrive at the same instant "
        "as the request before them, so each is replayed in a burst at that instant, though "
        f"they may have come apart within the {unit} (queueing and TTFT may read high); a log "
        "with finer times replays them as they came"]


def test_fine_timestamps_or_coarse_ones_without_bursts_say_nothing(tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text(_burst([(k, 100, 5) for k in range(40)]))  # whole seconds, none tied
    assert _inspect(capsys, path)["notes"] == []
    path.write_text(_burst([(k // 10 + 0.001 * k, 100, 5) for k in range(40)]))
    assert _inspect(capsys, path)["notes"] == []
    moon = tmp_path / "m.jsonl"  # milliseconds tied: the log's own precision is fine
    moon.write_text("".join(json.dumps({"timestamp": 7 * (k // 10), "input_length": 100,
                                        "output_length": 5}) + "\n" for k in range(40)))
    assert _inspect(capsys, moon)["notes"] == []


# ------------------------------------------------ canonical columns in a logged trace, noted


@pytest.mark.parametrize("name", list(WRITERS))
def test_canonical_core_columns_in_a_logged_trace_are_noted_as_such(tmp_path, capsys, name):
    """A logged trace with a request_id or arrival_s column was told the column was not read,
    'request_id (request_id?)': a typo of itself. Its ids are its data rows and its times
    and counts its own columns', which the note now says."""
    path = tmp_path / name
    path.write_text(WRITERS[name][0]([(0.5, 100, 5), (1.5, 200, 10)]))
    if name.endswith(".csv"):
        lines = path.read_text().splitlines()
        path.write_text("\n".join([lines[0] + ",request_id,arrival_s,input_tokenz"]
                                  + [f"{line},{k},{k},9" for k, line in enumerate(lines[1:])])
                        + "\n")
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**r, "request_id": k, "arrival_s": k,
                                            "input_tokenz": 9}) + "\n"
                                for k, r in enumerate(rows)))
    own = {"a.csv": "TIMESTAMP, ContextTokens and GeneratedTokens",
           "b.csv": "Timestamp, Request tokens and Response tokens",
           "m.jsonl": "timestamp, input_length and output_length"}[name]
    assert _inspect(capsys, path)["notes"] == [
        "column(s) 'input_tokenz' (input_tokens or output_tokens?) not read (neither this "
        "format's nor a canonical optional column such as prompt_hash or correct_<tier>)",
        "column(s) 'request_id', 'arrival_s' not read (canonical columns: this format's "
        f"requests are read from its {own}, each request's id being its data row)"]


# ------------------------------------------------ header names in another case


@pytest.mark.parametrize(("header", "fmt", "named"), [
    ("timestamp,model,request tokens,response tokens", "burstgpt",
     "s 'timestamp' (Timestamp), 'request tokens' (Request tokens), 'response tokens' "
     "(Response tokens) differ"),
    ("TIMESTAMP,contexttokens,GeneratedTokens", "azure", " 'contexttokens' (ContextTokens) "
     "differs"),
    ("Arrival_S,Input_Tokens,Output_Tokens", "canonical", "s 'Arrival_S' (arrival_s), "
     "'Input_Tokens' (input_tokens), 'Output_Tokens' (output_tokens) differ"),
    ("\ufeff\ufeffTIMESTAMP,ContextTokens,GeneratedTokens", "azure",
     " '\\ufeffTIMESTAMP' (TIMESTAMP) differs")])
def test_a_header_in_another_case_names_the_format_and_the_rename(tmp_path, capsys, header,
                                                                  fmt, named):
    """A BurstGPT log whose header was lower-cased was refused as a Mooncake trace missing
    'input_length' (its 'timestamp' is Mooncake's); an Azure header with 'contexttokens' was
    told to add ContextTokens; a second byte-order mark before TIMESTAMP was not named. Column
    names are read as spelled, and the message says which column differs only in case or
    invisible characters, and from what."""
    path = tmp_path / "t.csv"
    cells = {"burstgpt": "1,ChatGPT,100,5", "azure": "2024-05-10 00:00:00.5,100,5",
             "canonical": "0,100,5"}[fmt]
    path.write_text(f"{header}\n{cells}\n")
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line.startswith(f"Error: {path}: column ")
    assert f"missing column for the {fmt} format" in line
    assert f"column{named} only in case or invisible characters: rename" in line


def test_a_session_step_after_an_azure_request_without_output_names_its_column(tmp_path,
                                                                                capsys):
    path = tmp_path / "s.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,session_id,step\n"
                    "2024-05-10 00:00:00.5,100,5,1,0\n2024-05-10 00:00:01.5,100,0,1,1\n"
                    "2024-05-10 00:00:02.5,100,5,1,2\n")
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert "a failed request (row 2: 0 GeneratedTokens), which tiersim drops" in line


# ------------------------------------------------ a Parquet trace of no rows


@pytest.mark.parametrize("columns", [
    {"arrival_s": "float64", "input_tokens": "int64", "output_tokens": "int64"},
    {"TIMESTAMP": "string", "ContextTokens": "int64", "GeneratedTokens": "int64"}])
def test_a_parquet_trace_of_no_rows_is_not_told_it_has_only_a_header(tmp_path, capsys,
                                                                     columns):
    """A Parquet file of 0 rows (its row groups empty) was refused as having 'only a header',
    which a Parquet file has not: it has a schema and no rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "t.parquet"
    table = pa.table({name: pa.array([], type) for name, type in columns.items()})
    with pq.ParquetWriter(path, table.schema) as writer:
        writer.write_table(table)
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == f"Error: {path}: has no requests (only a schema); add rows"
    lengths = tmp_path / "l.parquet"
    pq.write_table(pa.table({"num_prefill_tokens": pa.array([], "int64"),
                             "num_decode_tokens": pa.array([], "int64")}), lengths)
    from tiersim.errors import TraceError
    from tiersim.trace import load_lengths
    with pytest.raises(TraceError) as err:
        load_lengths(lengths)
    assert str(err.value) == f"{lengths}: has no rows (only a schema); add rows"


# ------------------------------------------------ a spreadsheet's sep= line


@pytest.mark.parametrize("line", ["sep=,", "SEP=;", "sep=\t"])
def test_a_spreadsheet_separator_line_before_the_header_is_named(tmp_path, capsys, line):
    """Excel writes (and reads) a first line 'sep=,' naming the separator; the header after it
    was read as data ('row 1: has 3 fields where the header has 2'), the real header unnamed.
    The line is named, with the fix."""
    path = tmp_path / "a.csv"
    path.write_text(f"{line}\n{AZURE}2024-05-10 00:00:00.5,100,5\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: its first line ({line!r}) is a spreadsheet's note of the separator, "
        "not the header; remove the line, so that the header comes first (file line 1)")
