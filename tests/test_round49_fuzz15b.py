"""Round 49, hostile input (helper fuzz15b): the leftovers of a hardening round. Each test names
what a user saw before its fix."""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.trace import filecheck


def _parses(monkeypatch) -> list[int]:
    """A list that grows by one each time a Parquet footer is parsed (``pq.ParquetFile`` made
    without the metadata it could be given: ``pq.read_schema`` makes one too)."""
    calls: list[int] = []
    real = pq.ParquetFile.__init__

    def counted(self, source, *args, metadata=None, **kwargs):
        if metadata is None:
            calls.append(1)
        real(self, source, *args, metadata=metadata, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", counted)
    filecheck._checked_kind.cache_clear()
    filecheck._parquet_footer.cache_clear()
    return calls


def test_a_parquet_traces_footer_is_parsed_once_per_load(tmp_path, capsys, monkeypatch):
    """``tiersim trace inspect`` parsed a Parquet trace's footer 11 times (each read of its
    schema or row count parsed it again): a footer of 200,000 one-row row groups (130 MB) took
    1.3 s and 660 MB a parse, 13.6 s and 1.26 GB at the peak in all. It is parsed once, its
    schema and row count remembered and the whole of it passed to the reader of the rows
    (4.6 s, 718 MB)."""
    path = tmp_path / "t.parquet"
    table = pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [10, 20, 30],
                      "output_tokens": [5, 6, 7], "extra": ["a", "b", "c"]})
    pq.write_table(table, path, row_group_size=1)
    calls = _parses(monkeypatch)
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert (code, err) == (0, "")
    assert len(calls) == 1
    code, err = run_cli(capsys, "trace", "inspect", path)  # its footer remembered
    assert (code, err) == (0, "")
    assert len(calls) == 2


def test_a_parquet_footer_over_pyarrows_limit_is_not_called_cut_short(tmp_path, capsys,
                                                                      monkeypatch):
    """A Parquet trace with 200 MB of key-value metadata was called 'not a readable Parquet
    file (Couldn't deserialize thrift: TProtocolException: Exceeded size limit); write it
    again (pyarrow, or pandas' to_parquet), or give a whole copy if it was cut short': the file
    is whole, its metadata over pyarrow's limit (100 MB a value). pyarrow's limit is lowered to
    1,000 bytes here, to meet it with 2 kB of metadata."""
    path = tmp_path / "t.parquet"
    table = pa.table({"arrival_s": [0.0], "input_tokens": [10], "output_tokens": [5]})
    pq.write_table(table.replace_schema_metadata({"big": "x" * 2_000}), path)
    monkeypatch.setattr(filecheck.pq, "ParquetFile",
                        functools.partial(pq.ParquetFile, thrift_string_size_limit=1_000))
    filecheck._checked_kind.cache_clear()
    filecheck._parquet_footer.cache_clear()
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: its Parquet footer's metadata is over pyarrow's limit "
                    "(100 MB a value); the file is whole, write it again without that "
                    "key-value metadata (pyarrow: table.replace_schema_metadata())")


def test_a_subject_with_a_right_to_left_override_is_refused_as_a_task_type_is(tmp_path, capsys):
    """A ``subject`` label (the classifier's) holding U+202E was taken without a word, while a
    ``task_type`` holding it was refused: both are labels, checked alike."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,subject\n0,10,5,math\n"
                    "1,10,5,a\u202eb\n", encoding="utf-8")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 2, column 'subject': subject contains the control or "
                    "format character U+202E; use printable text (file line 3)")


@pytest.mark.parametrize(("name", "offered"), [("p.yaml", "p.json"), ("profile", "profile.json")])
@pytest.mark.parametrize("command", [["calibrate", "--device", "cpu", "--quick"],
                                     ["calibrate", "--from", "aiconfigurator"]])
def test_a_calibration_out_not_named_json_is_refused(tmp_path, capsys, command, name, offered):
    """``tiersim calibrate --out x.yaml`` wrote the profile, JSON, under a YAML name without a
    word. A name not ending in .json is refused before anything is measured."""
    out = tmp_path / name
    line = one_error_line(*run_cli(capsys, *command, "--out", out))
    assert line == (f"Error: --out {out}: the profile is written as JSON; give a name ending in "
                    f".json, such as {tmp_path / offered}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("ids", "said"), [
    ("[1, null]", "missing hash id (a null at position 2 of the list); every id is a whole "
                  "number"),
    ("[1.5, 2]", "hash id 1.5 is not a whole number; write each id as a whole number below "
                 "2^63"),
])
def test_hash_id_messages_count_from_1_and_say_what_is_taken(tmp_path, capsys, ids, said):
    """A missing hash id was named 'a null at position 0' for the first, counting from 0 where
    the items of a list are named from 1; and an id of 1.5 was told to be 'an integer below
    2^63, written without a decimal point', though 1.0 and 1e3 are taken."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s": 0, "input_tokens": 1000, "output_tokens": 5, '
                    f'"prefix_hashes": {ids}}}\n')
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == f"Error: {path}: row 1, column 'prefix_hashes': {said} (file line 1)"


def test_a_whole_hash_id_past_2_53_read_as_a_decimal_says_so(tmp_path, capsys):
    """A float id of 2^53 + 2 (a Parquet list of doubles) was 'not a whole number within range
    (must be an integer below 2^63 ...)': it is whole and in range, but a decimal number there
    is inexact."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": [0.0], "input_tokens": [1000], "output_tokens": [1],
                             "prefix_hashes": pa.array([[2.0**53 + 2, 1.0]],
                                                       pa.list_(pa.float64()))}), path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column 'prefix_hashes': hash id 9007199254740994 "
                    "was read as a decimal number, exact only below 2^53 (two ids there could "
                    "read as one); store the ids as integers (digits alone, without a decimal "
                    "point or exponent)")


@pytest.mark.parametrize("extra", ["", ', "task_type": "chat"'], ids=["in blocks", "whole"])
def test_a_json_hash_list_opening_with_a_null_is_refused_not_shifted(tmp_path, capsys, extra):
    """Arrow's JSON reader dropped a null met in a list before its items' type was known and
    moved the later items up: a first line's ``[null, 2]`` read as ``[2]``, without a word
    (``[null, null, 7, 8]`` then ``[9, null]`` read as ``[7, 8, 9, null]`` and ``[null,
    null]``). The lists are read again with their type given, and the null refused."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s": 0, "input_tokens": 1000, "output_tokens": 5, '
                    f'"prefix_hashes": [null, 2]{extra}}}\n')
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column 'prefix_hashes': missing hash id (a null at "
                    "position 1 of the list); every id is a whole number (file line 1)")
