"""Loaders of logged LLM traffic into the canonical request table (DESIGN.md section 3).

Formats: Azure LLM inference traces 2023/2024, BurstGPT CSV, Mooncake JSONL and the canonical
Parquet/CSV, recognised from their columns. See :func:`load_trace` and :func:`trace_stats`.
"""

from __future__ import annotations

from tiersim.trace.canonical import write_canonical
from tiersim.trace.formats import FORMATS
from tiersim.trace.loader import (
    FORMAT_NAMES,
    LoadedTrace,
    TraceOrigin,
    TraceWarning,
    load_lengths,
    load_trace,
    read_trace,
)
from tiersim.trace.stats import trace_stats

__all__ = ["FORMATS", "FORMAT_NAMES", "LoadedTrace", "TraceOrigin", "TraceWarning",
           "load_lengths", "load_trace", "read_trace", "trace_stats", "write_canonical"]
