"""Agentic sessions: the generator, context with prefix hashes, trace columns, and the closed
loop (no step starts before its predecessor ends plus its tool time)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_same_per_request

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.errors import TraceError
from tiersim.perf.base import LinearStepModel
from tiersim.workload import sessions
from tiersim.workload.sessions import (
    HASH_BLOCK_TOKENS,
    SessionGenerator,
    SessionsConfig,
    generate,
    with_context,
)


def make_sessions(seed=0, **over) -> pd.DataFrame:
    """Generated sessions with context and links (small by default)."""
    cfg = SessionGenerator(**{"tasks": 5, "task_rate_rps": 2.0, **over})
    return with_context(generate(cfg, np.random.default_rng(seed)), "accumulate", 1024)


def run(df: pd.DataFrame, prefix_caching: bool = False):
    """Simulate a session table on one small tier."""
    follows, think = sessions.links(df)
    tier = TierSpec("t", 1, 4000, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048,
                                    enable_prefix_caching=prefix_caching))
    n = len(df)
    work = Workload(df["arrival_s"].to_numpy(), df["input_tokens"].to_numpy(),
                    df["output_tokens"].to_numpy(), np.zeros(n, int), follows=follows,
                    think_s=think, prefix_hashes=list(df["prefix_hashes"]))
    return simulate([tier], work)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), tasks=st.integers(1, 6), rate=st.floats(0.1, 50.0),
       tool=st.floats(0.0, 5.0), steps=st.floats(1.0, 6.0))
def test_no_step_starts_before_its_predecessor_ends(seed, tasks, rate, tool, steps):
    """Every step arrives exactly its tool time after its predecessor finishes, and its first
    token comes after that."""
    df = make_sessions(seed, tasks=tasks, task_rate_rps=rate, tool_s_median=tool,
                       middle_steps_mean=steps)
    res = run(df)
    follows, think = sessions.links(df)
    for i in np.flatnonzero(follows >= 0):
        j = follows[i]
        if res.dropped[j] or res.dropped[i]:
            continue
        assert res.arrival_s[i] == pytest.approx(res.finish_s[j] + think[i])
        assert res.first_token_s[i] > res.finish_s[j]


def test_generator_is_reproducible_from_its_seed():
    """Same seed, same table; another seed, another table."""
    a, b = make_sessions(3), make_sessions(3)
    pd.testing.assert_frame_equal(a.drop(columns="prefix_hashes"),
                                  b.drop(columns="prefix_hashes"))
    assert not make_sessions(4)["input_tokens"].equals(a["input_tokens"])


def test_generator_shapes_tasks_as_stated():
    """Each task plans first and ends with a final step; middle steps come from the mix; tool
    time is zero for the first step only."""
    df = generate(SessionGenerator(tasks=40), np.random.default_rng(1))
    for _, task in df.groupby("session_id"):
        kinds = task.sort_values("step")["step_type"].tolist()
        assert kinds[0] == "planning"
        assert set(kinds[1:-1]) <= {"tool_call", "code", "verify", "recovery"}
        assert task["tool_s"].iloc[0] == 0 and (task["tool_s"].iloc[1:] > 0).all()
    steps = df.groupby("session_id").size()
    assert 4 < steps.mean() < 8  # planning + 1 + Poisson(3) + final (some stopped early)


def test_prompt_carries_the_context_so_far():
    """prompt_k = prompt_(k-1) + output_(k-1) + new_k; the first adds the system prompt."""
    raw = generate(SessionGenerator(tasks=3), np.random.default_rng(0))
    df = with_context(raw, "accumulate", 1024)
    for _, task in df.groupby("session_id"):
        rows = task.sort_values("step")
        new = raw.loc[rows.index, "input_tokens"].to_numpy()
        prompt, out = rows["input_tokens"].to_numpy(), rows["output_tokens"].to_numpy()
        assert prompt[0] == new[0] + 1024
        assert (prompt[1:] == prompt[:-1] + out[:-1] + new[1:]).all()


def test_prefix_hashes_share_the_context_blocks():
    """A step's full blocks up to its predecessor's prompt+output are its predecessor's; the
    system prompt's blocks are shared by every task; a last partial block is the step's own."""
    df = make_sessions(0, tasks=3)
    b = HASH_BLOCK_TOKENS
    hashes = {}
    for _, task in df.groupby("session_id"):
        rows = task.sort_values("step")
        for prev, cur in zip(rows.itertuples(), rows.iloc[1:].itertuples()):
            shared = (prev.input_tokens // b)
            assert list(cur.prefix_hashes[:shared]) == list(prev.prefix_hashes[:shared])
            assert len(cur.prefix_hashes) == -(-cur.input_tokens // b)
        hashes[int(rows["session_id"].iloc[0])] = rows["prefix_hashes"].iloc[0]
    firsts = list(hashes.values())
    assert firsts[0][0] == firsts[1][0]  # 1,024 system tokens = 2 shared blocks
    assert firsts[0][2] != firsts[1][2]


def test_prefix_cache_sees_the_reuse():
    """With prefix caching on, later steps find their context cached."""
    df = make_sessions(0, tasks=4, tool_s_median=0.5)
    with_cache = run(df, prefix_caching=True)
    assert with_cache.cache_hit_tokens.sum() > 0.3 * df["input_tokens"].sum()
    assert run(df).cache_hit_tokens.sum() == 0


def _trace(**cols) -> pd.DataFrame:
    base = {"request_id": [0, 1, 2, 3], "arrival_s": [0.0, 0.1, 0.2, 0.3],
            "input_tokens": [100, 50, 60, 70], "output_tokens": [10, 10, 10, 10],
            "session_id": [7, 7, 8, 7], "step": [0, 1, 0, 2]}
    base.update(cols)
    return pd.DataFrame(base)


def test_trace_session_columns_become_links():
    """Default parent = previous step; tool_s becomes the think time; a step's logged arrival
    is ignored in favour of its predecessor's finish."""
    df = sessions.prepare_sessions(_trace(tool_s=[0, 1.5, 0, 0.25]), SessionsConfig(),
                                   np.random.default_rng(0))
    follows, think = sessions.links(df)
    assert follows.tolist() == [-1, 0, -1, 1]
    assert think.tolist() == [0, 1.5, 0, 0.25]
    assert df["input_tokens"].tolist() == [100, 160, 60, 240]  # 100+10+50, 160+10+70
    assert df["step_type"].tolist() == ["step"] * 4


