"""Round 52 review: a planned or sized fleet's serving techniques are those of the size it ran.

A KV offload level that holds no whole prompt block of one GPU's KV is left out of the run
(:func:`tiersim.fleet.empty_levels`), and one GPU's block bytes halve from 1 to 2 GPUs per
replica (tensor parallel 2 splits the KV heads). The planner's per-tier ``techniques`` (plan.json
``per_tier``, the plan's lines) and a run's sized uniform fleets named the techniques of the
scenario's own tier size, not the size simulated: a 0.03 GB host level (0.050 GB a block at 1
GPU, 0.025 GB at 2) read "KV offload host" on a 1-GPU fleet that ran without it, and nothing on
a 2-GPU fleet that ran with it."""

from __future__ import annotations

import warnings

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.plan.evaluate import Design, SimEvaluator
from tiersim.scenario import load_scenario

HOST_GB = 0.03
"""A host level that holds one block of Qwen3-Coder-30B-A3B's BF16 KV at 2 GPUs per replica
(512 x 49,152 bytes) and none at 1 (512 x 98,304 bytes)."""


def _scenario(tmp_path, gpus: int):
    """The tiny scenario's BF16 tier alone at ``gpus`` GPUs per replica, prefix caching with
    the small host level beneath it."""
    tier = dict(tiny_doc()["tiers"][1], gpus_per_replica=gpus, scheduler={
        "enable_prefix_caching": True,
        "kv_offload": [{"name": "host", "capacity_gb": HOST_GB, "read_gb_s": 50,
                        "write_gb_s": 50}]})
    doc = tiny_doc(tiers=[tier], router={"policy": "uniform"})
    return write_yaml(tmp_path / "s.yaml", doc)


@pytest.mark.parametrize("written", [1, 2])
def test_a_sized_tiers_techniques_are_those_it_ran(tmp_path, written):
    """Whatever GPUs the scenario writes, each size tried says the levels its engine ran."""
    path = _scenario(tmp_path, written)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = SimEvaluator(load_scenario(path, fit=False), str(path))
        for gpus, said in ((1, None), (2, "KV offload host")):
            ran = [level.name for level in evaluator.built("bf16", gpus).limits.kv_levels]
            assert ran == ([] if said is None else ["host"])
            o = evaluator.evaluate(Design(("bf16",), (gpus,)), {"bf16": 1})
            assert o.tiers["bf16"].techniques == said, (written, gpus)


def test_a_runs_sized_uniform_fleets_say_the_techniques_of_their_size(tmp_path):
    """Tiers written at 2 GPUs (the host level runs), uniform fleets sized over 1 GPU per
    replica (where it holds no block and is left out): "1 x 1", as the engine ran them, where
    they read "1 x 1 (KV offload host)"; the run's own tiers keep theirs."""
    from tiersim.runner import run_scenario

    sched = {"enable_prefix_caching": True,
             "kv_offload": [{"name": "host", "capacity_gb": HOST_GB, "read_gb_s": 50,
                             "write_gb_s": 50}]}
    tiers = [dict(t, gpus_per_replica=2, scheduler=sched) for t in tiny_doc()["tiers"]]
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(tiers=tiers, limits={"gpus_per_replica": [1]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_scenario(load_scenario(path), baselines=True)
    assert [t.techniques for t in run.tiers] == ["KV offload host"] * 2
    assert [(u.gpus_per_replica, u.techniques, u.size()) for u in run.savings.uniform] == [
        (1, None, "1 x 1"), (1, None, "1 x 1")]
