"""Round 52 review: a response-cache run's comparison without the cache raises no note of its
own routing.

A run behind a response cache also routes and simulates every request as if there were no
cache, to measure what the cache saves (``summary.json``'s ``response_cache`` block:
:func:`tiersim.runner._cache_effect`). That routing's idle-confusion note (new this round:
the rate moves no request) was printed beside the run's, with another count: "each of the 158
requests" of the 161 misses served and "each of the 312 requests" of all 317, two notes
of one setting that contradict each other. The planner leaves a design's routing notes out for
the same reason (a routing that is not the run's)."""

from __future__ import annotations

import warnings

from conftest import tiny_doc, write_yaml

from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def test_one_idle_confusion_note_of_the_served_requests(tmp_path):
    doc = tiny_doc(router={"policy": "uniform", "confusion": {"fnr": 0.1},
                           "response_cache": {"mode": "top_n", "size": 5,
                                              "popularity": {"distinct": 50, "exponent": 1.0}}})
    path = write_yaml(tmp_path / "s.yaml", doc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_scenario(load_scenario(path))
    said = [str(w.message) for w in caught if "changes nothing here" in str(w.message)]
    assert len(said) == 1 and "each of the 158 requests that needed only a tier below" in said[0]
    assert [n for n in run.notes if "changes nothing here" in n] == said
    # 158 of the 161 misses the fleet served needed less than the top tier (312 of all 317)
    assert (run.requests, run.response_cache.hits) == (161, 156)
