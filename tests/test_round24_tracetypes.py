"""Round 24 of hostile input, trace files by the types of their cells (tracetypes): each a
failure found from outside and fixed, with the exact line a user sees, or the number that was
wrong."""

from __future__ import annotations

import json

import pytest
from test_round19 import error_line, run_cli

from tiersim.cli.app import main

# ------------------------------------------------------------------ Unix times in a finer unit


def _inspect(capsys, path, *options) -> dict:
    """``tiersim trace inspect PATH --json`` (exit 0), as read."""
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("name", "first", "step", "note"), [
    ("b.csv", 1_700_000_000_000, 20,  # BurstGPT seconds written as Unix milliseconds
     "Timestamp is read in seconds, but the first, 1700000000000, is sized as a Unix time in "
     "milliseconds: if they are milliseconds, every arrival comes 1000x too late; set "
     "trace.time_scale: 1000 (tiersim trace inspect: --time-scale 1000) or write them in "
     "seconds"),
    ("m.jsonl", 1_700_000_000_000_000, 20_000,  # Mooncake milliseconds as Unix microseconds
     "timestamp is read in milliseconds, but the first, 1700000000000000, is sized as a Unix "
     "time in microseconds: if they are microseconds, every arrival comes 1000x too late; set "
     "trace.time_scale: 1000 (tiersim trace inspect: --time-scale 1000) or write them in "
     "milliseconds"),
    ("n.jsonl", 1_700_000_000_000_000_000, 20_000_000,  # ... as Unix nanoseconds
     "timestamp is read in milliseconds, but the first, 1700000000000000000, is sized as a Unix "
     "time in nanoseconds: if they are nanoseconds, every arrival comes 1,000,000x too late, "
     "more than trace.time_scale (at most 1000) rescales; write them in milliseconds"),
])
def test_unix_times_in_a_finer_unit_are_noted(tmp_path, capsys, name, first, step, note):
    """Unix times written in a unit finer than the format's (a BurstGPT log's Timestamp in
    milliseconds, a Mooncake timestamp in microseconds or nanoseconds) replayed 20 ms gaps as
    20 s: 500 requests of 10 s read as 2.8 hours, without a note (the span-and-gap note needs a
    day and minute gaps), and nanoseconds got that note's advice of time_scale 1000, which
    left them 1000x too slow. The first time's size says the unit, as a Unix time in seconds
    in a Mooncake file already says."""
    path = tmp_path / name
    times = [first + step * k for k in range(500)]
    if name.endswith(".csv"):
        path.write_text("Timestamp,Model,Request tokens,Response tokens\n" + "".join(
            f"{t},ChatGPT,100,50\n" for t in times))
    else:
        path.write_text("".join(f'{{"timestamp": {t}, "input_length": 100, "output_length": '
                                f'50}}\n' for t in times))
    stats = _inspect(capsys, path)
    assert stats["rows"] == 500
    assert stats["notes"] == [note]
    if "1000x" in note:  # followed, the note is not said again, and the span is right
        stats = _inspect(capsys, path, "--time-scale", "1000")
        assert stats["notes"] == []
        assert stats["span_s"] == pytest.approx(499 * 0.02)


# ------------------------------------------------------------------ Azure date-times in JSON


@pytest.mark.parametrize(("times", "row", "fault"), [
    (("2023-11-16", "2023-11-17"), 1,
     "timestamp is a date without a time of day (read as midnight, a day's requests would "
     "arrive at once); write when the request arrived, like 2023-11-16 18:15:46"),
    (("2023-11-16 18:15:46+01:00", "2023-11-16 18:15:47"), 2,
     "mixes timestamps with a UTC offset (or Z) and without one (this row has none, so it would "
     "be read as UTC); write every timestamp the same way"),
    (("2023-11-16 18:15:46", "2023-11-16 18:15:47Z"), 1,
     "mixes timestamps with a UTC offset (or Z) and without one (this row has none, so it would "
     "be read as UTC); write every timestamp the same way"),
])
def test_azure_json_timestamps_are_checked_as_csv_ones(tmp_path, capsys, times, row, fault):
    """An Azure trace in JSON lines whose TIMESTAMPs the JSON reader typed as date-times
    skipped the checks of their text: dates alone replayed a day's requests at once (span
    86,400 s), and an offset beside times without one read the latter as UTC, an hour off
    (span 3,601 s), where the same rows in CSV or Parquet text are refused."""
    lines = "".join(f'{{"TIMESTAMP": "{t}", "ContextTokens": 10, "GeneratedTokens": 5}}\n'
                    for t in times)
    csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(f"{t},10,5\n" for t in times)
    for name, text, line in (("a.jsonl", lines, row), ("a.csv", csv, row + 1)):
        path = tmp_path / name
        path.write_text(text)
        code, err = run_cli(capsys, "trace", "inspect", path)
        assert error_line(code, err) == (f"Error: {path}: row {row}, column 'TIMESTAMP': "
                                         f"{fault} (file line {line})")


