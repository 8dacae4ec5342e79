"""Response-cache keys: which rows are the same prompt, and which have no key (never a hit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import ScenarioError
from tiersim.response_cache import ResponseCacheConfig, hits, keys


def _table(hashes: list, tokens: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"arrival_s": np.arange(len(tokens), dtype=float),
                         "input_tokens": tokens, "output_tokens": [10] * len(tokens),
                         "prefix_hashes": [np.asarray(h, dtype=np.int64) for h in hashes]})


def _keys(df: pd.DataFrame, **cfg) -> tuple[np.ndarray, str]:
    return keys(df, ResponseCacheConfig(size=5, **cfg), np.random.default_rng(0))


@pytest.mark.parametrize("mode", ["lru", "top_n"])
def test_rows_without_block_hashes_are_never_hits(mode):
    """``[]`` is no prefix block, not one shared prompt (same-length rows hit 95%)."""
    df = _table([[]] * 20, [100] * 20)
    found, source = _keys(df, mode=mode)
    assert not hits(found, ResponseCacheConfig(mode=mode, size=5)).any()
    assert source == ("prefix_hashes (whole prompt) + input length (20 rows whose ids do not "
                      "cover the whole prompt: never a hit)")


def test_a_list_covering_only_a_shared_prefix_is_no_key():
    """1,000 tokens span 2 blocks of 512: one id names the shared first block only."""
    df = _table([[7], [7], [7, 8], [7, 8]], [1000, 1000, 1000, 1000])
    found, _ = _keys(df, mode="lru")
    assert hits(found, ResponseCacheConfig(mode="lru", size=5)).tolist() == [
        False, False, False, True]


def test_a_key_column_of_objects_is_refused_with_its_place():
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5],
                       "output_tokens": [5, 5], "mykey": [{"a": 0}, {"a": 1}]})
    with pytest.raises(ScenarioError) as info:
        _keys(df, key="mykey")
    assert str(info.value) == (
        "scenario: router.response_cache.key: the trace's column 'mykey' holds an object in "
        "request 1; name a column of one number or text per row (the prompt's hash)")


def test_a_key_beside_popularity_is_refused_with_the_line(tmp_path, capsys):
    """Generated keys replaced the named column silently."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import one_error_line, run_cli

    doc = tiny_doc()
    doc["router"] = {"policy": "static_split", "fractions": [0.5, 0.5],
                     "response_cache": {"size": 5, "key": "prompt_hash",
                                        "popularity": {"distinct": 2}}}
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines", "--no-report"))
    assert line.endswith(": router.response_cache: key and popularity both choose the keys "
                         "(popularity generates them, so key would be unused); drop one of them")
    assert " line " in line


def _answered_notes(prompts: list[str], **cfg) -> list[str]:
    """The notes :func:`answered` raises for a trace of ``prompts`` (one row each)."""
    import warnings
    from types import SimpleNamespace

    from tiersim.response_cache import answered

    df = pd.DataFrame({"arrival_s": np.arange(len(prompts), dtype=float),
                       "input_tokens": 100, "prompt_hash": prompts})
    scenario = SimpleNamespace(seed=0, router=SimpleNamespace(
        response_cache=ResponseCacheConfig(**cfg)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answered(scenario, df, "s.yaml")
    return [str(w.message) for w in caught]


def test_a_top_n_cache_answering_prompts_sent_once_says_so():
    """size 5 over A B A C answered every request, B and C (never repeated) as if the cache
    had been filled from the trace it replays: a 100% hit rate without a word."""
    assert _answered_notes(list("ABAC"), mode="top_n", size=5) == [
        "s.yaml: router.response_cache: top_n answers 2 of 4 requests whose prompt the trace "
        "sends only once, as if filled from this very trace (size exceeds the 1 key that "
        "repeats); set size to at most 1, or use mode: lru"]
    assert _answered_notes(list("ABC"), mode="top_n", size=2) == [
        "s.yaml: router.response_cache: top_n answers 2 of 3 requests whose prompt the trace "
        "sends only once, as if filled from this very trace (no key repeats); use mode: lru, "
        "or drop the cache"]
    assert _answered_notes(list("ABAC"), mode="top_n", size=1) == []
    assert _answered_notes(list("ABAC"), mode="lru", size=5) == []
