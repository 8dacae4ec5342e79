"""Round 23 of hostile input, agentic sessions: each a failure found from outside and fixed,
with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_round19 import error_line, run_cli

from tiersim.workload import sessions
from tiersim.workload.sessions import HASH_BLOCK_TOKENS, SessionsConfig

# ------------------------------------------------------------------ logged prompts that shrink


def _logged(prompts: list[int], outputs: list[int] | None = None) -> pd.DataFrame:
    """One session's chain with logged (whole) prompts, hashed by tiersim."""
    n = len(prompts)
    df = pd.DataFrame({"request_id": range(n), "arrival_s": [0.0] * n, "input_tokens": prompts,
                       "output_tokens": outputs or [1] * n, "session_id": [0] * n,
                       "step": range(n)})
    return sessions.prepare_sessions(df, SessionsConfig(context="logged"),
                                     np.random.default_rng(0))


def _expected_owner(prompts, outputs, k: int, i: int) -> int:
    """Who owns full block ``i`` of step ``k`` of a chain: the earliest step from which every
    stream (prompt plus output) down to step k's parent holds the block; else step k."""
    end, owner = (i + 1) * HASH_BLOCK_TOKENS, k
    for j in range(k - 1, -1, -1):
        if prompts[j] + outputs[j] < end:
            break
        owner = j
    return owner


def test_a_step_after_a_shorter_logged_prompt_shares_no_block_it_lost():
    """Under context: logged a step whose prompt is shorter than its parent's (a compacted
    context) cuts the chain: its follower holds none of the blocks it dropped. The owner of a
    block was found by a binary search over the ancestors' stream ends, which are not sorted
    then: after three 2,048-token prompts and a 100-token one, step 4 was given step 0's four
    blocks (a full prefix-cache hit on context the session no longer had)."""
    table = _logged([2048, 2048, 2048, 100, 2048])
    hashes = table["prefix_hashes"]
    assert not set(hashes[4].tolist()) & set(hashes[0].tolist())


