"""Round 51, hostile input (helper fuzz17). Each test names what a user saw before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"



def _edited_tiny_error(tmp_path, capsys, monkeypatch, old: str, new: str) -> str:
    """The one error line of ``tiersim run`` on a copy of the bundled tiny.yaml with ``old``
    replaced by ``new``; the run must make no output folder."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert not (tmp_path / "o").exists()
    return line

@pytest.mark.parametrize(("old", "new", "said"), [
    ("seed: 0", "5: 7", "line 4: key 5 is a number, where the keys are names; write the name, "
     "or quote it ('5') if it is one"),
    ("  ttft_p99_s: 2.0", "  ttft_p99_s: 2.0\n  5: 3", "line 29: slo: key 5 is a number, where "
     "the keys are names; write the name, or quote it ('5') if it is one"),
    ("    replicas: 1", "    replicas: 1\n    5: 3", "line 17: tiers[0]: key 5 is a number, "
     "where the keys are names; write the name, or quote it ('5') if it is one"),
])
def test_a_whole_number_key_of_a_scenario_map_is_named_as_a_number(tmp_path, capsys, monkeypatch,
                                                                    old, new, said):
    """A whole number key (``5: 7`` among a scenario's keys, or in its ``slo:`` or a tier) was
    told "line 4: [5]: keys should be strings (got 7)": pydantic's words, the key shown as a
    list index and the *value* quoted as what was got. A float, date or true key was already
    told that YAML reads it as no name; a whole number is now told so too."""
    line = _edited_tiny_error(tmp_path, capsys, monkeypatch, old, new)
    assert line == f"Error: s.yaml: {said}"


SKIP_WORDS = ("must be a whole number of tokens (prompt + output), from 1 to 100,000,000: the "
              "longest request to keep, e.g. the model's context (163840), or remove the key to "
              "keep every request")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("  window: [240, 360]", "  window: [240, 360]\n  skip_longer_than: 2e9",
     f"line 12: trace.skip_longer_than: {SKIP_WORDS} (got 2e9)"),
    ("  window: [240, 360]", "  window: [240, 360]\n  skip_longer_than: 1e308",
     f"line 12: trace.skip_longer_than: {SKIP_WORDS} (got 1e308)"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 2e9",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 2e9): it is a share of "
     "the GPU's memory, such as 0.9"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 1e308",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 1e308): it is a share of "
     "the GPU's memory, such as 0.9"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 0.99999999999999999999",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 0.99999999999999999999, 1 "
     "as a float): vLLM refuses to start where the GPU's free memory is less than that share "
     "of its total, and its own CUDA context is already there; use at most 0.99"),
])
def test_a_refused_number_is_quoted_as_the_file_writes_it(tmp_path, capsys, monkeypatch, old,
                                                          new, said):
    """``skip_longer_than: 2e9`` was told "(got 2000000000.0)" and ``1e308`` "(got 1e+308)",
    as Python writes the floats; so was ``gpu_memory_utilization: 2e9``. Values are spelt as
    the file writes them, as every other key's bound already was."""
    line = _edited_tiny_error(tmp_path, capsys, monkeypatch, old, new)
    assert line == f"Error: s.yaml: {said}"


