"""Round 57 (split57): a split (prefill/decode disaggregated) tier's price per request.

The routers priced a split tier as if it were aggregated: every replica prefilling and
decoding at the fleet's mean load. On disagg.yaml (Llama-3.1-70B TP2 on H200, the Azure code
trace, 0-600 s) that read 1.49 / 1.23 / 1.04 / 0.86 x the run's attributed cost per request
at 0.5 / 2 / 4 / 8x its rate on the 4P 1D split, and 0.87 / 0.55 / 0.44 / 0.35 x on 1P 4D
(modelled). :func:`tiersim.inputs.split_seconds` prices the prompts packed on the prefill
replicas and the other output tokens on the decode replicas, whose arrivals are the trace's
as the prefill replicas let them go (:func:`tiersim.inputs.prefilled_arrivals`): 0.91 to
1.13 x over 1P 1D, 2P 1D, 4P 1D and 1P 4D at 0.5x and 8x (modelled).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, write_yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.fleet import build_fleet
from tiersim.inputs import (
    Arrivals,
    cost_weight,
    fleet_replicas,
    load_scenario_trace,
    prefilled_arrivals,
    price_sample,
    request_seconds,
)
from tiersim.scenario import load_scenario

SPLITS = [(1, 1), (2, 1), (4, 1), (1, 4), (3, 2)]


def split_doc(prefill: int, decode: int, scale: float = 0.5, **link) -> dict:
    """disagg.yaml at split ``prefill``P ``decode``D, its trace 0-600 s at ``scale`` x."""
    doc = yaml.safe_load((REPO / "tiersim" / "scenarios" / "disagg.yaml").read_text())
    doc["trace"].update(
        path=str(REPO / "tiersim" / "traces" / "azure2023_code.parquet"),
        window=[0, 600],
        time_scale=scale,
    )
    tier = doc["tiers"][0]
    tier["replicas"] = prefill + decode
    tier["disaggregation"].update(prefill_replicas=prefill, decode_replicas=decode, **link)
    return doc


def tier_and_mix(path: Path):
    """The scenario at ``path``, its one tier built and the mix its router prices it over."""
    scenario = load_scenario(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = load_scenario_trace(scenario, str(path)).table
    mix = price_sample(table, scenario.seed, fleet_replicas(scenario))
    return scenario, build_fleet(scenario).tiers[0], mix


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    """(tier, mix) of each split in :data:`SPLITS` at the trace's 0.5x."""
    folder = tmp_path_factory.mktemp("split57")
    out = {}
    for prefill, decode in SPLITS:
        path = write_yaml(folder / f"{prefill}p{decode}d.yaml", split_doc(prefill, decode))
        _, tier, mix = tier_and_mix(path)
        out[prefill, decode] = (tier, mix)
    return out


def run_cost(path: Path, out: Path) -> float:
    """The run's attributed cost per request of the scenario at ``path`` (its one tier)."""
    from tiersim.runner import run_scenario

    scenario = load_scenario(path)
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with quiet[0], quiet[1], warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_scenario(scenario, out_dir=out, baselines=False)
    (tier,) = json.loads((out / "summary.json").read_text())["tiers"].values()
    return tier["attributed_cost_usd"] / tier["requests"]


@pytest.mark.parametrize("scale", [0.5, 8.0])
@pytest.mark.parametrize("split", [(1, 1), (2, 1), (4, 1), (1, 4)])
def test_a_split_tier_is_priced_near_its_run(tmp_path, split, scale):
    """Price over the run's attributed cost per request, light and heavy load: 0.91-1.13
    (modelled; the aggregated price read 0.35-1.49 over the same runs)."""
    path = write_yaml(tmp_path / "split.yaml", split_doc(*split, scale=scale))
    scenario, tier, mix = tier_and_mix(path)
    ratio = cost_weight(tier, scenario.cost_model, mix) / run_cost(path, tmp_path / "out")
    assert 0.88 <= ratio <= 1.16


def rises(prices: list[float]) -> list[tuple[float, float]]:
    """Each price above the one before it (past a billionth)."""
    return [(a, b) for a, b in zip(prices, prices[1:]) if b > a * (1 + 1e-9)]


