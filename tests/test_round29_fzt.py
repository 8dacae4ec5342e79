"""Round 29 (helper fzt): hostile trace files, round 3, through the commands that read a trace.

Each test drives the command line as a user would (:func:`test_hostile_inputs.run_cli`) and
asserts one ``Error:`` line naming the file, the place and the fix, or the right result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main

TINY = (Path(__file__).resolve().parents[1] / "tiersim" / "scenarios" / "tiny.yaml").read_text()
BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def _burstgpt(tmp_path, times: list[float]):
    """A BurstGPT CSV of one served request at each of ``times`` (seconds)."""
    path = tmp_path / "burst.csv"
    path.write_text(BURSTGPT_HEADER + "".join(
        f"{t},ChatGPT,100,10,110,Conversation log\n" for t in times))
    return path


@pytest.mark.parametrize(("window", "shown"), [(["4.000000001", "5"], "[4.000000001, 5)"),
                                               (["3.9999999999999996", "4"],
                                                "[3.9999999999999996, 4)"),
                                               (["1e-320", "1"], "[1e-320, 1)")])
def test_a_window_that_selects_nothing_is_shown_as_given(tmp_path, capsys, window, shown):
    """``tiersim trace inspect --window`` showed its ends to 6 digits: a window just past the
    request at 4 s read "window [4, 5) s selects no requests", one just before 4 s read
    "[4, 4)" and 1e-320 read "9.99989e-321" (``tiersim run`` showed them as given)."""
    path = _burstgpt(tmp_path, [0, 2, 4, 6, 8, 10.000000001])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", *window))
    assert line == (f"Error: {path}: window {shown} s selects no requests; the trace spans 0 "
                    "to 10.000000001 s")



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
