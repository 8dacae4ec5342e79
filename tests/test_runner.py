"""End-to-end runs of small scenarios: files written, requests conserved, deterministic."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, tiny_doc, write_yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersim.errors import ScenarioError
from tiersim.results import RunResult
from tiersim.runner import REQUEST_COLUMNS, run_scenario, summary_json
from tiersim.scenario import load_scenario, scenario_from_dict
from tiersim.trace import load_trace

SUMMARY_KEYS = {
    "requests", "completed", "dropped", "duration_s", "cost_usd", "attributed_cost_usd",
    "gpu_hours", "cost_per_1m_output_tokens", "accuracy", "ttft_p50_s", "ttft_p99_s",
    "tpot_p50_s", "tpot_p99_s", "e2e_p99_s", "throughput_tok_s", "slo_attainment", "tiers",
    "router", "sources", "profile", "savings",  # savings: DESIGN.md section 6 (round 55)
}
TIER_KEYS = {"requests", "share", "ttft_p99_s", "tpot_p99_s", "utilization", "kv_peak_frac",
             "cost_usd", "step_time_source"}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny scenario run once into a folder: (summary, folder)."""
    out = tmp_path_factory.mktemp("tiny")
    summary = run_scenario(load_scenario(TINY), out_dir=out, scenario_path=TINY)
    return summary, out


def test_summary_has_every_design_key(tiny_run):
    summary, out = tiny_run
    on_disk = json.loads((out / "summary.json").read_text())
    assert set(on_disk) >= SUMMARY_KEYS
    assert {"policy", "fpr", "fnr", "escalation_rate", "silent_failure_rate"} <= set(
        on_disk["router"])
    assert {"name", "sources"} <= set(on_disk["profile"])
    assert RunResult.from_json(on_disk).to_json() == summary.to_json() == on_disk  # reads back
    for tier in on_disk["tiers"].values():
        assert set(tier) >= TIER_KEYS
    # no profile: the roofline, its host time vLLM's fitted one (the roofline's calibration;
    # w4a16's eager MoE rate is Marlin's C++ one, fitted on B200 rows; its MoE divided by H200's
    # median W4A16 MoE efficiency, which its label says); before, "roofline" alone
    assert {name: tier["step_time_source"] for name, tier in on_disk["tiers"].items()} == {
        "w4a16": "fitted on another GPU's serving rows (1 op) + fitted on measured serving rows "
                 "(1 op) + roofline (4 ops) + roofline, calibrated on H200's measured tables "
                 "(1 op)",
        "bf16": "fitted on measured serving rows (2 ops) + roofline (4 ops)"}


def test_no_request_lost(tiny_run):
    summary, out = tiny_run
    assert summary.completed + summary.dropped == summary.requests
    trace = load_trace(TINY.parent.parent / "traces" / "azure2023_code.parquet",
                       window=(240, 360))
    rows = pd.read_parquet(out / "requests.parquet")
    assert list(rows.columns) == [*REQUEST_COLUMNS, "difficulty_class"]  # tiny draws two_type
    assert len(rows) == len(trace) == summary.requests
    assert sorted(rows["request_id"]) == sorted(trace["request_id"])
    assert sum(t.requests for t in summary.tiers) == summary.requests


def test_request_rows_are_consistent(tiny_run):
    _, out = tiny_run
    rows = pd.read_parquet(out / "requests.parquet")
    done = rows[rows["completed"]]
    assert (done["first_token_s"] >= done["arrival_s"]).all()
    assert (done["finish_s"] >= done["first_token_s"]).all()
    assert np.allclose(done["e2e_s"], done["finish_s"] - done["arrival_s"])
    assert (done["queue_s"] >= 0).all()
    assert (rows["cost_usd"] >= 0).all()


def test_attributed_cost_adds_up(tiny_run):
    summary, out = tiny_run
    rows = pd.read_parquet(out / "requests.parquet")
    assert rows["cost_usd"].sum() == pytest.approx(summary.cost_usd, rel=1e-6)
    assert summary.attributed_cost_usd <= summary.provisioned_cost_usd
    assert sum(t.cost_usd for t in summary.tiers) == pytest.approx(summary.cost_usd)


