"""Round 27 polish: counts a user reads carry thousands separators; the trace converter
refuses to write into an installed package; the address-space guard's stop exits fast."""
from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from tiersim.cli.analytic import _estimate_lines
from tiersim.cli.run import prefix_lines
from tiersim.sweep.progress import ProgressLines
from tiersim.trace.formats import dropped_notes


def _offload_tier() -> SimpleNamespace:
    """A tier with prefix caching and offload levels, with counts above a thousand."""
    return SimpleNamespace(name="t", prefix_hit_rate=0.5, prefix_hit_by_level={"gpu": 0.5},
                           prefix_hit_bound=0.6, offload_loads=1061, offload_recomputes=1234,
                           prefix_recompute_rate=0.001)


def test_offloaded_prefix_counts_have_separators():
    (line,) = prefix_lines(SimpleNamespace(tiers=[_offload_tier()]))
    assert "offloaded prefixes 1,061 loaded, 1,234 recomputed" in line


def test_analytic_estimate_count_has_separators():
    (line,) = _estimate_lines({"source": "s.yaml", "n": 2867, "cheap": "a", "top": "b"})
    assert line.startswith("estimated from s.yaml (2,867 requests, a vs b)")


def test_sweep_progress_counts_have_separators():
    lines = ProgressLines(Console(quiet=True))
    lines.total, lines.done = 12000, 1500
    assert lines.line(1.0).startswith("sweep: 1,500/12,000 points (12%)")


def test_dropped_row_counts_have_separators():
    (note,) = dropped_notes(1500, 12000, 0, 0, 0.0, ("output tokens", "", "not served"))
    assert note.startswith("dropped 1,500 of 12,000 rows with 0 output tokens")
    (note,) = dropped_notes(1500, 12000, 0, 0, 0.0, ("output tokens", "", "x"), whole=False)
    assert "of the first 12,000 (read up to the window's end) rows" in note
