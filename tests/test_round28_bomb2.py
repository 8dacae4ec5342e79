"""Round 28 (bomb2): a small canonical Parquet file whose trace text column (session_id,
prompt, task_type, step_type, subject) repeats one long dictionary-encoded string is checked
and read by its distinct values, without a copy of the string per row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_round28_bomb import LONG, ROWS, _peak_mb

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def _trace(path, name: str, column: pa.Array, store_schema: bool = True):
    """A canonical Parquet trace of ``len(column)`` rows with ``column`` as ``name``."""
    rows = len(column)
    pq.write_table(pa.table({"arrival_s": np.arange(rows, dtype=float),
                             "input_tokens": np.full(rows, 10),
                             "output_tokens": np.full(rows, 5), name: column}),
                   path, store_schema=store_schema)
    return path


def _bomb(path, name: str, store_schema: bool = True):
    """Column ``name`` holds one 100,000-character string in each of 2,000 rows (200 MB were
    it copied into each row), stored once in its dictionary."""
    column = pa.array(["x" * LONG]).take(np.zeros(ROWS, dtype=int)).dictionary_encode()
    return _trace(path, name, column, store_schema)


def read_or_refuse(path) -> None:
    """Read the trace at ``path``; its refusal is a read too (for :func:`_peak_mb`)."""
    import contextlib
    import warnings

    with warnings.catch_warnings(), contextlib.suppress(TraceError):
        warnings.simplefilter("ignore")
        load_trace(path)


def _peak(path) -> int:
    """A child process's peak memory growth (MB) while reading or refusing ``path``."""
    return _peak_mb(path, "test_round28_bomb2", "read_or_refuse")


def _labels(path, name: str, values: list[str], store_schema: bool = True):
    """Column ``name`` holds ``values``, dictionary-encoded."""
    return _trace(path, name, pa.array(values).dictionary_encode(), store_schema)


@pytest.mark.parametrize("store_schema", [True, False])
def test_a_long_text_session_id_is_read_before_it_is_copied(tmp_path, store_schema):
    """411 MB before (each row's copy checked as a number); refused from its one value until
    round 56, numbered from it since (a text session id is a name: fresh56)."""
    path = _bomb(tmp_path / "b.parquet", "session_id", store_schema)
    assert _peak(path) < 60
    with pytest.warns(Warning, match="holds text ids"):
        ids = load_trace(path)["session_id"]
    assert set(ids.tolist()) == {0}


def test_session_ids_as_categories_read_as_before(tmp_path):
    """The first bad row is named; good ids are every row's. A Parquet text column mixing
    numbers and names holds names (its type says so: ids56), numbered in order of first
    appearance, as a category column's distinct values."""
    path = _labels(tmp_path / "s.parquet", "session_id", ["3", "1", "x", "1"] * 3)
    with pytest.warns(Warning, match="holds text ids"):
        ids = load_trace(path)["session_id"]
    assert ids.tolist() == [0, 1, 2, 1] * 3
    path = _labels(tmp_path / "t.parquet", "session_id", ["3", "1", "7", None] * 3)
    with pytest.raises(TraceError, match="row 4, column 'session_id': missing session id"):
        load_trace(path)
    path = _labels(tmp_path / "u.parquet", "session_id", ["3", "1", "7", "1"] * 3)
    with pytest.warns(Warning):
        ids = load_trace(path)["session_id"]
    assert ids.dtype == np.int64 and ids.tolist() == [3, 1, 7, 1] * 3


@pytest.mark.parametrize("store_schema", [True, False])
def test_a_long_prompt_is_not_copied_into_every_row(tmp_path, store_schema):
    """414-826 MB before (each row's prompt as text, then as the table's Arrow text)."""
    path = _bomb(tmp_path / "b.parquet", "prompt", store_schema)
    assert _peak(path) < 60


def test_prompts_as_categories_keep_their_values(tmp_path):
    """A missing prompt reads as no text; bytes are refused at their first row."""
    path = _labels(tmp_path / "p.parquet", "prompt", ["a", None, "b", "a", ""] * 3)
    prompts = load_trace(path)["prompt"]
    assert prompts.astype(str).tolist() == ["a", "", "b", "a", ""] * 3
    path = _trace(tmp_path / "q.parquet", "prompt",
                  pa.array([b"a", b"x"] * 3).dictionary_encode())
    with pytest.raises(TraceError, match="row 1, column 'prompt': prompt must be text"):
        load_trace(path)


