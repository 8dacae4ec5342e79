"""Round 49, hostile input (helper fuzz15). Each test names what a user saw before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main
from tiersim.errors import yaml_written

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("digits", "sign"), [(5000, ""), (5000, "-"), (4400, "")])
def test_a_jsonl_number_of_more_than_4300_digits_is_named_as_written(tmp_path, capsys, digits,
                                                                     sign):
    """A JSON-lines number of more than 4,300 digits (Python reads no integer that long) was
    said to be "not finite (got inf); write a finite number": the file holds no infinity. It
    is now named as a CSV cell of those digits is, by its first digits and their count."""
    path = tmp_path / "t.jsonl"
    number = sign + "1" * digits
    path.write_text('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5}\n'
                    f'{{"arrival_s": 1, "input_tokens": {number}, "output_tokens": 5}}\n')
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == (f"Error: {path}: row 2, column 'input_tokens': token count is beyond the "
                    f"range of numbers (got {number[:12]}... ({digits:,} digits)); fix or "
                    "remove the row (file line 2)")


TINY_TEXT = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


@pytest.mark.parametrize(("char", "words"), [
    ("\u2028", "the line or paragraph separator U+2028"),
    ("\u2029", "the line or paragraph separator U+2029"),
    ("\x85", "the control or format character U+0085"),
])
def test_a_unicode_line_break_in_a_comment_is_named_at_its_line(tmp_path, capsys, monkeypatch,
                                                               char, words):
    """YAML 1.1 reads U+2028, U+2029 and U+0085 (NEL, what a Windows-1252 ellipsis becomes
    read as Latin-1) as line breaks, which no editor shows: in a comment the rest of the
    comment became a key, "line 2: scenario for tests and quick checks: unknown key", of a
    line 2 that reads "seed: 0". The character is now named at its own line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("# A tiny scenario",
                                                       f"# A tiny{char}scenario", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 1: holds {words}, which YAML reads as a line break "
                    "(no editor shows one there; it ends a comment, cuts a value in two and "
                    "moves every later line number); remove it, or write it as an escape "
                    f"(\"\\u{ord(char):04x}\") inside double quotes")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_a_scenario_line_number_after_a_line_separator_is_the_editors(tmp_path, capsys,
                                                                      monkeypatch, newline):
    """An error further down was named a line later than an editor shows it for every such
    character above it: the character is named first, at its own line (lines counted as YAML
    counts them, at CR LF, CR or LF)."""
    monkeypatch.chdir(tmp_path)
    text = TINY_TEXT.replace("name: tiny", "name: tiny  # short\u2028", 1).replace(
        "seed: 0", "seed: -1", 1)
    (tmp_path / "s.yaml").write_bytes(text.replace("\n", newline).encode())
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line.startswith("Error: s.yaml: line 3: holds the line or paragraph separator "
                           "U+2028, which YAML reads as a line break")


@pytest.mark.parametrize(("cell", "row", "column", "label"), [
    ("1e400", 2, "arrival_s", "arrival time in seconds"),
    ("-1e400", 1, "input_tokens", "token count"),
    ("100.5E+400", 1, "input_tokens", "token count"),
    (" .5e999 ", 1, "output_tokens", "token count"),
])
def test_a_csv_number_beyond_a_floats_range_is_named_as_written(tmp_path, capsys, cell, row,
                                                                column, label):
    """A CSV cell of a number written with an exponent beyond a float's range (``1e400``) was
    "not finite (got inf); write a finite number": the file holds no infinity (the same number
    in JSON lines is "a number too large to store"). It is named as written, as a whole number
    of too many digits is."""
    cells = {"arrival_s": ["0", "1"], "input_tokens": ["100", "10"], "output_tokens": ["5", "5"]}
    cells[column][row - 1] = cell
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(
        f"{cells['arrival_s'][i]},{cells['input_tokens'][i]},{cells['output_tokens'][i]}\n"
        for i in range(2)))
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == (f"Error: {path}: row {row}, column {column!r}: {label} is beyond the range "
                    f"of numbers (got {cell.strip()}); fix or remove the row (file line "
                    f"{row + 1})")


@pytest.mark.parametrize("cell", ["inf", "-Infinity", "nan1"])
def test_a_csv_infinity_written_as_a_word_is_still_not_finite(tmp_path, capsys, cell):
    """The words for infinity keep their message (the file does hold an infinity)."""
    path = tmp_path / "t.csv"
    path.write_text(f"arrival_s,input_tokens,output_tokens\n0,{cell},5\n1,10,5\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    said = {"inf": "is not finite (got inf); write a finite number",
            "-Infinity": "is not finite (got -inf); write a finite number",
            "nan1": "is not a number (got text of 4 characters); write a number"}[cell]
    assert line == (f"Error: {path}: row 1, column 'input_tokens': token count {said} (file "
                    "line 2)")


