"""Bad trace input raises one TraceError line naming file, row and column, and the fix."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.errors import TiersimError, TraceError
from tiersim.trace import load_lengths, load_trace

HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
OK = "2023-11-16 18:17:03.9799600,4808,10\n"

CASES = {
    "negative token count": (
        "neg.csv", HEAD + OK + "2023-11-16 18:17:04.0319600,-5,8\n",
        "row 2, column 'ContextTokens': token count must be > 0 (got -5); "
        "fix or remove the row (file line 3)"),
    "zero prompt tokens with output": (
        "zero.csv", HEAD + OK + OK.replace(",4808,", ",0,"),
        "row 2, column 'ContextTokens': token count must be > 0 (got 0) in a request that did "
        "not fail; fix or remove the row (file line 3)"),
    "missing column": (
        "miss.csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9799600,4808\n",
        "column 'GeneratedTokens': missing column for the azure format (found: TIMESTAMP, "
        "ContextTokens); add it or name the right format"),
    "unsorted timestamps": (
        "unsorted.csv", HEAD + OK + "2023-11-16 18:17:04.0319600,5,8\n"
        "2023-11-16 18:17:02.0319600,5,8\n",
        "row 3, column 'TIMESTAMP': timestamp is earlier than the row before's; sort the file "
        "by TIMESTAMP (file line 4)"),
    "NaN token count": (
        "nan.csv", HEAD + OK + "2023-11-16 18:17:04.0319600,,8\n",
        "row 2, column 'ContextTokens': missing token count; fill it in or remove the row "
        "(file line 3)"),
    "unparsable timestamp": (
        "badts.csv", HEAD + OK + "yesterday,5,8\n",
        "row 2, column 'TIMESTAMP': cannot parse timestamp (text of 9 characters); write it "
        "as YYYY-MM-DD HH:MM:SS.fffffff (file line 3)"),
    "missing timestamp": (
        "nots.csv", HEAD + OK + ",5,8\n",
        "row 2, column 'TIMESTAMP': missing timestamp; fill it in or remove the row "
        "(file line 3)"),
    "fractional tokens": (
        "frac.csv", HEAD + OK + "2023-11-16 18:17:04,5.5,8\n",
        "row 2, column 'ContextTokens': token count must be a whole number (got 5.5); round it "
        "(file line 3)"),
    "text tokens": (
        "text.csv", HEAD + OK + "2023-11-16 18:17:04,lots,8\n",
        "row 2, column 'ContextTokens': token count is not a number (got text of 4 "
        "characters); write a number (file line 3)"),
    "huge tokens": (
        "huge.csv", HEAD + OK + "2023-11-16 18:17:04,3000000000,8\n",
        "row 2, column 'ContextTokens': token count must be at most 2147483647 "
        "(got 3000000000); fix or remove the row (file line 3)"),
    "ragged row": (
        "ragged.csv", HEAD + OK + "2023-11-16 18:17:04,5,8,9\n",
        "row 2: has 4 fields where the header has 3 (file line 3); fix the separators or "
        "quoting"),
    "header only": (
        "empty.csv", HEAD, "has no requests (only a header); add rows"),
    "empty file": ("void.csv", "", "file is empty; a trace needs a header and rows"),
    "unknown columns": (
        "unk.csv", "a,b\n1,2\n",
        "not a trace: none of its 2 column name(s) is a trace column; expected azure (TIMESTAMP, "
        "ContextTokens, GeneratedTokens); burstgpt (Timestamp, Request tokens, Response "
        "tokens); mooncake (timestamp, input_length, output_length); canonical (arrival_s, "
        "input_tokens, output_tokens)"),
    "length-only file": (
        "lengths.csv", "num_prefill_tokens,num_decode_tokens\n5,6\n",
        "has token lengths but no arrival times; use it with synthetic arrivals: "
        "write tiersim.workload.synthetic.poisson_arrivals(tiersim.trace.load_lengths(path), "
        "rate_rps, numpy.random.default_rng(seed)).to_parquet(FILE) and name FILE as the "
        "scenario's trace.path, or give its lengths a logged trace's arrival times "
        "(tiersim/traces/README.md, \"Token lengths at a logged trace's arrival times\")"),
    "burstgpt negative response": (
        "burst.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,-1,471,Conversation log\n",
        "row 1, column 'Response tokens': token count must be >= 0 (got -1); fix or remove "
        "the row (file line 2)"),
    "bad json after blank lines": (
        "b.jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 2}\n\n\n[1, 2]\n',
        "row 2: is a list, not a JSON object; each line must be one JSON object (file line "
        "4)"),
    "spec_acceptance above 1": (
        "sa.csv", "arrival_s,input_tokens,output_tokens,spec_acceptance\n0,5,2,0.5\n1,5,2,\n"
        "2,5,2,2.0\n",
        "row 3, column 'spec_acceptance': acceptance rate must be between 0 and 1 (got 2.0); fix "
        "or remove the row (file line 4)"),
    "mooncake bad json": (
        "m.jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
        '{"timestamp": 9, "input_length": 5 "output_length": 2}\n',
        "row 2: not a JSON object (Expecting ',' delimiter: line 1 column 36 (char 35)); "
        "each line must be one JSON object (file line 2)"),
    "mooncake unsorted": (
        "u.jsonl", '{"timestamp": 10, "input_length": 5, "output_length": 2}\n'
        '{"timestamp": 9, "input_length": 5, "output_length": 2}\n',
        "row 2, column 'timestamp': timestamp 9 is earlier than the row before (10); sort the "
        "file by timestamp (file line 2)"),
    "canonical negative arrival": (
        "c.csv", "arrival_s,input_tokens,output_tokens\n-1.5,3,4\n",
        "row 1, column 'arrival_s': arrival time in seconds must be >= 0 (got -1.5); fix or "
        "remove the row (file line 2)"),
    "canonical duplicate id": (
        "d.csv", "request_id,arrival_s,input_tokens,output_tokens\n4,0,3,4\n4,1,3,4\n",
        "row 2, column 'request_id': duplicate request_id 4; ids must be unique (file line 3)"),
    "canonical difficulty out of range": (
        "f.csv", "arrival_s,input_tokens,output_tokens,difficulty\n0,3,4,1.5\n",
        "row 1, column 'difficulty': difficulty must be between 0 and 1 (got 1.5); fix or "
        "remove the row (file line 2)"),
    "true/false token counts": (
        "b.csv", "arrival_s,input_tokens,output_tokens\n0,true,4\n1,false,4\n",
        "row 1, column 'input_tokens': token count is a true/false value (got true); write a "
        "whole number (file line 2)"),  # round 52: as the file writes it (it read True)
    "a column named twice": (
        "d.csv", "arrival_s,input_tokens,output_tokens,input_tokens\n0,3,4,5\n",
        "names the column 'input_tokens' twice (the header, file line 1); keep one (which "
        "copy holds the data cannot be known)"),
    "more fields than the header": (
        "x.csv", "arrival_s,input_tokens,output_tokens\n0,100,10,5,6\n0.5,5,20\n",
        "row 1: has 5 fields where the header has 3 (file line 2); fix the separators or "
        "quoting"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_error_is_one_exact_line(tmp_path, case):
    name, text, expected = CASES[case]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == f"{path}: {expected}"
    assert "\n" not in str(info.value)


def test_error_carries_row_and_column(tmp_path):
    name, text, _ = CASES["negative token count"]
    (tmp_path / name).write_text(text)
    with pytest.raises(TraceError) as info:
        load_trace(tmp_path / name)
    assert (info.value.row, info.value.column) == (2, "ContextTokens")


def test_first_bad_row_wins_across_kinds(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text(HEAD + OK + "2023-11-16 18:17:04,0,8\n2023-11-16 18:17:05,,8\n")
    with pytest.raises(TraceError, match="row 2, column 'ContextTokens'"):
        load_trace(path)


def test_named_format_that_does_not_fit(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK)
    with pytest.raises(TraceError) as info:
        load_trace(path, format="mooncake")
    assert str(info.value) == (
        f"{path}: column 'timestamp': missing column for the mooncake format (found: TIMESTAMP, "
        "ContextTokens, GeneratedTokens); these columns are Azure's: set trace.format: azure "
        "or auto (tiersim trace inspect: --format azure)")
    path.write_text("TIMESTAMP,ContextTokens\n2023-11-16 18:17:03,5\n")  # no format's
    with pytest.raises(TraceError) as info:
        load_trace(path, format="mooncake")
    assert str(info.value).endswith("ContextTokens); add it or name the right format")


def test_unknown_format_name(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK)
    with pytest.raises(TraceError) as info:
        load_trace(path, format="xml")
    assert str(info.value) == (f"{path}: unknown format 'xml'; use one of auto, azure, "
                               "burstgpt, mooncake, canonical")


@pytest.mark.parametrize("window,message", [
    ((5, 1), "window must satisfy 0 <= start_s < end_s, got (5, 1)"),
    ((-1, 1), "window must satisfy 0 <= start_s < end_s, got (-1, 1)"),
    ("soon", "window must be (start_s, end_s), got 'soon'"),
    ((100, 200), "window [100, 200) s selects no requests: the trace spans 0 to 0.0 s; "
                   "choose a window inside 0 - 0.0 s"),
])
def test_bad_window(tmp_path, window, message):
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK)
    with pytest.raises(TraceError) as info:
        load_trace(path, window=window)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize("scale", [0, -2.0, float("nan"), "fast", 1e-308, float("inf"), 1e4])
def test_bad_time_scale(tmp_path, scale):
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK)
    with pytest.raises(TraceError) as info:
        load_trace(path, time_scale=scale)
    assert str(info.value) == (f"{path}: time_scale must be a number from 0.001 to 1000, got "
                               f"{scale!r}")


def test_missing_file(tmp_path):
    with pytest.raises(TraceError) as info:
        load_trace(tmp_path / "nope.csv")
    assert str(info.value) == f"{tmp_path / 'nope.csv'}: file not found; check the path"


def test_not_parquet(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 this is not really parquet")
    with pytest.raises(TraceError, match="not a readable Parquet file"):
        load_trace(path)


def test_length_file_with_bad_row(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("num_prefill_tokens,num_decode_tokens\n5,6\n0,3\n")
    with pytest.raises(TraceError) as info:
        load_lengths(path)
    assert str(info.value) == (f"{path}: row 2, column 'num_prefill_tokens': token count must "
                               "be > 0 (got 0); fix or remove the row (file line 3)")


def test_trace_error_is_a_tiersim_error():
    assert issubclass(TraceError, TiersimError)


@pytest.mark.parametrize(("cell", "got"), [
    ('"[1, x]"', "text of 6 characters whose item 2"), ("abc", "text of 3 characters whose item 1"),
    ("1;2", "text of 3 characters whose item 1"), ("[1.0]", "text of 5 characters whose item 1"),
    ('"[1,2]]"', "text of 6 characters whose item 2")])
def test_bad_prefix_hashes_in_csv(tmp_path, cell, got):
    """A text cell was described as the list it was split into ("a list of 1 item")."""
    path = tmp_path / "h.csv"
    path.write_text('arrival_s,input_tokens,output_tokens,prefix_hashes\n0,3,4,"[1, 2]"\n'
                    f'1,3,4,{cell}\n')
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: row 2, column 'prefix_hashes': prefix_hashes must be a "
                               f"list of integers, such as [1, 2, 3] (got {got} is not a whole "
                               "number) (file line 3)")


def test_mooncake_line_without_hash_ids(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [1]}\n'
                    '{"timestamp": 9, "input_length": 5, "output_length": 2}\n')
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: row 2, column 'hash_ids': missing hash_ids; write [] "
                               "for a request with no prefix blocks (file line 2)")


def test_blank_header_cells_are_no_duplicate_names(tmp_path):
    """A spreadsheet export's trailing commas give blank header cells: not a repeated name."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,,\n0,3,4,,\n1,5,6,,\n")
    assert len(load_trace(path)) == 2


