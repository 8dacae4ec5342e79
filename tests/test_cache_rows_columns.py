"""The response-cache table's first row puts the run with the cache and the run without it in
their own columns: before, its "without" cell held the request count (191), read as the hits
of a run that has no cache."""

from __future__ import annotations

from types import SimpleNamespace

from tiersim.report.agentic import cache_rows


def test_hits_row_reads_by_column():
    cache = SimpleNamespace(hits=57, requests=191, hit_rate=57 / 191, mode="top_n", size=20,
                            key_source="generated", gpu_hours_busy=0.02,
                            gpu_hours_busy_without=0.03, gpu_hours_saved=0.01, cost_usd=0.07,
                            cost_without_usd=0.09, cost_saved_usd=0.02,
                            attributed_saved_usd=0.02, e2e_mean_s=1.0, e2e_mean_without_s=2.0,
                            e2e_p50_s=0.8, e2e_p50_without_s=1.4, e2e_p99_s=4.9,
                            e2e_p99_without_s=5.9, ttft_p50_s=0.02, ttft_p50_without_s=0.08,
                            lookup_s=0.005)
    run = SimpleNamespace(response_cache=cache, cost_model="attributed")
    assert cache_rows(run)[0] == [
        "requests answered by the cache", 57, 0,
        "of 191 requests: hit rate 29.8% (top_n, size 20, keys: generated)"]
