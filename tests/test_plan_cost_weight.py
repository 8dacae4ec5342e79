"""The cost the planner's and the run's routers minimise follows the cost model in force: a
tier's price per request steers routing only where the ledger charges it
(``fixed_per_request``)."""

from __future__ import annotations

import pytest
from conftest import tiny_doc

from tiersim.inputs import tier_infos
from tiersim.scenario import scenario_from_dict


def weights(cost_model: str, prices: tuple[float, float] | None) -> list[float]:
    """The tiny scenario's routing cost weights under ``cost_model``, its tiers priced per
    request at ``prices`` (cheap tier first) or not at all."""
    doc = tiny_doc(cost_model=cost_model)
    for tier, price in zip(doc["tiers"], prices or (None, None), strict=True):
        if price is not None:
            tier["cost_per_request_usd"] = price
    return [t.cost_weight for t in tier_infos(scenario_from_dict(doc, "tiny.yaml"))]


@pytest.mark.parametrize("cost_model", ["provisioned", "attributed"])
def test_prices_the_ledger_ignores_do_not_steer_routing(cost_model):
    # the floor router minimised cost_per_request_usd under provisioned and attributed cost
    # too, routing on prices the run's cost never counts; here they even invert the order
    priced = weights(cost_model, (0.005, 0.001))
    assert priced == weights(cost_model, None)
    assert priced[0] < priced[1]  # w4a16's reference step is cheaper than bf16's


def test_prices_per_request_steer_routing_where_the_ledger_charges_them():
    assert weights("fixed_per_request", (0.005, 0.001)) == [0.005, 0.001]


def test_a_tier_s_cost_weight_is_its_reference_step_price_in_usd():
    """It was 3,600 times that (USD per hour times seconds), so a budget_usd_per_request in
    USD was refused as below every tier."""
    from tiersim.fleet import build_fleet
    from tiersim.inputs import REFERENCE_STEP
    from tiersim.perf.base import StepShape

    scenario = scenario_from_dict(tiny_doc(cost_model="provisioned"), "tiny.yaml")
    shape = StepShape(prefill_chunks=((REFERENCE_STEP["prefill_tokens"], 0),),
                      decode_seqs=REFERENCE_STEP["decode_seqs"],
                      decode_context=REFERENCE_STEP["decode_context"])
    for tier, info in zip(build_fleet(scenario).tiers, tier_infos(scenario), strict=True):
        price = tier.usd_per_replica_second * tier.step_model.step_time(shape)
        assert info.cost_weight == pytest.approx(price, rel=1e-12)
        assert info.cost_weight < 1e-3  # 3.5 USD per GPU-hour, a step of well under a second