def _inspect_notes(capsys, path) -> list[str]:
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["notes"]


def test_a_misnamed_arrival_column_is_escaped_once(tmp_path, capsys):
    """A column named ``arrival_s`` and a zero-width space was noted as
    ``'arrival_s\\\\u200b'``: escaped, then quoted by ``repr``, which wrote each backslash
    twice (no column of the file is named so). It reads as Python writes the name, as the
    other notes on columns do (``'\\ufeffTIMESTAMP' (TIMESTAMP) differs only in case or
    invisible characters``)."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s\u200b,input_tokens,output_tokens\n0,10,5\n1,20,5\n")
    assert _inspect_notes(capsys, path) == [
        "column 'arrival_s\\u200b' (arrival_s?) is not read: a file of token lengths has no "
        "arrival times; rename it arrival_s (seconds from the trace's start) to read the file "
        "as a trace"]


def test_an_unread_column_is_escaped_once(tmp_path, capsys):
    """An unread column whose name holds a terminal escape was noted as ``'sesion\\\\x1b'``;
    it is ``'sesion\\x1b'``, the name as Python writes it."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,sesion\x1b_id\n0,10,5,1\n1,20,5,1\n")
    notes = _inspect_notes(capsys, path)
    assert notes == ["column(s) 'sesion\\x1b_id' (session_id?) not read (not a canonical "
                     "column: carried in the table, used by nothing)"]


@pytest.mark.parametrize("tail", ['{"value": 1.5e', '{"value": 1.5E-', '{"value": -',
                                  '{"value": 2.', '{"value": tr', '{"value": [fals',
                                  '{"value": n'])
def test_a_profile_cut_inside_a_number_or_a_word_is_told_cut_short(tmp_path, capsys,
                                                                   monkeypatch, tail):
    """A profile cut short inside a number (``4.11467e`` of a 4 MB profile copied in half) or a
    word (``tr`` of ``true``) read "line 1: not valid JSON (Expecting ',' delimiter)", as if a
    comma were missing; cut after a whole value it said the file ends mid-document. It now
    says so wherever the file stops."""
    monkeypatch.chdir(tmp_path)
    text = '{"schema": "tiersim.profile/1",\n "overhead_s": ' + tail
    (tmp_path / "p.json").write_text(text)
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("profile: null", "profile: p.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 7: profile: p.json: line 2: not valid JSON: it ends "
                    f"mid-document after {len(text)} bytes, as a file cut short does (a copy or "
                    "save that did not finish); give the whole file")


@pytest.mark.parametrize(("tail", "said"), [
    ('{"value": 1.e5}', "Expecting ',' delimiter"),  # no digit after the point: no number
    ('{"value": 01}', "Expecting ',' delimiter"),    # a leading zero
    ('{"value": trust}', "Expecting value"),          # no JSON word
    ('[1, 2 3', "Expecting ',' delimiter"),           # a comma missing, whole values around it
])
def test_a_profile_with_a_bad_value_is_not_told_cut_short(tmp_path, capsys, monkeypatch, tail,
                                                          said):
    """A value JSON has no reading of, at the file's end too, is still named as the parser
    names it: only text a longer file would complete is taken for a cut."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text('{"schema": "tiersim.profile/1",\n "overhead_s": ' + tail)
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("profile: null", "profile: p.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: line 7: profile: p.json: line 2: not valid JSON ({said})"


@pytest.mark.parametrize(("value", "key", "digits"), [
    ('{"value": ' + "9" * 5000 + "}", "overhead_s.value", "5,000"),
    ('{"value": 0, "per_layer_s": [1, -' + "1" * 4400 + "]}", "overhead_s.per_layer_s[1]",
     "4,400"),
])
def test_a_profile_number_of_more_than_4300_digits_names_its_key(tmp_path, capsys, monkeypatch,
                                                                 value, key, digits):
    """A JSON whole number of more than 4,300 digits read "a number too long to read (Exceeds
    the limit (4300 digits) for integer string conversion: value has 5000 digits); not a
    profile": Python's words, no place, and a verdict on a file that is a profile. It names
    the key, as the profile's other checks do."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text('{"schema": "tiersim.profile/1", "overhead_s": ' + value
                                     + "}")
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("profile: null", "profile: p.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 7: profile: p.json: key '{key}': a whole number of "
                    f"{digits} digits is beyond any value; fix the number")