def test_timeseries_written(tiny_run):
    _, out = tiny_run
    ts = pd.read_parquet(out / "timeseries.parquet")
    assert {"tier", "replica", "time_s", "running", "waiting", "kv_blocks"} <= set(ts.columns)
    assert (ts["kv_blocks"] <= ts["kv_capacity"]).all()


def test_same_seed_same_summary_bytes(tiny_run, tmp_path):
    _, out = tiny_run
    again = tmp_path / "again"
    run_scenario(load_scenario(TINY), out_dir=again, scenario_path=TINY)
    assert (again / "summary.json").read_bytes() == (out / "summary.json").read_bytes()


def test_other_seed_changes_the_split(tiny_run):
    summary, _ = tiny_run
    other = run_scenario(scenario_from_dict(tiny_doc(seed=1), str(TINY)))
    assert other.tier("bf16").requests != summary.tier("bf16").requests


def test_provisioned_cost_model_spreads_fleet_cost(tmp_path):
    path = write_yaml(tmp_path / "p.yaml", tiny_doc(cost_model="provisioned"))
    summary = run_scenario(load_scenario(path), out_dir=tmp_path / "o", scenario_path=path)
    rows = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    assert summary.cost_usd == pytest.approx(summary.provisioned_cost_usd)
    assert rows["cost_usd"].sum() == pytest.approx(summary.cost_usd, rel=1e-6)
    # the headline is what the fleet costs: every GPU for the whole run
    gpus = sum(t.gpus for t in summary.tiers)
    assert summary.cost_usd == pytest.approx(gpus * 3.5 * summary.duration_s / 3600, rel=1e-9)
    assert summary.attributed_cost_usd < summary.cost_usd
    assert [t.cost_usd for t in summary.tiers] == pytest.approx(
        [t.gpus * 3.5 * summary.duration_s / 3600 for t in summary.tiers])


def test_trace_path_resolves_against_the_scenario_folder(tmp_path):
    trace = load_trace(TINY.parent.parent / "traces" / "azure2023_code.parquet",
                       window=(240, 300))
    (tmp_path / "data").mkdir()
    trace.to_parquet(tmp_path / "data" / "mine.parquet", index=False)
    doc = tiny_doc(trace={"path": "data/mine.parquet"})
    path = write_yaml(tmp_path / "s.yaml", doc)
    summary = run_scenario(load_scenario(path), scenario_path=path)
    assert summary.requests == len(trace)


def test_missing_trace_is_an_error_at_trace_path(tmp_path):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": "nowhere.parquet"}))
    with pytest.raises(ScenarioError, match="trace.path: nowhere.parquet: trace file not found"):
        run_scenario(load_scenario(path), scenario_path=path)


def test_summary_json_is_stable_text():
    text = summary_json({"b": 1.0 / 3.0, "a": [float("nan"), np.float32(2.5), np.int64(3)]})
    assert text == '{\n  "a": [\n    null,\n    2.5,\n    3\n  ],\n  "b": 0.3333333333\n}\n'


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replicas=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    share=st.floats(0.0, 1.0),
    max_num_seqs=st.sampled_from([1, 4, 64]),
    seed=st.integers(0, 2**16),
)
def test_any_small_fleet_conserves_requests(replicas, share, max_num_seqs, seed):
    precisions = ["nvfp4", "w4a16", "bf16"][-len(replicas):]
    tiers = [{"name": p, "precision": p, "replicas": r, "cost_per_gpu_hour": 3.5,
              "scheduler": {"max_num_seqs": max_num_seqs}}
             for p, r in zip(precisions, replicas, strict=True)]
    rest = (1.0 - share) / max(len(tiers) - 1, 1)
    fractions = [share] + [rest] * (len(tiers) - 1) if len(tiers) > 1 else [1.0]
    doc = tiny_doc(seed=seed, tiers=tiers, trace={"path": "azure2023_code.parquet",
                                                  "window": [240, 270]},
                   router={"policy": "static_split", "fractions": fractions})
    summary = run_scenario(scenario_from_dict(doc, "hypothesis"))
    assert summary.completed + summary.dropped == summary.requests > 0
    assert sum(t.requests for t in summary.tiers) == summary.requests
    for tier in summary.tiers:
        assert tier.kv_peak_frac is None or 0.0 <= tier.kv_peak_frac <= 1.0
        assert tier.utilization is None or 0.0 <= tier.utilization <= 1.0 + 1e-9
    # one ledger: the tiers add up to the headline, and busy time never exceeds what is paid for
    assert sum(t.cost_usd for t in summary.tiers) == pytest.approx(summary.cost_usd)
    assert sum(t.attributed_cost_usd for t in summary.tiers) == pytest.approx(
        summary.attributed_cost_usd)
    assert summary.attributed_cost_usd <= summary.provisioned_cost_usd * (1 + 1e-9)


