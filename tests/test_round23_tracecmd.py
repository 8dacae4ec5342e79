"""Round 23 of hostile input, ``tiersim trace`` and the trace loaders: each a failure found
from outside and fixed, with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli
from test_round22_traces import _scenario

from tiersim.cli.app import main

# ------------------------------------------------------------------ Vidur's token column names


@pytest.mark.parametrize(("arrival", "hint", "note"), [
    ("arrival_s",
     ": its arrival_s is read beside input_tokens and output_tokens only; rename "
     "num_prefill_tokens to input_tokens and num_decode_tokens to output_tokens to replay the "
     "file as a trace, or ",
     "column 'arrival_s' is not read: a file of token lengths has no arrival times; rename "
     "num_prefill_tokens to input_tokens and num_decode_tokens to output_tokens to read the "
     "file as a trace"),
    ("arrived_at",  # a Vidur trace-replay file: arrived_at, num_prefill_tokens, ...
     ": no column is named arrival_s, but column 'arrived_at' (arrival_s?) may hold them; "
     "rename it arrival_s (seconds from the trace's start), num_prefill_tokens to input_tokens "
     "and num_decode_tokens to output_tokens to replay the file as a trace, or ",
     "column 'arrived_at' (arrival_s?) is not read: a file of token lengths has no arrival "
     "times; rename it arrival_s (seconds from the trace's start), num_prefill_tokens to "
     "input_tokens and num_decode_tokens to output_tokens to read the file as a trace"),
])
def test_arrival_times_beside_vidur_token_columns_are_named(tmp_path, capsys, arrival, hint,
                                                            note):
    """A file of arrival times whose token counts carry Vidur's names (``num_prefill_tokens``,
    ``num_decode_tokens``, as its trace-replay files do, beside ``arrived_at``) read as token
    lengths: ``tiersim run`` said it "has token lengths but no arrival times" and ``trace
    inspect`` dropped the arrival column without a word (or, for a misnamed one, advised a
    rename of it alone, which left the file lengths still)."""
    path = tmp_path / "t.csv"
    path.write_text(f"{arrival},num_prefill_tokens,num_decode_tokens\n0,10,5\n1.5,20,5\n")
    code, err = run_cli(capsys, "run", _scenario(tmp_path, path), "--no-baselines")
    assert error_line(code, err) == (
        f"Error: {path}: has token lengths but no arrival times{hint}use it with synthetic "
        "arrivals: write tiersim.workload.synthetic.poisson_arrivals(tiersim.trace.load_lengths("
        "path), rate_rps, numpy.random.default_rng(seed)).to_parquet(FILE) and name FILE as the "
        "scenario's trace.path, or give its lengths a logged trace's arrival times "
        "(tiersim/traces/README.md, \"Token lengths at a logged trace's arrival times\")")
    # round 48 (fresh48): the file to write, not a table in memory; round 55 (fresh55a): or
    # a logged trace's arrival times, with where the snippet is
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "lengths (no arrival times)"
    assert stats["notes"] == [note]


# ------------------------------------------------------------------ two sets of token lengths


@pytest.mark.parametrize(("extra", "named"), [
    ("input_tokens,output_tokens", "input_tokens, output_tokens"),
    ("output_tokens", "output_tokens"),
])
def test_a_lengths_file_with_two_sets_of_token_columns_is_refused(tmp_path, capsys, extra,
                                                                  named):
    """A file of token lengths holding both Sarathi/Vidur's ``num_prefill_tokens`` and
    ``num_decode_tokens`` and canonical ``input_tokens``/``output_tokens`` was read from the
    former without a word: ``trace inspect`` printed their percentiles, exit 0, and the other
    pair, with other numbers, was dropped."""
    path = tmp_path / "t.csv"
    cells = ",7" * extra.count(",") + ",7"
    path.write_text(f"num_prefill_tokens,num_decode_tokens,{extra}\n10,1{cells}\n20,2{cells}\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: holds token lengths twice, in num_prefill_tokens, num_decode_tokens "
        f"and in {named}; keep one pair (which one holds the lengths cannot be known)")


# ------------------------------------------------------------------ write_canonical, atomic


def test_a_failed_write_canonical_leaves_the_file_it_would_replace(tmp_path):
    """``write_canonical`` opened its target for writing before Parquet took the table: a
    table Parquet cannot hold (here a column of empty records) raised with the target already
    cut to 0 bytes, so a trace being rewritten in place (``traces/convert.py``) was lost and an
    empty file left under its name. The bytes go to a temp file beside it, renamed over it
    whole; a failure leaves the old file and no temp file."""
    import pandas as pd

    from tiersim.trace import load_trace, write_canonical

    path = tmp_path / "t.parquet"
    write_canonical(pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [10, 20],
                                  "output_tokens": [1, 2]}), path)
    before = path.read_bytes()
    table = load_trace(path)
    table["x"] = [{}] * len(table)
    with pytest.raises(Exception, match="no child field"):
        write_canonical(table, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
    del table["x"]
    table["input_tokens"] = table["input_tokens"] * 2
    assert write_canonical(table, path) == path
    assert load_trace(path)["input_tokens"].tolist() == [20, 40]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


# ------------------------------------------------------------------ a session trace's window


SESSIONS = ("arrival_s,input_tokens,output_tokens,session_id,step,parent,tool_s\n"
            "0,10,1,0,0,-1,\n1,20,2,1,0,-1,\n2,30,3,0,1,0,0.5\n4,40,4,2,0,-1,\n9,50,5,1,1,0,1\n")
"""Three sessions starting at 0, 1 and 4 s; a later step logged at 9 s."""


@pytest.mark.parametrize(("window", "cut", "rate"), [
    # 3 sessions' 2 gaps over their starts' span, 0 to 4 s (round 56: the price's rate; was 3 / 4)
    (None, None, 2 / 4),
    (("0", "100"), [0.0, 4.0], 3 / 4),  # the same: the window holds the whole trace
    (("1", "5"), [1.0, 4.0], 2 / 3),    # sessions starting at 1 and 4 s
])
def test_a_session_traces_window_is_cut_to_its_sessions_starts(tmp_path, capsys, window, cut,
                                                               rate):
    """``trace inspect --window`` cut a session trace's window to the last arrival logged in
    the file, a later step's (9 s), while its rate counts sessions, which start by 4 s: the
    whole trace read 0.75 sessions/s, and 0.333 through a window holding all of it. A later
    step's logged arrival is not when it is replayed, so the cut is to the sessions' starts."""
    path = tmp_path / "s.csv"
    path.write_text(SESSIONS)
    argv = ["trace", "inspect", str(path), "--json"]
    if window is not None:
        argv += ["--window", *window]
    capsys.readouterr()
    assert main(argv) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["rate_rps"] == pytest.approx(rate)
    assert stats.get("window_cut") == cut


# ------------------------------------------------------------------ --json to a full disk


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_json_to_a_full_standard_output_names_it(tmp_path):
    """``trace inspect --json > /dev/full`` said "Error: No space left on device" without
    saying what it could not write (the table's output named standard output): the JSON line is
    written by click's ``echo``, whose failing flush the check for standard output missed."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,10,1\n1,20,2\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "tiersim", "trace", "inspect", str(trace),
                               "--json"], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: standard output: No space left on device; free some "
                                   "space on that disk or write elsewhere")


