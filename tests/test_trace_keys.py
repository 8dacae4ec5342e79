"""Prompt hashes are read exactly, one value per row, and a JSON-lines trace must be UTF-8:
each bad input is one line naming the file, the row and the fix."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def _jsonl(path, rows: list[dict]):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(i: int, **extra) -> dict:
    return {"arrival_s": i * 0.1, "input_tokens": 100, "output_tokens": 10, **extra}


def test_json_prompt_hashes_beyond_int64_stay_distinct(tmp_path):
    """Arrow reads 2^63 + 17 i as floats, where 40 hashes fell on 2 keys."""
    path = _jsonl(tmp_path / "big.jsonl", [_row(i, prompt_hash=2**63 + 17 * i) for i in range(40)])
    keys = load_trace(path)["prompt_hash"].to_numpy()
    assert keys.tolist() == [2**63 + 17 * i for i in range(40)]
    assert pd.Series(keys).nunique() == 40


def test_a_prompt_hash_read_as_an_inexact_float_is_refused(tmp_path):
    path = _jsonl(tmp_path / "f.jsonl", [_row(0, prompt_hash=1.5), _row(1, prompt_hash=1e19)])
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (
        f"{path}: row 2, column 'prompt_hash': prompt_hash 1e+19 was read as a decimal number "
        "that is not exact (beyond 2^53, or infinite), so two hashes could read as one; write "
        "hashes as whole numbers (without a decimal point or exponent) or as text (file line 2)")


@pytest.mark.parametrize(("cell", "got"), [([1, 2], "a list of 2 items"),
                                           ({"a": 1}, "an object of 1 key")])
def test_a_list_or_object_prompt_hash_is_refused(tmp_path, cell, got):
    path = tmp_path / "h.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5], "output_tokens": [5, 5],
                  "prompt_hash": [cell, cell]}).to_parquet(path)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (
        f"{path}: row 1, column 'prompt_hash': prompt_hash must be one number or text per row "
        f"(got {got}); write each prompt's hash as one value")


def test_json_lines_list_prompt_hashes_are_refused_with_the_line(tmp_path):
    path = _jsonl(tmp_path / "l.jsonl", [_row(i, prompt_hash=[i, 1]) for i in range(3)])
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value).endswith("(got a list of 2 items); write each prompt's hash as one "
                                    "value (file line 1)")


@pytest.mark.parametrize("line", [
    b'{"arrival_s": 0, "input_tokens": 10, "output_tokens": 10, "prompt": "caf\xe9"}\n',
    b'{"arrival_s": 0, "input_tokens": 10, "output_tokens": 10, "caf\xe9": 1}\n'])
def test_json_lines_that_are_not_utf8_are_one_line(tmp_path, line):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"arrival_s": 0, "input_tokens": 10, "output_tokens": 10}\n\n' + line)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: not a text JSON-lines file (cannot decode it as UTF-8 "
                               "at file line 3); save the trace as UTF-8")


def test_small_json_prompt_hashes_keep_their_integers(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", [_row(i, prompt_hash=i % 3) for i in range(6)])
    assert load_trace(path)["prompt_hash"].to_numpy().dtype == np.int64
