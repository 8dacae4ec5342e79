"""Round 23, serving techniques and their accounting: cascades, the response cache, prefix
caching and speculative decoding, and how they feed the run's figures."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli


def _edited(run, folder, doc: dict):
    """A copy of ``run`` at ``folder`` whose summary.json holds ``doc``."""
    copy_folder(run, folder)
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize(("edit", "problem"), [
    # a cascade's share sent on by its first tier: was drawn as "500 %"
    (lambda d: d["router"].__setitem__("escalation_refused_rate", 5.0),
     "'router.escalation_refused_rate' must be a fraction between 0 and 1, got 5.0"),
    # fractions inside a map or a pair: were drawn as 700 % and 300 % - 500 %
    (lambda d: d["router"]["first_tier_shares"].__setitem__("bf16", 7.0),
     "'router.first_tier_shares.bf16' must be a fraction between 0 and 1, got 7.0"),
    (lambda d: d["router"].__setitem__("accuracy_ci95", [3.0, 5.0]),
     "'router.accuracy_ci95[0]' must be a fraction between 0 and 1, got 3.0"),
    (lambda d: d["tiers"]["bf16"].__setitem__("prefix_hit_by_level", {"gpu": -0.5}),
     "'tiers.bf16.prefix_hit_by_level.gpu' must be a fraction between 0 and 1, got -0.5"),
])
def test_a_fraction_no_run_writes_is_refused_wherever_it_sits(hand_edited_run, tmp_path, capsys,
                                                             edit, problem):
    """The summary reader range-checked top-level fractions only: a share or an interval bound
    nested in a map or a pair, and the cascade's escalation_refused_rate, passed at any value."""
    doc = json.loads((hand_edited_run / "summary.json").read_text())
    edit(doc)
    folder = _edited(hand_edited_run, tmp_path / "r", doc)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def _cascade_behind_a_cache():
    """The tiny scenario as a noisy cascade behind a top-1 response cache over near-unique
    prompts: a handful of hits, so the run with the cache and without it should route the
    other requests alike."""
    import yaml
    from conftest import TINY

    from tiersim.scenario import scenario_from_dict

    doc = yaml.safe_load(TINY.read_text())
    doc["router"] = {"policy": "cascade",
                     "cascade": {"threshold": 0.5, "signal_noise": 0.4},
                     "response_cache": {"size": 1,
                                        "popularity": {"distinct": 300, "exponent": 0}}}
    doc["cost_model"] = "attributed"
    return scenario_from_dict(doc, str(TINY))


def test_the_run_without_the_response_cache_routes_the_served_requests_alike(monkeypatch):
    """The comparison run (every request, no cache) routed the whole table afresh: a cascade's
    noise, a static split's draws fell on other requests, so 6 hits of 2,867 in
    scenarios/cascade.yaml flipped 483 escalations and the cache 'saved' -0.0049 USD."""
    import numpy as np

    from tiersim import fleet as fleet_mod
    from tiersim.runner import run_scenario

    seen = []
    real = fleet_mod.simulate

    def spy(specs, df, assignment):
        seen.append((df["request_id"].to_numpy().copy(), assignment))
        return real(specs, df, assignment)

    monkeypatch.setattr(fleet_mod, "simulate", spy)
    run = run_scenario(_cascade_behind_a_cache())
    (ids, served), (all_ids, without) = seen
    assert 0 < run.response_cache.hits < len(all_ids)
    rows = np.searchsorted(all_ids, ids)
    assert (all_ids[rows] == ids).all()
    np.testing.assert_array_equal(without.tier[rows], served.tier)
    np.testing.assert_array_equal(without.escalate_to[rows], served.escalate_to)
