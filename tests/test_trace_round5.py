"""Hostile trace input, round 5: each case is one exact line (or an exact reading), never a
silent misreading, a traceback or minutes of work."""

from __future__ import annotations

import json
import time
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.errors import TraceError
from tiersim.trace import TraceWarning, load_trace, read_trace
from tiersim.workload import sessions

CANON = "arrival_s,input_tokens,output_tokens"
MOON = '{{"timestamp": {}, "input_length": 100, "output_length": 10{}}}'


def error_of(path, **kwargs) -> str:
    """The one-line TraceError that loading ``path`` raises."""
    with pytest.raises(TraceError) as info:
        load_trace(path, **kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


def write(path, text: str):
    path.write_text(text)
    return path


def test_a_table_with_the_columns_of_two_formats_is_refused_unless_named(tmp_path):
    path = write(tmp_path / "mixed.csv", f"{CANON},TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "0,500,100,2023-01-01 00:00:00,7,7\n10,500,100,2023-01-01 00:00:01,7,7\n")
    assert error_of(path) == (
        f"{path}: has every required column of the azure and canonical formats, so which one "
        "it is cannot be known; name it: trace.format in the scenario (tiersim trace inspect: "
        "--format)")
    assert load_trace(path, format="canonical")["input_tokens"].tolist() == [500, 500]
    assert load_trace(path, format="azure")["input_tokens"].tolist() == [7, 7]


def test_epoch_arrivals_are_refused_from_time_0_and_read_with_a_window(tmp_path):
    path = write(tmp_path / "epoch.csv", f"{CANON}\n1500000000,100,10\n1500000001,100,10\n")
    assert error_of(path) == (
        f"{path}: row 1, column 'arrival_s': arrival 1500000000 s is more than 1e+09 s (31 years) "
        "after time 0; canonical arrival_s are seconds from the trace's start: subtract the "
        "first arrival from every row, or set trace.window: [1500000000, 1500000002] (tiersim "
        "trace inspect: --window 1500000000 1500000002) (file line 2)")
    assert load_trace(path, window=(1500000000, 1500000002))["arrival_s"].tolist() == [0, 1]


def test_a_late_first_arrival_is_warned_once_and_early_ones_are_not(tmp_path):
    late = write(tmp_path / "off.csv", f"{CANON}\n900000000,100,10\n900000001,100,10\n")
    with pytest.warns(TraceWarning) as caught:
        loaded = read_trace(late)
    assert [str(w.message) for w in caught] == [
        f"{late}: the first request arrives at 900,000,000 s, but the run and its provisioned "
        "cost start at 0 s (canonical arrival_s are seconds from the trace's start): "
        "900,000,000 of the 900,000,001 s replayed to the last arrival (100%) hold no request "
        "and are billed; to start at the first request set trace.window: [900000000, "
        "900000002] (tiersim trace inspect: --window 900000000 900000002)"]
    assert loaded.table["arrival_s"].tolist() == [900000000, 900000001]  # unchanged
    for text in ("10,100,10\n11,100,10\n", "4000,100,10\n9000,100,10\n",
                 "59,100,10\n60,100,10\n"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceWarning)
            load_trace(write(tmp_path / "early.csv", f"{CANON}\n{text}"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)
        assert load_trace(late, window=(900000000, 900000002))["arrival_s"].tolist() == [0, 1]


def test_a_first_arrival_late_for_its_span_is_noted_under_an_hour_and_in_a_window(tmp_path):
    """600 s of arrivals from 3,000 s were billed from 0 without a note (the rule wanted a
    first arrival past an hour); a window starting long before its first request, too."""
    path = write(tmp_path / "late.csv", f"{CANON}\n3000,100,10\n3300,100,10\n3600,100,10\n")
    with pytest.warns(TraceWarning) as caught:
        read_trace(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: the first request arrives at 3,000 s, but the run and its provisioned cost "
        "start at 0 s (canonical arrival_s are seconds from the trace's start): 3,000 of the "
        "3,600 s replayed to the last arrival (83%) hold no request and are billed; to start "
        "at the first request set trace.window: [3000, 3601] (tiersim trace inspect: --window "
        "3000 3601)"]
    with pytest.warns(TraceWarning) as caught:
        read_trace(path, window=(1000, 3500), time_scale=2)
    assert [str(w.message) for w in caught] == [
        f"{path}: the first request arrives at 1,000 s, but the run and its provisioned cost "
        "start at 0 s (the window start is time 0): 1,000 of the 1,150 s replayed to the last "
        "arrival (87%) hold no request and are billed; to start at the first request set "
        "trace.window: [3000, 3301] (tiersim trace inspect: --window 3000 3301)"]


SESSION = f"{CANON},session_id,step,parent\n0,100,10,1,0,\n1,100,10,1,1,{{}}\n"


@pytest.mark.parametrize("cell,got", [
    ("0.5", "got 0.5"), ("abc", "got text of 3 characters"), ("inf", "got inf"),
    ("true", "got a true/false value, True"), ("1" * 400, "got 111111111111... (400 digits)"),
])
def test_a_parent_that_is_no_whole_number_is_refused(tmp_path, cell, got):
    path = write(tmp_path / "p.csv", SESSION.format(cell))
    loaded = read_trace(path)
    with pytest.raises(TraceError) as info:
        sessions.prepare_sessions(loaded.table, sessions.SessionsConfig(),
                                  np.random.default_rng(0), str(path), loaded.origin)
    assert str(info.value) == (
        f"{path}: row 2, column 'parent': parent must be a whole number, -1 or an earlier step "
        f"of the session ({got}); fix it, or leave it empty (as -1) for a step that follows none "
        "(file line 3)")


def test_a_huge_parent_is_shown_short_and_whole_floats_are_read(tmp_path):
    path = write(tmp_path / "p.csv", SESSION.format("1e300"))
    loaded = read_trace(path)
    rng = np.random.default_rng(0)
    with pytest.raises(TraceError) as info:
        sessions.prepare_sessions(loaded.table, sessions.SessionsConfig(), rng, str(path),
                                  loaded.origin)
    assert str(info.value) == (f"{path}: row 2, column 'parent': parent 1e+300 is not an "
                               "earlier step of session 1 (file line 3)")
    ok = read_trace(write(tmp_path / "ok.csv", SESSION.format("0.0")))
    table = sessions.prepare_sessions(ok.table, sessions.SessionsConfig(), rng)
    assert table["parent"].tolist() == [-1, 0]


def test_integer_timestamps_beyond_2_53_keep_their_steps(tmp_path):
    base = 2**60
    lines = [MOON.format(base + 100 * i, "") for i in range(20)]
    arrivals = load_trace(write(tmp_path / "m.jsonl", "\n".join(lines) + "\n"))["arrival_s"]
    assert arrivals.tolist() == [100 * i * 1e-3 for i in range(20)]
    unsorted = write(tmp_path / "u.jsonl", "\n".join(
        MOON.format(t, "") for t in (base + 64, base + 1, base + 200)) + "\n")
    assert error_of(unsorted) == (
        f"{unsorted}: row 2, column 'timestamp': timestamp 1152921504606846977 is earlier than "
        "the row before (1152921504606847040); sort the file by timestamp (file line 2)")


def test_true_false_hash_ids_are_refused(tmp_path):
    path = write(tmp_path / "h.jsonl", MOON.format(0, ', "hash_ids": [true, false]') + "\n")
    assert error_of(path) == (f"{path}: row 1, column 'hash_ids': hash id is a true/false value "
                              "(got true); write a whole number (file line 1)")  # round 52


def test_json_lines_arrow_refuses_are_named_by_data_row_and_file_line(tmp_path):
    twice = write(tmp_path / "d.jsonl", MOON.format(0, "") + "\n\n"
                  + MOON.format(5, ', "timestamp": 1') + "\n")
    assert error_of(twice) == (f"{twice}: row 2: names the key 'timestamp' twice; keep one "
                               "(which copy holds the data cannot be known) (file line 3)")
    kinds = write(tmp_path / "k.jsonl", MOON.format(0, ', "hash_ids": [true]') + "\n"
                  + MOON.format(5, ', "hash_ids": [1]') + "\n")
    assert error_of(kinds) == (
        f"{kinds}: row 2: a value inside key 'hash_ids' is a number here and true/false in "
        "earlier items or lines; write every line's value of that key the same way (file line 2)")


def test_a_json_number_too_big_for_a_double_is_named_by_file_line_and_key(tmp_path):
    """Arrow's "Number too big to be stored in double ... in row 2" counts rows from 0 and
    within a block; the message names the data row, the file line and the key (a key that is
    no trace column by its position), and the fix."""
    big = write(tmp_path / "b.jsonl", MOON.format(0, "") + "\n\n" + MOON.format(1, "") + "\n"
                + MOON.format("1e400", "") + "\n")
    assert error_of(big) == (f"{big}: row 3: key 'timestamp' holds a number too large to store "
                             "(beyond +-1.8e308); write a finite number (file line 4)")
    # a canonical table carries every key, so one no converter reads is parsed too (a Mooncake
    # file's such key is left out since round 32: tests/test_round32_fuzz.py)
    inside = write(tmp_path / "i.jsonl", '{"arrival_s": 0, "input_tokens": 100, '
                   '"output_tokens": 10, "extra": [1, -2e999]}\n')
    assert error_of(inside) == (f"{inside}: row 1: key 4 of this line holds a number too large "
                                "to store (beyond +-1.8e308); write a finite number (file line 1)")


def test_a_list_arrival_and_an_id_beyond_int64_are_named_for_what_they_are(tmp_path):
    nested = tmp_path / "n.parquet"
    pq.write_table(pa.table({"arrival_s": [[0.5]], "input_tokens": [5], "output_tokens": [5]}),
                   nested)
    assert error_of(nested) == (f"{nested}: row 1, column 'arrival_s': arrival time in seconds "
                                "is not a number (got a list of 1 item); write a number")
    rows = [{"arrival_s": 0, "input_tokens": 5, "output_tokens": 5, "request_id": 1},
            {"arrival_s": 1, "input_tokens": 5, "output_tokens": 5, "request_id": 2**63 + 5}]
    ids = write(tmp_path / "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert error_of(ids) == (f"{ids}: row 2, column 'request_id': request id "
                             "9.223372036854776e+18 is beyond what a 64-bit integer holds "
                             "(-2**63 to 2**63 - 1); use smaller ids (file line 2)")


def test_a_400_digit_number_is_one_line(tmp_path):
    path = write(tmp_path / "b.csv", f"{CANON}\n0,5,5\n1,{'1' * 400},5\n")
    assert error_of(path) == (f"{path}: row 2, column 'input_tokens': token count is beyond the "
                              "range of numbers (got 111111111111... (400 digits)); fix or "
                              "remove the row (file line 3)")


def test_a_session_prompt_beyond_the_cap_is_refused_at_once(tmp_path):
    path = write(tmp_path / "s.csv", f"{CANON},session_id,step\n0,60000000,60000000,1,0\n"
                 "1,10,10,1,1\n")
    loaded = read_trace(path)
    start = time.perf_counter()
    with pytest.raises(TraceError) as info:
        sessions.prepare_sessions(loaded.table, sessions.SessionsConfig(),
                                  np.random.default_rng(0), str(path), loaded.origin)
    assert time.perf_counter() - start < 5  # hashing 60M tokens of step 0 alone takes ~0.2 s
    assert str(info.value) == (
        f"{path}: row 2, column 'input_tokens': step 1 of session 1 has a prompt of 120,000,010 "
        "tokens (with the session's context so far), more than the 100,000,000 a session step "
        "may have (far beyond any model's context); check input_tokens and output_tokens, or "
        "split the session (file line 3)")


def test_reused_prefix_hashes_equal_hashing_each_prompt_again():
    """Each step reuses its parent's full blocks (work linear in the session, not quadratic);
    the hashes are those of hashing every prompt from its start."""
    rng = np.random.default_rng(3)
    new = rng.integers(1, 3000, 12)
    out = rng.integers(1, 3000, 12)
    df = pd.DataFrame({"request_id": np.arange(12), "arrival_s": 0.0, "input_tokens": new,
                       "output_tokens": out, "session_id": 4, "step": np.arange(12)})
    table = sessions.with_context(sessions.checked(df, "t"), "accumulate", 1500)
    prompts = table["input_tokens"].tolist()
    for k in range(12):
        ends = [prompts[j] + int(out[j]) for j in range(k)]
        expected = sessions.block_hashes(4, k, prompts[k], ends, list(range(k)), 1500)
        assert np.array_equal(table["prefix_hashes"][k], expected)


def test_a_json_array_is_named_for_what_it_is(tmp_path):
    """A JSON array of records was read as CSV: 'none of its 4 column names is a trace
    column', though the names are the canonical ones."""
    path = tmp_path / "a.json"
    path.write_text('[{"request_id": 0, "arrival_s": 0, "input_tokens": 5, "output_tokens": 3}]\n')
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: is one JSON array; tiersim reads JSON lines (one object "
                              "per line, a .jsonl file): convert it, e.g. jq -c '.[]' FILE")