def test_session_columns_off_leave_the_trace_alone():
    """source: off ignores the session columns."""
    raw = _trace()
    out = sessions.prepare_sessions(raw, SessionsConfig(source="off"), np.random.default_rng(0))
    assert out is raw


@pytest.mark.parametrize("cols, message", [
    ({"step": [0, 0, 0, 2]}, "session 7 has step 0 twice"),
    ({"parent": [-1, 0, -1, 0]}, "step 0 of session 7 has two followers"),
    ({"parent": [-1, 5, -1, 1]}, "parent 5 is not an earlier step of session 7"),
    ({"tool_s": [0, -1, 0, 0]}, "tool_s must be a number of seconds from 0 to 1e"),
    ({"tool_s": [0, 1e308, 0, 0]}, "row 2, column 'tool_s'"),
])
def test_bad_session_columns_are_one_line_errors(cols, message):
    """Each problem names the file, the row or column, and what to fix."""
    with pytest.raises(TraceError, match=message) as err:
        sessions.prepare_sessions(_trace(**cols), SessionsConfig(), np.random.default_rng(0),
                                  "t.csv")
    assert str(err.value).startswith("t.csv") and "\n" not in str(err.value)


def test_a_session_error_in_a_windowed_trace_names_the_files_row(tmp_path):
    """The loader's origin (not df.attrs) carries the file rows the window kept (whole
    sessions, not one run of rows), so a bad step found after loading is reported at its line
    in the file."""
    from tiersim.trace import read_trace

    path = tmp_path / "s.csv"
    _trace(request_id=[0, 1, 2, 3, 4], arrival_s=[0.0, 0.1, 0.2, 0.3, 0.4],
           input_tokens=[100] * 5, output_tokens=[10] * 5, session_id=[5, 7, 5, 7, 7],
           step=[0, 0, 1, 1, 1]).to_csv(path, index=False)  # session 7 has step 1 twice
    with pytest.warns(UserWarning, match="keeps whole sessions"):
        loaded = read_trace(path, window=(0.05, None))  # drops session 5 (rows 1 and 3)
    assert loaded.table.attrs == {}
    with pytest.raises(TraceError) as err:
        sessions.prepare_sessions(loaded.table, SessionsConfig(), np.random.default_rng(0),
                                  "scenario.yaml", loaded.origin)
    assert str(err.value).startswith(str(path))
    assert "session 7 has step 1 twice" in str(err.value) and "(file line 6)" in str(err.value)


