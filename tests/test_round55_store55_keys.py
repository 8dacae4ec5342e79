"""Round 55 (store55): an adversarial check of :class:`tiersim.plan.evaluate.RunStore` (speed55).
An evaluator made after :func:`~tiersim.plan.evaluate.reuse_kept_runs` reads back a tier's run
alone kept under :func:`~tiersim.plan.evaluate.alone_key` instead of simulating it. A key that
missed an input that changes a run would give a planner another scenario's figure. Each test
here changes ONE input between the evaluator that kept a run and a later one, and holds that
the later one's outcome is a fresh simulation's (and, where the input changes the run, that it
was simulated anew and differs from the kept one)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO, edited_profile
from test_round55_speed55_runs import _scenario  # tiny on a 30 s window, loaded

from tiersim.plan.evaluate import Design, SimEvaluator, keeping_runs, reuse_kept_runs

UNIFORM = Design(("bf16",), (1,))
_SPLIT = {"prefill_replicas": 1, "decode_replicas": 1, "link_gb_s": 1.0}
_OWN = {"easy": 0.99, "hard": 0.6, "hopeless": 0.0}  # a tier serving its own model
AT = {"bf16": 2}


def _fresh(scenario, source, design, at):
    """The design's outcome from an evaluator outside any store."""
    return SimEvaluator(scenario, source).evaluate(design, at)


def _bf16(doc, **fields):
    doc["tiers"][1].update(fields)


def _sched(doc, **fields):
    doc["tiers"][1].setdefault("scheduler", {}).update(fields)


def _check(tmp_path, base_edit, edit, design=UNIFORM, at=AT, changes=True):
    """The base scenario's design kept, then the changed scenario's read: its outcome is a
    fresh simulation's; where ``changes``, it was simulated anew and differs from the base."""
    base = _scenario(tmp_path, "base.yaml", base_edit)
    with keeping_runs() as store:
        kept = SimEvaluator(*base).evaluate(design, at)
        assert store.runs  # something was kept to be read wrongly
        reuse_kept_runs()
        changed = _scenario(tmp_path, "changed.yaml", edit)
        later = SimEvaluator(*changed)
        outcome = later.evaluate(design, at)
    assert outcome == _fresh(*changed, design, at)
    if changes:
        assert later.simulations >= 1
        assert outcome != kept or changes == "simulated"


CASES = {
    "gpu": (None, lambda d: d.update(gpu="B200")),
    "tier_model": (None, lambda d: _bf16(d, model="Qwen3-30B-A3B", accuracy=_OWN)),
    "precision": (None, lambda d: _bf16(d, precision="fp8")),
    "kv_dtype": (None, lambda d: _bf16(d, kv_dtype="fp8")),
    "gpu_memory_utilization": (None, lambda d: _bf16(d, gpu_memory_utilization=0.46)),
    "max_num_seqs": (None, lambda d: _sched(d, max_num_seqs=4)),
    "max_num_batched_tokens": (None, lambda d: _sched(d, max_num_batched_tokens=512)),
    "block_size": (None, lambda d: _sched(d, block_size=256)),
    "max_model_len": (None, lambda d: _sched(d, max_model_len=2048)),
    "balancer": (None, lambda d: _bf16(d, balancer="round_robin")),
    "output_length_multiplier": (None, lambda d: _bf16(d, output_length_multiplier=1.5)),
    "time_scale": (None, lambda d: d["trace"].update(time_scale=3.0)),
    "window": (None, lambda d: d["trace"].update(window=[250, 280])),
    "skip_longer_than": (None, lambda d: d["trace"].update(skip_longer_than=2000)),
    "bundled_profile": (None, lambda d: d.update(profile="h200_aiconfigurator_vllm")),
    "enable_prefix_caching": (None, lambda d: _sched(d, enable_prefix_caching=True)),
    "prefix_cache_fraction": (lambda d: _sched(d, enable_prefix_caching=True),
                              lambda d: _sched(d, enable_prefix_caching=True,
                                               prefix_cache_fraction=0.5)),
    "watermark": (None, lambda d: _sched(d, watermark=0.2)),
    "kv_offload": (lambda d: _sched(d, enable_prefix_caching=True),
                   lambda d: _sched(d, enable_prefix_caching=True, kv_offload=[
                       {"name": "host", "capacity_gb": 200, "read_gb_s": 50,
                        "write_gb_s": 50}])),
    "disaggregation_link": (lambda d: _bf16(d, replicas=2, disaggregation=_SPLIT),
                            lambda d: _bf16(d, replicas=2,
                                            disaggregation={**_SPLIT, "link_gb_s": 0.01})),
    "disaggregation": (None, lambda d: _bf16(
        d, replicas=2,
        disaggregation={"prefill_replicas": 1, "decode_replicas": 1, "link_gb_s": 1.0})),
}