@pytest.mark.parametrize(("second", "kind"), [
    ("[1, 2]", "a list"), ("7", "a number"), ('"x"', "text"), ("true", "true/false"),
])
def test_a_json_line_that_is_no_object_says_what_it_is(tmp_path, capsys, second, kind):
    """A JSON-lines line holding a list, a number, text or true was told "not a JSON object
    (not an object)": the same words twice, and nothing about what the line held."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2}\n' + second + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: row 2: is {kind}, not a JSON object; each line must be "
                    "one JSON object (file line 2)")


@pytest.mark.parametrize("text", ["[1, 2, 3]\n", "[0, 5, 2]\r\n[1, 5, 2]\n"])
def test_a_file_of_json_lists_is_not_told_it_has_no_trace_column(tmp_path, capsys, text):
    """A file whose first line is a JSON list (``[1, 2, 3]``) was read as a CSV and told "not
    a trace: none of its 3 column name(s) is a trace column", the list's items taken for the
    header's names."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(text)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: its first line is a JSON list, not a JSON object; tiersim "
                    "reads JSON lines (one object per line, keys naming the columns) or a CSV (a "
                    "header of column names): write the trace so (file line 1)")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("seed: 0", "se\u0435d: 0", "line 4: se\u0435d: unknown key (did you mean 'seed'? its "
     "'\u0435' is U+0435 CYRILLIC SMALL LETTER IE, not an ASCII character)"),
    ("  ttft_p99_s: 2.0", "  ttft_p99_\u0455: 2.0", "line 28: slo.ttft_p99_\u0455: unknown key "
     "(did you mean 'ttft_p99_s'? its '\u0455' is U+0455 CYRILLIC SMALL LETTER DZE, not an "
     "ASCII character)"),
    ("seed: 0", "\u200bseed: 0", "line 4: \\u200bseed: unknown key (did you mean 'seed'? its "
     "'\\u200b' is U+200B ZERO WIDTH SPACE, not an ASCII character)"),
])
def test_a_key_with_a_look_alike_letter_names_it(tmp_path, capsys, monkeypatch, old, new, said):
    """A key pasted with a Cyrillic letter that looks Latin (``seеd``) was told "seеd: unknown
    key (did you mean 'seed'?)": the two read the same, and nothing said where they differ."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("key", "what"), [("model", "a model config"), ("profile", "a profile")])
def test_a_file_that_is_no_json_at_all_says_so(tmp_path, capsys, monkeypatch, key, what):
    """A scenario given as a tier's model config or as a profile (``model: s.yaml``) was told
    "line 1: not valid JSON (Expecting value)": the parser's words, and no fix named. Nothing
    of the file is echoed (it may be any file: /etc/passwd)."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text()
    old = {"model": "model: Qwen3-Coder-30B-A3B", "profile": "profile: null"}[key]
    (tmp_path / "other.yaml").write_text("secret: 1\n")
    (tmp_path / "s.yaml").write_text(text.replace(old, f"{key}: other.yaml", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    at = {"model": 5, "profile": 7}[key]
    assert line == (f"Error: s.yaml: line {at}: {key}: other.yaml: line 1: not JSON (no JSON "
                    f"value opens the file: another kind of file?); {what} is a UTF-8 JSON file")
    assert "secret" not in line


@pytest.mark.parametrize(("given", "what"), [
    ("tiny ", "the bundled scenario tiny.yaml"),
    ("s.yaml ", "the file s.yaml"),
    (" s.yaml", "the file s.yaml"),
    ("sub/s.yaml ", "the file sub/s.yaml"),
])
def test_a_scenario_argument_with_a_space_around_it_says_so(tmp_path, capsys, monkeypatch, given,
                                                            what):
    """``tiersim run "tiny "`` read "file not found, in this folder or among the bundled
    scenarios (..., tiny.yaml, ...)": the name it refused listed as there, the space that made
    the difference unseen (a trace path's and a profile's were already told so)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    for path in (tmp_path / "s.yaml", tmp_path / "sub" / "s.yaml"):
        path.write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "run", given, "--out", "o"))
    assert line == (f"Error: {given}: file not found: '{given}' has a space (or another blank) at "
                    f"its start or end, which {what} has not; remove it")
    assert not (tmp_path / "o").exists()


def test_a_report_folder_with_a_space_around_it_says_so(tmp_path, capsys, monkeypatch):
    """``tiersim report "r "`` read "no such folder; give the --out folder of a run, sweep or
    plan", where the folder r was there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").mkdir()
    line = one_error_line(*run_cli(capsys, "report", "r "))
    assert line == ("Error: r : no such folder: 'r ' has a space (or another blank) at its start "
                    "or end, which the folder r has not; remove it")


def test_a_model_config_path_with_a_space_around_it_says_so(tmp_path, capsys, monkeypatch):
    """``model: "c.json "`` read "unknown model 'c.json '; known models: ...", and ``model:
    "m/c.json "`` "cannot read a model config (No such file or directory)", where the file
    was there; the scenario is read from another folder, so the file is found beside it."""
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "d" / "m").mkdir(parents=True)
    (tmp_path / "d" / "m" / "c.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "vocab_size": 128256, "max_position_embeddings": 131072}))
    (tmp_path / "d" / "m" / "c.json").replace(tmp_path / "d" / "c.json")
    text = (SCENARIOS / "tiny.yaml").read_text()
    for name in ("c.json", "m/c.json"):
        if name == "m/c.json":
            (tmp_path / "d" / "c.json").replace(tmp_path / "d" / "m" / "c.json")
        (tmp_path / "d" / "s.yaml").write_text(text.replace("model: Qwen3-Coder-30B-A3B",
                                                            f'model: "{name} "', 1))
        line = one_error_line(*run_cli(capsys, "run", "d/s.yaml", "--out", "o"))
        assert line.startswith(f"Error: d/s.yaml: line 5: model: d/{name} : not found: "
                               f"'d/{name} ' has a space (or another blank) at its start or end, "
                               f"which the file d/{name} has not; remove it")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("window: [240, 360]", "window: [240, 360, 400]",
     "line 11: trace.window: must have at most 2 item(s) (it has 3)"),
    ("seed: 0", "seed: 0\nlimits: {gpus_per_replica: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, "
     "13, 14, 15, 16, 17]}", "line 5: limits.gpus_per_replica: must have at most 16 item(s) "
     "(it has 17)"),
])
def test_a_list_too_long_is_told_in_the_scenarios_words(tmp_path, capsys, monkeypatch, old, new,
                                                        said):
    """``window: [240, 360, 400]`` read "tuple should have at most 2 items after validation,
    not 3": pydantic's words ("after validation", a tuple the file does not write)."""
    line = _edited_tiny_error(tmp_path, capsys, monkeypatch, old, new)
    assert line == f"Error: s.yaml: {said}"
