"""The run's headline counts the trace's requests, with those a response cache answered."""

from __future__ import annotations

from types import SimpleNamespace

from tiersim.cli.run import _request_counts


def test_the_requests_row_counts_what_the_cache_answered():
    run = SimpleNamespace(requests=1995, completed=1990, dropped=5, response_cache=None)
    assert _request_counts(run) == "1,995 (1,990 / 5)"
    run.response_cache = SimpleNamespace(requests=2867, hits=872)
    assert _request_counts(run) == (
        "2,867 (1,990 / 5; 872 answered by the response cache)")
    run.response_cache = SimpleNamespace(requests=30, hits=30)  # the cache answered all
    run.requests = run.completed = run.dropped = 0
    assert _request_counts(run) == "30 (0 / 0; 30 answered by the response cache)"