LIGHT = {"block_size", "disaggregation", "gpu_memory_utilization", "enable_prefix_caching",
         "prefix_cache_fraction", "watermark", "kv_offload", "disaggregation_link"}
"""Inputs that change no figure at tiny's light load (no queue; a split no better than
serving aggregated; azure2023_code has no prefix hashes to cache): the later run is still
simulated, not read back."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_input_changed_is_simulated_anew(tmp_path, name):
    """Each input the tier's run depends on, changed alone (tiny's bf16 tier at 2 replicas)."""
    base_edit, edit = CASES[name]
    _check(tmp_path, base_edit, edit, changes="simulated" if name in LIGHT else True)


def _two_gpus(doc, **fields):
    _bf16(doc, gpus_per_replica=2, **fields)


@pytest.mark.parametrize("fields", [{"data_parallel": 2}, {"expert_parallel": True},
                                    {"data_parallel": 2, "expert_parallel": True},
                                    {"moe_backend": "deepgemm", "precision": "fp8_block"}])
def test_parallelism_changed_is_simulated_anew(tmp_path, fields):
    """Two GPUs a replica: data parallel ranks, expert parallelism and the MoE kernel."""
    design = Design(("bf16",), (2,))
    base = {k: v for k, v in fields.items() if k != "moe_backend"} if "moe_backend" in fields \
        else {}  # the MoE kernel alone changed (on block FP8, which deepgemm serves)
    _check(tmp_path, lambda d: _two_gpus(d, **base), lambda d: _two_gpus(d, **fields),
           design=design, at={"bf16": 1})


def test_inputs_outside_the_run_reuse_it_and_still_give_a_fresh_outcome(tmp_path):
    """Prices and the seed change no uniform run: read back, the outcome is still a fresh
    simulation's (its cost from the changed price)."""
    _check(tmp_path, None, lambda d: _bf16(d, cost_per_gpu_hour=7.0), changes=False)
    _check(tmp_path, None, lambda d: d.update(seed=3), changes=False)


def test_the_seed_under_a_split_router_reroutes_each_tiers_requests(tmp_path):
    """Two tiers under static_split: another seed draws another split of the requests, so
    each tier's run alone has other requests."""
    design = Design(("w4a16", "bf16"), (1, 1))
    _check(tmp_path, None, lambda d: d.update(seed=5), design=design,
           at={"w4a16": 1, "bf16": 1})


def test_a_trace_file_of_the_same_name_rewritten_is_simulated_anew(tmp_path):
    """trace.path to a copy of the trace, later rewritten (a sweep's trace axis, or a file
    edited between two plans of one process): its requests key the run."""
    import pandas as pd

    source = pd.read_parquet(REPO / "tiersim" / "traces" / "azure2023_code.parquet")
    trace = tmp_path / "t.parquet"
    source.to_parquet(trace)

    def at_copy(doc):
        doc["trace"]["path"] = str(trace)

    base = _scenario(tmp_path, "base.yaml", at_copy)
    with keeping_runs():
        kept = SimEvaluator(*base).evaluate(UNIFORM, AT)
        reuse_kept_runs()
        longer = source.copy()
        longer["output_tokens"] = longer["output_tokens"] * 2
        longer.to_parquet(trace)
        later = SimEvaluator(*base)
        outcome = later.evaluate(UNIFORM, AT)
    assert later.simulations == 1 and outcome != kept
    assert outcome == _fresh(*base, UNIFORM, AT)


def test_a_model_config_rewritten_in_place_is_simulated_anew(tmp_path):
    """A tier's model given as a config.json, rewritten between the two evaluators with more
    layers: another step model and KV cache."""
    config = tmp_path / "m" / "config.json"
    config.parent.mkdir()
    body = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
            "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
            "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}
    config.write_text(json.dumps(body))
    base = _scenario(tmp_path, "base.yaml", lambda d: _bf16(d, model=str(config), accuracy=_OWN))
    with keeping_runs():
        kept = SimEvaluator(*base).evaluate(UNIFORM, AT)
        reuse_kept_runs()
        config.write_text(json.dumps({**body, "num_hidden_layers": 72}))
        later = SimEvaluator(*base)
        outcome = later.evaluate(UNIFORM, AT)
    assert later.simulations == 1 and outcome != kept
    assert outcome == _fresh(*base, UNIFORM, AT)


