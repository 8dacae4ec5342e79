"""Round 32 (helper fuzz): hostile input through the CLI, round 5 (timestamps beyond the
dates a trace holds, ...)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest
from conftest import TINY, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
TINY_TEXT = TINY.read_text()


@pytest.mark.parametrize(("cell", "row", "date"), [
    ("0001-01-01 00:00:00.0000000", 1, "0001-01-01"),
    ("9999-12-31T23:59:59.9999999", 2, "9999-12-31"),
    ("2262-04-12 00:00:00", 2, "2262-04-12"),
])
def test_a_timestamp_beyond_the_dates_a_trace_holds_says_so(tmp_path, capsys, cell, row, date):
    """An Azure timestamp written as the format asks but dated year 1 or 9999 (outside the
    days nanoseconds since 1970 reach) was 'cannot parse timestamp (text of 27 characters);
    write it as YYYY-MM-DD HH:MM:SS.fffffff', the form it had; now the line names its date and
    the dates a trace can hold, by trace inspect and by a run's windowed read alike."""
    first = "2023-11-16 18:17:03.9799600,4808,10\n"
    cells = f"{cell},5,5\n"
    trace = tmp_path / "azure.csv"
    trace.write_text(AZURE_HEADER + (cells + first if row == 1 else first + cells))
    want = (f"row {row}, column 'TIMESTAMP': timestamp dated {date} is outside the dates a "
            "trace can hold (1677-09-21 to 2262-04-11, nanoseconds since 1970 in 64 bits); "
            f"fix the date (file line {row + 1})")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == f"Error: {trace}: {want}"
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace),
                                                               "window": [0, 60]}))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line.endswith(want)


def test_a_timestamp_pandas_cannot_read_for_another_reason_keeps_its_words(tmp_path, capsys):
    """A cell that is no date-time at all keeps the line that asks for the format."""
    trace = tmp_path / "azure.csv"
    trace.write_text(AZURE_HEADER + "2023-13-45 99:00:00,5,5\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line.endswith("cannot parse timestamp (text of 19 characters); write it as "
                         "YYYY-MM-DD HH:MM:SS.fffffff (file line 2)")


def _canonical_csv(rows: int) -> bytes:
    """A canonical CSV trace of ``rows`` requests."""
    return b"arrival_s,input_tokens,output_tokens\n" + b"".join(
        b"%d,10,5\n" % i for i in range(rows))


def _mooncake_lines(rows: int) -> bytes:
    """A Mooncake JSON-lines trace of ``rows`` requests."""
    return b"".join(b'{"timestamp": %d, "input_length": 10, "output_length": 5, '
                    b'"hash_ids": [%d]}\n' % (i, i) for i in range(rows))


NUL_CASES = {
    # was: "row 1001: has 1 field where the header has 3; fix the separators or quoting, ..."
    "CSV padded with zeros": ("t.csv", _canonical_csv(1000) + bytes(4096), 1002),
    # was: "row 31: not a JSON object (Expecting value: line 1 column 1 (char 0)); ..."
    "JSON lines padded with zeros": ("t.jsonl", _mooncake_lines(30) + bytes(4096), 31),
    # was: "not a trace: binary content that is not Parquet (...; decompress it first)"
    "a NUL early in a CSV": ("t.csv", _canonical_csv(2).replace(b"0,10", b"0,1\0" b"0"), 2),
    "a NUL early in JSON lines": ("t.jsonl", _mooncake_lines(5).replace(b"2,", b"2\0,"), 3),
}


@pytest.mark.parametrize(("name", "data", "line"), NUL_CASES.values(), ids=NUL_CASES.keys())
def test_a_text_trace_holding_nul_bytes_names_their_line(tmp_path, capsys, name, data, line):
    """A text trace holding NUL bytes (zeros a crash left at its end, or one early on) read as
    a row with too few fields, a line that is no JSON object, or binary content to decompress;
    now one line naming the file line of the first NUL and how to remove them."""
    trace = tmp_path / name
    trace.write_bytes(data)
    want = (f"Error: {trace}: file line {line} holds a NUL byte, which no text trace holds "
            "(zeros a write cut short by a crash left, or damage); remove the NUL bytes "
            "(tr -d '\\000' < FILE > FIXED) or restore the file")
    assert one_error_line(*run_cli(capsys, "trace", "inspect", trace)) == want


@pytest.mark.parametrize(("compress", "name"), [(gzip.compress, "gzip"), (bz2.compress, "bzip2"),
                                                (lzma.compress, "xz")])
def test_a_compressed_trace_names_its_compressor_whatever_its_suffix(tmp_path, capsys, compress,
                                                                     name):
    """A compressed trace with a plain suffix (or its own) is named compressed, with what."""
    for suffix in (".csv", ".csv.gz"):
        trace = tmp_path / f"t{suffix}"
        trace.write_bytes(compress(_canonical_csv(50)))
        line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
        assert line == (f"Error: {trace}: not a trace: binary content compressed with {name} (a "
                        "trace is Parquet, CSV or JSON lines); decompress it first")


