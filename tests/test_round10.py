"""Round 10 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace.loader import load_trace
from tiersim.trace.source import read_raw


@pytest.mark.parametrize("column", ["session_id", "request_id"])
def test_an_id_column_of_booleans_is_refused(tmp_path, column):
    """True and False were read as ids 1 and 0: two sessions (or requests) named by a flag."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": 10, "output_tokens": 5,
                       "session_id": [3, 4], "step": 0})
    df[column] = [True, False]
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    label = column.replace("_", " ")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 1, column '{column}': {label} must be a whole "
                              "number, not true/false; write the ids as numbers")
    read_raw(path)  # the raw reader keeps the file as it is


def test_brackets_inside_json_strings_neither_hide_nor_add_nesting(tmp_path):
    """Closing brackets in a string cancelled real nesting (a segfault in the reader at 100,000
    levels); opening ones in a prompt refused a valid trace as too deep."""
    hidden = tmp_path / "hidden.jsonl"
    hidden.write_text('{"timestamp":0,"input_length":10,"output_length":5,"p":"' + "}" * 100
                      + '","x":' + "[" * 100 + "]" * 100 + "}\n")
    with pytest.raises(TraceError) as err:
        read_raw(hidden)
    assert str(err.value) == f"{hidden}: line 1 is nested more than 32 levels deep; not a trace"
    prompt = tmp_path / "prompt.jsonl"
    prompt.write_text('{"arrival_s":0,"input_tokens":10,"output_tokens":5,"prompt":"'
                      + "[" * 40 + '"}\n')
    df, _ = read_raw(prompt)
    assert df["prompt"][0] == "[" * 40


def test_a_quoted_newline_cannot_hide_a_csv_headers_columns(tmp_path):
    """The column check read the first physical line only: 20,000 columns after a quoted
    newline hung the reader."""
    path = tmp_path / "wide.csv"
    names = ",".join(f"c{i}" for i in range(1200))
    path.write_text(f'"arrival_s\n",input_tokens,output_tokens,{names}\n'
                    + "0,10,5," + ",".join("1" for _ in range(1200)) + "\n")
    with pytest.raises(TraceError) as err:
        read_raw(path)
    assert str(err.value) == (f"{path}: has 1,203 columns or more, above the 1,000 a trace may "
                              "have; not a trace")


def test_a_constant_feature_too_large_for_the_solver_is_refused(tmp_path):
    """A constant feat_x of 1e100 (inside the earlier bound) left the solver stuck where only
    SIGKILL stopped it; 1e50 raised liblinear's "frozen fit" traceback."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": 10, "output_tokens": 5,
                       "feat_x": 1e50})
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 1, column 'feat_x': feature value must be between "
                              "-1e+15 and 1e+15 (the classifier's solver stalls on larger ones); "
                              "rescale the column (got 1e+50); fix or remove the row")