# ------------------------------------------------------------------ hash ids stored as floats


@pytest.mark.parametrize(("kind", "ids", "fault"), [
    ("float16", [1, 2048],
     "hash id 2048 is stored as float16, which holds whole numbers exactly only below 2^11 "
     "(two ids there may have been stored as one); store the ids as integers"),
    ("float32", [1, 2**24],
     "hash id 16777216 is stored as float32, which holds whole numbers exactly only below 2^24 "
     "(two ids there may have been stored as one); store the ids as integers"),
    ("float16", [1, 2.5],
     # round 49: it read "... within range (must be an integer below 2^63, written without
     # a decimal point)", though 1.0 and 1e3 are taken
     "hash id 2.5 is not a whole number; write each id as a whole number below 2^63"),
])
def test_hash_ids_stored_as_narrow_floats(tmp_path, capsys, kind, ids, fault):
    """Mooncake hash_ids in a Parquet list of float16 (or float32) were held to float64's
    exact range, 2^53: ids of 2048 and more, where float16 stores 2049 as 2048 (two blocks one
    id), were read as they stood, and comparing float16 with 2^53 overflowed, printing two
    RuntimeWarnings with their source lines on a run that went on."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({
        "timestamp": [0, 10], "input_length": [600, 600], "output_length": [5, 5],
        "hash_ids": pa.array([np.array(ids, dtype=kind), np.array([3, 4], dtype=kind)])}),
        path)
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert error_line(code, err) == f"Error: {path}: row 1, column 'hash_ids': {fault}"


# ------------------------------------------------------------------ text cells pandas calls missing


def test_csv_labels_and_prompts_that_spell_missing_are_read_as_written(tmp_path, capsys):
    """pandas reads a CSV cell of NA, null, None, n/a ... as missing in every column: a
    task_type "NA" (a region) was refused as missing, a step_type "null" replayed as the
    default "step", and a prompt "None" was read as no text, where the same lines in JSON keep
    the text. Only an empty cell is a missing label or prompt; a number column still reads
    NA as missing."""
    from tiersim.trace import read_trace

    rows = [(0, "NA", "null", "None"), (1, "n/a", "NULL", "nan"), (2, "EU", "plan", "")]
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,task_type,step_type,"
                    "prompt\n" + "".join(f"{t},10,5,{t},0,{a},{b},{c}\n" for t, a, b, c in rows))
    table = read_trace(path).table
    assert table["task_type"].astype(str).tolist() == ["NA", "n/a", "EU"]
    assert table["step_type"].tolist() == ["null", "NULL", "plan"]
    assert table["prompt"].tolist() == ["None", "nan", ""]
    stats = _inspect(capsys, path)
    assert stats["rows"] == 3
    blank = tmp_path / "b.csv"  # an empty label is still missing, and NA in a number column
    blank.write_text("arrival_s,input_tokens,output_tokens,task_type\n0,10,5,\n")
    code, err = run_cli(capsys, "trace", "inspect", blank)
    assert error_line(code, err) == (f"Error: {blank}: row 1, column 'task_type': missing "
                                     "task_type; fill it in or remove the column (file line 2)")
    blank.write_text("arrival_s,input_tokens,output_tokens,task_type\n0,NA,5,EU\n")
    code, err = run_cli(capsys, "trace", "inspect", blank)
    assert error_line(code, err) == (f"Error: {blank}: row 1, column 'input_tokens': missing "
                                     "token count; fill it in or remove the row (file line 2)")


def test_csv_labels_and_prompts_of_digits_stay_text(tmp_path, capsys):
    """pandas typed a CSV's text columns by their cells: a prompt of digits was refused, "prompt
    must be text (got int '123'); write the prompt as a string" (no CSV writes it otherwise,
    quoted or not), a task_type 007 became the label 7 and a step_type 1.50 became 1.5, where
    JSON lines keep the text written."""
    from tiersim.trace import read_trace

    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,task_type,step_type,"
                    "prompt\n0,10,5,0,0,007,1.50,123\n1,10,5,1,0,7,2,\"0456\"\n")
    stats = _inspect(capsys, path)
    assert stats["rows"] == 2
    table = read_trace(path).table
    assert table["task_type"].astype(str).tolist() == ["007", "7"]
    assert table["step_type"].tolist() == ["1.50", "2"]
    assert table["prompt"].tolist() == ["123", "0456"]


# ------------------------------------------------------------------ a CSV typed chunk by chunk


def test_a_csv_column_typed_apart_in_its_chunks_is_read_one_way(tmp_path, capsys):
    """pandas types a large CSV's columns a chunk of rows at a time: a prompt_hash column of
    numbers whose last rows hold a text hash read its early hashes as numbers and its late ones
    as text, so hash 5 at row 1 and at row 599,999 were two keys (the response cache missed
    every such repeat), and pandas' DtypeWarning was printed with its source line on the
    run's standard error."""
    from tiersim.trace import read_trace

    rows = 600_000
    hashes = [str(i + 10) for i in range(rows)]
    hashes[0], hashes[-2], hashes[-1] = "5", "5", "abc"
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n" + "".join(
        f"{i},10,5,{h}\n" for i, h in enumerate(hashes)))
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["rows"] == rows
    assert err == ""
    keys = read_trace(path).table["prompt_hash"]
    assert keys.iloc[0] == keys.iloc[rows - 2]
    assert keys.nunique() == rows - 1