def error_of(path) -> str:
    """The one-line TraceError that loading ``path`` raises."""
    with pytest.raises(TraceError) as info:
        load_trace(path)
    return str(info.value)


def _parquet(path, **columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_date_time_or_duration_where_a_number_is_wanted_is_refused(tmp_path):
    """Their integers are nanoseconds or milliseconds: read as numbers, a 2 s trace spanned
    2,000,000 s (Mooncake) or a 0.5 s duration 500 s."""
    import numpy as np
    import pyarrow as pa

    stamps = np.array(["2024-01-01T00:00:00", "2024-01-01T00:00:02"], "datetime64[ns]")
    moon = _parquet(tmp_path / "m.parquet", timestamp=stamps, input_length=[5, 5],
                    output_length=[2, 2])
    assert error_of(moon) == (f"{moon}: column 'timestamp': is a date-time column "
                               "(datetime64[ns]), and timestamp in milliseconds must be a "
                               "plain number; write it as numbers")
    dur = _parquet(tmp_path / "d.parquet", arrival_s=pa.array([0, 500], pa.duration("ms")),
                   input_tokens=[5, 5], output_tokens=[2, 2])
    with pytest.raises(TraceError, match="column 'arrival_s': is a duration column"):
        load_trace(dur)
    jsonl = tmp_path / "m.jsonl"  # Arrow's JSON reader types ISO strings as timestamps
    jsonl.write_text('{"timestamp": "2024-01-01T00:00:00", "input_length": 5, '
                     '"output_length": 2}\n')
    with pytest.raises(TraceError, match="is a date-time column"):
        load_trace(jsonl)


def test_parquet_column_named_twice_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "dup.parquet"
    pq.write_table(pa.table([[0.0, 1.0], [5, 5], [2, 2], [7, 7]],
                            names=["arrival_s", "input_tokens", "output_tokens",
                                   " input_tokens "]), path)
    assert error_of(path) == (f"{path}: names the column 'input_tokens' twice; keep one "
                               "(which copy holds the data cannot be known)")


def test_ids_are_read_as_integers_exactly(tmp_path):
    """Ids beyond 2**53 in an integer column stay distinct; in a float column they are refused
    (a float cannot hold them exactly), as is a step beyond int32."""
    big = 2 ** 53 + 1
    ok = _parquet(tmp_path / "ok.parquet", request_id=[big, big + 2, big + 4],
                  arrival_s=[0.0, 0.5, 1.0], input_tokens=[1, 2, 3], output_tokens=[1, 1, 1])
    assert load_trace(ok)["request_id"].tolist() == [big, big + 2, big + 4]
    floats = _parquet(tmp_path / "f.parquet", request_id=[0.0, 1e300],
                      arrival_s=[0.0, 0.5], input_tokens=[1, 2], output_tokens=[1, 1])
    assert error_of(floats) == (f"{floats}: row 2, column 'request_id': request id 1e+300 is "
                               "beyond what a 64-bit integer holds (-2**63 to 2**63 - 1); use "
                               "smaller ids")
    inexact = _parquet(tmp_path / "i.parquet", request_id=[0.0, 1e17],
                       arrival_s=[0.0, 0.5], input_tokens=[1, 2], output_tokens=[1, 1])
    assert error_of(inexact) == (f"{inexact}: row 2, column 'request_id': request id 1e+17 is "
                                 "at or beyond 2**53, where a number written with a decimal point "
                                 "or as text cannot be read exactly; store it as a 64-bit "
                                 "integer")
    step = tmp_path / "s.csv"
    step.write_text("arrival_s,input_tokens,output_tokens,session_id,step\n0,100,10,1,0\n"
                    "1,100,10,1,2147483648\n")
    assert error_of(step) == (f"{step}: row 2, column 'step': step must be at most 2147483647 "
                               "(got 2147483648); fix or remove the row (file line 3)")
    sessions = tmp_path / "sid.csv"
    sessions.write_text("arrival_s,input_tokens,output_tokens,session_id,step\n"
                        "0,100,10,9223372036854775807,0\n1,100,10,9223372036854775806,0\n")
    assert load_trace(sessions)["session_id"].tolist() == [2 ** 63 - 1, 2 ** 63 - 2]


def test_text_trace_errors_name_the_real_file_line(tmp_path):
    """Blank lines and quoted line breaks are skipped by the parsers, not by the line count;
    a JSON key whose kind changes is found by its line, not Arrow's block-relative row."""
    blank = tmp_path / "b.csv"
    blank.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n\n\n\n1,-5,10\n")
    with pytest.raises(TraceError, match=r"\(file line 6\)$"):
        load_trace(blank)
    quoted = tmp_path / "q.csv"
    quoted.write_text('arrival_s,input_tokens,output_tokens,note\n0,100,10,"a\nb"\n1,-5,10,x\n')
    with pytest.raises(TraceError, match=r"\(file line 4\)$"):
        load_trace(quoted)
    lines = [f'{{"timestamp": {i}, "input_length": 5, "output_length": 2}}' for i in range(3)]
    kinds = tmp_path / "k.jsonl"
    kinds.write_text("\n".join([*lines, '{"timestamp": 3, "input_length": "five", '
                                '"output_length": 2}']) + "\n")
    assert error_of(kinds) == (f"{kinds}: row 4: key 'input_length' is text here and a number "
                               "on earlier lines; write every line's value of that key the same "
                               "way (file line 4)")


def test_long_json_line_and_all_failed_burstgpt_rows(tmp_path):
    """A Mooncake line of 300,000 hash ids (over Arrow's default 1 MiB block) is read; a
    BurstGPT file of failed requests only is one line, not an accuracy error later."""
    import json

    long = tmp_path / "l.jsonl"
    long.write_text(json.dumps({"timestamp": 0, "input_length": 512 * 300_000,
                                "output_length": 2, "hash_ids": list(range(300_000))}) + "\n")
    assert len(load_trace(long)) == 1
    failed = tmp_path / "f.csv"
    failed.write_text("Timestamp,Request tokens,Response tokens\n0,100,0\n1,100,0\n")
    assert error_of(failed) == (f"{failed}: column 'Response tokens': every row has 0 response "
                               "tokens (failed requests, which tiersim drops), so no request is "
                               "left; use the rows of successful requests")


def test_azure_timestamp_outside_nanosecond_range_is_one_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(HEAD + "1500-01-01 00:00:00,5,8\n1500-01-01 00:00:01,5,8\n")
    assert error_of(path) == (f"{path}: row 1, column 'TIMESTAMP': timestamp is outside the "
                               "years 1678-2261 that nanosecond times cover; write the real "
                               "date (file line 2)")


def test_folder_given_as_the_trace_is_named_so(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    assert error_of(folder) == f"{folder}: is a folder; give the trace file in it"


def test_utf16_is_named_and_a_utf8_bom_json_lines_file_is_read(tmp_path):
    u16 = tmp_path / "u.csv"
    u16.write_text("arrival_s,input_tokens,output_tokens\n0,1,1\n", encoding="utf-16")
    assert error_of(u16) == f"{u16}: UTF-16 text; save the trace as UTF-8 (CSV or JSON lines)"
    bom = tmp_path / "b.jsonl"
    bom.write_bytes(b'\xef\xbb\xbf{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
                    b'{"timestamp": 5, "input_length": 5, "output_length": 2}\n')
    assert load_trace(bom)["arrival_s"].tolist() == [0.0, 0.005]


def test_a_missing_spec_acceptance_means_the_tier_rate(tmp_path):
    """(2.0 ran as 1.0 and -1 as 0: refused, see CASES); a missing cell stays NaN."""
    path = tmp_path / "s.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,spec_acceptance\n0,5,2,0.5\n1,5,2,\n")
    assert np.isnan(load_trace(path)["spec_acceptance"].to_numpy()[1])



@pytest.mark.parametrize(("cell", "shown"), [
    (b"sort a \x1b[31mlist", "binary data of 16 bytes"),
    (b"\xff\xfeab", "binary data of 4 bytes"),
    ("caf\u00e9 ".encode() * 20, "binary data of 120 bytes"),
])
def test_a_bytes_prompt_is_described_by_its_size(tmp_path, cell, shown):
    """A Parquet binary prompt read as ``bytes "b'sort a \\\\x1b[31mlist'"``: quoted twice; then
    as the text it held, cut to 40 characters; now by its size alone (a prompt may hold a
    secret, docs/security.md)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0], "input_tokens": [5], "output_tokens": [2],
                             "prompt": pa.array([cell], pa.binary())}), path)
    assert error_of(path) == (f"{path}: row 1, column 'prompt': prompt must be text (got "
                              f"{shown}); write the prompt as a string, or leave the cell empty")


BG_LABELLED = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
               "correct_bf16,prompt_hash\n")


def test_burstgpt_labels_are_checked_on_kept_rows_only(tmp_path):
    """A failed request (0 response tokens) is dropped, so its empty labels are no error (it
    was: "row 1, column 'correct_bf16': missing correct_bf16"); a kept row's are, by its row."""
    path = tmp_path / "bg.csv"
    path.write_text(BG_LABELLED + "0,ChatGPT,100,0,100,API log,,\n"
                    "1,ChatGPT,100,10,110,API log,1,5\n2,GPT-4,100,12,112,API log,0,6\n")
    table = load_trace(path)
    assert table["request_id"].tolist() == [1, 2]
    assert table["correct_bf16"].tolist() == [1.0, 0.0]
    path.write_text(BG_LABELLED + "0,ChatGPT,100,0,100,API log,,\n"
                    "1,ChatGPT,100,10,110,API log,1,5\n2,GPT-4,100,12,112,API log,,6\n")
    assert error_of(path) == (f"{path}: row 3, column 'correct_bf16': missing correct_bf16; "
                              "fill it in or remove the row (file line 4)")


def test_a_timestamp_error_names_the_unit_it_is_read_in(tmp_path):
    """BurstGPT's said "timestamp is not a number ...; write a number": in what unit?"""
    burst = tmp_path / "b.csv"
    burst.write_text("Timestamp,Request tokens,Response tokens\n0,5,5\nsoon,5,5\n")
    assert error_of(burst) == (f"{burst}: row 2, column 'Timestamp': timestamp in seconds is "
                               "not a number (got text of 4 characters); write a number "
                               "(file line 3)")
    moon = tmp_path / "m.jsonl"
    moon.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
                    '{"timestamp": null, "input_length": 5, "output_length": 2}\n')
    assert error_of(moon) == (f"{moon}: row 2, column 'timestamp': missing timestamp in "
                              "milliseconds; fill it in or remove the row (file line 2)")


