"""Round 55, fresh55b: rows in Mooncake's trace format, as its FAST'25 release describes it
(``FAST25-release/README.md`` of kvcache-ai/Mooncake: one JSON object a line, ``timestamp`` in
milliseconds, ``input_length``, ``output_length``, ``hash_ids``, one remapped id per 512-token
prompt block), the format of its tool-agent, conversation and synthetic traces. The tool-agent
file itself is not in this mirror (fresh54 could not read it), so the rows below are the
README's own two samples and tool-agent-like turns sharing a context, with and without extra
fields; each is checked against what it holds, by hand.
"""

from __future__ import annotations

import json

from conftest import run_cli

from tiersim.trace import load_trace

README_ROWS = [
    {"timestamp": 27482, "input_length": 6955, "output_length": 52,
     "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]},
    {"timestamp": 30535, "input_length": 6472, "output_length": 26,
     "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2366]},
]


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_the_readmes_two_samples_load_as_written(tmp_path):
    df = load_trace(_jsonl(tmp_path / "t.jsonl", README_ROWS))
    assert df["arrival_s"].tolist() == [0.0, 3.053]  # ms, from the first row
    assert df["input_tokens"].tolist() == [6955, 6472]
    assert df["output_tokens"].tolist() == [52, 26]
    assert [list(h) for h in df["prefix_hashes"]] == [r["hash_ids"] for r in README_ROWS]


def test_prefix_reuse_of_the_samples_is_their_shared_blocks(tmp_path):
    # the second row shares its first 12 blocks with the first: 12 x 512 = 6,144 of the two
    # rows' 6,955 + 6,472 = 13,427 prompt tokens
    out = run_cli("trace", "inspect", _jsonl(tmp_path / "t.jsonl", README_ROWS), "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["format"] == "mooncake" and got["notes"] == []
    assert got["prefix_reuse"] == 6144 / 13427


def test_extra_fields_are_named_and_the_rows_still_read(tmp_path):
    rows = [{**r, "turn": k, "tool_calls": 2 - k} for k, r in enumerate(README_ROWS)]
    out = run_cli("trace", "inspect", _jsonl(tmp_path / "t.jsonl", rows), "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["rows"] == 2 and got["prefix_reuse"] == 6144 / 13427
    assert got["notes"] == ["column(s) 'turn', 'tool_calls' (tool_s?) not read (neither this "
                            "format's nor a canonical optional column such as prompt_hash or "
                            "correct_<tier>)"]


def test_a_text_session_id_is_numbered_with_a_note(tmp_path):
    # aiperf-style files name conversations "conv_0": read as 0, 1 ... in order of first
    # appearance, with a note (round 56; they were refused, "session id is not a number")
    rows = [{"session_id": "conv_0", **README_ROWS[0]}]
    out = run_cli("trace", "inspect", _jsonl(tmp_path / "t.jsonl", rows), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["notes"][0] == (
        "column 'session_id' holds text ids (as aiperf writes them): read as the whole numbers "
        "0 to 0, one for each of its 1 distinct id in the order each first appears "
        "(a run that replays the sessions writes these numbers in requests.parquet's "
        "session_id column)")


def test_the_readmes_pretty_printed_form_is_told_to_write_one_object_a_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(README_ROWS[0], indent=4) + "\n")
    out = run_cli("trace", "inspect", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().endswith(
        "row 1: holds the start of a JSON value that the line does not end (JSON written over "
        "several lines, or a line cut short?); write one object a line, e.g. jq -c . FILE "
        "(file line 1)")