def test_subset_of_rows_keeps_its_own_links():
    """A subset (one tier simulated alone) links within itself; a missing predecessor = own
    arrival."""
    df = sessions.prepare_sessions(_trace(), SessionsConfig(), np.random.default_rng(0))
    follows, _ = sessions.links(df.iloc[[1, 3]])
    assert follows.tolist() == [-1, 0]


def test_a_trace_with_session_columns_runs_as_sessions(tmp_path):
    """A CSV trace with session columns, run end to end: steps arrive after their predecessor
    plus tool time (requests.parquet's arrival_s), and summary.json has per-task figures."""
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    rows = [(0, 0.0, 300, 20, 0, 0, "planning", 0.0), (1, 0.5, 200, 20, 1, 0, "planning", 0.0),
            (2, 9.0, 100, 30, 0, 1, "tool_call", 1.5), (3, 9.0, 100, 30, 1, 1, "final", 0.5),
            (4, 9.0, 50, 10, 0, 2, "final", 2.0)]
    cols = ["request_id", "arrival_s", "input_tokens", "output_tokens", "session_id", "step",
            "step_type", "tool_s"]
    pd.DataFrame(rows, columns=cols).to_csv(tmp_path / "agent.csv", index=False)
    doc = tiny_doc(trace={"path": "agent.csv", "format": "canonical"},
                   router={"policy": "step_type"})
    path = write_yaml(tmp_path / "s.yaml", doc)
    run = run_scenario(load_scenario(path), out_dir=tmp_path / "out", scenario_path=path)
    req = pd.read_parquet(tmp_path / "out" / "requests.parquet").set_index("request_id")
    assert req.loc[2, "arrival_s"] == pytest.approx(req.loc[0, "finish_s"] + 1.5)
    assert req.loc[4, "arrival_s"] == pytest.approx(req.loc[2, "finish_s"] + 2.0)
    assert req.loc[3, "arrival_s"] == pytest.approx(req.loc[1, "finish_s"] + 0.5)
    assert req.loc[2, "tier"] == "w4a16" and req.loc[4, "tier"] == "bf16"
    assert run.sessions.tasks == 2 and run.sessions.steps_per_task_max == 3
    assert run.sessions.task_latency_p99_s > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), longest=st.integers(1, 6000), system=st.integers(0, 6000),
       scale=st.floats(0.01, 20.0))
def test_no_generated_prompt_exceeds_max_context_tokens(seed, longest, system, scale):
    """max_context_tokens left out the system prompt and never checked a task's first step:
    agentic.yaml at 6,000 made 177 prompts above it (up to 7,961 tokens). Counted whole now;
    a first step too long is cut to fit, so every task keeps at least its planning step."""
    system = system % longest  # below the limit (a system prompt at or above it is refused)
    tokens = {kind: {"input": max(1.0, scale * medians.input), "output": medians.output}
              for kind, medians in SessionGenerator().tokens.items()}
    cfg = SessionsConfig(source="generate", system_prompt_tokens=system, generate={
        "tasks": 8, "max_context_tokens": longest, "tokens": tokens})
    df = sessions.prepare_sessions(pd.DataFrame(), cfg, np.random.default_rng(seed))
    assert df["input_tokens"].max() <= longest
    assert sorted(df.loc[df["step"] == 0, "session_id"]) == list(range(8))