def test_a_profile_number_beyond_a_floats_range_is_named_as_written(tmp_path, capsys,
                                                                    monkeypatch):
    """A profile's ``1e400`` (read as infinite) was "must be a number of seconds from 0 to
    3600 (got inf)"; the file holds no infinity. It is named as written."""
    monkeypatch.chdir(tmp_path)
    shipped = (ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json").read_text()
    assert shipped.count('"overhead_s":{"value":0.0,') == 1
    (tmp_path / "p.json").write_text(shipped.replace('"overhead_s":{"value":0.0,',
                                                     '"overhead_s":{"value":1e400,'))
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("profile: null", "profile: p.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == ("Error: s.yaml: line 7: profile: p.json: overhead_s.value: must be a number "
                    "of seconds from 0 to 3600 (got 1e400)")


@pytest.mark.parametrize(("key", "value"), [("vocab_size", "1e400"), ("head_dim", "-1E+999")])
def test_a_config_number_beyond_a_floats_range_is_named_as_written(tmp_path, capsys,
                                                                   monkeypatch, key, value):
    """A config.json's ``"vocab_size": 1e400`` was "must be a positive integer (got inf)"."""
    monkeypatch.chdir(tmp_path)
    config = json.loads((ROOT / "benchmarks" / "data" / "configs" / "Qwen3-235B-A22B-FP8" /
                         "config.json").read_text())
    config[key] = 0
    (tmp_path / "config.json").write_text(json.dumps(config).replace(f'"{key}": 0',
                                                                     f'"{key}": {value}'))
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("model: Qwen3-Coder-30B-A3B",
                                                       "model: config.json", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 5: model: config.json: key '{key}': must be a "
                    f"positive integer (got {value})")


@pytest.mark.parametrize(("text", "said"), [
    ("[]", "NVIDIA's quantisation config must be a JSON object"),
    ("", "empty; NVIDIA's quantisation config is a UTF-8 JSON file"),
])
def test_a_broken_hf_quant_config_is_not_called_a_model_config(tmp_path, capsys, monkeypatch,
                                                               text, said):
    """A ModelOpt checkpoint's ``hf_quant_config.json`` holding ``[]`` read "a model config
    must be a JSON object", of the file beside the model config: it is named as what it is."""
    monkeypatch.chdir(tmp_path)
    config = json.loads((ROOT / "benchmarks" / "data" / "configs" / "Qwen3-235B-A22B-FP8" /
                         "config.json").read_text())
    del config["quantization_config"]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    (tmp_path / "m" / "hf_quant_config.json").write_text(text)
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("model: Qwen3-Coder-30B-A3B", "model: m",
                                                       1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: line 5: model: m/hf_quant_config.json: {said}"


@pytest.mark.parametrize(("written", "name", "what"), [
    ("' h200_aiconfigurator_vllm'", " h200_aiconfigurator_vllm", "the bundled profile"),
    ("'h200_aiconfigurator_vllm\\t'", "h200_aiconfigurator_vllm\t", "the bundled profile"),
    ("'p.json '", "p.json ", "the file"),
])
def test_a_profile_name_with_a_space_around_it_says_so(tmp_path, capsys, monkeypatch, written,
                                                       name, what):
    """``profile: ' h200_aiconfigurator_vllm'`` read "h200_aiconfigurator_vllm: no such
    profile file or bundled profile; bundled: ..., h200_aiconfigurator_vllm": the name it
    refused listed as there, the space that made the difference invisible."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text("{}")
    text = TINY_TEXT.replace("profile: null", f'profile: "{written[1:-1]}"', 1)
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    # the name as YAML writes it ("h200_aiconfigurator_vllm\\t"), not Python's repr (review49)
    assert line == (f"Error: s.yaml: line 7: profile: {yaml_written(name)} has a space (or "
                    f"another blank) at its start or end, which {what} {name.strip()} has not; "
                    "remove it")


@pytest.mark.parametrize(("name", "what"), [
    ("azure2023_code.parquet ", "the bundled trace azure2023_code.parquet"),
    (" t.csv", "the file t.csv"),
])
def test_a_trace_path_with_a_space_around_it_says_so(tmp_path, capsys, monkeypatch, name, what):
    """``trace.path: "azure2023_code.parquet "`` read "trace file not found in . and the
    bundled traces/; bundled traces: azure2023_code.parquet, ...": the name it refused listed
    as there, the space that made the difference unseen."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,10,5\n")
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("path: azure2023_code.parquet",
                                                       f'path: "{name}"', 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 10: trace.path: {name}: trace file not found: "
                    f"{yaml_written(name)} has a space (or another blank) at its start or end, "
                    f"which {what} has not; remove it")
