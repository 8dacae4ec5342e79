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