def test_a_system_prompt_that_fills_max_context_tokens_is_one_line(tmp_path, capsys):
    from test_hostile_inputs import one_error_line, run_cli

    from tiersim.paths import bundled

    text = bundled("scenarios", "agentic.yaml").read_text().replace(
        "path: azure2023_code.parquet", f"path: {bundled('traces', 'azure2023_code.parquet')}")
    text = text.replace("tool_s_median: 2.0}", "tool_s_median: 2.0, max_context_tokens: 2000}")
    path = tmp_path / "agentic.yaml"
    path.write_text(text)
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if "system_prompt_tokens" in t)
    assert one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out")) == (
        f"Error: {path}: line {line}: workload.sessions.system_prompt_tokens: 2,000 tokens leave "
        "no room for a task's first step within generate.max_context_tokens (2,000, counting "
        "the system prompt); lower system_prompt_tokens or raise max_context_tokens")


def test_output_hashes_are_the_followers_blocks_of_the_output():
    """A step's output hashes are its follower's hashes of the full blocks the step's computed
    tokens (prompt + output - 1) complete after its prompt's full blocks; the last step's are
    empty."""
    df = make_sessions(0, tasks=3)
    b = HASH_BLOCK_TOKENS
    checked = 0
    for _, task in df.groupby("session_id"):
        rows = task.sort_values("step")
        for prev, cur in zip(rows.itertuples(), rows.iloc[1:].itertuples()):
            start = prev.input_tokens // b
            end = (prev.input_tokens + prev.output_tokens - 1) // b
            got = list(getattr(prev, sessions.OUTPUT_HASHES))
            assert got == list(cur.prefix_hashes[start:max(start, end)])
            checked += len(got)
        assert len(rows[sessions.OUTPUT_HASHES].iloc[-1]) == 0
    assert checked > 0


def test_a_follower_hits_the_output_blocks_its_predecessor_cached():
    """Two steps on one replica: the second's prompt is the first's prompt, its 1,500 output
    tokens and 100 new ones. With the first's output blocks cached (vLLM caches a block of
    generated tokens once full) the second skips (2,000 + 1,500 - 1) // 512 = 6 blocks; with
    the prompt's blocks alone, 3."""
    raw = pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 0.0],
                        "input_tokens": [2000, 100], "output_tokens": [1500, 10],
                        "session_id": [1, 1], "step": [0, 1]})
    df = with_context(sessions.checked(raw, "t"), "accumulate", 0)
    follows, think = sessions.links(df)
    tier = TierSpec("t", 1, 4000, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048,
                                    enable_prefix_caching=True))

    def hits(output_hashes):
        work = Workload(df["arrival_s"].to_numpy(), df["input_tokens"].to_numpy(),
                        df["output_tokens"].to_numpy(), np.zeros(2, int), follows=follows,
                        think_s=think, prefix_hashes=list(df["prefix_hashes"]),
                        output_hashes=output_hashes)
        return simulate([tier], work).cache_hit_tokens.tolist()

    assert hits(list(df[sessions.OUTPUT_HASHES])) == [0, 6 * 512]
    assert hits(None) == [0, 3 * 512]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), tasks=st.integers(1, 6), rate=st.floats(0.5, 50.0),
       blocks=st.integers(300, 4000))
def test_fast_forward_stays_exact_with_output_blocks_cached(seed, tasks, rate, blocks):
    """Output blocks enter the cache when a step finishes, never during a decode stretch."""
    df = make_sessions(seed, tasks=tasks, task_rate_rps=rate, tool_s_median=0.2)
    follows, think = sessions.links(df)
    tier = TierSpec("t", 2, blocks, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048,
                                    enable_prefix_caching=True, prefix_cache_fraction=0.2))
    work = Workload(df["arrival_s"].to_numpy(), df["input_tokens"].to_numpy(),
                    df["output_tokens"].to_numpy(), np.zeros(len(df), int), follows=follows,
                    think_s=think, prefix_hashes=list(df["prefix_hashes"]),
                    output_hashes=list(df[sessions.OUTPUT_HASHES]))
    a = simulate([tier], work, fast_forward=True)
    assert_same_per_request(a, simulate([tier], work, fast_forward=False))


