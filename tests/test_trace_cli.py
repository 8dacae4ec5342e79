"""``tiersim trace inspect`` on the trace sub-app."""

from __future__ import annotations

import json

import pytest
from test_hostile_inputs import one_error_line, run_cli
from typer.testing import CliRunner

from tiersim.cli.trace import trace_app
from tiersim.errors import TraceError

runner = CliRunner()


def test_inspect_prints_the_figures():
    result = runner.invoke(trace_app, ["inspect", "azure2023_code"])
    assert result.exit_code == 0, result.output
    for text in ("(canonical)", "8,819", "2.57 req/s", "13.2", "7,436.0"):
        assert text in result.output


def test_inspect_json_with_window_and_scale():
    result = runner.invoke(trace_app, ["inspect", "azure2023_conv", "--json",
                                       "--window", "0", "600", "--time-scale", "2"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["format"] == "canonical"
    assert stats["span_s"] <= 300 and stats["rows"] > 0


def test_inspect_length_only_file_shows_lengths():
    result = runner.invoke(trace_app, ["inspect", "sharegpt_lengths", "--json"])
    stats = json.loads(result.output)
    assert stats["rows"] == 30731 and stats["rate_rps"] is None


def test_inspect_named_format(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 40, "output_length": 2, "hash_ids": [1]}\n'
                    '{"timestamp": 500, "input_length": 40, "output_length": 2, '
                    '"hash_ids": [1]}\n')
    result = runner.invoke(trace_app, ["inspect", str(path), "--format", "mooncake"])
    assert result.exit_code == 0, result.output
    # the second 40-token prompt finds its block cached and computes only its last KV block
    # (vLLM keeps 39 // 16 whole blocks of 16: 32 of 80 prompt tokens)
    assert "prefix hits, unbounded cache" in result.output and "40.0%" in result.output


def test_inspect_error_reaches_the_top_level_cli(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,-1,3\n")
    result = runner.invoke(trace_app, ["inspect", str(path)])
    assert result.exit_code == 1
    assert isinstance(result.exception, TraceError)
    assert str(result.exception).startswith(f"{path}: row 1, column 'ContextTokens'")


def test_inspect_shows_dropped_rows_note(tmp_path):
    path = tmp_path / "burst.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                    "5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,10,0,10,API log\n"
                    "50,ChatGPT,10,3,13,API log\n")
    result = runner.invoke(trace_app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["notes"] == [
        "dropped 1 of 3 rows with 0 response tokens (failed requests in BurstGPT; first at row 2)"]


@pytest.mark.parametrize(("window", "expected"), [
    (("0", "inf"), "--window END: must be a finite number (got inf)"),
    (("nan", "5"), "--window START: must be a finite number (got nan)"),
    (("1e400", "1e401"), "--window START: must be a finite number (got 1e400, beyond a "
                        "float)"),
])
def test_inspect_refuses_a_window_that_is_no_finite_number(capsys, window, expected):
    """As a scenario's trace.window: [0, .inf] is refused, with the value as typed."""
    line = one_error_line(*run_cli(capsys, "trace", "inspect", "azure2023_code", "--window",
                                   *window))
    assert line == f"Error: {expected}"


def test_inspect_escapes_a_model_name_s_terminal_codes(tmp_path):
    """A BurstGPT Model cell holding ESC [2J (clear the screen) and a title escape was printed
    raw in the note; every printed trace text is escaped."""
    path = tmp_path / "burst.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                    "5,ChatGPT,472,18,490,Conversation log\n"
                    "9,\x1b[2J\x1b]0;owned\x07GPT-4,10,3,13,API log\n")
    table = runner.invoke(trace_app, ["inspect", str(path)])
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.output and "\x07" not in table.output
    assert "\\x1b[2J" in table.output
    result = runner.invoke(trace_app, ["inspect", str(path), "--json"])
    assert json.loads(result.output)["notes"] == [
        "its Model column names 2 models (ChatGPT 50%, \\x1b[2J\\x1b]0;owned\\x07GPT-4 50%); their "
        "requests are served as one stream by the scenario's model (filter the rows to study one)"]


def test_a_column_name_in_an_error_is_escaped(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("TIMESTAMP,ContextTokens,\x1b[2Jx\n2023-11-16 18:17:03,5,3\n")
    result = runner.invoke(trace_app, ["inspect", str(path)])
    assert str(result.exception) == (
        f"{path}: column 'GeneratedTokens': missing column for the azure format (found: "
        "TIMESTAMP, ContextTokens, \\x1b[2Jx); add it or name the right format")


@pytest.mark.parametrize(("scale", "window_s"), [("1", 600.0), ("2", 300.0)])
def test_inspect_rate_is_over_the_window_asked_for(scale, window_s):
    """It was rows / (last - first arrival): 1,482 requests in [0, 600) read as 2.53 req/s
    (over 585.9 s), not the 2.47 req/s the window offers."""
    result = runner.invoke(trace_app, ["inspect", "azure2023_code", "--json", "--window", "0",
                                       "600", "--time-scale", scale])
    stats = json.loads(result.output)
    assert stats["rate_basis"] == "window" and stats["window_s"] == window_s
    assert stats["rate_rps"] == stats["rows"] / window_s
    assert stats["window"] == [0.0, 600.0]


def test_inspect_says_what_the_rate_divides_by():
    whole = runner.invoke(trace_app, ["inspect", "azure2023_code"]).output
    assert "rate ((requests - 1) / span)" in whole and "2.57 req/s" in whole
    cut = runner.invoke(trace_app, ["inspect", "azure2023_code", "--window", "0", "600",
                                    "--time-scale", "2"]).output
    assert "0 to 600 s of the trace; 300.0 s at time scale 2" in cut  # round 30: was "replayed"
    assert "rate (requests / window) │" in cut and "4.94 req/s" in cut
    assert json.loads(runner.invoke(trace_app, ["inspect", "azure2023_code", "--json"])
                      .output)["rate_basis"] == "span"


def test_inspect_cuts_the_window_at_the_traces_last_arrival():
    """A window past the trace's end (3435.95 s) counted its empty end: 719 requests in
    [3000, 4000) read as 0.719 req/s, not the 1.65 req/s replayed; [0, 1e308) read 8.8e-305."""
    stats = json.loads(runner.invoke(trace_app, ["inspect", "azure2023_code", "--json",
                                                 "--window", "3000", "4000"]).output)
    assert stats["window"] == [3000.0, 4000.0]
    assert stats["window_cut"] == [3000.0, 3435.948056]
    assert stats["rate_rps"] == pytest.approx(719 / 435.948056)
    whole = json.loads(runner.invoke(trace_app, ["inspect", "azure2023_code", "--json",
                                                 "--window", "0", "1e308"]).output)
    assert whole["rate_rps"] == pytest.approx(2.5666860663390656)
    text = runner.invoke(trace_app, ["inspect", "azure2023_code", "--window", "3000",
                                     "4000"]).output
    assert "3,000 to 4,000 s of the trace; cut to its" in text and "1.65 req/s" in text


def test_inspect_says_the_time_scale_it_applied():
    """Without --window, --time-scale 10 changed the span and rate and nothing said so (the
    JSON had no time_scale key)."""
    stats = json.loads(runner.invoke(trace_app, ["inspect", "azure2023_code", "--json",
                                                 "--time-scale", "10"]).output)
    assert stats["time_scale"] == 10.0
    plain = json.loads(runner.invoke(trace_app, ["inspect", "azure2023_code", "--json"]).output)
    assert plain["time_scale"] == 1.0
    assert stats["rate_rps"] == pytest.approx(10 * plain["rate_rps"])
    text = runner.invoke(trace_app, ["inspect", "azure2023_code", "--time-scale", "10"]).output
    assert "time scale │ 10 (arrival times divided by 10) │" in " ".join(text.split())
    assert "time scale" not in runner.invoke(trace_app, ["inspect", "azure2023_code"]).output


def test_inspect_states_the_time_the_run_replays(tmp_path):
    """A window [0, 1600) of arrivals from 1,000 s: inspect gave the rate over 1,000-1,600 s
    while tiersim run bills all 1,600 s; both are stated now, and the note says what it costs."""
    path = tmp_path / "late.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n1000,100,10\n1300,100,10\n"
                    "1500,100,10\n")
    stats = json.loads(runner.invoke(trace_app, ["inspect", str(path), "--json", "--window",
                                                 "0", "1600"]).output)
    assert (stats["first_arrival_s"], stats["last_arrival_s"]) == (1000.0, 1500.0)
    assert stats["notes"] == [
        "the first request arrives at 1,000 s, but the run and its provisioned cost start at "
        "0 s (the window start is time 0): 1,000 of the 1,500 s replayed to the last arrival "
        "(67%) hold no request and are billed; to start at the first request set "
        "trace.window: [1000, 1501] (tiersim trace inspect: --window 1000 1501)"]
    text = runner.invoke(trace_app, ["inspect", str(path), "--window", "0", "1600"]).output
    assert "replayed by tiersim run │ 0 to 1,500.0 s; first request at 1,000.0 s │" in \
        " ".join(text.split())
