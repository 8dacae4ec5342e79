"""Bundled files and scenario-relative trace paths resolve as documented."""

from __future__ import annotations

import pytest

from tiersim.errors import TiersimError, TraceError
from tiersim.paths import available, bundled, resolve_trace_path


def test_bundled_with_and_without_extension():
    path = bundled("traces", "azure2023_code.parquet")
    assert path.is_file() and path.parent.name == "traces"
    assert bundled("traces", "azure2023_code") == path


def test_bundled_missing_lists_what_is_there():
    with pytest.raises(TiersimError) as info:
        bundled("traces", "nope")
    message = str(info.value)
    assert message.startswith("no bundled trace named 'nope' in ")
    assert "available: " in message and "azure2023_code.parquet" in message


def test_bundled_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind must be one of traces, scenarios, profiles"):
        bundled("models", "x")


def test_available_lists_traces():
    assert {"azure2023_code.parquet", "azure2023_conv.parquet"} <= set(available("traces"))


def test_relative_path_prefers_scenario_folder(tmp_path):
    own = tmp_path / "azure2023_code.parquet"
    own.write_bytes(b"")
    assert resolve_trace_path("azure2023_code.parquet", tmp_path) == own


def test_relative_path_falls_back_to_bundled(tmp_path):
    assert resolve_trace_path("azure2023_conv.parquet", tmp_path) == bundled(
        "traces", "azure2023_conv.parquet")
    assert resolve_trace_path("azure2023_conv", None) == bundled("traces", "azure2023_conv")


def test_absolute_path(tmp_path):
    own = tmp_path / "t.csv"
    own.write_text("x")
    assert resolve_trace_path(own, None) == own
    with pytest.raises(TraceError) as info:
        resolve_trace_path(tmp_path / "gone.csv", None)
    assert str(info.value) == f"{tmp_path / 'gone.csv'}: trace file not found; check the path"


def test_relative_not_found(tmp_path):
    with pytest.raises(TraceError) as info:
        resolve_trace_path("gone.csv", tmp_path)
    message = str(info.value)
    assert message.startswith(f"gone.csv: trace file not found in {tmp_path} and the bundled "
                              "traces/; bundled traces: ")
    assert "azure2023_code.parquet" in message
