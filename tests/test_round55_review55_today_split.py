"""Round 55, review55: today's disaggregated tier runs at the split it runs today.

The plan simulates today's fleet (``plan.current``) with its own evaluator, which, for a
disaggregated tier of two replicas or more, runs it served aggregated and at every
prefill/decode split and keeps the best against the SLOs: right for a design the plan sizes
(the plan chooses the split and writes it), wrong for the fleet run today, whose split is the
scenario's. On tiny with bf16 at 1 prefill + 2 decode replicas, today's fleet read p99 TTFT
0.173 s (the 2P 1D split's) where ``tiersim run`` of that fleet gives 0.329 s; on disagg.yaml
at 1P 4D, 1.19 s and "meets the SLOs" where the run gives 37.0 s (modelled). Today's tier now
runs at the scenario's split (carried in proportion where today's replicas differ, as the
planned scenario writes a split the plan did not choose), as a run of it does, at every seed
under ``--robust``; the search's own runs of the same size are not read for it.
"""

from __future__ import annotations

import math

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan import plan_capacity
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def _split_bf16(replicas: int, prefill: int, decode: int) -> dict:
    return {**tiny_doc()["tiers"][1], "replicas": replicas,
            "disaggregation": {"prefill_replicas": prefill, "decode_replicas": decode}}


def _run(tmp_path, name: str, seed: int, replicas: int, prefill: int, decode: int):
    doc = tiny_doc(tiers=[_split_bf16(replicas, prefill, decode)],
                   router={"policy": "uniform"}, seed=seed)
    return run_scenario(load_scenario(write_yaml(tmp_path / f"{name}.yaml", doc)))


@pytest.mark.parametrize(("today", "run_prefill"), [(3, 1), (4, 1)])  # 4: 1P 2D carried, 1P 3D
def test_today_runs_at_its_own_split(tmp_path, today, run_prefill):
    doc = tiny_doc(tiers=[tiny_doc()["tiers"][0], _split_bf16(3, 1, 2)],
                   plan={"current": [{"tier": "bf16", "replicas": today}]})
    current = plan_capacity(write_yaml(tmp_path / "p.yaml", doc)).current
    run = _run(tmp_path, "r", 0, today, run_prefill, today - run_prefill)
    assert math.isclose(current["ttft_p99_s"], run.ttft_p99_s, rel_tol=1e-9), (
        current["ttft_p99_s"], run.ttft_p99_s)
    assert math.isclose(current["tpot_p99_s"], run.tpot_p99_s, rel_tol=1e-9)
    assert math.isclose(current["cost_usd"], run.cost_usd, rel_tol=1e-9)


def test_under_robust_each_seed_runs_today_at_its_own_split(tmp_path):
    doc = tiny_doc(tiers=[tiny_doc()["tiers"][0], _split_bf16(3, 1, 2)],
                   plan={"current": [{"tier": "bf16", "replicas": 3}]})
    current = plan_capacity(write_yaml(tmp_path / "p.yaml", doc), check_seeds=1,
                            robust=True).current
    runs = [_run(tmp_path, f"r{seed}", seed, 3, 1, 2) for seed in (0, 1)]
    assert current["seeds"] == [0, 1]
    assert math.isclose(current["ttft_p99_s"], max(r.ttft_p99_s for r in runs), rel_tol=1e-9)
    assert math.isclose(current["tpot_p99_s"], max(r.tpot_p99_s for r in runs), rel_tol=1e-9)
