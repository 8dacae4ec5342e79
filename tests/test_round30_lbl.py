"""Round 30 (helper lbl): labels a planner reads say each fact once and parse."""
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def test_latency_source_names_each_origin_once():
    """The headline latency rows read "fitted on measured serving rows + public measured +
    public measured, points below the physical limit from the roofline": the kinds, which hold
    commas, were joined with " + ", so "public measured" read twice. Now each origin is named
    once, its readings bracketed, those only some of its tables have after "some tables:"."""
    from tiersim.summary import kinds_words

    kinds = {"fitted on measured serving rows", "public measured",
             "public measured, points below the physical limit from the roofline"}
    assert kinds_words(kinds) == [
        "fitted on measured serving rows",
        "public measured (some tables: points below the physical limit from the roofline)"]


def test_latency_source_readings_every_table_has_come_first():
    """A reading every table of an origin has is said without "some tables:"; a label none of
    the origins match keeps its own commas."""
    from tiersim.summary import kinds_words

    kinds = {"public measured, rescaled to the shape",
             "public measured, rescaled to the shape, launch floor removed in CUDA graphs",
             "profile:x (a, b)", "roofline"}
    assert kinds_words(kinds) == [
        "profile:x (a, b)",
        "public measured (rescaled to the shape; some tables: launch floor removed in CUDA "
        "graphs)",
        "roofline"]


@pytest.mark.parametrize("name", ["agentic", "cascade_models", "response_cache"])
def test_golden_latency_source_says_public_measured_once(name):
    """The bundled examples' summaries name "public measured" once in sources.latency."""
    latency = json.loads((GOLDEN / f"{name}_summary.json").read_text())["sources"]["latency"]
    assert latency.count("public measured") == 1, latency


def _logged(fmt: str):
    """Six requests of a logged ``fmt`` trace with a ``mykey`` column; the third failed (0
    output tokens, dropped by every logged format)."""
    import numpy as np
    import pandas as pd

    n, out = 6, [5, 5, 0, 5, 5, 5]
    key = [f"k{i % 2}" for i in range(n)]
    if fmt == "azure":
        t = pd.Timestamp("2023-11-16 18:00:00") + pd.to_timedelta(np.arange(n), unit="s")
        return pd.DataFrame({"TIMESTAMP": t, "ContextTokens": 100, "GeneratedTokens": out,
                             "mykey": key})
    if fmt == "burstgpt":
        return pd.DataFrame({"Timestamp": np.arange(n, dtype=float), "Model": "ChatGPT",
                             "Request tokens": 100, "Response tokens": out,
                             "Total tokens": [100 + o for o in out], "Log Type":
                             "Conversation log", "mykey": key})
    return pd.DataFrame({"timestamp": np.arange(n) * 1000, "input_length": 100,
                         "output_length": out, "mykey": key})


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("fmt", ["azure", "burstgpt", "mooncake"])
def test_logged_trace_carries_the_kept_key_column(tmp_path, fmt, suffix):
    """An Azure, BurstGPT or Mooncake trace with a ``mykey`` column, read for a response cache
    keyed on it (``keep``), lost the column (the converters carried canonical columns only), so
    the run was refused with "the trace has no 'mykey' column". Now the column is carried, for
    the requests kept, and no note calls it unread."""
    import warnings

    from tiersim.trace.loader import read_trace

    path = tmp_path / f"t.{suffix}"
    df = _logged(fmt)
    df.to_parquet(path) if suffix == "parquet" else df.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table = read_trace(path, keep=("mykey",)).table
    assert list(table["mykey"].astype(str)) == ["k0", "k1", "k1", "k0", "k1"]
    assert not [w for w in seen if "mykey" in str(w.message)]