def test_uniform_baselines_replace_the_estimate():
    summary = run_scenario(load_scenario(TINY), scenario_path=TINY, baselines=True)
    assert summary.savings.method == "simulated" and not summary.savings.estimated
    estimate = run_scenario(load_scenario(TINY), scenario_path=TINY).savings
    assert estimate.method == "estimated"
    gpus = sum(t.gpus for t in summary.tiers)
    for base in summary.savings.uniform:  # sized by simulation: the fewest meeting the SLOs
        assert base.slo_met and 1 <= base.replicas <= gpus
        assert base.cost_usd > 0
    assert [b.cost_usd for b in summary.savings.uniform] != [b.cost_usd for b in
                                                             estimate.uniform]


def test_savings_follow_the_cost_model(tmp_path):
    path = write_yaml(tmp_path / "p.yaml", tiny_doc(cost_model="provisioned"))
    run = run_scenario(load_scenario(path), scenario_path=path, baselines=True)
    saved = run.savings
    assert saved.cost_model == "provisioned" and saved.routed_cost_usd == pytest.approx(
        run.cost_usd)
    for base in saved.uniform:  # a uniform fleet of the same GPUs, provisioned for its run
        assert base.cost_usd == pytest.approx(base.replicas * 3.5 * run.duration_s / 3600,
                                              rel=0.05)


QWEN_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": False,
}


def test_model_config_path_resolves_beside_the_scenario(tmp_path):
    (tmp_path / "qwen").mkdir()
    (tmp_path / "qwen" / "config.json").write_text(json.dumps(QWEN_CONFIG))
    doc = tiny_doc(model="qwen/config.json",
                   trace={"path": "azure2023_code.parquet", "window": [240, 270]})
    path = write_yaml(tmp_path / "s.yaml", doc)
    summary = run_scenario(load_scenario(path), scenario_path=path)
    assert summary.model == "qwen/config.json"
    assert summary.completed + summary.dropped == summary.requests > 0


def test_data_parallel_ranks_are_engine_replicas_and_the_ledger_counts_every_gpu(tmp_path):
    from tiersim.fleet import build_fleet, kv_blocks

    doc = tiny_doc(cost_model="provisioned",
                   trace={"path": "azure2023_code.parquet", "window": [240, 300]})
    doc["tiers"][1].update(gpus_per_replica=2, data_parallel=2, expert_parallel=True)
    path = write_yaml(tmp_path / "dp.yaml", doc)
    scenario = load_scenario(path)
    fleet = build_fleet(scenario)
    bf16 = fleet.tiers[1]
    assert (bf16.engine_replicas, bf16.gpus) == (2, 2)  # one scheduler per DP rank
    assert fleet.specs()[1].replicas == 2
    assert bf16.num_blocks == kv_blocks(scenario.model_ref, scenario.gpu, scenario.tiers[1])
    run = run_scenario(scenario, scenario_path=path)
    tier = run.tier("bf16")
    assert tier.gpus == 2 and tier.gpus_per_replica == 2
    assert tier.cost_usd == pytest.approx(2 * 3.5 * run.duration_s / 3600)
    assert run.gpu_hours == pytest.approx(3 * run.duration_s / 3600)
