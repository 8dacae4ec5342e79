"""Round 55 (speed55): each point of ``tiersim sweep`` sized its uniform baselines by
simulation anew, though an axis over the router, the prices or the routed fleet leaves every
engine run of that sizing the same as the earlier point's (routing.yaml's four points over
``router.confusion.fpr`` size the same three uniform fleets four times). A worker keeps its
points' runs (:data:`tiersim.sweep.points._KEPT_RUNS`, a :class:`tiersim.plan.evaluate.
RunStore`); a run read back gives the summary a point run alone gives, to the byte. What
invalidates a kept run is tested in test_round55_speed55_runs.py."""

from __future__ import annotations

import json

from conftest import cheap_first_tiers, tiny_doc
from test_round55_speed55_runs import _scenario


def test_a_sweeps_later_point_reads_its_baselines_runs_and_writes_the_same_summary(
        tmp_path, monkeypatch):
    """Two points of a sweep over the router (tiersim.sweep.points): the second point's sized
    uniform baselines are the first point's engine runs read back, and its summary is the one
    a run of it alone gives, to the byte."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import scenario_from_dict
    from tiersim.sweep import points

    monkeypatch.setattr(points, "_KEPT_RUNS", None)  # none from an earlier test
    _, source = _scenario(tmp_path)
    docs = []
    for fractions in ([0.5, 0.5], [0.3, 0.7]):
        doc = tiny_doc(router={"policy": "static_split", "fractions": fractions},
                       tiers=cheap_first_tiers())  # no note on the tiers' order
        doc["trace"]["window"] = [240, 270]
        docs.append(doc)
    points.default_runner(docs[0], source)
    assert points._KEPT_RUNS.runs and points._KEPT_RUNS.hits == 0
    assert points._KEPT_RUNS.max_rows == points.KEPT_ROWS  # a worker's smaller bound
    second = points.default_runner(docs[1], source)
    assert points._KEPT_RUNS.hits > 0
    alone = run_scenario(scenario_from_dict(docs[1], source), scenario_path=source,
                         baselines=True).to_json()
    assert json.dumps(second, sort_keys=True) == json.dumps(alone, sort_keys=True)