@pytest.mark.parametrize(("cell", "word"), [("now", "now"), ("today", "today"),
                                             (" NOW ", "now")])
def test_a_relative_timestamp_is_refused(tmp_path, cell, word):
    """pandas reads "now" and "today" as the time of the run: the same trace replayed
    differently on every run, with exit 0."""
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK + f"{cell},200,20\n2023-11-16 18:17:05,300,30\n")
    assert error_of(path) == (f"{path}: row 2, column 'TIMESTAMP': timestamp {word!r} is "
                              "relative (read as the time of the run, so every run would "
                              "differ); write an absolute timestamp like 2023-11-16 18:15:46 "
                              "(file line 3)")
    parquet = _parquet(tmp_path / "a.parquet", TIMESTAMP=[cell, cell], ContextTokens=[1, 2],
                       GeneratedTokens=[1, 2])
    assert error_of(parquet).startswith(f"{parquet}: row 1, column 'TIMESTAMP': timestamp "
                                        f"{word!r} is relative")


@pytest.mark.parametrize(("cells", "shown"), [
    (("1999", "2000", "2001"), "1999"),  # a year to pandas: a span of 63,158,400 s
    (("2023-11-16 18:17:03", "2023.5"), "2023.5"),  # 2023-05-01 to pandas
    (("1700158546", "1700158547"), "1700158546"),
    (("0.5", "1.5"), "0.5")])
