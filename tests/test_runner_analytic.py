"""The run summary carries the two-type closed form for its cheapest and top tiers."""

from __future__ import annotations

import pytest

from tiersim.analytic import max_saving
from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


@pytest.fixture(scope="module")
def summary():
    return run_scenario(load_scenario(bundled("scenarios", "tiny.yaml")))


def test_analytic_frontier_spans_the_uniform_tiers(summary):
    analytic = summary.analytic
    uniform = {u.tier: u for u in summary.savings.uniform}
    params = analytic["params"]
    cheap, top = params["cheap"], params["top"]
    oracle = analytic[f"oracle ({cheap} vs {top})"]
    assert oracle[0][0] == pytest.approx(uniform[cheap].cost_usd)
    assert oracle[-1][0] == pytest.approx(uniform[top].cost_usd)
    # the kink: every hard request upgraded, at cost c0 + (1 - p) dc
    assert oracle[1][0] == pytest.approx(params["c0_usd"] + (1 - params["p"]) * params["dc_usd"])
    assert oracle[0][1] <= oracle[1][1] <= oracle[2][1]
    assert params["dC_star_usd"] == pytest.approx(
        max_saving(params["p"], params["eps"], params["delta"], params["dc_usd"]))
