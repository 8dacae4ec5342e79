"""The replica limit of a run's sized uniform baselines: a scenario that sets
``limits.max_replicas`` has its baselines sized up to it (they stopped at 256 whatever it said,
so a uniform fleet larger than that was "saved" against a smaller-capped copy of itself), and a
plan sized under a limit other than the run's writes it into the planned scenario, so the two
quote the same saving. The limit written out at its default sizes as leaving it out does."""

from __future__ import annotations

import json

import yaml
from conftest import tiny_doc, write_yaml

from tiersim.scenario import DEFAULT_MAX_REPLICAS, load_scenario


def busy_bf16(**overrides) -> dict:
    """The tiny scenario on its bf16 tier alone, 80x faster: its cheapest fleet meeting the
    SLOs is 3 replicas of 4 GPUs (one replica needs 8 GPUs)."""
    doc = tiny_doc(**overrides)
    doc["trace"]["time_scale"] = 80
    doc["tiers"] = [{**doc["tiers"][1], "replicas": 3, "gpus_per_replica": 4}]
    doc["router"] = {"policy": "uniform"}
    return doc


def test_a_run_sizes_its_baselines_up_to_the_scenarios_own_replica_limit(tmp_path):
    from tiersim.runner import run_scenario

    path = write_yaml(tmp_path / "busy.yaml", busy_bf16(limits={"max_replicas": 16}))
    saving = run_scenario(load_scenario(path), scenario_path=path, baselines=True).savings
    bf16 = next(u for u in saving.uniform if u.tier == "bf16")
    assert (bf16.replicas, bf16.gpus_per_replica) == (3, 4)
    assert saving.vs_uniform_frac == 0.0  # the run's fleet is the sized uniform fleet


def test_the_limit_written_at_its_default_sizes_as_leaving_it_out(tmp_path):
    # unset, the baselines stopped at 256; written as 1024 (the default) they grew to 1024
    from tiersim.savings import baseline_replica_limit

    unset = load_scenario(write_yaml(tmp_path / "a.yaml", busy_bf16()))
    written = load_scenario(write_yaml(
        tmp_path / "b.yaml", busy_bf16(limits={"max_replicas": DEFAULT_MAX_REPLICAS})))
    assert baseline_replica_limit(unset) == baseline_replica_limit(written) == 1024
    assert baseline_replica_limit(load_scenario(write_yaml(
        tmp_path / "c.yaml", busy_bf16(limits={"max_replicas": 3})))) == 3


def test_a_plan_under_its_own_cap_and_a_run_of_its_scenario_agree(tmp_path):
    from tiersim.cli.plan import plan_capacity
    from tiersim.runner import run_scenario

    path = write_yaml(tmp_path / "busy.yaml", busy_bf16())
    result = plan_capacity(path, max_replicas=16, out_dir=tmp_path / "plan",
                           report=False)
    assert (result.plan["replicas"], result.plan["gpus_per_replica"]) == ({"bf16": 3}, {"bf16": 4})
    written = tmp_path / "plan" / "scenario.yaml"
    assert yaml.safe_load(written.read_text())["limits"] == {"max_replicas": 16}
    ran = run_scenario(load_scenario(written), scenario_path=written, baselines=True).savings
    folder = json.loads((tmp_path / "plan" / "summary.json").read_text())["savings"]
    assert result.plan["savings"]["vs_uniform_frac"] == ran.vs_uniform_frac \
        == folder["vs_uniform_frac"] == 0.0


def test_a_plan_over_fewer_gpu_sizes_and_a_run_of_its_scenario_agree(tmp_path):
    # a plan with --gpus-per-replica 8 quoted 0% against its own uniform fleet (1 x 8 GPUs),
    # while the run in its folder sized its baselines over 1, 2, 4, 8 and found 3 x 4 GPUs:
    # two savings for one fleet in one folder
    from tiersim.cli.plan import plan_capacity
    from tiersim.runner import run_scenario

    doc = busy_bf16()
    doc["tiers"][0].update(replicas=1, gpus_per_replica=8)
    path = write_yaml(tmp_path / "eight.yaml", doc)
    free = run_scenario(load_scenario(path), scenario_path=path, baselines=True).savings
    assert next(u for u in free.uniform if u.tier == "bf16").gpus_per_replica == 4
    result = plan_capacity(path, gpu_options=(8,), out_dir=tmp_path / "plan", report=False)
    assert result.plan["gpus_per_replica"] == {"bf16": 8}
    written = tmp_path / "plan" / "scenario.yaml"
    assert yaml.safe_load(written.read_text())["limits"] == {"gpus_per_replica": [8]}
    ran = run_scenario(load_scenario(written), scenario_path=written, baselines=True).savings
    assert next(u for u in ran.uniform if u.tier == "bf16").gpus_per_replica == 8
    folder = json.loads((tmp_path / "plan" / "summary.json").read_text())["savings"]
    assert result.plan["savings"]["vs_uniform_frac"] == ran.vs_uniform_frac \
        == folder["vs_uniform_frac"] == 0.0


def test_a_plan_searches_as_far_as_the_scenarios_own_limit(tmp_path):
    # with no --max-replicas a plan stopped at the default cap while a run of the
    # same scenario sized its baselines up to its limits.max_replicas (16): the plan found no
    # fleet, or wrote the default cap over the scenario's own limit
    from tiersim.cli.plan import plan_capacity

    path = write_yaml(tmp_path / "busy.yaml", busy_bf16(limits={"max_replicas": 16}))
    result = plan_capacity(path, out_dir=tmp_path / "plan", report=False)
    assert (result.plan["replicas"], result.plan["gpus_per_replica"]) == ({"bf16": 3}, {"bf16": 4})
    written = yaml.safe_load((tmp_path / "plan" / "scenario.yaml").read_text())
    assert written["limits"] == {"max_replicas": 16}
    folder = json.loads((tmp_path / "plan" / "summary.json").read_text())["savings"]
    assert result.plan["savings"]["vs_uniform_frac"] == folder["vs_uniform_frac"] == 0.0