@pytest.mark.parametrize("seed", range(6))
def test_logged_prompt_blocks_belong_to_the_unbroken_chain_that_holds_them(seed):
    """Every full block of a logged chain with prompts that grow and shrink has the hash of its
    owner (:func:`_expected_owner`)."""
    rng = np.random.default_rng(seed)
    prompts = rng.integers(1, 6 * HASH_BLOCK_TOKENS, 14).tolist()
    outputs = rng.integers(1, 700, 14).tolist()
    hashes = _logged(prompts, outputs)["prefix_hashes"]
    for k, prompt in enumerate(prompts):
        for i in range(prompt // HASH_BLOCK_TOKENS):
            owner = _expected_owner(prompts, outputs, k, i)
            assert hashes[k][i] == sessions._hash(0, owner, i), (k, i, owner)


def test_a_logged_chain_hashes_each_block_once(monkeypatch):
    """Under context: logged each step's prompt was hashed again from its start, as the reuse
    of the parent's hashes was kept to context: accumulate: a 4,000-step logged chain growing
    one block a step made 8 million hashes (14 s of CPU; the 5e7-hash budget, 90 s). A step
    now reuses its parent's full blocks under both contexts (their owners agree), hashing only
    the blocks past them."""
    made = []
    real = sessions._hash
    monkeypatch.setattr(sessions, "_hash", lambda *parts: made.append(1) or real(*parts))
    n = 200
    table = _logged([HASH_BLOCK_TOKENS * (k + 1) for k in range(n)])
    assert len(made) == n
    assert [len(h) for h in table["prefix_hashes"]] == [k + 1 for k in range(n)]


# ------------------------------------------------------------------ tool time past a run's span


def _session_csv(tmp_path, n: int, tool_s: float, **sessions_cfg) -> str:
    """A scenario over one canonical session of ``n`` 10-token steps, each but the first
    waiting ``tool_s``; returns the scenario's path."""
    from conftest import tiny_doc, write_yaml

    pd.DataFrame({"request_id": range(n), "arrival_s": 0.0, "input_tokens": 10,
                  "output_tokens": 5, "session_id": 0, "step": range(n),
                  "tool_s": [0.0] + [tool_s] * (n - 1)}).to_csv(tmp_path / "agent.csv",
                                                                index=False)
    doc = tiny_doc(trace={"path": "agent.csv", "format": "canonical"},
                   router={"policy": "uniform"})
    if sessions_cfg:
        doc["workload"] = {"sessions": sessions_cfg}
    return str(write_yaml(tmp_path / "s.yaml", doc))


def test_tool_time_summing_past_a_runs_span_is_refused(tmp_path, capsys):
    """An arrival more than 1e9 s after time 0 is refused at load (every rate and cost would be
    absurd), but a session's later steps arrive after their predecessors' tool time, which was
    never summed: 1,200 steps of tool_s 1e6 (each within its limit) ran for 1.2e9 s and
    printed 2,331,389 USD; 20,000 of them ran 634 years. The first step that would arrive past
    the span is named, at its row."""
    path = _session_csv(tmp_path, 1200, 1e6)
    line = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert line == (
        f"Error: {tmp_path / 'agent.csv'}: row 1002, column 'tool_s': step 1001 of session 0 "
        "arrives at least 1.001e+09 s after time 0 (its session's first arrival_s plus the "
        "tool_s of the steps that lead to it), more than the 1e+09 s (31 years) a run may span; "
        "check the tool_s unit (seconds), or shorten the session (file line 1003)")
    assert not (tmp_path / "out").exists()


def test_trace_inspect_refuses_tool_time_past_a_runs_span_as_run_does(tmp_path, capsys):
    """``tiersim trace inspect`` runs the session checks ``run`` makes; it passed the trace
    whose tool time runs past the span (exit 0)."""
    _session_csv(tmp_path, 1200, 1e6)
    line = error_line(*run_cli(capsys, "trace", "inspect", tmp_path / "agent.csv"))
    assert line.startswith(f"Error: {tmp_path / 'agent.csv'}: row 1002, column 'tool_s': step "
                           "1001 of session 0 arrives at least 1.001e+09 s after time 0")


def test_generated_tool_time_past_a_runs_span_names_the_generators_keys():
    """Generated tasks are checked alike, the error naming the generator's keys (the
    generator's bounds keep it far off: a draw is at most 1e6 s, about 1,000 middle steps)."""
    from tiersim.errors import ScenarioError

    table = pd.DataFrame({"request_id": range(3), "arrival_s": 0.0, "input_tokens": 10,
                          "output_tokens": 5, "session_id": 4, "step": range(3),
                          "parent": [-1, 0, 1], "tool_s": [0.0, 6e8, 6e8]})
    with pytest.raises(ScenarioError) as err:
        sessions.check_span(table, "s.yaml", generated=True)
    assert str(err.value) == (
        "s.yaml: workload.sessions.generate: step 2 of task 4 arrives at least 1.2e+09 s after "
        "time 0 (its task's first arrival plus the tool_s of the steps that lead to it), more "
        "than the 1e+09 s (31 years) a run may span; lower tool_s_median, tool_s_sigma, "
        "middle_steps_mean or max_steps")


# ------------------------------------------------------------------ BurstGPT's dropped steps


def test_a_burstgpt_step_after_a_failed_one_without_a_parent_column_is_refused(tmp_path,
                                                                                capsys):
    """Without a ``parent`` column each step follows the one before; BurstGPT's failed
    requests are dropped, so a step after a failed one silently followed the step before that,
    its prompt missing the failed step's tokens and output (a ``parent`` naming the failed step
    is refused since round 22). It is refused alike."""
    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
                    "session_id,step\n"
                    "0,ChatGPT,10,5,15,Conversation log,1,0\n"
                    "1,ChatGPT,10,0,10,Conversation log,1,1\n"
                    "2,ChatGPT,10,5,15,Conversation log,2,0\n"
                    "3,ChatGPT,10,5,15,Conversation log,1,2\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 4, column 'step': step 2 of session 1 follows step 1 (without a "
        "parent column each step follows the one before), a failed request (row 2: 0 response "
        "tokens), which tiersim drops, so this step cannot follow it; remove this step, or add "
        "a parent column that leaves its parent empty to replay it as a new root (file line 5)")


def test_a_burstgpt_session_whose_last_step_failed_still_loads(tmp_path):
    """A failed last step, or a session's only step, leaves no step following a dropped
    one."""
    from tiersim.trace import read_trace

    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
                    "session_id,step\n"
                    "0,ChatGPT,10,0,10,Conversation log,1,0\n"
                    "1,ChatGPT,10,5,15,Conversation log,2,0\n"
                    "2,ChatGPT,10,5,15,Conversation log,2,1\n"
                    "3,ChatGPT,10,0,10,Conversation log,2,2\n")
    with pytest.warns(UserWarning, match="dropped 2 of 4 rows"):
        assert len(read_trace(path).table) == 2


