"""Traces with structure whose numbers came out silently wrong: prefix hash ids repeated or
moved between places, prompt hashes naming prompts of different lengths, and a session trace's
own prefix hashes under ``context: accumulate``."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace

FIX = ("a block's id names it with every block before it, so it has one place in every prompt "
       "(a repeated or moved id would count tokens as cached that were never computed): give "
       "each block its own id, or remove the column {column} to replay without prefix caching")


def _mooncake(tmp_path, lists):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 10 * i, "input_length": 2048,
                                        "output_length": 5, "hash_ids": ids}) + "\n"
                            for i, ids in enumerate(lists)))
    return path


def test_a_repeated_hash_id_is_refused(tmp_path):
    """[7] then [7, 7, 7, 7] counted 2,047 of 2,048 tokens cached where one block was."""
    path = _mooncake(tmp_path, [[7], [7, 7, 7, 7]])
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 2, column 'hash_ids': hash id 7 is block 2 of this "
                              "prompt but block 1 of the prompt of row 1; "
                              + FIX.format(column="hash_ids") + " (file line 2)")


def test_a_repeat_inside_one_prompt_names_that_prompt(tmp_path):
    path = _mooncake(tmp_path, [[1, 2], [3, 3]])
    with pytest.raises(TraceError, match=r"row 2, .*hash id 3 is both block 1 and block 2 of "
                                         r"this prompt;"):
        load_trace(path)


def test_an_id_moved_between_chunks_of_a_parquet_trace_is_refused(tmp_path):
    """The canonical Parquet path converts chunks apart; the check runs on the joined table."""
    path = tmp_path / "c.parquet"
    table = pa.table({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [1024] * 3,
                      "output_tokens": [5] * 3,
                      "prefix_hashes": pa.array([[1, 2], [3, 4], [2, 5]], pa.list_(pa.int64()))})
    pq.write_table(table, path, row_group_size=1)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 3, column 'prefix_hashes': hash id 2 is block 1 of "
                              "this prompt but block 2 of the prompt of row 1; "
                              + FIX.format(column="prefix_hashes"))


def test_ids_each_at_one_place_are_read(tmp_path):
    table = load_trace(_mooncake(tmp_path, [[1, 2, 3], [1, 2], [1, 4], []]))
    assert [list(h) for h in table["prefix_hashes"]] == [[1, 2, 3], [1, 2], [1, 4], []]


SESSION_HASHES = ("arrival_s,input_tokens,output_tokens,session_id,step,prefix_hashes\n"
                  '0,1024,100,1,0,"[1,2]"\n0,{second},100,1,1,"{ids}"\n')


def test_own_prefix_hashes_under_accumulated_context_are_refused(tmp_path):
    """Step 1's ids [5, 6] were put at blocks 1-2 of its 2,148-token prompt with context,
    whose first blocks are step 0's: the context was never found cached (0% against 32%)."""
    from tiersim.errors import ScenarioError
    from tiersim.workload.sessions import SessionsConfig, prepare_sessions

    path = tmp_path / "s.csv"
    path.write_text(SESSION_HASHES.format(second=1024, ids="[5,6]"))
    with pytest.raises(ScenarioError) as err:
        prepare_sessions(load_trace(path), SessionsConfig(), np.random.default_rng(0), "s.yaml")
    assert str(err.value) == (
        "s.yaml: workload.sessions.context: the trace's own prefix hashes (prefix_hashes, or "
        "Mooncake's hash_ids) name the blocks of each step's logged prompt, but under context: "
        "accumulate (the default) a step's input_tokens are its new tokens and its prompt is "
        "the session's context so far, whose blocks those ids do not name; set context: logged "
        "if input_tokens are whole prompts, or remove the hash column to have tiersim hash each "
        "prompt with its context")


def test_own_prefix_hashes_of_logged_prompts_are_kept(tmp_path):
    from tiersim.workload.sessions import SessionsConfig, prepare_sessions

    path = tmp_path / "s.csv"
    path.write_text(SESSION_HASHES.format(second=2148, ids="[1,2,3,4,5]"))
    table = prepare_sessions(load_trace(path), SessionsConfig(context="logged"),
                             np.random.default_rng(0), "s.yaml")
    assert [list(h) for h in table["prefix_hashes"]] == [[1, 2], [1, 2, 3, 4, 5]]
    assert table["input_tokens"].tolist() == [1024, 2148]


def test_a_prompt_hash_given_to_prompts_of_two_lengths_is_refused(tmp_path):
    """A 30,000-token prompt sharing a 100-token prompt's hash was answered by the response
    cache from the short one's answer, its whole prefill counted as saved."""
    path = tmp_path / "p.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n0,100,10,a\n1,7,10,b\n"
                    "2,100,10,a\n3,30000,10,a\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (
        f"{path}: row 4, column 'prompt_hash': prompt_hash is row 1's, but this prompt has "
        "30,000 input tokens against 100 there: a hash names one prompt, which has one length "
        "(the response cache would answer this request from that one's answer); give each "
        "prompt its own hash, or fix input_tokens (file line 5)")


def test_a_mooncake_prompt_hash_is_checked_by_the_file_rows(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": n, "output_length": 5,
                                        "prompt_hash": h}) + "\n"
                            for i, (n, h) in enumerate([(10, 1), (10, 1), (11, 2), (12, 2)])))
    with pytest.raises(TraceError, match=r"row 4, column 'prompt_hash': prompt_hash is row 3's, "
                                         r"but this prompt has 12 input tokens against 11 "):
        load_trace(path)


def test_repeated_prompt_hashes_of_one_length_are_read(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n0,100,10,a\n1,7,10,b\n"
                    "2,100,10,a\n3,7,1,b\n")
    assert load_trace(path)["prompt_hash"].tolist() == ["a", "b", "a", "b"]
