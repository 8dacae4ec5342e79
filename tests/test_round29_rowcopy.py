"""Round 29 (rowcopy): a run reads the trace's text columns (prompt, task_type, step_type) as
the reader holds them, categories, without a copy of each row's text: the classifier's
features, the response cache's keys, step-type routing and the per-step-type figures."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.trace import load_trace

ROWS = 2000
LONG = 20_000
"""Prompts of 10-20 KB, 4 distinct over 2,000 rows: 28 MB were each row's copied."""


def _trace(path, rows: int = ROWS, **columns):
    """A canonical Parquet trace of ``rows`` rows with text ``columns`` (lists of distinct
    values, repeated in turn), dictionary-encoded, read back as the run reads it."""
    extra = {name: pa.array(values).take(np.arange(rows) % len(values)).dictionary_encode()
             for name, values in columns.items()}
    pq.write_table(pa.table({"arrival_s": np.arange(rows, dtype=float),
                             "input_tokens": np.full(rows, 10),
                             "output_tokens": np.full(rows, 5), **extra}), path)
    return load_trace(path)


def _prompts() -> list[str]:
    """Four long prompts of different words (and lengths)."""
    return [" ".join([f"w{k}"] * (LONG // (3 + k))) for k in range(4)]


def _peak_mb(function, *args) -> float:
    """Peak memory (MB, as tracemalloc sees it) while ``function(*args)`` runs."""
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


@pytest.fixture
def prompts(tmp_path):
    """A trace of 2,000 rows of 4 long prompts and 3 task types."""
    return _trace(tmp_path / "p.parquet", prompt=_prompts(), task_type=["code", "chat", "math"])


def test_the_classifier_reads_each_prompt_once(prompts):
    """feature_frame made each row's prompt and task type text (astype(str): an Arrow string a
    row, and a Python one a row when TF-IDF read it); now the column stays categories whose
    rows are the 4 prompts themselves."""
    from tiersim.routing.classifier import feature_frame

    frame, _ = feature_frame(prompts, ["text", "task_type"])
    rows = list(frame["prompt"])
    assert rows == prompts["prompt"].astype(str).tolist()
    assert rows[0] is rows[4] and rows[1] is rows[5]
    types = list(frame["task_type"])
    assert types == ["code", "chat", "math"] * (ROWS // 3) + ["code", "chat"]
    assert types[0] is types[3]


def test_the_classifier_features_hold_no_copy_per_row(prompts):
    """Peak while making the features and reading the prompts as TF-IDF does (row by row):
    28.6 MB before (each row's 10-20 KB prompt copied), 0.13 MB now."""
    from tiersim.routing.classifier import feature_frame

    def read():
        frame, _ = feature_frame(prompts, ["text"])
        return sum(map(len, frame["prompt"]))

    assert _peak_mb(read) < 5


def test_the_log_prompt_length_is_each_prompts(prompts):
    """log1p of each row's length in characters, as astype(str).str.len() gave it."""
    from tiersim.routing.classifier import NUMERIC, feature_frame

    frame, _ = feature_frame(prompts, ["text"])
    expected = np.log1p(prompts["prompt"].astype(str).str.len().astype(float)).to_numpy()
    assert np.array_equal(frame[NUMERIC + "log_prompt_chars"].to_numpy(), expected)


def test_a_prompt_column_of_plain_text_reads_as_before():
    """A column not of categories (a table built in code) is made text as before."""
    from tiersim.routing.classifier import feature_frame

    df = pd.DataFrame({"prompt": ["a b", "cde", "a b"], "task_type": [1, 2, 1]})
    frame, used = feature_frame(df, ["text", "task_type"])
    assert frame["prompt"].tolist() == ["a b", "cde", "a b"]
    assert frame["task_type"].tolist() == ["1", "2", "1"]
    assert frame["numeric__log_prompt_chars"].tolist() == list(np.log1p([3.0, 3.0, 3.0]))
    assert used == {"task_type": ["task_type"],
                    "text": ["prompt", "numeric__log_prompt_chars"]}


def test_the_cache_keys_of_a_prompt_column_are_the_prompts_themselves(prompts):
    """keys(key: prompt) gave each row a copy of its prompt (to_numpy of the categories); now
    each row refers to its prompt's one string, same values."""
    from tiersim.response_cache import ResponseCacheConfig, keys

    found, where = keys(prompts, ResponseCacheConfig(size=1, key="prompt"),
                        np.random.default_rng(0))
    assert found.tolist() == prompts["prompt"].astype(str).tolist()
    assert found[0] is found[4] and found[3] is found[7]
    assert where == "trace column prompt"


def test_a_missing_or_empty_prompt_key_is_never_a_hit(tmp_path):
    """A category column's missing value (and the reader's "" for none) is no key, as before."""
    from tiersim.response_cache import ResponseCacheConfig, hits, keys

    df = pd.DataFrame({"prompt": pd.Categorical(["a", None, "", "a", None, ""])})
    cfg = ResponseCacheConfig(mode="lru", size=5, key="prompt")
    found, where = keys(df, cfg, np.random.default_rng(0))
    assert [None if pd.isna(k) else k for k in found] == ["a", None, None, "a", None, None]
    assert where == "trace column prompt (4 rows without one: never a hit)"
    assert hits(found, cfg).tolist() == [False, False, False, True, False, False]


def test_the_top_n_note_counts_keys_without_copying_them(prompts):
    """_note_sent_once counted the keys as a Series (of text: a copy of each row's prompt,
    twice); now by their codes. Same note."""
    import warnings

    from tiersim.response_cache import ResponseCacheConfig, _note_sent_once, hits, keys

    cfg = ResponseCacheConfig(mode="top_n", size=10, key="prompt")
    found, _ = keys(prompts, cfg, np.random.default_rng(0))
    found[-2:] = ["once 0", "once 1"]
    hit = hits(found, cfg)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _note_sent_once(found, hit, "s.yaml")
    assert [str(w.message) for w in seen] == [
        "s.yaml: router.response_cache: top_n answers 2 of 2,000 requests whose prompt the "
        "trace sends only once, as if filled from this very trace (size exceeds the 4 keys "
        "that repeat); set size to at most 4, or use mode: lru"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _peak_mb(_note_sent_once, found, hit, "s.yaml") < 5


def _long_kinds(rows: int, kinds: list[str]) -> pd.Categorical:
    """Step types ``kinds`` in turn over ``rows`` rows, as the reader gives a dictionary-encoded
    column: categories of pandas text (plus one no row has, as the replay's added "step")."""
    return pd.Categorical.from_codes(np.arange(rows) % len(kinds),
                                     categories=pd.Index([*kinds, "step"]))


KINDS = ["planning", "tool_call", "code " + "x" * LONG, "final", "verify " + "y" * LONG]
"""Five step types, two of 20 KB (unmapped: the fallback routes them): 16 MB over 2,000 rows."""


def test_step_type_routing_reads_each_type_once():
    """StepType made each row's type text (astype(str).to_numpy()); now it maps each distinct
    type once and each row by its code: same tiers as from a column of plain text."""
    from test_agentic_routing import TIERS, steps_table

    from tiersim.routing import build_router

    df = steps_table(ROWS).assign(step_type=_long_kinds(ROWS, KINDS))
    plain = df.assign(step_type=np.array(KINDS, dtype=object)[np.arange(ROWS) % len(KINDS)])
    cfg = {"policy": "step_type", "step_tiers": {"planning": "strong", "tool_call": 0,
                                                 KINDS[2]: "cheap"}}
    router = build_router(cfg, TIERS)
    got = router.assign(df, np.random.default_rng(0))
    mapped = router.mapped.copy()
    want = router.assign(plain, np.random.default_rng(0))
    assert np.array_equal(got.tier, want.tier) and np.array_equal(mapped, router.mapped)
    assert got.tier[:5].tolist() == [1, 0, 0, 1, 1] and mapped[:5].tolist() == [1, 1, 1, 0, 0]
    assert _peak_mb(router.assign, df, np.random.default_rng(0)) < 5


def test_text_codes_give_each_row_its_types_place():
    """Rows by their place among the distinct values as text: values equal as text are one
    (1 and "1"), a missing one is -1, a category in no row is still listed."""
    from tiersim.text_columns import text_codes

    codes, kinds = text_codes(pd.Series([1, "1", None, "a", "1"], dtype=object))
    assert codes.tolist() == [0, 0, -1, 1, 0] and kinds.tolist() == ["1", "a"]
    codes, kinds = text_codes(pd.Series(_long_kinds(3, ["b", "a"])))
    assert codes.tolist() == [0, 1, 0] and kinds.tolist() == ["b", "a", "step"]


def test_step_type_figures_read_each_type_once():
    """step_type_results made each row's type text; now by codes: the same figures as from a
    column of plain text, sorted by type, and none for a category no step has."""
    from tiersim.session_metrics import step_type_results

    codes = np.arange(ROWS) % len(KINDS)
    req = pd.DataFrame({"final_tier": np.where(codes % 2, "a", "b"),
                        "expected_accuracy": (codes + 1) / 10.0})
    df = pd.DataFrame({"step_type": _long_kinds(ROWS, KINDS)})
    plain = pd.DataFrame({"step_type": np.array(KINDS, dtype=object)[codes]})
    got = step_type_results(df, req)
    assert got == step_type_results(plain, req)
    assert [(r.step_type[:6], r.requests) for r in got] == [
        ("code x", 400), ("final", 400), ("planni", 400), ("tool_c", 400), ("verify", 400)]
    assert _peak_mb(step_type_results, df, req) < 5


def test_the_request_table_reads_a_session_column_by_row_group(tmp_path):
    """requests.parquet is written a row group at a time; each group's step_type made the
    whole column text (to_numpy of every row, then the group's sliced out); now the group's
    rows only: a 10-row slice of 640 steps of 10-20 KB types peaks far below the column."""
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_with_requests
    from tiersim.scenario import load_scenario

    steps, rows = 8, 640
    kinds = ["planning", "tool_call " + "t" * LONG, "code " + "c" * (LONG // 2), "final"]
    pq.write_table(pa.table({
        "request_id": np.arange(rows), "arrival_s": np.repeat(np.arange(rows // steps), steps),
        "input_tokens": np.full(rows, 100), "output_tokens": np.full(rows, 5),
        "session_id": np.arange(rows) // steps, "step": np.arange(rows) % steps,
        "step_type": pa.array(kinds).take(np.arange(rows) % 4).dictionary_encode()}),
        tmp_path / "t.parquet")
    doc = tiny_doc(trace={"path": "t.parquet"}, workload={"sessions": {"source": "trace"}},
                   router={"policy": "uniform"})
    _, requests = run_with_requests(load_scenario(write_yaml(tmp_path / "s.yaml", doc)))
    part = requests.rows(8, 12)
    assert part["step_type"].tolist() == [kinds[0], kinds[1], kinds[2], kinds[3]]
    assert requests.frame()["step_type"].tolist() == [kinds[i % 4] for i in range(rows)]
    assert _peak_mb(requests.rows, 8, 18) < 2
