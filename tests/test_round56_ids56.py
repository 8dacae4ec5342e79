"""Round 56, ids56: text session ids where the file types them.

Hex session ids ("a3f9c2d1") with one of digits only ("49201837"; about 2.3 % of 8-character
hex ids are) were refused as names beside a number in every format. A Parquet string column
and a JSON string value say the ids are text: there all are names. A CSV does not (its
unquoted 49201837 and quoted "49201837" read alike), and is refused as before.
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from test_round56_left56_session_names import _said  # one trace inspect, one line

from tiersim.trace import read_trace
from tiersim.trace.loader import TraceWarning

HEX = ["a3f9c2d1", "49201837", "a3f9c2d1"]


def _trace(sessions, steps) -> pd.DataFrame:
    n = len(sessions)
    return pd.DataFrame(
        {
            "arrival_s": [float(k) for k in range(n)],
            "input_tokens": [10] * n,
            "output_tokens": [5] * n,
            "session_id": sessions,
            "step": steps,
        }
    )


def _write(frame: pd.DataFrame, path) -> None:
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    else:
        frame.to_csv(path, index=False)


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        return read_trace(path)


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_typed_text_ids_with_an_all_digit_one_are_names(tmp_path, suffix):
    path = tmp_path / f"hex.{suffix}"
    _write(_trace(HEX, [0, 0, 1]), path)
    table = _read(path).table
    assert table["session_id"].tolist() == [0, 1, 0]
    assert _read(path).origin.session_names == ("a3f9c2d1", "49201837")


def test_a_dictionary_column_of_hex_ids_is_read_as_names(tmp_path):
    path = tmp_path / "hex.parquet"
    frame = _trace(HEX, [0, 0, 1])
    frame["session_id"] = frame["session_id"].astype("category")
    frame.to_parquet(path)
    assert _read(path).table["session_id"].tolist() == [0, 1, 0]


def test_the_all_digit_names_session_is_named_as_written(tmp_path, capsys):
    path = tmp_path / "hex.parquet"
    _write(_trace(["a3f9c2d1", "49201837", "49201837"], [0, 0, 0]), path)
    assert _said(capsys, path) == (
        f"Error: {path}: row 3, column 'step': session '49201837' has step 0 twice"
    )


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_typed_text_of_numbers_only_is_read_as_numbers(tmp_path, suffix):
    """A column of numbers written as text keeps its numbers, as before."""
    path = tmp_path / f"n.{suffix}"
    _write(_trace(["7", "5", "7"], [0, 0, 1]), path)
    table = _read(path).table
    assert table["session_id"].tolist() == [7, 5, 7]
    assert _read(path).origin.session_names is None


def test_a_csv_mixing_hex_and_digits_is_still_refused(tmp_path, capsys):
    """A CSV does not say whether 49201837 was quoted: refused naming both fixes, as before."""
    path = tmp_path / "hex.csv"
    _write(_trace(HEX, [0, 0, 1]), path)
    assert _said(capsys, path) == (
        f"Error: {path}: row 1, column 'session_id': session id is a name (got text of 8 "
        "characters) where row 2's is a number; give every session id as a number, or every "
        "one as a name that is no number (names are numbered in order of first appearance) "
        "(file line 2)"
    )


# ------------------------------------------------ logged formats name a session as written

LOGGED = {
    "azure": ("TIMESTAMP,ContextTokens,GeneratedTokens", "2024-05-10 00:00:0{k}"),
    "burstgpt": ("Timestamp,Request tokens,Response tokens", "{k}"),
}


@pytest.mark.parametrize("name", sorted(LOGGED))
def test_a_logged_csv_names_its_text_session_as_written(tmp_path, capsys, name):
    """The error named session 1, the number tiersim gave conv_b. The first row failed (0
    output tokens) and is dropped: the names are those of the rows kept (conv_a was 0)."""
    head, time = LOGGED[name]
    rows = [("conv_x", 0), ("conv_a", 5), ("conv_b", 5), ("conv_b", 5)]
    path = tmp_path / f"{name}.csv"
    path.write_text(
        f"{head},session_id,step\n"
        + "".join(f"{time.format(k=k)},10,{out},{sid},0\n" for k, (sid, out) in enumerate(rows))
    )
    assert _said(capsys, path) == (
        f"Error: {path}: row 4, column 'step': session 'conv_b' has step 0 twice (file line 5)"
    )


def test_mooncake_names_its_text_session_as_written(tmp_path, capsys):
    path = tmp_path / "m.jsonl"
    rows = [("conv_a", 0), ("conv_b", 1), ("conv_b", 2)]
    path.write_text(
        "".join(
            json.dumps(
                {"timestamp": t, "input_length": 10, "output_length": 5, "session_id": s, "step": 0}
            )
            + "\n"
            for s, t in rows
        )
    )
    assert _said(capsys, path) == (
        f"Error: {path}: row 3, column 'step': session 'conv_b' has step 0 twice (file line 3)"
    )


# ------------------------------------------- ids that differ only by spaces: one session


def test_ids_differing_only_by_spaces_are_one_session_with_a_note(tmp_path):
    """' conv_a' (a CSV written with ', ' between cells) and 'conv_a' were merged without a
    word; they still are one session (a number's spaces are not read either), with a note."""
    path = tmp_path / "s.csv"
    path.write_text(
        "arrival_s,input_tokens,output_tokens,session_id,step\n"
        "0,10,5,conv_a,0\n1,10,5, conv_a,1\n2,10,5,conv_b,0\n3,10,5,conv_b ,1\n"
    )
    trace = _read(path)
    assert trace.table["session_id"].tolist() == [0, 0, 1, 1]
    assert trace.origin.session_names == ("conv_a", "conv_b")
    assert (
        "column 'session_id' writes 2 ids with spaces around it and without (first 'conv_a' "
        "and ' conv_a'): each read as one session, as ids are compared without the spaces "
        "around them (a CSV's ', conv_0' holds ' conv_0'); give different sessions different ids"
    ) in trace.origin.notes


def test_ids_without_spaces_get_no_spaces_note(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(
        "arrival_s,input_tokens,output_tokens,session_id,step\n0,10,5,conv_a,0\n1,10,5,conv_b,0\n"
    )
    assert not [n for n in _read(path).origin.notes if "spaces around" in n]