@pytest.mark.parametrize(("cell", "follows"), [("-1", [-1, -1]), ("", [-1, -1]),
                                               ("0", [-1, 0])])
def test_an_empty_parent_cell_means_none_as_minus_one_does(tmp_path, cell, follows):
    """docs/agentic.md: "-1 or empty = none"; an empty cell was read as the previous step, so
    the step waited for step 0 instead of arriving at its own 10 s."""
    from tiersim.trace import read_trace

    path = tmp_path / "s.csv"
    path.write_text("request_id,arrival_s,input_tokens,output_tokens,session_id,step,parent\n"
                    f"0,0,100,10,1,0,-1\n1,10,50,10,1,1,{cell}\n")
    table = sessions.prepare_sessions(read_trace(path).table, SessionsConfig(),
                                      np.random.default_rng(0))
    assert sessions.links(table)[0].tolist() == follows
    assert table["parent"].tolist() == follows


def test_without_a_parent_column_each_step_follows_the_one_before(tmp_path):
    from tiersim.trace import read_trace

    path = tmp_path / "s.csv"
    path.write_text("request_id,arrival_s,input_tokens,output_tokens,session_id,step\n"
                    "0,0,100,10,1,0\n1,10,50,10,1,1\n")
    table = sessions.prepare_sessions(read_trace(path).table, SessionsConfig(),
                                      np.random.default_rng(0))
    assert table["parent"].tolist() == [-1, 0]


def test_a_step_with_two_followers_names_both_rows(tmp_path):
    """Every other session check names its row and file line; this one named neither. The
    rows are the file's, after a window kept some sessions only."""
    from tiersim.trace import read_trace

    path = tmp_path / "s.csv"
    _trace(request_id=[0, 1, 2, 3, 4], arrival_s=[0.0, 0.1, 0.2, 0.3, 0.4],
           input_tokens=[100] * 5, output_tokens=[10] * 5, session_id=[5, 7, 5, 7, 7],
           step=[0, 0, 1, 1, 2], parent=[-1, -1, 0, 0, 0]).to_csv(path, index=False)
    with pytest.warns(UserWarning, match="keeps whole sessions"):
        loaded = read_trace(path, window=(0.05, None))  # drops session 5 (rows 1 and 3)
    with pytest.raises(TraceError) as err:
        sessions.prepare_sessions(loaded.table, SessionsConfig(), np.random.default_rng(0),
                                  "scenario.yaml", loaded.origin)
    assert str(err.value) == (f"{path}: row 5, column 'parent': step 0 of session 7 has two "
                              "followers (rows 4 and 5); tiersim sessions are chains (give each "
                              "step at most one follower) (file line 6)")
    with pytest.raises(TraceError) as err:
        sessions.prepare_sessions(_trace(parent=[-1, 0, -1, 0]), SessionsConfig(),
                                  np.random.default_rng(0), "t.csv")
    assert str(err.value) == ("t.csv: row 4, column 'parent': step 0 of session 7 has two "
                              "followers (rows 2 and 4); tiersim sessions are chains (give each "
                              "step at most one follower)")


@pytest.mark.parametrize(("parents", "kind", "row", "shown"), [
    ([-1, 2**62], "int64", 2, "4611686018427387904"),
    ([2**64 - 1, 2**64 - 1], "uint64", 1, "18446744073709551615")])