def test_text_cut_by_nul_bytes_alone_stays_binary_content(tmp_path, capsys):
    """Text with no line before its first NUL (``/proc/self/environ``'s layout) is binary
    content, as before, and nothing of it is shown."""
    trace = tmp_path / "environ"
    trace.write_bytes(b"HOME=/root\0SECRET=hunter2\0")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: not a trace: binary content that is not Parquet (a trace "
                    "is Parquet, CSV or JSON lines; decompress it first)")


@pytest.mark.parametrize(("key", "where", "line"), [
    ('"seed "', "'seed '", 4), ('"\\tseed"', "'\\tseed'", 4)])
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_known_key_with_white_space_around_it_is_told_so(tmp_path, capsys, key, where, line,
                                                           command):
    """A quoted key with a space at its end read 'line 4: seed : unknown key (did you mean
    'seed'?)', the space lost before the colon (and plan gave no line); now the key is quoted
    and the space named, by run and plan alike."""
    text = TINY_TEXT.replace("seed: 0", f"{key}: 0")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    got = one_error_line(*run_cli(capsys, command, scenario, *(
        ["--no-baselines"] if command == "run" else ["--out", tmp_path / "p"])))
    assert got == (f"Error: {scenario}: line {line}: {where}: unknown key ('seed' with white "
                   "space at its start or end; remove the space)")
    assert not (tmp_path / "p").exists()