@pytest.mark.parametrize("split", SPLITS)
def test_a_split_tier_is_priced_no_dearer_at_a_heavier_load(priced, split):
    """The trace's arrivals sped up with the rate (its load, as ``time_scale`` sets it),
    0.05x to 40x: the price never rises."""
    tier, mix = priced[split]
    prices = [
        cost_weight(
            tier,
            "attributed",
            dataclasses.replace(
                mix, rate=mix.rate * f, arrivals=Arrivals.of(mix.arrivals.times / f)
            ),
        )
        for f in np.geomspace(0.05, 40.0, 80)
    ]
    assert rises(prices) == []
    assert prices[-1] < prices[0]


@pytest.mark.parametrize("split", [s for s in SPLITS if s[0] >= s[1]])
def test_a_split_tier_is_priced_no_dearer_at_a_higher_rate(priced, split):
    """The property of test_round56_lead_price: the trace's arrivals as they are, 80 rates a
    replica from 0.05 to 20 a second (a smaller fleet sharing them). Not held where a split
    has more decode than prefill replicas: there a smaller fleet's prefill replicas spread
    the decoders' arrivals more, and the price can rise (1P 4D: up to 0.9 % a step)."""
    tier, mix = priced[split]
    rates = np.geomspace(0.05, 20.0, 80)
    prices = [cost_weight(tier, "attributed", dataclasses.replace(mix, rate=r)) for r in rates]
    assert rises(prices) == []
    assert prices[-1] < prices[0]


def test_an_aggregated_tier_is_priced_as_before(priced):
    """A tier with no split takes :func:`request_seconds`, to the bit."""
    tier, mix = priced[4, 1]
    whole = dataclasses.replace(tier, disagg=None)
    seconds = request_seconds(tier.step_model, tier.limits, 1.0, mix, mix.rate, tier.num_blocks)
    assert cost_weight(whole, "attributed", mix) == tier.usd_per_replica_second * float(
        seconds.mean()
    )
    assert cost_weight(tier, "attributed", mix) != cost_weight(whole, "attributed", mix)


def test_the_kv_link_adds_no_replica_seconds(tmp_path):
    """The KV transfer runs no step on either side (the engine's busy time counts steps):
    a link 500 times slower prices the same (it shifts every decode arrival alike)."""
    fast = write_yaml(tmp_path / "fast.yaml", split_doc(4, 1))
    slow = write_yaml(tmp_path / "slow.yaml", split_doc(4, 1, link_gb_s=0.1, latency_us=1000))
    priced_at = [cost_weight(t, "attributed", m) for _, t, m in map(tier_and_mix, (fast, slow))]
    assert priced_at[0] == pytest.approx(priced_at[1], rel=1e-9)


def test_few_arrivals_are_priced_at_poisson(priced):
    """Under 200 arrivals (no times) and none at all, the decode side is priced at Poisson
    arrivals (a queue fed by Poisson arrivals lets them go as Poisson: Burke's theorem)."""
    tier, mix = priced[4, 1]
    poisson = dataclasses.replace(mix, arrivals=Arrivals(rate=mix.arrivals.rate))
    for each in (poisson, dataclasses.replace(mix, arrivals=None)):
        assert np.isfinite(cost_weight(tier, "attributed", each))
        assert cost_weight(tier, "attributed", each) > 0.0


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 5.0), min_size=200, max_size=400),
    seconds=st.floats(0.001, 3.0),
    replicas=st.floats(0.2, 8.0),
)
def test_prefilled_arrivals_are_lindleys_recursion(gaps, seconds, replicas):
    """The closed form equals a first-come-first-served server ``replicas`` times as fast,
    each prompt ``seconds`` on it, stepped one arrival at a time."""
    times = np.cumsum(gaps)
    arrivals = Arrivals.of(times)
    if arrivals is None or arrivals.times is None:
        return
    gap = seconds / replicas
    left, free = [], -np.inf
    for at in arrivals.times:
        free = max(at, free) + gap
        left.append(free)
    got = prefilled_arrivals(arrivals, seconds, replicas)
    want = Arrivals.of(np.array(left))
    assert got.rate == pytest.approx(want.rate, rel=1e-9)
    np.testing.assert_allclose(got.times, want.times, rtol=1e-9, atol=1e-9)
