"""Round 57, review57b: summary.json's ``analytic.sources.p`` said the easy requests were
"the requests whose difficulty_class in the trace is not hard", but tiny's trace (as agentic's
and cascade_models') has no such column: workload.difficulty draws each request's class
(:func:`tiersim.routing.accuracy.prepare_workload`), replacing any the trace gives unless its
rows carry correct_<tier> labels. The words now say so.
"""

from __future__ import annotations

import numpy as np
from conftest import TINY

from tiersim.inputs import load_scenario_trace, tier_infos
from tiersim.routing.accuracy import prepare_workload
from tiersim.scenario import load_scenario
from tiersim.summary import EASY_BY_CLASS, estimate_sources


def test_tiny_classes_are_drawn_not_read_from_its_trace():
    scenario = load_scenario(TINY)
    table = load_scenario_trace(scenario, str(TINY)).table
    assert "difficulty_class" not in table.columns
    prepared = prepare_workload(
        table, tier_infos(scenario), scenario.workload, np.random.default_rng(0), str(TINY)
    )
    assert prepared.df["difficulty_class"].notna().any()  # so p is read by class
    said = estimate_sources("w4a16", "bf16", "expected", classes_given=True)["p"]
    assert said == f"the share of easy requests: {EASY_BY_CLASS}"
    assert "in the trace" not in said and "workload.difficulty" in said
