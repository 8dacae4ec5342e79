"""Round 26, real traces (realtraces): tiersim read against rows of the traces as published
(Mooncake FAST'25, BurstGPT, Azure 2023/2024), not against files its own tests wrote; each
test holds a few real rows inline, with their source, and a failure found and fixed."""

from __future__ import annotations

import json

import numpy as np
from test_round19 import error_line, run_cli
from test_round25_traceleft import _inspect

from tiersim.trace.units import coarse_note

# kvcache-ai/Mooncake FAST25-release/traces/conversation_trace.jsonl (Apache-2.0, HEAD
# 3b5a594), its first 45 rows' timestamp (ms), input_length and output_length (hash_ids left
# out: the column is optional and not what is tested). The whole trace: 12,031 requests in an
# hour, 10,851 of them at the same instant as the one before, the instants 3 s apart (2999,
# 3000 or 3001 ms).
MOONCAKE_CONVERSATION = [
    (0, 6758, 500), (0, 7322, 490), (0, 7236, 794), (0, 2290, 316), (0, 6760, 3),
    (0, 4834, 173), (0, 23141, 453), (0, 26888, 458), (0, 10498, 402), (0, 17450, 610),
    (3000, 13544, 71), (3000, 87169, 402), (3000, 6324, 548), (3000, 2012, 354),
    (3000, 7324, 14), (3000, 9418, 145), (3000, 915, 355), (3000, 12846, 466),
    (3000, 20506, 929), (3000, 16609, 349), (3000, 26353, 370), (3000, 6059, 475),
    (3000, 5954, 420), (3000, 11339, 848), (3000, 15172, 80), (3000, 45922, 265),
    (5999, 1053, 26), (5999, 5710, 745), (5999, 7238, 11), (9000, 10355, 584),
    (9000, 1477, 615), (9000, 15366, 344), (9000, 3806, 309), (9000, 8772, 1),
    (9000, 26156, 238), (9000, 16635, 449), (9000, 2293, 31), (9000, 1110, 240),
    (12000, 3628, 555), (12000, 2038, 524), (12000, 1902, 587), (12000, 14041, 227),
    (12000, 12095, 239), (12000, 1066, 324), (12000, 9615, 203)]


def _jsonl(rows) -> str:
    return "".join(json.dumps({"timestamp": t, "input_length": i, "output_length": o}) + "\n"
                   for t, i, o in rows)


def test_mooncake_conversation_trace_on_a_3_s_grid_is_noted_as_bursts(tmp_path, capsys):
    """Mooncake's real conversation trace puts its requests on instants 3 s apart, 5999 ms
    among them: 40 of these 45 requests arrive with the one before and are replayed as bursts
    of up to 16 at once. The note on coarse times fired only for whole hours, minutes or
    seconds, so this trace, read as written, said nothing of its bursts."""
    path = tmp_path / "conversation_trace.jsonl"
    path.write_text(_jsonl(MOONCAKE_CONVERSATION))
    stats = _inspect(capsys, path)
    assert stats["rows"] == 45
    assert stats["notes"] == [
        "timestamp falls on instants 3 s apart: 40 of 45 requests arrive at the same instant "
        "as the request before them, so each is replayed in a burst at that instant, though "
        "they may have come apart within the 3 s (queueing and TTFT may read high); a log "
        "with finer times replays them as they came"]


def test_bursts_at_instants_off_any_grid_say_nothing(tmp_path, capsys):
    """Requests that did come together (the same rows, their third instant moved from 5999 to
    4700 ms) are on no grid: the log's times are its own, and no note is said."""
    rows = [(4700 if t == 5999 else t, i, o) for t, i, o in MOONCAKE_CONVERSATION]
    path = tmp_path / "bursts.jsonl"
    path.write_text(_jsonl(rows))
    assert _inspect(capsys, path)["notes"] == []


# Mutinifni/splitwise-sim traces/test_trace.csv (MIT, commit 3780880), the whole file: the
# Splitwise simulator's own trace format, seconds in arrival_timestamp.
SPLITWISE_SIM = ("request_id,request_type,application_id,arrival_timestamp,batch_size,"
                 "prompt_size,token_size\n0,2,0,1,1,4096,32\n1,2,0,3,1,2048,8\n2,2,0,4,1,2048,16\n")


def test_a_table_with_request_id_but_no_format_s_columns_is_refused_truly(tmp_path, capsys):
    """splitwise-sim's trace was refused with 'none of its 7 column name(s) is a trace
    column', though request_id is one (a canonical trace's): the line said something false
    about the file. It now says which columns it lacks, and names the trace columns it has."""
    path = tmp_path / "test_trace.csv"
    path.write_text(SPLITWISE_SIM)
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: not a trace: none of its 7 column name(s) is a trace format's time or "
        "token column (its request_id is read only beside them); expected azure (TIMESTAMP, "
        "ContextTokens, GeneratedTokens); burstgpt (Timestamp, Request tokens, Response "
        "tokens); mooncake (timestamp, input_length, output_length); canonical (arrival_s, "
        "input_tokens, output_tokens)")


def test_a_grid_step_of_hours_is_written_out_not_in_exponent_form():
    """A grid of instants about two hours apart (7,200.3 s, off the whole hour) was named
    '7.2e+03 s apart'; its step is written to the millisecond."""
    t = np.repeat(np.array([0.0, 7200.3, 14400.6, 21600.9]), 10)
    assert coarse_note("TIMESTAMP", t)[0].startswith(
        "TIMESTAMP falls on instants 7,200.3 s apart: 36 of 40 requests")


def test_the_bursts_note_counts_the_requests_a_window_keeps(tmp_path, capsys):
    """With a window the note counted the whole file: a run of Mooncake's conversation trace
    over [0, 30) s replayed 87 requests and was told '2,671 of 3,001 requests arrive at the
    same instant'. It counts the window's requests, as the note on BurstGPT's models does."""
    path = tmp_path / "conversation_trace.jsonl"
    path.write_text(_jsonl(MOONCAKE_CONVERSATION))
    stats = _inspect(capsys, path, "--window", "0", "10")
    assert stats["rows"] == 38
    assert stats["notes"][0].startswith(
        "timestamp falls on instants 3 s apart: 34 of 38 requests arrive at the same instant")
