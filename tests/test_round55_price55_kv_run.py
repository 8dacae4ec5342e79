"""Round 55 (price55): the KV cap on the price's batch (:func:`tiersim.inputs.batch_cap`)
against the engine, on a load past what a replica's KV cache holds.

Ten minutes of tiny's Azure code trace (240-840 s) at 15x, 1,372 requests, all on one BF16
replica of Qwen3-Coder-30B-A3B (roofline, tiny's ``profile: null``): at
``gpu_memory_utilization`` 0.47 its 4,940 KV blocks hold 40 of the priced requests' mean
1,945-token sequences, and the run holds about as many while busy (37.4: its requests' time
in the engine over its busy replica-seconds, as test_round53_check53b counts it; 40.5 by its
timeseries' mean running count), where the price
took 256 (``max_num_seqs``) until round 55. The cap moves the price as the runs move: the
KV-bound replica's cost per request is 1.19 x the same replica's at 0.9 (whose cache holds
374 above its watermark), and the price 1.26 x (1.15 x in round 55, its prompts priced
prefilled alone; 1.00 x before). Every figure modelled.

Until round 56 both prices read about 1.55 x the runs' attributed cost per request (8.00e-5
against 5.20e-5 USD at 0.47; 6.96e-5 against 4.38e-5 at 0.9): the prompts, 1,914 tokens
against 31 of output, were priced prefilled alone, where the engine packs them under one
step's token budget. Priced packed (:func:`tiersim.inputs.prefill_packing`) they read 5.11e-5
and 4.06e-5, 0.98 x and 0.93 x the runs' (test_round56_price56)."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, tiny_doc, write_yaml

from tiersim.engine import sequences_held
from tiersim.inputs import batch_cap, cost_weight, fleet_replicas, price_sample, request_seconds


def _doc(utilization: float) -> dict:
    """tiny's BF16 tier alone at ``utilization``, 240-840 s of its trace at 15x."""
    doc = tiny_doc(name=f"kv{utilization}", router={"policy": "uniform"})
    bf16 = {**doc["tiers"][1], "gpu_memory_utilization": utilization}
    doc["tiers"] = [bf16]
    doc["trace"] = {**doc["trace"], "path": str(REPO / "traces" / "azure2023_code.parquet"),
                    "window": [240, 840], "time_scale": 15.0}
    return doc


def _run_and_price(tmp_path: Path, utilization: float):
    """(the run's busy batch, its attributed cost per request, the price, the price at
    ``max_num_seqs`` alone, the sequences the cache holds) for :func:`_doc`."""
    from tiersim.fleet import build_fleet
    from tiersim.inputs import load_scenario_trace
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = write_yaml(tmp_path / f"kv{utilization}.yaml", _doc(utilization))
    scenario = load_scenario(path)
    out = tmp_path / f"out{utilization}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings(record=True):
        run_scenario(scenario, out_dir=out, baselines=False)
        tier = build_fleet(scenario).tiers[0]
        mix = price_sample(load_scenario_trace(scenario, str(path)).table, scenario.seed,
                           fleet_replicas(scenario))
    summary = json.loads((out / "summary.json").read_text())
    (ran,) = summary["tiers"].values()
    requests = pd.read_parquet(out / "requests.parquet")
    held_s = float((requests["e2e_s"] - requests["queue_s"]).sum())
    busy = held_s / (ran["utilization"] * summary["duration_s"] * ran["replicas"])
    uncapped = tier.usd_per_replica_second * float(request_seconds(
        tier.step_model, tier.limits, 1.0, mix, mix.rate).mean())
    tokens = float(np.mean(mix.prompt + mix.output))
    assert batch_cap(tier.limits, tier.num_blocks, tokens) == min(
        256, sequences_held(tier.limits, tier.num_blocks, int(tokens)))
    return (busy, ran["attributed_cost_usd"] / ran["requests"],
            cost_weight(tier, scenario.cost_model, mix), uncapped,
            sequences_held(tier.limits, tier.num_blocks, int(tokens)), len(requests))


def test_the_capped_batch_is_what_the_kv_bound_run_holds(tmp_path):
    """At 0.47 the cache holds 40 sequences, the run 37.4 while busy; the price is 1.26 x
    the price at 0.9 (uncapped there: its cache holds 374; the run holds 70.1 while busy), the
    runs' cost 1.19 x."""
    busy, run_cost, price, uncapped, held, count = _run_and_price(tmp_path, 0.47)
    assert count == 1372 and held == 40
    assert busy == pytest.approx(37.4, abs=0.5)
    assert price == pytest.approx(5.106e-5, rel=1e-3)  # 8.004e-5 prefilled alone (round 55)
    assert uncapped == pytest.approx(4.060e-5, rel=1e-3)  # 6.957e-5
    big_busy, big_cost, big_price, big_uncapped, big_held, _ = _run_and_price(tmp_path, 0.9)
    # 374 above the 1 % watermark (round 56; 378 counting its blocks too): 256 < 374, so
    # nothing moves
    assert big_held == 374 and big_price == big_uncapped
    assert run_cost / big_cost == pytest.approx(1.19, abs=0.01)
    assert price / big_price == pytest.approx(1.26, abs=0.01)
    assert price / run_cost == pytest.approx(0.98, abs=0.02)  # 1.54 prefilled alone
    assert big_busy == pytest.approx(70.1, abs=0.5)  # with room: more than the KV-bound 37.4