@pytest.mark.parametrize("store_schema", [True, False])
@pytest.mark.parametrize("name", ["task_type", "step_type", "subject"])
def test_a_long_label_is_not_copied_into_every_row(tmp_path, name, store_schema):
    """414-639 MB before (each row's label as text: checks, the table, its step types)."""
    assert _peak(_bomb(tmp_path / "b.parquet", name, store_schema)) < 60


@pytest.mark.parametrize("name", ["task_type", "step_type", "subject"])
def test_labels_as_categories_keep_their_values(tmp_path, name):
    """The table holds every row's label; a label the file writes as text reads the same."""
    values = ["plan", "act", "plan", "act", "tool"] * 3
    coded = load_trace(_labels(tmp_path / "c.parquet", name, values))
    plain = load_trace(_trace(tmp_path / "p.parquet", name, pa.array(values)))
    assert coded[name].astype(str).tolist() == plain[name].astype(str).tolist() == values


@pytest.mark.parametrize(("name", "values", "fault"), [
    ("task_type", ["a", "b", None, "a"], "row 3, column 'task_type': missing task_type"),
    ("task_type", ["a", "b", "c\x1b", "c\x1b"], "row 3, column 'task_type': task_type contains"),
    ("step_type", ["a", "b", "b", "c\u202e"], "row 4, column 'step_type': step_type contains"),
])
def test_a_bad_label_of_categories_names_its_first_row(tmp_path, name, values, fault):
    with pytest.raises(TraceError, match=fault):
        load_trace(_labels(tmp_path / "b.parquet", name, values * 3))


def test_the_step_types_of_a_trace_of_categories(tmp_path):
    from tiersim.trace import read_trace

    path = _labels(tmp_path / "s.parquet", "step_type", ["plan", None, "act"] * 3)
    assert read_trace(path).origin.step_types == frozenset({"plan", "act"})


@pytest.mark.parametrize("name", ["session_id", "prompt", "task_type", "step_type", "subject"])
def test_a_text_column_without_an_arrow_schema_reads_as_with_one(tmp_path, name):
    """A file whose schema does not say "dictionary" (as other tools write) reads the same
    values as one that does."""
    import warnings

    values = ["3", "1", "7", "1", "7"] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = [load_trace(_labels(tmp_path / f"{stored}.parquet", name, values, stored))[name]
                for stored in (True, False)]
    assert read[0].astype(str).tolist() == read[1].astype(str).tolist() == values


def _sessions(path, coded: bool):
    """A session trace of 8 sessions of 4 steps, the third step's type missing; its text
    columns dictionary-encoded when ``coded``."""
    kinds = ["planning", "tool_call", None, "final", "planning", "recovery", None, "final"] * 4
    columns = {"arrival_s": np.repeat(np.arange(8.0) * 3, 4),
               "input_tokens": np.arange(32) * 10 + 100, "output_tokens": np.full(32, 20),
               "session_id": np.repeat(np.arange(8), 4), "step": np.tile(np.arange(4), 8),
               "parent": np.tile(np.arange(4) - 1, 8), "tool_s": np.tile([0.0, 1, 1, 1], 8),
               "step_type": pa.array(kinds), "task_type": pa.array(["bug", "feature"] * 16)}
    if coded:
        columns["step_type"] = columns["step_type"].dictionary_encode()
        columns["task_type"] = columns["task_type"].dictionary_encode()
    pq.write_table(pa.table(columns), path)
    return path


def test_a_session_trace_of_categories_replays_as_one_of_text(tmp_path):
    """A missing step_type in a category column raised TypeError in the sessions' replay
    (filling a category column with "step"); now the same run as the plain file's."""
    import re
    import warnings

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    template = (Path(__file__).parents[1] / "tiersim" / "scenarios" / "agentic.yaml").read_text()
    template = re.sub(r"\n *generate: \{[^}]*\}", "",
                      template.replace("source: generate", "source: trace"))
    summaries = []
    for coded in (False, True):
        trace = _sessions(tmp_path / f"s{coded}.parquet", coded)
        path = tmp_path / f"s{coded}.yaml"
        path.write_text(template.replace("azure2023_code.parquet", str(trace)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = run_scenario(load_scenario(path), scenario_path=path)
        summaries.append((run.requests, run.ttft_p99_s, run.sessions.step_types))
    assert summaries[0] == summaries[1]
    assert {s.step_type for s in summaries[0][2]} == {"planning", "tool_call", "recovery",
                                                     "final", "step"}