# ------------------------------------------------------------------ a bundled trace's name


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: os.mkfifo(p), "not a regular file (a device or pipe); give a trace file"),
    (lambda p: p.symlink_to(p.parent / "gone.parquet"),
     "a link that leads to no file (its target is missing, or the links loop); point it at "
     "the trace file, or give the file itself"),
    (lambda p: (p.mkdir(), (p / "part-0.parquet").write_bytes(b"")),  # a Parquet dataset
     "is a folder; give the trace file in it"),
])
def test_a_path_beside_that_is_no_file_is_not_taken_for_a_bundled_trace(
        tmp_path, capsys, monkeypatch, make, said):
    """A pipe, a broken link or a folder named like a bundled trace (``azure2023_code.parquet``)
    where the trace was looked for was passed over for the bundled file of that name: ``trace
    inspect`` printed the bundled Azure trace's statistics, exit 0 (and a run replayed it). A
    folder named without the extension (a run's results, say) still leaves the bundled name."""
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "azure2023_code.parquet")
    assert error_line(*run_cli(capsys, "trace", "inspect", "azure2023_code.parquet")) == (
        f"Error: azure2023_code.parquet: {said}")
    (tmp_path / "azure2023_code").mkdir()
    code, err = run_cli(capsys, "trace", "inspect", "azure2023_code", "--json")
    assert code == 0, err


# ------------------------------------------------------------------ a date without a time


@pytest.mark.parametrize(("first", "cell", "row"), [("2023-11-16", "2023-11-17", 1),
                                                    ("2023-11-16 18:17:03.98", "2023-11", 2)])
def test_an_azure_timestamp_of_a_date_alone_is_refused(tmp_path, capsys, first, cell, row):
    """An Azure ``TIMESTAMP`` column of dates without a time of day was read as their
    midnights: a day's requests all arrived at once, a day apart (0.00003 req/s), exit 0. A
    month alone is refused among timestamps too (a day's date there is its midnight,
    ``test_round16``)."""
    path = tmp_path / "a.csv"
    path.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n{first},10,1\n{cell},10,1\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row {row}, column 'TIMESTAMP': timestamp is a date without a time of "
        "day (read as midnight, a day's requests would arrive at once); write when the request "
        f"arrived, like 2023-11-16 18:15:46 (file line {row + 1})")


def test_an_azure_parquet_timestamp_of_dates_is_refused(tmp_path, capsys):
    """The same from a Parquet column of dates (``date32``)."""
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"TIMESTAMP": [datetime.date(2023, 1, 1), datetime.date(2023, 1, 2)],
                             "ContextTokens": [10, 20], "GeneratedTokens": [1, 2]}), path)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 1, column 'TIMESTAMP': timestamp is a date without a time of day "
        "(read as midnight, a day's requests would arrive at once); write when the request "
        "arrived, like 2023-11-16 18:15:46")