def test_a_bare_number_timestamp_is_refused(tmp_path, cells, shown):
    """Years were read as dates while Unix times and fractions were not parsed: every bare
    number is refused alike, shown as the number it is."""
    path = tmp_path / "a.csv"
    path.write_text(HEAD + "".join(f"{c},5,8\n" for c in cells))
    row = 2 if cells[0].startswith("2023-") else 1
    assert error_of(path) == (f"{path}: row {row}, column 'TIMESTAMP': cannot parse timestamp "
                              f"(got the number {shown}; timestamps here are date-times, not "
                              "years or Unix times); write it as YYYY-MM-DD HH:MM:SS.fffffff "
                              f"(file line {row + 1})")


def test_a_numeric_timestamp_column_is_named_a_number(tmp_path):
    """An int64 Parquet column was described as "text of 16 characters"."""
    path = _parquet(tmp_path / "a.parquet", TIMESTAMP=[1700158546000000, 1700158547000000],
                    ContextTokens=[1, 2], GeneratedTokens=[1, 2])
    assert error_of(path) == (f"{path}: row 1, column 'TIMESTAMP': cannot parse timestamp (got "
                              "the number 1700158546000000; timestamps here are date-times, not "
                              "years or Unix times); write it as YYYY-MM-DD HH:MM:SS.fffffff")


