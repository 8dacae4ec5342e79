"""Round 55 (speed55): ``tiersim plan``'s seed check and its planned run's sized uniform
baselines ran again many fleets the search had just simulated (on plan_default.yaml 72 of the
planned run's 88 engine runs and 9 of the seed check's 15 had the same input as an earlier
run). Evaluators made inside :func:`tiersim.plan.evaluate.keeping_runs` keep each tier's run
alone in one :class:`~tiersim.plan.evaluate.RunStore`, read once
:func:`~tiersim.plan.evaluate.reuse_kept_runs` is called. These tests hold that a run read
back is the one a fresh simulation gives, and that anything the run depends on that differs
(the requests, the tier's limits or KV cache, its step model, a profile file rewritten) is
simulated anew."""

from __future__ import annotations

import os

import yaml
from conftest import edited_profile, tiny_doc

from tiersim.fleet import step_model_key
from tiersim.plan.evaluate import Design, RunStore, SimEvaluator, keeping_runs, reuse_kept_runs
from tiersim.scenario import load_scenario

UNIFORM = Design(("bf16",), (1,))
AT = {"bf16": 2}


def _scenario(tmp_path, name: str = "s.yaml", edit=None, **overrides):
    """tiny.yaml on a 30 s window written to ``tmp_path/name`` (``edit(doc)`` changes it
    first), loaded; the scenario and its path."""
    doc = tiny_doc(**overrides)
    doc["trace"]["window"] = [240, 270]
    if edit is not None:
        edit(doc)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_scenario(path), str(path)


def _fresh(scenario, source):
    """The uniform bf16 fleet's outcome from an evaluator outside any store."""
    return SimEvaluator(scenario, source).evaluate(UNIFORM, AT)


def test_a_later_evaluator_reads_an_earlier_ones_run_and_gets_the_same_outcome(tmp_path):
    """Read only after reuse_kept_runs (the search's own runs count as before); the run read
    back gives the outcome, every figure, that a fresh simulation gives, at the seed kept and
    at another (a uniform fleet's requests are the same at every seed)."""
    scenario, source = _scenario(tmp_path)
    seeded = scenario.model_copy(update={"seed": 1})
    with keeping_runs() as store:
        first = SimEvaluator(scenario, source)
        kept = first.evaluate(UNIFORM, AT)
        before = SimEvaluator(scenario, source)
        before.evaluate(UNIFORM, AT)
        assert (first.simulations, before.simulations, store.hits) == (1, 1, 0)
        reuse_kept_runs()
        later = SimEvaluator(scenario, source)
        again = later.evaluate(UNIFORM, AT)
        other_seed = SimEvaluator(seeded, source)
        at_seed_1 = other_seed.evaluate(UNIFORM, AT)
        assert (later.simulations, other_seed.simulations, store.hits) == (0, 0, 2)
    assert kept == again == _fresh(scenario, source)
    assert at_seed_1 == _fresh(seeded, source)


def _changed_inputs_simulate_anew(tmp_path, changed) -> None:
    """The uniform fleet of ``changed`` (a scenario, its path) is simulated, not read from
    the store holding the base scenario's run, and equals a fresh simulation of it."""
    scenario, source = _scenario(tmp_path)
    with keeping_runs():
        SimEvaluator(scenario, source).evaluate(UNIFORM, AT)
        reuse_kept_runs()
        later = SimEvaluator(*changed)
        outcome = later.evaluate(UNIFORM, AT)
        assert later.simulations == 1
    assert outcome == _fresh(*changed)


def test_other_requests_are_simulated_anew(tmp_path):
    """Another window of the trace: another workload."""
    _changed_inputs_simulate_anew(tmp_path, _scenario(
        tmp_path, "w.yaml", edit=lambda d: d["trace"].update(window=[240, 271])))


def test_another_load_is_simulated_anew(tmp_path):
    """The same requests faster (time_scale): other arrival times."""
    _changed_inputs_simulate_anew(tmp_path, _scenario(
        tmp_path, "t.yaml", edit=lambda d: d["trace"].update(time_scale=1.5)))


def _bf16(doc, **fields):
    doc["tiers"][1].update(fields)


def test_other_scheduler_limits_are_simulated_anew(tmp_path):
    """max_num_seqs: the engine's limits."""
    _changed_inputs_simulate_anew(tmp_path, _scenario(
        tmp_path, "l.yaml", edit=lambda d: _bf16(d, scheduler={"max_num_seqs": 8})))


def test_another_kv_cache_is_simulated_anew(tmp_path):
    """gpu_memory_utilization: the KV blocks."""
    _changed_inputs_simulate_anew(tmp_path, _scenario(
        tmp_path, "k.yaml", edit=lambda d: _bf16(d, gpu_memory_utilization=0.5)))


def test_another_step_model_under_the_same_tier_name_is_simulated_anew(tmp_path):
    """The tier named bf16 served in FP8: the same name, another step model (its KV blocks
    differ too; the step model's key alone differs as well)."""
    changed = _scenario(tmp_path, "p.yaml", edit=lambda d: _bf16(d, precision="fp8"))
    base = _scenario(tmp_path)[0]
    assert step_model_key(base, base.tiers[1]) != step_model_key(changed[0],
                                                                  changed[0].tiers[1])
    _changed_inputs_simulate_anew(tmp_path, changed)


def test_a_profile_file_rewritten_keys_its_step_model_apart(tmp_path):
    """A profile file of the same name and size, written again (a sweep's later point may
    read another version): the step model's key changes with the file's version."""
    profile = edited_profile(tmp_path)
    scenario, _ = _scenario(tmp_path, profile=str(profile))
    key = step_model_key(scenario, scenario.tiers[1])
    assert key == step_model_key(scenario, scenario.tiers[1])
    stat = profile.stat()
    os.utime(profile, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert step_model_key(scenario, scenario.tiers[1]) != key


def test_the_store_keeps_the_latest_used_runs_up_to_its_rows(tmp_path):
    """Past max_rows requests the least recently used run goes; a run larger than the store
    is not kept."""
    scenario, source = _scenario(tmp_path)
    with keeping_runs(RunStore(max_rows=1)) as store:
        SimEvaluator(scenario, source).evaluate(UNIFORM, AT)
        assert not store.runs and store.rows == 0  # larger than the whole store
    with keeping_runs() as store:
        first = SimEvaluator(scenario, source)
        first.evaluate(UNIFORM, AT)
        size = store.rows
        store.max_rows = size + 1  # room for one run of this size
        first.evaluate(UNIFORM, {"bf16": 3})
        assert len(store.runs) == 1 and store.rows == size  # the first run went
        reuse_kept_runs()
        later = SimEvaluator(scenario, source)
        later.evaluate(UNIFORM, {"bf16": 3})
        later.evaluate(UNIFORM, AT)
        assert later.simulations == 1 and store.hits == 1




def test_a_file_rewritten_in_a_model_folder_keys_its_step_model_apart(tmp_path, monkeypatch):
    """A model given as a folder (a checkout, ``model: ckpt/``): a file in it written again
    changes the key, though the folder's own times need not change."""
    import tiersim.fleet as fleet

    folder = tmp_path / "ckpt"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text("{}")
    scenario, _ = _scenario(tmp_path)
    tier = scenario.tiers[1]
    args, kwargs = fleet.step_model_args(scenario, tier)
    monkeypatch.setattr(fleet, "step_model_args",
                        lambda s, t: ((f"{folder}/", *args[1:]), kwargs))
    key = step_model_key(scenario, tier)
    assert key == step_model_key(scenario, tier)
    stat = config.stat()
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert step_model_key(scenario, tier) != key