def test_a_key_in_a_list_with_white_space_around_it_is_placed(tmp_path, capsys):
    """The quoted key is found again in the file, inside a list too."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY_TEXT.replace("    replicas: 1\n", '    "replicas\\t": 1\n', 1))
    got = one_error_line(*run_cli(capsys, "plan", scenario, "--out", tmp_path / "p"))
    assert got == (f"Error: {scenario}: line 16: tiers[0].'replicas\\t': unknown key "
                   "('replicas' with white space at its start or end; remove the space)")


def _mooncake_with(rows: int, extra) -> str:
    """A Mooncake JSON-lines trace of ``rows`` requests, each line with the keys ``extra(i)``
    adds, written as ``json.dumps`` writes them."""
    return "".join(json.dumps({"timestamp": i * 100, "input_length": 100 + i,
                               "output_length": 10, "hash_ids": [i], **extra(i)}) + "\n"
                   for i in range(rows))


def _inspected(capsys, trace) -> dict:
    """``tiersim trace inspect TRACE --json``'s statistics; fails unless it succeeds."""
    capsys.readouterr()
    assert main(["trace", "inspect", str(trace), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


UNUSED_KEY_CASES = {
    # was: "row 1: a value inside key 5 of this line is an object here and a number in earlier
    # items or lines; write every line's value of that key the same way (file line 1)"
    "a list of mixed items": lambda i: {"junk": [1, {"c": None}], "huge": "x" * 100_000},
    # was: "row 2: key 5 of this line is an object here and a number on earlier lines; ..."
    "a number, then an object": lambda i: {"junk": i if i % 2 == 0 else {"a": [i]}},
}


@pytest.mark.parametrize("extra", UNUSED_KEY_CASES.values(), ids=UNUSED_KEY_CASES.keys())
def test_a_json_key_nothing_reads_may_hold_anything(tmp_path, capsys, extra):
    """A Mooncake JSON-lines key no converter reads, holding values of changing kinds (or a
    number no double holds), refused the whole trace; now such a key is left out of the read
    (named in the note of columns not read, as a Parquet file's are), and the trace reads as
    the same file without it, by trace inspect and by run."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(_mooncake_with(20, extra))
    plain = tmp_path / "plain.jsonl"
    plain.write_text(_mooncake_with(20, lambda i: {}))
    got, want = _inspected(capsys, trace), _inspected(capsys, plain)
    assert {k: v for k, v in got.items() if k not in ("notes", "path")} == {
        k: v for k, v in want.items() if k not in ("notes", "path")}
    names = ", ".join(repr(k) for k in extra(0))
    note = (f"note: {trace}: column(s) {names} not read (neither this format's nor a canonical "
            "optional column such as prompt_hash or correct_<tier>)")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace)}))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0 and err.splitlines()[0] == note


def test_a_json_key_nothing_reads_may_hold_a_number_beyond_a_double(tmp_path, capsys):
    """'row 1: key 5 of this line holds a number too large to store (beyond +-1.8e308); write a
    finite number (file line 1)', of a key nothing reads; now it is left out."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(_mooncake_with(5, lambda i: {"junk": [1, 2.5]}).replace("2.5", "-2e999"))
    assert _inspected(capsys, trace)["rows"] == 5


def test_a_json_key_nothing_reads_may_be_named_twice(tmp_path, capsys):
    """A key named twice on a line refused the trace ('keys 5 and 6 of an object share a
    name'), though nothing reads it; now it is left out, and a key that is read, named twice,
    is still refused, naming its line."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(_mooncake_with(5, lambda i: {}).replace('"hash_ids"', '"x": 1, "x": 2, '
                                                             '"hash_ids"'))
    assert run_cli(capsys, "trace", "inspect", trace)[0] == 0
    lines = _mooncake_with(5, lambda i: {"x": [1] if i else {}}).splitlines(keepends=True)
    lines[3] = lines[3].replace('"output_length": 10', '"output_length": 10, "output_length": 9')
    trace.write_text("\n" + "".join(lines))
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: row 4: names the key 'output_length' twice; keep one (which "
                    "copy holds the data cannot be known) (file line 5)")


def test_a_fault_of_a_key_that_is_read_is_named_after_one_nothing_reads(tmp_path, capsys):
    """Where a key nothing reads changes kind and, further on, a key that is read does too, the
    one that is read is named, at its own file line (blank lines and \\r\\n ends counted)."""
    text = _mooncake_with(10, lambda i: {"junk": i if i % 2 else {"a": 1}})
    text = text.replace('"input_length": 106', '"input_length": {"x": 1}')
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(("\n\n" + text).replace("\n", "\r\n").encode())
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: row 7: key 'input_length' is an object here and a number "
                    "on earlier lines; write every line's value of that key the same way (file "
                    "line 9)")


@pytest.mark.parametrize(("old", "new", "where"), [
    ("seed: 0", "seed: " + "9" * 5000, "line 4: seed: a whole number of 5,000 digits"),
    ("    replicas: 1", "    replicas: -" + "1" * 4301,
     "line 16: tiers[0].replicas: a whole number of 4,301 digits"),
])
def test_a_whole_number_of_more_digits_than_python_reads_names_its_key(tmp_path, capsys, old,
                                                                        new, where):
    """A scenario number of more than 4,300 digits read 'line 4: invalid YAML: cannot read this
    value as its type (Exceeds the limit (4300 digits) for integ...', Python's words cut
    midway and no key named; now it is refused as a number of fewer digits past any setting
    is, naming its key."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY_TEXT.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: {where} is beyond any setting (at most 3,000 bits, "
                    "about 900 digits)")


def _mooncake_rows(rows: int) -> list[dict]:
    """``rows`` Mooncake requests as objects."""
    return [{"timestamp": i, "input_length": 5, "output_length": 5} for i in range(rows)]


OVER_LINES = ("holds the start of a JSON value that the line does not end (JSON written over "
              "several lines, or a line cut short?); write one object a line, e.g. jq -c . FILE")
JSON_LINE_CASES = {
    # was: "row 1: not a JSON object (Expecting property name enclosed in double quotes: line 2
    # column 1 (char 2)); each line must be one JSON object (file line 1)": line 2 of what?
    "pretty-printed": ("".join(json.dumps(r, indent=2) + "\n" for r in _mooncake_rows(3)),
                       f"row 1: {OVER_LINES} (file line 1)"),
    # was: "row 2: not a JSON object (Expecting ',' delimiter: line 1 column 52 (char 51)); ..."
    "a last line cut short": (json.dumps(_mooncake_rows(1)[0]) + "\n"
                              + json.dumps(_mooncake_rows(1)[0])[:-1] + "\n",
                              f"row 2: {OVER_LINES} (file line 2)"),
    # was: "row 1: not a JSON object (Extra data: line 1 column 56 (char 55)); ..."
    "two objects on a line": ("".join(json.dumps(r) for r in _mooncake_rows(2)) + "\n",
                              "row 1: holds more than one JSON value (one ends at character "
                              "55); write one object a line, e.g. jq -c . FILE (file line 1)"),
}


@pytest.mark.parametrize(("text", "fault"), JSON_LINE_CASES.values(), ids=JSON_LINE_CASES.keys())
def test_json_lines_that_are_not_one_object_each_say_how(tmp_path, capsys, text, fault):
    """A JSON-lines trace written pretty-printed, cut short, or two objects a line was told
    the parser's words, whose "line 2 column 1" counted lines within one file line; now the
    line says what it holds and how to write one object a line."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(text)
    assert one_error_line(*run_cli(capsys, "trace", "inspect", trace)) == (
        f"Error: {trace}: {fault}")


@pytest.mark.parametrize("command", [["trace", "inspect"], ["analytic", "--trace"]])
def test_a_scenario_given_as_a_trace_is_named_a_yaml_file(tmp_path, capsys, command):
    """A scenario given where a trace goes read as a CSV: 'row 10: has 2 fields where the
    header has 1 (file line 11); fix the separators or quoting'; now it is named a YAML file,
    by trace inspect, analytic and a scenario's trace.path alike."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY_TEXT)
    want = (f"Error: {scenario}: is a YAML file (a scenario?), not a trace (a trace is Parquet, "
            "CSV or JSON lines); give the trace file (a scenario names it under trace.path)")
    assert one_error_line(*run_cli(capsys, *command, scenario)) == want
    other = write_yaml(tmp_path / "o.yml", tiny_doc(trace={"path": str(scenario)}))
    assert one_error_line(*run_cli(capsys, "run", other, "--no-baselines")) == want