@pytest.mark.parametrize("blank", ["   ", "\t", " \t ", "   \r"])
def test_lines_of_spaces_or_tabs_are_skipped_by_the_line_count_too(tmp_path, blank):
    """pandas reads no row from a line of spaces or tabs, so the row after it is on a later
    file line than the rows counted (a quoted space is a row, and counted)."""
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK + f"{blank}\n{blank}\n{blank}\n" + OK
                    + "2023-11-16 18:17:05,-5,20\n", newline="")
    assert error_of(path) == (f"{path}: row 3, column 'ContextTokens': token count must be > 0 "
                              "(got -5); fix or remove the row (file line 7)")
    canonical = tmp_path / "c.csv"
    canonical.write_text(f"arrival_s,input_tokens,output_tokens,note\n0,100,10,x\n{blank}\n"
                         '1,100,10,x\n"   "\n', newline="")
    assert error_of(canonical) == (f"{canonical}: row 3: has 1 field where the header has 4; "
                                   "fix the separators or quoting, or write an empty cell for "
                                   "each one left out (file line 5)")


def test_a_token_count_beyond_2_53_is_echoed_as_written(tmp_path):
    """9007199254740993 was echoed as the float it reads as, 9007199254740992."""
    path = tmp_path / "a.csv"
    path.write_text(HEAD + OK + "2023-11-16 18:17:05,9007199254740993,20\n")
    assert error_of(path) == (f"{path}: row 2, column 'ContextTokens': token count must be at "
                              "most 2147483647 (got 9007199254740993); fix or remove the row "
                              "(file line 3)")
    text = _parquet(tmp_path / "t.parquet", arrival_s=[0.0, 1.0], output_tokens=[1, 2],
                    input_tokens=["100", "9007199254740993"])
    assert error_of(text) == (f"{text}: row 2, column 'input_tokens': token count must be at "
                              "most 2147483647 (got 9007199254740993); fix or remove the row")
    ids = _parquet(tmp_path / "i.parquet", arrival_s=[0.0, 1.0], output_tokens=[1, 2],
                   input_tokens=[1, 2], request_id=["1", "9007199254740995"])
    assert error_of(ids) == (f"{ids}: row 2, column 'request_id': request id 9007199254740995 "
                             "is at or beyond 2**53, where a number written with a decimal "
                             "point or as text cannot be read exactly; store it as a 64-bit "
                             "integer")
    # 2**53 + 1 read through a float lands on 2**53 exactly: it was accepted, as ...992
    edge = _parquet(tmp_path / "e.parquet", arrival_s=[0.0, 1.0], output_tokens=[1, 2],
                    input_tokens=[1, 2], request_id=["1", "9007199254740993"])
    assert "request id 9007199254740993 is at or beyond 2**53" in error_of(edge)