def test_a_large_integer_parent_is_shown_in_full(tmp_path, parents, kind, row, shown):
    """An int64 Parquet parent of 2**62 was shown as 4.611686018427388e+18."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tiersim.trace import read_trace

    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"request_id": [0, 1], "arrival_s": [0.0, 1.0],
                             "input_tokens": [100, 50], "output_tokens": [10, 10],
                             "session_id": [1, 1], "step": [0, 1],
                             "parent": pa.array(parents, kind)}), path)
    loaded = read_trace(path)
    with pytest.raises(TraceError) as err:
        sessions.prepare_sessions(loaded.table, SessionsConfig(), np.random.default_rng(0),
                                  str(path), loaded.origin)
    assert str(err.value) == (f"{path}: row {row}, column 'parent': parent {shown} is not an "
                              "earlier step of session 1")


def _agent_run(tmp_path, rows, router, max_model_len=None, **run_args):
    """A run of the tiny scenario over a canonical session CSV of ``rows`` (request_id,
    arrival_s, input_tokens, output_tokens, session_id, step, tool_s)."""
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    cols = ["request_id", "arrival_s", "input_tokens", "output_tokens", "session_id", "step",
            "tool_s"]
    pd.DataFrame(rows, columns=cols).to_csv(tmp_path / "agent.csv", index=False)
    doc = tiny_doc(trace={"path": "agent.csv", "format": "canonical"}, router=router,
                   workload={"sessions": {"system_prompt_tokens": 0}})
    if max_model_len is not None:  # on both tiers: routed by capability, a step one tier
        for tier in doc["tiers"]:  # holds would go there (round 35)
            tier["scheduler"] = {"max_model_len": max_model_len}
    path = write_yaml(tmp_path / "s.yaml", doc)
    return run_scenario(load_scenario(path), scenario_path=path, **run_args)


def test_the_dropped_note_counts_steps_never_sent_apart(tmp_path):
    """A step too long for its tier ends its task: the note names the steps after it as never
    sent, not as larger than a replica's KV cache (which they were not)."""
    rows = [(0, 0.0, 300, 20, 0, 0, 0.0), (1, 0.0, 5000, 20, 0, 1, 0.5),
            (2, 0.0, 100, 30, 0, 2, 0.5), (3, 0.0, 100, 30, 0, 3, 0.5)]
    run = _agent_run(tmp_path, rows, {"policy": "uniform"}, max_model_len=4096,
                     out_dir=tmp_path / "out")
    assert run.dropped == 3
    note = next(n for n in run.notes if "were dropped" in n)
    assert note.endswith(
        "3 of 4 requests were dropped, never served (1 longer (prompt + output) than every "
        "tier's context, up to 5,340 tokens, and 2 never sent: an earlier step of their "
        "session was dropped); they count as dropped in every figure; the first is "
        "request_id 1 (5,340 tokens on tier bf16, which serves at most 4,096, its "
        "scheduler.max_model_len): raise that (up to its model's context), or shorten or "
        "remove such rows")


def test_savings_price_the_run_until_its_last_realised_arrival(tmp_path):
    """A dropped step's followers arrive when it is dropped, after every finish: the run lasts
    until then (docs/metrics.md, duration), and the simulated savings price the routed fleet
    over that same duration (they took the trace's placeholder arrival_s, so routed_cost_usd
    was less than the run's cost_usd)."""
    rows = [(0, 0.0, 300, 20, 0, 0, 0.0), (1, 0.0, 5000, 20, 0, 1, 3.0),
            (2, 0.0, 100, 30, 0, 2, 0.5)]
    run = _agent_run(tmp_path, rows, {"policy": "uniform"}, max_model_len=4096, baselines=True)
    assert run.duration_s > 3.0  # the drop, 3 s after the first step's finish
    assert run.savings.routed_cost_usd == pytest.approx(run.cost_usd, rel=1e-12)


def test_uniform_baselines_last_until_the_last_realised_arrival(tmp_path):
    """Session steps whose trace arrival_s are placeholders (50 s) arrive when their
    predecessor finishes (about 1 s): the uniform w4a16 baseline, the routed fleet's own
    w4a16 replica serving the same requests, lasts as long as the run and costs half the
    run's two GPUs (it was priced until the placeholder, 50 s: 38x too dear)."""
    rows = [(0, 0.0, 300, 20, 0, 0, 0.0), (1, 50.0, 200, 20, 0, 1, 0.5),
            (2, 50.0, 100, 30, 0, 2, 0.5)]
    run = _agent_run(tmp_path, rows, {"policy": "uniform", "tier": "w4a16"}, baselines=True)
    assert run.duration_s < 5.0
    uniform = next(u for u in run.savings.uniform if u.tier == "w4a16")
    assert uniform.replicas == 1
    assert uniform.cost_usd == pytest.approx(run.cost_usd / 2, rel=1e-9)