@pytest.mark.parametrize(("kind", "hashes", "shown", "bits"), [
    ("float32", [2**24, 2**24 + 1], "16777216", 24),  # 2**24 + 1 is stored as 2**24
    ("float16", [2048, 2049], "2048", 11),
])
def test_prompt_hashes_stored_as_narrow_floats(tmp_path, capsys, kind, hashes, shown, bits):
    """A Parquet prompt_hash column of float32 (or float16) was held to float64's exact range,
    2^53: two prompts hashed 16777216 and 16777217 were stored as one hash, 16777216, and the
    response cache answered the second from the first's answer, without a word."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [10, 10],
                             "output_tokens": [5, 5],
                             "prompt_hash": pa.array(np.array(hashes, dtype=kind))}), path)
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert error_line(code, err) == (
        f"Error: {path}: row 1, column 'prompt_hash': prompt_hash {shown} is stored as {kind}, "
        f"which holds whole numbers exactly only below 2^{bits}, so two hashes may have been "
        "stored as one; store hashes as integers or text")


@pytest.mark.parametrize("stamp", ["2023-11-16 18:15:46-04:56:02",  # pytz's LMT offset
                                   "2023-11-16T18:15:46+01:00[Europe/Paris]"])  # RFC 9557
def test_a_timestamp_whose_zone_is_not_read_is_not_called_zoneless(tmp_path, capsys, stamp):
    """A TIMESTAMP whose offset has seconds (pytz's local mean time, -04:56:02) or names its
    zone in brackets, beside times with a plain offset, was refused as one "without" an offset
    ("this row has none, so it would be read as UTC"), which it has: it is one that cannot be
    read, as it is said when every row is written so."""
    path = tmp_path / "a.csv"
    path.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:40Z,10,5\n"
                    f"{stamp},10,5\n")
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert error_line(code, err) == (
        f"Error: {path}: row 2, column 'TIMESTAMP': cannot parse timestamp (text of "
        f"{len(stamp)} characters); write it as YYYY-MM-DD HH:MM:SS.fffffff (file line 3)")
