"""Round 55 (store55): the :class:`tiersim.plan.evaluate.RunStore` across whole commands.
``tiersim plan`` keeps its runs in one store, read after the search; a sweep worker keeps one
across its points. These tests hold that what a command prints with runs read back is what it
prints with none read (plan.json but for wall times), that a second plan in the same process
starts from no store, and that a sweep worker's later point over a trace or a model axis is
not given an earlier point's runs."""

from __future__ import annotations

import json

import pytest
from conftest import REPO, cheap_first_tiers, tiny_doc, write_yaml

import tiersim.plan.evaluate as evaluate
from tiersim.cli.plan import plan_capacity


def _split_doc(**fields) -> dict:
    """tiny with bf16 at 1 prefill + 2 decode replicas and today's fleet given."""
    bf16 = {**tiny_doc()["tiers"][1], "replicas": 3,
            "disaggregation": {"prefill_replicas": 1, "decode_replicas": 2}, **fields}
    return tiny_doc(tiers=[tiny_doc()["tiers"][0], bf16],
                    plan={"current": [{"tier": "bf16", "replicas": 3}]})


def _without_wall_times(node):
    if isinstance(node, dict):
        return {k: _without_wall_times(v) for k, v in node.items() if k != "wall_s"}
    if isinstance(node, list):
        return [_without_wall_times(v) for v in node]
    return node


def _plan_json(out) -> dict:
    return _without_wall_times(json.loads((out / "plan.json").read_text()))


def _plan_reading_nothing(monkeypatch, path, out, **options):
    """The plan with no run read back (the store kept but never read)."""
    with monkeypatch.context() as m:
        m.setattr(evaluate, "reuse_kept_runs", lambda: None)
        plan_capacity(path, out_dir=out, check_seeds=1, **options)


@pytest.mark.parametrize("robust", [False, True])
def test_a_plan_with_runs_read_back_writes_what_one_reading_none_writes(tmp_path, monkeypatch,
                                                                       robust):
    """A split tier, today's fleet and a seed check (every reader of the store), alone and
    under --robust: plan.json and the planned run's summary are the same, but for wall times
    and the simulations counted."""
    path = write_yaml(tmp_path / "p.yaml", _split_doc())
    plan_capacity(path, out_dir=tmp_path / "read", check_seeds=1, robust=robust)
    _plan_reading_nothing(monkeypatch, path, tmp_path / "fresh", robust=robust)
    read, fresh = _plan_json(tmp_path / "read"), _plan_json(tmp_path / "fresh")
    assert read.pop("simulations") <= fresh.pop("simulations")
    assert read == fresh
    assert (_without_wall_times(json.loads((tmp_path / "read" / "summary.json").read_text()))
            == _without_wall_times(json.loads((tmp_path / "fresh" / "summary.json")
                                              .read_text())))


def test_two_plans_in_one_process_each_start_from_no_store(tmp_path, monkeypatch):
    """plan_capacity twice (a library caller): the second scenario (bf16 limited to 4
    sequences, the same tier name, trace and load) is planned as it is planned alone, and no
    store is left active between them."""
    first = write_yaml(tmp_path / "a.yaml", _split_doc())
    second = write_yaml(tmp_path / "b.yaml", _split_doc(scheduler={"max_num_seqs": 4}))
    assert evaluate._STORE is None
    plan_capacity(first, out_dir=tmp_path / "a", check_seeds=1)
    assert evaluate._STORE is None
    plan_capacity(second, out_dir=tmp_path / "b", check_seeds=1)
    assert evaluate._STORE is None
    _plan_reading_nothing(monkeypatch, second, tmp_path / "b_alone")
    read, alone = _plan_json(tmp_path / "b"), _plan_json(tmp_path / "b_alone")
    read.pop("simulations"), alone.pop("simulations")
    assert read == alone


def _point(tmp_path, name: str, **edits) -> dict:
    doc = tiny_doc(router={"policy": "static_split", "fractions": [0.5, 0.5]},
                   tiers=cheap_first_tiers())
    doc["trace"]["window"] = [240, 270]
    for key, value in edits.items():
        if key == "trace_path":
            doc["trace"]["path"] = value
        else:
            doc["tiers"][1][key] = value
    return doc


def test_a_sweep_workers_later_point_over_a_trace_or_model_axis_runs_its_own_input(
        tmp_path, monkeypatch):
    """A worker's points one after another: another trace file (its output lengths doubled)
    and another model for bf16; each point's summary is the one a run of it alone gives."""
    import pandas as pd

    from tiersim.runner import run_scenario
    from tiersim.scenario import scenario_from_dict
    from tiersim.sweep import points

    monkeypatch.setattr(points, "_KEPT_RUNS", None)
    trace = pd.read_parquet(REPO / "tiersim" / "traces" / "azure2023_code.parquet")
    trace["output_tokens"] = trace["output_tokens"] * 2
    longer = tmp_path / "longer.parquet"
    trace.to_parquet(longer)
    source = str(write_yaml(tmp_path / "s.yaml", _point(tmp_path, "s")))
    own = {"easy": 0.99, "hard": 0.6, "hopeless": 0.0}
    docs = [_point(tmp_path, "base"), _point(tmp_path, "trace", trace_path=str(longer)),
            _point(tmp_path, "model", model="Qwen3-30B-A3B", accuracy=own)]
    for doc in docs:
        got = points.default_runner(doc, source)
        alone = run_scenario(scenario_from_dict(doc, source), scenario_path=source,
                             baselines=True).to_json()
        assert json.dumps(got, sort_keys=True) == json.dumps(alone, sort_keys=True)
    # the model point's w4a16 baseline (its tier unchanged) is the base point's run read back
    assert points._KEPT_RUNS.hits > 0
