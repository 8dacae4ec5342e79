"""The bundled traces load and match the figures quoted in traces/README.md."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from tiersim.paths import bundled
from tiersim.trace import load_lengths, load_trace, trace_stats

# name -> (rows, rate_rps to 2 decimals, inter-arrival CV to 3 significant digits,
#          input mean, input p99, output mean, output p99), from ../shared/data/README.md
AZURE = {
    "azure2023_code": (8819, 2.57, 13.2, 2048, 7436, 27.9, 251),
    "azure2023_conv": (19366, 5.53, 1.09, 1155, 4142, 211, 601),
}


@pytest.mark.parametrize("name", list(AZURE))
def test_azure_figures(name):
    rows, rate, cv, in_mean, in_p99, out_mean, out_p99 = AZURE[name]
    df = load_trace(bundled("traces", name))
    s = trace_stats(df)
    assert s["rows"] == rows
    assert round(s["rate_rps"], 2) == rate
    assert float(f"{s['interarrival_cv']:.3g}") == cv
    assert s["input_tokens"]["mean"] == pytest.approx(in_mean, abs=0.5)
    assert s["input_tokens"]["p99"] == pytest.approx(in_p99, abs=1)
    assert s["output_tokens"]["mean"] == pytest.approx(out_mean, abs=0.5)
    assert s["output_tokens"]["p99"] == pytest.approx(out_p99, abs=1)
    assert s["span_s"] < 3600 and df["arrival_s"].iloc[0] == 0.0
    assert set(df["task_type"].cat.categories) == {name.split("_")[1]}


def test_mooncake_figures():
    s = trace_stats(load_trace(bundled("traces", "mooncake_synthetic")))
    assert s["rows"] == 3993
    assert round(s["prefix_reuse"], 2) == 0.65


def test_sharegpt_lengths_only():
    df = load_lengths(bundled("traces", "sharegpt_lengths"))
    assert len(df) == 30731
    assert df["input_tokens"].mean() == pytest.approx(2340, abs=0.5)
    assert df["output_tokens"].mean() == pytest.approx(439, abs=0.5)


@pytest.mark.parametrize("name", ["azure2023_code", "azure2023_conv", "mooncake_synthetic",
                                  "sharegpt_lengths"])
def test_bundled_files_carry_their_source(name):
    meta = pq.read_schema(bundled("traces", name)).metadata
    assert b"tiersim.source" in meta and len(meta[b"tiersim.source_sha256"]) == 64
