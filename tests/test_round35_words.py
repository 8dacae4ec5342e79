"""Round 35 (words): user-facing lines that spoke for one case of several. Each a failure
reproduced from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

#: A BurstGPT CSV's header and 3 rows.
BURSTGPT = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            + "".join(f"{i * 0.5},ChatGPT,{100 + i},20,{120 + i},Conversation log\n"
                      for i in range(3)))


def _dropped_note(tmp_path, capsys, rows) -> str:
    """``tiersim run`` of one bf16 tier capped at max_model_len 1,000 (its model takes
    262,144) over ``rows``: the dropped note's tail, from its first request on."""
    from test_round23_extremes import _run

    code, err = _run(tmp_path, capsys, rows, {"scheduler": {"max_model_len": 1000}})
    assert code == 0, err
    return err[err.index("; the first is"):]


def test_dropped_note_within_then_beyond_the_models_context_gives_each_its_fix(
        tmp_path, capsys):
    """The first dropped request (2,010 tokens) fits its model's 262,144: the note told every
    dropped one to "raise that", which no max_model_len does for the 10,000,010-token one."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 2000, 10),
                                            (2, 2.0, 10**7, 10)])
    assert tail == (
        "; the first is request_id 1 (2,010 tokens on tier bf16, which serves at most 1,000, "
        "its scheduler.max_model_len); by tier and fix: 1 on tier bf16 (2,010 tokens) "
        "exceeds its scheduler.max_model_len (1,000): raise that (up to its model's context, "
        "262,144 tokens); 1 on tier bf16 (10,000,010 tokens) exceeds its model's maximum "
        "context (262,144 tokens), which no max_model_len serves: serve it on a model with a "
        "longer context; or shorten or remove such rows")


def test_dropped_note_beyond_then_within_the_models_context_gives_each_its_fix(
        tmp_path, capsys):
    """The reverse: the first is beyond the model's context, and the note's "no max_model_len
    serves" hid that raising it serves the 2,010-token ones (counted together)."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 10**7, 10),
                                            (2, 2.0, 2000, 10), (3, 3.0, 3000, 10)])
    assert tail == (
        "; the first is request_id 1 (10,000,010 tokens on tier bf16, which serves at most "
        "1,000, its scheduler.max_model_len); by tier and fix: 1 on tier bf16 "
        "(10,000,010 tokens) exceeds its model's maximum context (262,144 tokens), which no "
        "max_model_len serves: serve it on a model with a longer context; 2 on tier bf16 (up "
        "to 3,010 tokens) exceed its scheduler.max_model_len (1,000): raise that (up to its "
        "model's context, 262,144 tokens); or shorten or remove such rows")


def test_dropped_note_with_one_fix_for_all_keeps_the_first_requests_line(tmp_path, capsys):
    """Two dropped, both within the model's context: one fix serves them all, told as
    before."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 2000, 10),
                                            (2, 2.0, 5000, 10)])
    assert tail == ("; the first is request_id 1 (2,010 tokens on tier bf16, which serves at "
                    "most 1,000, its scheduler.max_model_len): raise that (up to its model's "
                    "context), or shorten or remove such rows")


@pytest.mark.parametrize("comment", ["# BurstGPT trace, 2 months", "#"])
def test_a_comment_line_above_a_csv_header_is_named_with_the_fix(tmp_path, capsys, comment):
    """A trace whose first line is a ``# comment`` read "row 1: has 6 fields where the header
    has 1 (file line 2)", no word of the comment, which pandas took as the header."""
    path = tmp_path / "b.csv"
    path.write_text(f"{comment}\n{BURSTGPT}")
    fields = "2 fields" if "," in comment else "1 field"
    want = (f"Error: {path}: its first line ({comment!r}) looks like a comment, not the header: "
            f"it has {fields} where the next line has 6; remove the line, so that the header "
            "comes first (file line 1)")
    assert one_error_line(*run_cli(capsys, "trace", "inspect", path)) == want
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(path)}))
    assert one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == want


def test_a_header_whose_first_column_starts_with_a_hash_is_read(tmp_path, capsys):
    """A header naming a first column ``#`` (a row number), its rows as wide: no comment."""
    path = tmp_path / "a.csv"
    path.write_text("#,TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "1,2024-05-10 00:00:00.5,100,5\n2,2024-05-10 00:00:01.5,200,5\n")
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 0, err


@pytest.mark.parametrize("text, where", [
    ('id,note\n1,"two\nlines"\n2,ok\n3,"open\n4,x\n', "the row on file line 5"),
    ('"id,note\n1,x\n', "the header on file line 1"),
])
def test_a_rows_file_with_an_unclosed_quote_names_its_line_and_the_fix(tmp_path, text, where):
    """fidelity_silicon.py --rows-file of a CSV with a quote never closed gave pandas' words
    ("not a CSV of measured rows (ParserError: Error tokenizing data. C error: EOF inside
    string starting at row 3)", a record count, not the file line 5, after a quoted line
    break); it names the file line and the fix, as the trace reader does."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    path = tmp_path / "s.csv"
    path.write_text(text)
    with pytest.raises(SystemExit) as exc:
        fs.main(["--rows-file", str(path), "--jobs", "1"])
    fs.DATA_FILES.update(rows=None, aic=None)
    assert str(exc.value) == (f"{path}: a quote in {where} is never closed (the file ends "
                              "inside it); close the quote, or write a quote inside a quoted "
                              'cell as two ("")')
