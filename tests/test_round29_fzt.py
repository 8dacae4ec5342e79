"""Round 29 (helper fzt): hostile trace files, round 3, through the commands that read a trace.

Each test drives the command line as a user would (:func:`test_hostile_inputs.run_cli`) and
asserts one ``Error:`` line naming the file, the place and the fix, or the right result.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.trace import TraceWarning, load_trace, write_canonical

TINY = (Path(__file__).resolve().parents[1] / "tiersim" / "scenarios" / "tiny.yaml").read_text()
BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def _burstgpt(tmp_path, times: list[float]):
    """A BurstGPT CSV of one served request at each of ``times`` (seconds)."""
    path = tmp_path / "burst.csv"
    path.write_text(BURSTGPT_HEADER + "".join(
        f"{t},ChatGPT,100,10,110,Conversation log\n" for t in times))
    return path


@pytest.mark.parametrize(("window", "shown", "gap"), [
    (["4.000000001", "5"], "[4.000000001, 5)", "4 to 6"),
    (["3.0000000000000004", "4"], "[3.0000000000000004, 4)", "2 to 4"),
    (["1e-320", "1"], "[1e-320, 1)", "0 to 2")])
def test_a_window_that_selects_nothing_is_shown_as_given(tmp_path, capsys, window, shown, gap):
    """``tiersim trace inspect --window`` showed its ends to 6 digits: a window just past the
    request at 4 s read "window [4, 5) s selects no requests", one just past 3 s read
    "[3, 4)" and 1e-320 read "9.99989e-321" (``tiersim run`` showed them as given). (Round 48:
    the case was [3.9999999999999996, 4), which is shorter than the microsecond tiersim's clock
    resolves and is now refused for that, test_round48_fuzz14.)"""
    path = _burstgpt(tmp_path, [0, 2, 4, 6, 8, 10.000000001])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", *window))
    # Round 50: the span is written as `trace inspect` prints it and the line names the gap
    # the window falls in (exactly, as the window) and the fix.
    assert line == (f"Error: {path}: window {shown} s selects no requests: the trace spans 0 "
                    f"to 10.0 s, with no request from {gap} s; choose a window that holds one")



TIED_TRACES = {  # 20 requests logged at one instant, with the name of the time column
    "azure.csv": ("TIMESTAMP", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                  + "2023-11-16 18:15:46.123456,100,10\n" * 20),
    "burst.csv": ("Timestamp", BURSTGPT_HEADER + "5.25,ChatGPT,100,10,110,Conversation log\n" * 20),
    "moon.jsonl": ("timestamp",
                   '{"timestamp": 1234, "input_length": 10, "output_length": 5}\n' * 20),
}


def inspect_json(capsys, path, *options: str) -> dict:
    """``tiersim trace inspect --json PATH OPTIONS``' statistics (the command must succeed)."""
    capsys.readouterr()
    assert main(["trace", "inspect", "--json", str(path), *options]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(TIED_TRACES))
@pytest.mark.parametrize("window", [[], ["--window", "0", "10"]])
def test_requests_all_at_one_instant_are_not_said_to_be_logged_to_the_hour(tmp_path, capsys,
                                                                          name, window):
    """They were "given to the whole hour ... they may have come apart within the hour" (each
    format, a window too): every time is 0 s after the first, a whole number of hours, minutes
    and seconds alike, which says nothing of the log's precision (18:15:46.123456 is to the
    microsecond)."""
    column, text = TIED_TRACES[name]
    path = tmp_path / name
    path.write_text(text)
    notes = inspect_json(capsys, path, *window)["notes"]
    assert notes == [f"{column} gives all 20 requests one instant, so they are replayed as one "
                     "burst at it (queueing and TTFT may read high); if the log's times are "
                     "coarser than when they came, a log with finer times replays them as "
                     "they came"]


def _scenario(tmp_path, table: pd.DataFrame):
    """tiny.yaml over ``table`` written as a canonical Parquet trace beside it (no window)."""
    table.to_parquet(tmp_path / "t.parquet", index=False)
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("path: azure2023_code.parquet", "path: t.parquet")
                    .replace("  window: [240, 360]\n", ""))
    return path