def test_a_profile_rewritten_with_its_size_and_mtime_kept_is_simulated_anew(tmp_path):
    """The profile file rewritten in place with another host time a step (0.0 s -> 0.5 s, the
    same size) and its mtime set back (as ``cp -p`` keeps it): its change time keys it
    apart."""
    profile = edited_profile(tmp_path)
    base = _scenario(tmp_path, "base.yaml", lambda d: d.update(profile=str(profile)))
    with keeping_runs():
        kept = SimEvaluator(*base).evaluate(UNIFORM, AT)
        reuse_kept_runs()
        stat = profile.stat()
        text = profile.read_text()
        assert text.count('"value": 0.0,') == 1
        profile.write_text(text.replace('"value": 0.0,', '"value": 0.5,'))
        os.utime(profile, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert profile.stat().st_size == stat.st_size
        later = SimEvaluator(*base)
        outcome = later.evaluate(UNIFORM, AT)
    assert later.simulations == 1 and outcome != kept
    assert outcome == _fresh(*base, UNIFORM, AT)


def test_speculative_tiers_are_never_kept(tmp_path):
    """A speculative tier's draws are seeded by the scenario's seed: nothing is kept, and
    the same scenario again is simulated again."""
    spec = {"k": 3, "acceptance": 0.7, "head_cost": 0.05}
    scenario = _scenario(tmp_path, "s.yaml", lambda d: _bf16(d, speculative=spec))
    with keeping_runs() as store:
        SimEvaluator(*scenario).evaluate(UNIFORM, AT)
        reuse_kept_runs()
        later = SimEvaluator(*scenario)
        later.evaluate(UNIFORM, AT)
    assert not store.runs and later.simulations == 1


def test_todays_split_tier_read_back_is_as_a_fresh_run_of_its_split(tmp_path):
    """A disaggregated tier: the search runs it at each split (its scenario's 1P 1D among
    them) and keeps those runs; today's fleet (:meth:`SimEvaluator.as_configured`) runs it at
    the scenario's split, the same engine input. Read back, its outcome must be what a fresh
    run of today's fleet gives, the split it records included."""
    split = {"prefill_replicas": 1, "decode_replicas": 1, "link_gb_s": 1.0}
    scenario = _scenario(tmp_path, "d.yaml", lambda d: _bf16(d, replicas=2,
                                                              disaggregation=split))
    with keeping_runs() as store:
        SimEvaluator(*scenario).evaluate(UNIFORM, AT)
        assert len(store.runs) == 2  # aggregated and 1P 1D
        reuse_kept_runs()
        later = SimEvaluator(*scenario)
        with later.as_configured():
            today = later.evaluate(UNIFORM, AT)
        assert later.simulations == 0
    fresh = SimEvaluator(*scenario)
    with fresh.as_configured():
        assert today == fresh.evaluate(UNIFORM, AT)


def test_a_search_reading_todays_split_run_records_the_split_it_ran(tmp_path):
    """The other way round: today's fleet ran first (as configured, at 1P 1D) and was kept;
    a later search (the planned run's sized baselines) tries 1P 1D among its splits and reads
    that run back. Each split's run must record the split it ran, as a fresh search's does
    (a baseline's ``prefill_replicas`` and the plan's "at 1P 1D, its best split" read it)."""
    split = {"prefill_replicas": 1, "decode_replicas": 1, "link_gb_s": 1.0}
    scenario = _scenario(tmp_path, "d.yaml", lambda d: _bf16(d, replicas=2,
                                                              disaggregation=split))
    alone = ("bf16", 2)
    with keeping_runs():
        first = SimEvaluator(*scenario)
        with first.as_configured():
            first.evaluate(UNIFORM, AT)
        reuse_kept_runs()
        later = SimEvaluator(*scenario)
        later.peers = [later]  # keep each split's run (as --robust's evaluators do)
        read = later._alone_splits(UNIFORM, *alone, later.routing(UNIFORM)[1])
        assert later.simulations == 1  # aggregated ran; 1P 1D was read back
    fresh = SimEvaluator(*scenario)
    simulated = fresh._alone_splits(UNIFORM, *alone, fresh.routing(UNIFORM)[1])
    assert [r.prefill for r in read] == [r.prefill for r in simulated] == [None, 1]
