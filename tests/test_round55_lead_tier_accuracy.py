"""Each tier's accuracy in summary.json and the report: the run's accuracy over the requests
answered on that tier alone (fresh54b: a planner could read the run's accuracy but not where it
was lost)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml

from tiersim.metrics import add_latencies
from tiersim.results import RunResult
from tiersim.summary import _tier_stats


def _four_requests() -> pd.DataFrame:
    """Tier 0 answers two requests (accuracy 0.9 and 0.7), tier 1 answers one (0.6) and
    drops one (its expected accuracy 0.8 is not scored: a dropped request scores 0)."""
    return add_latencies(pd.DataFrame({
        "arrival_s": [0.0, 1.0, 2.0, 3.0], "first_token_s": [0.5, 1.5, 2.5, np.nan],
        "finish_s": [1.0, 2.0, 3.0, np.nan], "input_tokens": [10] * 4,
        "output_tokens": [5] * 4, "queue_s": [0.0, 0.0, 0.0, np.nan],
        "expected_accuracy": [0.9, 0.7, 0.6, 0.8], "final_tier": [0, 0, 1, 1]}))


def test_a_tiers_accuracy_is_the_mean_of_its_own_requests_a_dropped_one_scored_zero():
    """Tier 0: (0.9 + 0.7) / 2 = 0.8; tier 1: (0.6 + 0) / 2 = 0.3; a tier that answered
    nothing has none (None, not NaN); no scores given, no accuracy (the older callers)."""
    df = _four_requests()
    final, ttft, tpot = (df[c].to_numpy() for c in ("final_tier", "ttft_s", "tpot_s"))
    scored = np.array([0.9, 0.7, 0.6, 0.0])
    assert _tier_stats(final == 0, ttft, tpot, scored).accuracy == pytest.approx(0.8)
    assert _tier_stats(final == 1, ttft, tpot, scored).accuracy == pytest.approx(0.3)
    assert _tier_stats(final == 2, ttft, tpot, scored).accuracy is None
    assert _tier_stats(final == 0, ttft, tpot).accuracy is None


def test_the_tiers_accuracies_weighted_by_their_requests_give_the_runs(tmp_path):
    """On a routed run of the tiny scenario the two tiers' accuracies differ (the router sends
    the hard requests to one), each is the mean of requests.parquet's rows answered there, and
    weighted by requests they sum to the run's accuracy; summary.json carries them and reads
    back; the report's per-tier table has the column and says what it is not."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = write_yaml(tmp_path / "t.yaml", tiny_doc())
    run = run_scenario(load_scenario(path), out_dir=tmp_path / "o", scenario_path=path)
    rows = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    scored = rows["expected_accuracy"].where(rows["completed"], 0.0)
    for tier in run.tiers:
        mine = rows["final_tier"] == tier.name
        assert tier.accuracy == pytest.approx(scored[mine].mean(), rel=1e-12)
    assert len({round(t.accuracy, 6) for t in run.tiers}) == 2  # else the case shows nothing
    weighted = sum(t.accuracy * t.requests for t in run.tiers) / run.requests
    assert weighted == pytest.approx(run.accuracy, rel=1e-12)
    data = json.loads((tmp_path / "o" / "summary.json").read_text())
    back = RunResult.from_json(data)
    assert [t.accuracy for t in back.tiers] == pytest.approx([t.accuracy for t in run.tiers])
    for tier in data["tiers"].values():  # a summary written before the field reads as None
        tier.pop("accuracy")
    assert {t.accuracy for t in RunResult.from_json(data).tiers} == {None}


def test_a_tiers_accuracy_above_one_is_refused_as_a_fraction(tmp_path):
    """A hand edit to 1.5 is no fraction: the reader's one line names the file and the
    field."""
    from tiersim.errors import TiersimError
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = write_yaml(tmp_path / "t.yaml", tiny_doc())
    run_scenario(load_scenario(path), out_dir=tmp_path / "o", scenario_path=path)
    data = json.loads((tmp_path / "o" / "summary.json").read_text())
    name = next(iter(data["tiers"]))
    data["tiers"][name]["accuracy"] = 1.5
    with pytest.raises(TiersimError) as err:
        RunResult.from_json(data)
    assert str(err.value) == (f"summary.json: malformed summary ('tiers.{name}.accuracy' must "
                              "be a fraction between 0 and 1, got 1.5); rerun `tiersim run` "
                              "to rewrite it")
