"""Round 37, hostile input (helper fuzz10): what an earlier fuzz round left, through the CLI.
Each test names what a user saw before its fix."""

from __future__ import annotations

import json

import pytest
from test_hostile_inputs import run_cli, tiny_with

EVERY_REQUEST_CACHED = ("router:\n  policy: static_split\n  fractions: [0.5, 0.5]\n",
                        "router:\n  policy: {policy}\n  response_cache: {{mode: top_n, size: 1, "
                        "popularity: {{distinct: 1}}}}\n{extra}")
"""tiny.yaml's router replaced by ``policy`` behind a response cache that answers every
request: one distinct prompt, and the cache holds it."""

CLASSIFIER_POLICIES = {"floor": "  floor: 0.5\n", "threshold": "", "budget":
                       "  budget_relative: 0.5\n", "lagrangian": "  lambda: 0.1\n"}


@pytest.mark.parametrize("policy", CLASSIFIER_POLICIES)
def test_a_classifier_router_behind_a_cache_that_answers_everything_runs(tmp_path, capsys,
                                                                         policy):
    """A router that trains a difficulty classifier (floor, threshold, budget, lagrangian)
    behind a response cache answering all 317 requests read "router.classifier.train_fraction:
    0.5 of 0 requests leaves none to train the classifier on; use more requests", a key the
    scenario does not set and a fix that does not help (the trace has 317 requests), where
    static_split, uniform, oracle and cascade ran and showed "-" for what no tier served. The
    classifier routers now route the empty table as they do: to no tier, with nothing
    trained."""
    old, new = EVERY_REQUEST_CACHED
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with((old, new.format(policy=policy,
                                               extra=CLASSIFIER_POLICIES[policy]))))
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report")
    assert code == 0, err
    assert "Error" not in err and "Traceback" not in err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["response_cache"]["hits"] == summary["response_cache"]["requests"] == 317
    assert summary["completed"] == summary["dropped"] == 0
    assert summary["router"]["policy"] == policy