def test_plan_of_a_request_beyond_the_models_context_does_not_say_raise_max_model_len(
        tmp_path, capsys):
    """A prompt of 10^7 tokens, no max_model_len set (so the model's context, 262,144): plan
    told to "raise tiers[].scheduler.max_model_len (up to the model's context)", which it
    already was; a run's note says to serve it on a model with a longer context."""
    path = _scenario(tmp_path, pd.DataFrame({
        "request_id": [0, 1, 2], "arrival_s": [0.0, 1.0, 2.0],
        "input_tokens": [100, 10**7, 100], "output_tokens": [10, 10, 10]}))
    capsys.readouterr()
    assert main(["plan", str(path), "--out", str(tmp_path / "p"), "--no-report"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert "raise tiers[].scheduler.max_model_len" not in line
    assert ("w4a16: latency: 1 request is longer (prompt + output) than its tier's context "
            "(w4a16's max_model_len 262,144) and is dropped at any size; it is the model's "
            "context: serve it on a model with a longer context or leave it out of the trace"
            ) in line, line


# ---------------------------------------------------------------------------------------------
# Mutated small files of every format's reader: a canonical table, or one line naming the file

FORMAT_FILES = {
    "azure.csv": TIED_TRACES["azure.csv"][1].split("\n", 1)[0] + "\n" + "".join(
        f"2023-11-16 18:15:{46 + i}.{i:06d},{100 + i},{10 + i}\n" for i in range(3)),
    "burst.csv": BURSTGPT_HEADER + "".join(
        f"{2 * i},ChatGPT,{100 + i},{10 + i},{110 + 2 * i},Conversation log\n" for i in range(3)),
    "moon.jsonl": "".join(json.dumps({"timestamp": 1000 * i, "input_length": 600 + i,
                                      "output_length": 10, "hash_ids": [1, i + 2]}) + "\n"
                          for i in range(3)),
    "trace.parquet": None,  # written by _format_bytes
}


def _format_bytes(name: str) -> bytes:
    """The bytes of a small valid file of ``name``'s format (:data:`FORMAT_FILES`); the Parquet
    one a session trace with prefix hashes and a task type."""
    if FORMAT_FILES[name] is not None:
        return FORMAT_FILES[name].encode()
    buffer = io.BytesIO()
    pd.DataFrame({"request_id": [0, 1, 2], "arrival_s": [0.0, 0.5, 2.0],
                  "input_tokens": [600] * 3, "output_tokens": [10] * 3,
                  "session_id": [1, 1, 2], "step": [0, 1, 0], "task_type": ["a", "b", "a"],
                  "prefix_hashes": [[1, 2], [1, 3], [4, 5]]}).to_parquet(buffer, index=False)
    return buffer.getvalue()


def read_or_one_line(path: Path) -> str:
    """Read ``path`` as ``tiersim run`` does: a table the loader takes back unchanged once
    written as canonical Parquet, or a TraceError of one line naming the file; which."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TraceWarning)
            table = load_trace(path)
    except TiersimError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)
        return "refused"
    t = table["arrival_s"].to_numpy()
    assert len(table) and table["request_id"].is_unique and t[0] >= 0
    assert np.all(np.diff(t) >= 0) and np.isfinite(t).all()
    assert (table["input_tokens"] > 0).all() and (table["output_tokens"] > 0).all()
    again = write_canonical(table, path.with_name("again.parquet"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        pd.testing.assert_frame_equal(load_trace(again)[table.columns], table,
                                      check_categorical=False)
    return "read"


@pytest.mark.parametrize("name", sorted(FORMAT_FILES))
def test_every_cut_of_a_small_file_reads_or_is_one_line(tmp_path, name):
    """A file cut at every byte (a copy interrupted, a disk full): read, or one line naming
    it. A guard: none failed when it was written."""
    data = _format_bytes(name)
    outcomes = set()
    for cut in range(0, len(data), 1 if len(data) < 400 else 7):
        path = tmp_path / str(cut) / name
        path.parent.mkdir()
        path.write_bytes(data[:cut])
        outcomes.add(read_or_one_line(path))
    assert outcomes == {"read", "refused"} if not name.endswith(".parquet") else {"refused"}


@st.composite
def _mutant(draw) -> tuple[str, bytes]:
    """A file of :data:`FORMAT_FILES` with a line repeated or dropped, two columns swapped, a
    byte's bit flipped, or bytes inserted; or any bytes under its name."""
    name = draw(st.sampled_from(sorted(FORMAT_FILES)))
    data = _format_bytes(name)
    kind = draw(st.sampled_from(["repeat", "drop", "swap", "flip", "insert", "any"]))
    if kind == "any":
        return name, draw(st.binary(max_size=64))
    if kind in ("flip", "insert") or name.endswith(".parquet"):
        at = draw(st.integers(0, len(data) - 1))
        extra = (bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) if kind == "flip" else
                 draw(st.binary(min_size=1, max_size=8)) + data[at:at + 1])
        return name, data[:at] + extra + data[at + 1:]
    lines = data.decode().splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    if kind == "repeat":
        lines.insert(i, lines[i])
    elif kind == "drop":
        del lines[i]
    elif name.endswith(".jsonl"):
        record = json.loads(lines[i])
        a, b = draw(st.permutations(sorted(record)))[:2]
        record[a], record[b] = record[b], record[a]
        lines[i] = json.dumps(record)
    else:
        a, b = draw(st.permutations(range(len(lines[0].split(",")))))[:2]
        cells = [line.split(",") for line in lines[draw(st.integers(0, 1)):]]
        for row in cells:
            row[a], row[b] = row[b], row[a]
        lines = lines[:len(lines) - len(cells)] + [",".join(row) for row in cells]
    return name, ("\n".join(lines) + "\n").encode()


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_mutant())
def test_a_mutated_file_of_any_format_reads_or_is_one_line(tmp_path_factory, case):
    """Through the loader (a table it takes back unchanged, or one line naming the file) and
    ``tiersim trace inspect`` (exit 1, one ``Error:`` line naming the file, no traceback). A
    guard: 1,600 examples of these and of cells replaced by hostile values failed none."""
    name, data = case
    path = tmp_path_factory.mktemp("mutant") / name
    path.write_bytes(data)
    read_or_one_line(path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", "inspect", "--json", str(path)])
    if code:
        assert one_error_line(code, err.getvalue()).startswith(f"Error: {path}")


def test_analytic_of_a_one_request_trace_counts_one_request(tmp_path, capsys):
    """A trace of one request (of 10^7 prompt tokens, which no fleet serves) read "estimated
    from s.yaml (1 requests, w4a16 vs bf16)"."""
    path = _scenario(tmp_path, pd.DataFrame({
        "request_id": [0], "arrival_s": [0.0], "input_tokens": [10**7], "output_tokens": [10]}))
    capsys.readouterr()
    assert main(["analytic", "--scenario", str(path)]) == 0
    assert capsys.readouterr().out.startswith(
        f"estimated from {path} (1 request, w4a16 vs bf16); costs in USD")
