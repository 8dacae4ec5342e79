"""Round 52 (left52, item 5): ``--no-baselines`` under per-request prices.

The estimate (no uniform fleet simulated) scaled each tier's per-token ATTRIBUTED cost and
quoted the saving on that ledger whatever the run's cost model: under ``fixed_per_request`` it
read 8.61 % where the simulated baselines gave 39 % (check51). Under per-request prices a
uniform fleet costs its tier's price per request at any size (a sized uniform fleet drops
nothing and escalates nothing), so the estimate's costs are now exact, in the run's ledger:
tiny.yaml priced 0.001 USD (w4a16) and 0.004 USD (bf16) per request reads 34.1 % (modelled),
what ``--baselines`` gives, where it read 0.383 %. Only the uniform fleets' SLOs are not
simulated, which the row says. Other cost models keep the attributed estimate.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from tiersim.cli.run_summary import saving_row
from tiersim.errors import Note
from tiersim.report.page import savings_section
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

TINY = Path(__file__).resolve().parent.parent / "scenarios" / "tiny.yaml"


def _tiny(tmp_path, cost_model: str):
    doc = yaml.safe_load(TINY.read_text())
    doc["trace"]["path"] = str(TINY.parent.parent / "traces" / "azure2023_code.parquet")
    for tier, price in zip(doc["tiers"], (0.001, 0.004), strict=True):
        tier["cost_per_request_usd"] = price
    doc["cost_model"] = cost_model
    path = tmp_path / f"{cost_model}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_scenario(path)


def _run(scenario, baselines: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        return run_scenario(scenario, baselines=baselines)


def test_per_request_estimate_is_the_simulated_saving(tmp_path):
    scenario = _tiny(tmp_path, "fixed_per_request")
    est, sim = _run(scenario, False).savings, _run(scenario, True).savings
    assert est.method == "estimated" and est.cost_model == "fixed_per_request"
    assert sim.method == "simulated" and sim.cost_model == "fixed_per_request"
    assert est.baseline_uniform_tier == sim.baseline_uniform_tier == "bf16"
    assert est.routed_cost_usd == pytest.approx(sim.routed_cost_usd, rel=1e-12)
    assert est.vs_uniform_frac == pytest.approx(sim.vs_uniform_frac, rel=1e-12)
    assert round(est.vs_uniform_frac, 4) == 0.3407  # 317 requests: 1 - 0.836 / 1.268
    # every request once at the uniform tier's price: 317 x 0.004 and 317 x 0.001 USD
    assert {u.tier: u.cost_usd for u in est.uniform} == pytest.approx(
        {u.tier: u.cost_usd for u in sim.uniform}, rel=1e-12)
    assert {u.tier: u.cost_usd for u in est.uniform} == pytest.approx(
        {"w4a16": 0.317, "bf16": 1.268}, rel=1e-12)


def test_the_row_says_where_the_exact_figure_comes_from(tmp_path):
    run = _run(_tiny(tmp_path, "fixed_per_request"), False)
    label, value, source = saving_row(run.savings)
    assert (label, value) == ("estimated saving vs uniform bf16", "34.1 % (per-request prices)")
    assert source == ("fixed_per_request; every request at each uniform tier's "
                      "cost_per_request_usd: exact at any fleet size; its SLOs not simulated "
                      "(--baselines simulates)")
    page = savings_section(run)
    assert "Estimated savings (every request at each uniform tier&#x27;s" in page \
        or "Estimated savings (every request at each uniform tier's" in page
    assert "per-token cost" not in page


@pytest.mark.parametrize("cost_model", ["attributed", "provisioned"])
def test_other_cost_models_keep_the_attributed_estimate(tmp_path, cost_model):
    run = _run(_tiny(tmp_path, cost_model), False)
    assert run.savings.cost_model == "attributed"
    label, value, source = saving_row(run.savings)
    assert value.endswith("(estimate)")
    assert source == "estimate: per-token attributed cost, not simulated (--baselines simulates)"
    console = Console(width=200, record=True)
    console.print(value)
    assert "per-request" not in console.export_text()
