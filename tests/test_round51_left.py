"""Round 51 (helper left51): items earlier rounds noticed and left alone."""

from __future__ import annotations

from test_hostile_inputs import one_error_line, run_cli

SESSIONS = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def _session_trace(tmp_path):
    """Two sessions, starting at 0 and 3501.72 s, each with later steps."""
    path = tmp_path / "sess.csv"
    path.write_text(SESSIONS + "0,1000,100,1,0\n10,50,100,1,1\n20,50,100,1,2\n"
                    "3501.72,800,100,2,0\n3600,10,10,2,1\n")
    return path


def test_a_session_window_in_a_gap_reads_as_a_request_window_does(tmp_path, capsys):
    """The line read "...; the sessions start from 0 to 3501.72 s": no fix, every digit. Now
    the span of the sessions' starts as `trace inspect` prints it, the gap and the fix."""
    path = _session_trace(tmp_path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "5", "100"))
    assert line == (f"Error: {path}: window [5, 100) s holds no session's first step (a window "
                    "keeps whole sessions by their first step's arrival): the sessions start "
                    "from 0 to 3,501.7 s, with no session starting from 0 to 3501.72 s; choose a "
                    "window that holds one")


def test_a_session_window_past_the_last_start_names_the_span(tmp_path, capsys):
    path = _session_trace(tmp_path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", "4000", "5000"))
    assert line == (f"Error: {path}: window [4000, 5000) s holds no session's first step (a "
                    "window keeps whole sessions by their first step's arrival): the sessions "
                    "start from 0 to 3,501.7 s; choose a window inside 0 - 3,501.7 s")


def test_a_session_window_from_a_scenario_names_its_file_and_line(tmp_path, capsys):
    """Through `tiersim run`, the scenario's file, line and key come first (the place)."""
    trace = _session_trace(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\ngpu: H200\ntrace:\n"
                        "  path: sess.csv\n  window: [5, 100]\nworkload:\n"
                        "  sessions: {source: trace}\ntiers:\n  - name: bf16\n"
                        "    precision: bf16\n    replicas: 1\n    cost_per_gpu_hour: 3.5\n"
                        "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n")
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "out"))
    assert line == (f"Error: {scenario}: line 7: trace.window: {trace}: window [5, 100) s holds "
                    "no session's first step (a window keeps whole sessions by their first "
                    "step's arrival): the sessions start from 0 to 3,501.7 s, with no session "
                    "starting from 0 to 3501.72 s; choose a window that holds one")
