"""A missing hash list, a missing id inside one, or a missing prompt hash is refused with the same
line from a JSON-lines, CSV or Parquet trace (only the CSV and JSON lines add their file line);
none is skipped, which would move later ids to other blocks or merge two prompts' keys."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write_frame

from tiersim.errors import TraceError
from tiersim.trace import load_trace

MOONCAKE = ("timestamp", "input_length", "output_length", "hash_ids")
CANONICAL = ("arrival_s", "input_tokens", "output_tokens", "prefix_hashes")


def write(tmp_path, kind: str, columns: tuple, rows: list[list]):
    """``rows`` (lists of ids or None as the last cell) as a JSON-lines, CSV or Parquet trace."""
    path = tmp_path / f"t.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(dict(zip(columns, r, strict=True))) + "\n"
                                for r in rows))
    elif kind == "csv":
        cells = ["" if r[-1] is None else
                 '"[' + ", ".join("null" if v is None else str(v) for v in r[-1]) + ']"'
                 for r in rows]
        path.write_text(",".join(columns) + "\n" + "".join(
            ",".join(str(v) for v in r[:-1]) + f",{cell}\n" for r, cell in zip(rows, cells)))
    else:
        data = {c: [r[k] for r in rows] for k, c in enumerate(columns)}
        data[columns[-1]] = pa.array(data[columns[-1]], type=pa.list_(pa.int64()))
        pq.write_table(pa.table(data), path)
    return path


def error_of(path) -> str:
    """The one-line TraceError that loading ``path`` raises."""
    with pytest.raises(TraceError) as info:
        load_trace(path)
    return str(info.value)


def line(kind: str, n: int) -> str:
    """The file-line suffix of a text trace's data row ``n`` (Parquet has none)."""
    return {"jsonl": f" (file line {n})", "csv": f" (file line {n + 1})"}.get(kind, "")


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("columns", [MOONCAKE, CANONICAL], ids=["hash_ids", "prefix_hashes"])
def test_a_missing_hash_list_is_the_same_error_in_every_format(tmp_path, kind, columns):
    path = write(tmp_path, kind, columns, [[0, 1500, 2, [1, 2]], [5, 1500, 2, None]])
    name = columns[-1]
    assert error_of(path) == (f"{path}: row 2, column '{name}': missing {name}; write [] for a "
                              f"request with no prefix blocks{line(kind, 2)}")


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("columns", [MOONCAKE, CANONICAL], ids=["hash_ids", "prefix_hashes"])
def test_a_null_id_inside_a_list_is_the_same_error_in_every_format(tmp_path, kind, columns):
    path = write(tmp_path, kind, columns, [[0, 1500, 2, [1, 2]], [5, 1500, 2, [1, None, 2]]])
    # the position counts from 1 (round 49: it counted from 0, 'position 1' for the second)
    assert error_of(path) == (f"{path}: row 2, column '{columns[-1]}': missing hash id (a null "
                              "at position 2 of the list); every id is a whole number"
                              f"{line(kind, 2)}")


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("columns", [MOONCAKE, CANONICAL], ids=["hash_ids", "prefix_hashes"])
def test_every_format_reads_the_same_hash_lists(tmp_path, kind, columns):
    """A Mooncake CSV's hash_ids are read as its JSON lines' are (they were refused as text)."""
    path = write(tmp_path, kind, columns, [[0, 1500, 2, [1, 2]], [5, 1500, 2, []]])
    assert [h.tolist() for h in load_trace(path)["prefix_hashes"]] == [[1, 2], []]


@pytest.mark.parametrize(("cell", "fault"), [
    ('"[1, , 2]"', "an empty item at position 2"),  # counted from 1 since round 49
    ('"[1, 2,]"', "an empty item at position 3"),
    ('"[1, NaN, 2]"', "a null at position 2"),
])
def test_an_empty_item_in_a_csv_list_is_refused_not_skipped(tmp_path, cell, fault):
    """``[1, , 2]`` was read as [1, 2]: block 2's id moved to block 1."""
    path = tmp_path / "c.csv"
    path.write_text(f"{','.join(CANONICAL)}\n0,1500,2,\"[1, 2]\"\n1,1500,2,{cell}\n")
    assert error_of(path) == (f"{path}: row 2, column 'prefix_hashes': missing hash id ({fault} "
                              "of the list); every id is a whole number (file line 3)")


def test_single_numbers_in_a_csv_hash_column_are_one_id_lists(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(f"{','.join(CANONICAL)}\n0,600,2,7\n1,600,2,9\n")
    assert [h.tolist() for h in load_trace(path)["prefix_hashes"]] == [[7], [9]]


def prompt_hash_trace(tmp_path, kind: str):
    """A canonical trace whose second row's prompt_hash is null (an empty CSV cell)."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [3, 3, 3],
                       "output_tokens": [2, 2, 2],
                       "prompt_hash": pd.array([12345678901234567, None, 12345678901234569],
                                               dtype="Int64")})
    path = write_frame(df, tmp_path / f"p.{kind}")
    return path


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_a_missing_prompt_hash_is_the_same_error_in_every_format(tmp_path, kind):
    """It was read as NaN, and in CSV made 12345678901234567 and ...569 one float key."""
    path = prompt_hash_trace(tmp_path, kind)
    assert error_of(path) == (f"{path}: row 2, column 'prompt_hash': missing prompt_hash; give "
                              "every row its prompt's hash (the same prompt, the same hash), "
                              f"or remove the column{line(kind, 2)}")


def test_a_blank_text_prompt_hash_is_missing(tmp_path):
    path = tmp_path / "p.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [3, 3], "output_tokens": [2, 2],
                  "prompt_hash": ["ab12", " "]}).to_parquet(path, index=False)
    assert error_of(path).startswith(f"{path}: row 2, column 'prompt_hash': missing prompt_hash")


def test_whole_prompt_hashes_stay_exact(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n0,3,2,12345678901234567\n"
                    "1,3,2,12345678901234569\n")
    assert load_trace(path)["prompt_hash"].tolist() == [12345678901234567, 12345678901234569]
    assert load_trace(path)["prompt_hash"].dtype == np.int64
