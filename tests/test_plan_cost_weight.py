"""The cost the planner's and the run's routers minimise follows the cost model in force: a
tier's price per request steers routing only where the ledger charges it
(``fixed_per_request``)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tiny_doc

from tiersim.inputs import LengthMix, tier_infos
from tiersim.scenario import scenario_from_dict

MIX = LengthMix(prompt=np.array([300, 2000, 9000]), output=np.array([50, 200, 10]))
"""Three requests to price the tiers over: one prompt beyond the tiny tiers' 8,192-token
chunk (two prefill steps)."""


def weights(cost_model: str, prices: tuple[float, float] | None) -> list[float]:
    """The tiny scenario's routing cost weights under ``cost_model`` over :data:`MIX`, its
    tiers priced per request at ``prices`` (cheap tier first) or not at all."""
    doc = tiny_doc(cost_model=cost_model)
    for tier, price in zip(doc["tiers"], prices or (None, None), strict=True):
        if price is not None:
            tier["cost_per_request_usd"] = price
    return [t.cost_weight for t in tier_infos(scenario_from_dict(doc, "tiny.yaml"), None, MIX)]


@pytest.mark.parametrize("cost_model", ["provisioned", "attributed"])
def test_prices_the_ledger_ignores_do_not_steer_routing(cost_model):
    # the floor router minimised cost_per_request_usd under provisioned and attributed cost
    # too, routing on prices the run's cost never counts; here they even invert the order
    priced = weights(cost_model, (0.001, 0.005))
    assert priced == weights(cost_model, None)
    # w4a16's requests are dearer than bf16's: MIX carries no load, so each is priced at a
    # decode batch of one sequence, where tiny's W4A16 step is the slower (round 53; at the
    # 32-sequence batch round 52 priced at, w4a16 read the cheaper and the prices here were
    # (0.005, 0.001))
    assert priced[0] > priced[1]


def test_prices_per_request_steer_routing_where_the_ledger_charges_them():
    assert weights("fixed_per_request", (0.005, 0.001)) == [0.005, 0.001]


def test_a_tier_s_cost_weight_is_its_requests_price_in_usd():
    """It was 3,600 times that (USD per hour times seconds), so a budget_usd_per_request in
    USD was refused as below every tier. Round 52: the price of the requests' replica-seconds
    (their prompts in the scheduler's chunks, each output token 1/32 of a 32-sequence
    decode step at the request's mean context), not of one reference step. Round 53: the
    decode batch is the load's (:data:`MIX` carries none: one sequence a step)."""
    from tiersim.fleet import build_fleet
    from tiersim.perf.base import StepShape

    scenario = scenario_from_dict(tiny_doc(cost_model="provisioned"), "tiny.yaml")
    infos = tier_infos(scenario, None, MIX)
    for tier, info in zip(build_fleet(scenario).tiers, infos, strict=True):
        chunk = tier.limits.max_num_batched_tokens
        assert chunk == 8192
        model = tier.step_model
        prefill = [model.step_time(StepShape(prefill_chunks=((300, 0),))),
                   model.step_time(StepShape(prefill_chunks=((2000, 0),))),
                   model.step_time(StepShape(prefill_chunks=((8192, 0),)))
                   + model.step_time(StepShape(prefill_chunks=((808, 8192),)))]
        decode = [out * model.step_time(StepShape(decode_seqs=1, decode_context=p + out / 2))
                  for p, out in ((300, 50), (2000, 200), (9000, 10))]
        price = tier.usd_per_replica_second * (sum(prefill) + sum(decode)) / 3
        assert info.cost_weight == pytest.approx(price, rel=1e-9)
        assert info.cost_weight < 1e-3  # 3.5 USD per GPU-hour, well under a second a request


def test_tiers_not_priced_yet_read_nan_and_route_prices_them():
    """Without a mix (the workload not drawn yet) the weights are NaN outside
    ``fixed_per_request``, never a made-up price (:func:`tiersim.inputs.route` prices them
    over the table it routes: tests/test_round52_price52.py)."""
    scenario = scenario_from_dict(tiny_doc(cost_model="provisioned"), "tiny.yaml")
    assert all(np.isnan(t.cost_weight) for t in tier_infos(scenario))
