"""Round 56, fresh56: text session ids, as aiperf's traces write them (``"session_id":
"conv_0"``), are read as whole numbers in order of first appearance, with a note saying so;
they were refused ("session id is not a number ... write a number"), which left a user of
aiperf's files to renumber them by hand. A blank id is still refused as a missing one, and
numbers written as text are checked as numbers, as before.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.trace import load_trace
from tiersim.trace.canonical import TEXT_IDS_NOTE
from tiersim.trace.loader import TraceWarning

ROWS = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def _csv(path, ids) -> str:
    body = "".join(f"{k * 0.5},100,10,{sid},{step}\n" for k, (sid, step) in enumerate(_steps(ids)))
    path.write_text(ROWS + body)
    return str(path)


def _load(path) -> pd.DataFrame:
    with pytest.warns(TraceWarning, match="holds text ids"):
        return load_trace(path)


def _steps(ids) -> list[tuple[str, int]]:
    """Each id with its step: the count of that id's rows before it."""
    seen: dict[str, int] = {}
    out = []
    for sid in ids:
        out.append((sid, seen.get(sid, 0)))
        seen[sid] = seen.get(sid, 0) + 1
    return out


def test_text_ids_are_numbered_in_order_of_first_appearance(tmp_path):
    df = _load(_csv(tmp_path / "t.csv", ["conv-b", "conv-a", "conv-b"]))
    assert df["session_id"].tolist() == [0, 1, 0]
    assert df["session_id"].dtype == "int64"


def test_inspect_says_how_text_ids_were_read(tmp_path):
    out = run_cli(
        "trace", "inspect", _csv(tmp_path / "t.csv", ["conv-b", "conv-a", "conv-b"]), "--json"
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["notes"][0] == (
        "column 'session_id' holds text ids (as aiperf writes them): read as the whole numbers "
        "0 to 1, one for each of its 2 distinct ids in the order each first appears "
        "(a run that replays the sessions writes these numbers in requests.parquet's "
        "session_id column)"
    )


def test_a_mooncake_file_with_aiperf_ids_reads_with_the_note(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [
        {
            "timestamp": 0,
            "input_length": 100,
            "output_length": 10,
            "session_id": "conv_0",
            "step": 0,
        },
        {
            "timestamp": 500,
            "input_length": 120,
            "output_length": 10,
            "session_id": "conv_1",
            "step": 0,
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run_cli("trace", "inspect", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert TEXT_IDS_NOTE.format(last=1, ids="2 distinct ids") in json.loads(out.stdout)["notes"]


def test_a_blank_text_id_is_refused_as_missing(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [
        {"timestamp": 0, "input_length": 100, "output_length": 10, "session_id": "conv_0"},
        {"timestamp": 5, "input_length": 100, "output_length": 10, "session_id": "  "},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run_cli("trace", "inspect", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().endswith(
        "row 2, column 'session_id': missing session id; fill it in or remove the row (file line 2)"
    )


def test_a_decimal_written_as_text_is_still_checked_as_a_number(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"timestamp": 0, "input_length": 100, "output_length": 10, "session_id": "1.5"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run_cli("trace", "inspect", str(path))
    assert out.returncode == 1
    assert out.stderr.strip().endswith(
        "row 1, column 'session_id': session id must be a whole number (got 1.5); round it "
        "(file line 1)"
    )


def test_parquet_categories_number_as_the_csv_does(tmp_path):
    ids = ["z", "y", "z", "x", "y"]
    csv = _load(_csv(tmp_path / "t.csv", ids))
    frame = pd.DataFrame(
        {
            "arrival_s": [k * 0.5 for k in range(len(ids))],
            "input_tokens": 100,
            "output_tokens": 10,
            "session_id": pd.Categorical(ids),
            "step": [s for _, s in _steps(ids)],
        }
    )
    frame.to_parquet(tmp_path / "t.parquet")
    parquet = _load(str(tmp_path / "t.parquet"))
    assert parquet["session_id"].tolist() == csv["session_id"].tolist() == [0, 1, 0, 2, 1]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["a", "conv_1", "b-2", "zz"]), min_size=1, max_size=12))
def test_numbering_is_first_appearance_and_one_to_one(tmp_path_factory, ids):
    df = _load(_csv(tmp_path_factory.mktemp("t") / "t.csv", ids))
    order = list(dict.fromkeys(ids))
    assert df["session_id"].tolist() == [order.index(sid) for sid in ids]


def test_a_column_mixing_numbers_and_text_is_still_refused(tmp_path):
    # a text among numbers is likelier a typo than a name: refused at it, as before, naming
    # the first number and both fixes since review56c (it said "write a number" alone)
    out = run_cli("trace", "inspect", _csv(tmp_path / "t.csv", ["3", "1", "x", "1"]))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().endswith(
        "row 3, column 'session_id': session id is a name (got text of 1 character) where row "
        "1's is a number; give every session id as a number, or every one as a name that is no "
        "number (names are numbered in order of first appearance) (file line 4)"
    )