def test_a_burstgpt_step_after_a_failed_first_step_is_refused(tmp_path, capsys):
    """A failed first step left its follower the session's first step, with none of its
    context."""
    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
                    "session_id,step\n"
                    "0,ChatGPT,10,0,10,Conversation log,3,0\n"
                    "1,ChatGPT,10,5,15,Conversation log,3,1\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", path)).startswith(
        f"Error: {path}: row 2, column 'step': step 1 of session 3 follows step 0 (without a "
        "parent column each step follows the one before), a failed request (row 1: 0 response "
        "tokens)")


# ------------------------------------------------------------------ a window on replaced rows


def test_a_window_or_time_scale_beside_generated_sessions_is_noted(tmp_path):
    """Under ``workload.sessions.source: generate`` the generated tasks replace the trace's
    rows, so ``trace.window`` and ``trace.time_scale`` shape rows no request comes from:
    ``time_scale: 100`` ran the same 27 generated steps over the same 44.4 s, without a word."""
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(workload={"sessions": {"source": "generate",
                                          "generate": {"tasks": 3, "task_rate_rps": 1.0}}},
                   router={"policy": "uniform"})
    doc["trace"]["time_scale"] = 100
    path = write_yaml(tmp_path / "s.yaml", doc)
    run = run_scenario(load_scenario(path), scenario_path=path)
    assert ("s.yaml: trace.window and trace.time_scale are not read: "
            "workload.sessions.source generate replaces the trace's rows with generated "
            "sessions, which start at generate.task_rate_rps; remove them, or set that "
            "rate") in run.notes


# ------------------------------------------------------------------ generator past the hash budget


def test_the_generator_stops_at_the_hash_budget_not_after_every_task(monkeypatch):
    """Generated tasks whose prompts need more prefix hashes than a run may hold were refused
    only after every task was made: 20,000 tasks of about 100 steps took 55 s and 1.3 GB to be
    refused at task 6,004 (at the cap of 10^7 steps, minutes and gigabytes more). The
    generator counts the hashes as it goes and stops with the same error where the count
    passes the budget."""
    from tiersim.errors import ScenarioError
    from tiersim.workload.sessions import SessionGenerator, generate, with_context

    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 2_000)
    cfg = SessionGenerator(tasks=1_000, task_rate_rps=10.0)
    made = []
    real = sessions._task_rows
    monkeypatch.setattr(sessions, "_task_rows", lambda *a: made.append(1) or real(*a))
    with pytest.raises(ScenarioError) as early:
        generate(cfg, np.random.default_rng(0), "s.yaml", 300)
    assert len(made) < 100
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 10**9)
    table = generate(cfg, np.random.default_rng(0), "s.yaml", 300)
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 2_000)
    with pytest.raises(ScenarioError) as late:
        with_context(table, "accumulate", 300, "s.yaml", generated=True)
    assert str(early.value) == str(late.value)


# ------------------------------------------------------------------ a unit note on a session trace


def test_a_unit_note_on_a_session_trace_says_time_scale_leaves_tool_s(tmp_path, capsys):
    """arrival_s sized as milliseconds draws a note advising trace.time_scale: 1000; on a
    session trace that divides the sessions' starts but not tool_s, so a trace logged in
    milliseconds throughout still waited 5,000 s per tool call once the advice was followed
    (and the note, followed, is not said again). The note says so."""
    path = tmp_path / "ms.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,tool_s\n"
                    "0,10,5,0,0,0\n0,10,5,0,1,5000\n100000,10,5,1,0,0\n100000,10,5,1,1,5000\n"
                    "200000,10,5,2,0,0\n200000,10,5,2,1,5000\n")
    from tiersim.trace import read_trace

    with pytest.warns(UserWarning) as caught:
        notes = read_trace(path).origin.notes
    assert caught
    unit = next(n for n in notes if "set trace.time_scale: 1000" in n)
    assert unit.endswith("or write them in seconds; time_scale does not rescale tool_s, so if "
                         "it is logged in arrival_s's unit, write it in seconds")