def test_step_mix_shares_summing_to_one_within_the_stated_tolerance_generate():
    """step_mix shares are accepted when they sum to 1 within 1e-6; the generator then draws
    from them as given, scaled to sum to exactly 1 (numpy's choice refuses a sum off by more
    than about 1e-8, which was a traceback)."""
    cfg = SessionsConfig.model_validate({"source": "generate", "generate": {
        "tasks": 20, "step_mix": {"tool_call": 0.5, "code": 0.5000001}}})
    df = sessions.prepare_sessions(pd.DataFrame(), cfg, np.random.default_rng(0))
    assert set(df["step_type"]) == {"planning", "tool_call", "code", "final"}


@pytest.mark.parametrize("kind, char", [("tool\x1b[2Jcall", "U+001B"), ("code\u202e", "U+202E")])
def test_a_generated_step_type_with_a_control_character_is_one_line(tmp_path, capsys, kind,
                                                                     char):
    """The generator's step types are printed in the step-type table and the report, as a
    trace's step_type column is, so a control or format character in a step_mix or tokens key
    is refused as the trace refuses it."""
    from test_hostile_inputs import one_error_line, run_cli

    from tiersim.paths import bundled

    text = bundled("scenarios", "agentic.yaml").read_text().replace(
        "path: azure2023_code.parquet", f"path: {bundled('traces', 'azure2023_code.parquet')}")
    mix = (f'step_mix: {{"{kind.encode("unicode_escape").decode()}": 1.0}}, tokens: '
           f'{{"{kind.encode("unicode_escape").decode()}": {{input: 5, output: 5}}, '
           "planning: {input: 5, output: 5}, final: {input: 5, output: 5}}, ")
    text = text.replace("generate: {tasks: 150, ", "generate: {tasks: 3, " + mix)
    text = text.replace("recovery: bf16, final: bf16, tool_call: fp8}", "final: bf16}")
    path = tmp_path / "agentic.yaml"
    path.write_text(text)
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if "step_mix" in t)
    shown = kind.encode("unicode_escape").decode()
    assert one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out")) == (
        f"Error: {path}: line {line}: workload.sessions.generate.step_mix: step type "
        f"'{shown}' contains the control or format character {char}; use printable "
        "characters")


def test_session_counts_in_the_unit_column_are_written_as_numbers_elsewhere():
    """The per-task table's unit column writes the longest task and the completed tasks with
    thousands separators, as the value columns do (1,036, not 1036), and no "1 tasks"."""
    from tiersim.report.agentic import session_rows
    from tiersim.results import RunResult, SessionResult

    s = SessionResult(tasks=2, completed_tasks=1, steps_per_task_mean=1010.0,
                      steps_per_task_max=1036, task_latency_p50_s=1.0,
                      task_latency_p99_s=1.0, task_latency_mean_s=1.0, task_success=0.5,
                      cost_per_task_usd=1.0, per_request_accuracy=0.9,
                      success_misjudged_by=0.4, request_e2e_p50_s=0.1, latency_ratio_p50=10.0,
                      step_types=())
    run = RunResult.__new__(RunResult)
    object.__setattr__(run, "sessions", s)
    object.__setattr__(run, "requests", 2020)
    object.__setattr__(run, "e2e_p99_s", 1.0)
    object.__setattr__(run, "cost_usd", 2.0)
    object.__setattr__(run, "cost_model", "provisioned")
    units = [row[-1] for row in session_rows(run)]
    assert units[0] == "requests / tasks (1 completed)"
    assert units[1] == "max 1,036"
