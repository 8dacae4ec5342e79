"""End to end: a trace carrying RouteLLM MMLU labels as ``correct_<tier>`` replayed by the runner.

Uniform policies must report exactly the labels' own mean (Done-when 3); a threshold policy
trains its classifier on the trace and beats the weak tier (it can beat the strong one too: the
weak model is right on 5% of questions where the strong one is wrong).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from tiersim.routing.labels import as_trace, load_mmlu_labels

runner = pytest.importorskip("tiersim.runner")
scenario_mod = pytest.importorskip("tiersim.scenario")

N = 1500


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    """A canonical Parquet trace: MMLU prompts, labels, 0.05 s apart, 16 output tokens each."""
    df = as_trace(load_mmlu_labels()).sample(N, random_state=0).reset_index(drop=True)
    df["request_id"] = np.arange(N, dtype=np.int64)
    df["arrival_s"] = np.arange(N) * 0.05
    df["output_tokens"] = np.int32(16)
    df["subject"] = df["subject"].astype(str)
    path = tmp_path_factory.mktemp("mmlu") / "mmlu_labels.parquet"
    df.to_parquet(path)
    return path, df


def run(trace_path, router: dict, tmp_path) -> dict:
    """Replay the labelled trace on two small tiers named after the labels."""
    doc = {
        "name": "mmlu-replay",
        "profile": None,
        "trace": {"path": str(trace_path)},
        "workload": {"difficulty": {"kind": "labels"}},
        "tiers": [
            {"name": "weak", "precision": "w4a16", "replicas": 1, "cost_per_gpu_hour": 3.5},
            {"name": "strong", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 3.5},
        ],
        "router": router,
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return runner.run_scenario(scenario_mod.load_scenario(path), scenario_path=path).to_json()


@pytest.mark.parametrize("tier", ["weak", "strong"])
def test_uniform_replay_reports_the_label_mean_exactly(trace_path, tmp_path, tier):
    path, df = trace_path
    summary = run(path, {"policy": "uniform", "tier": tier}, tmp_path)
    assert summary["accuracy"] == pytest.approx(df[f"correct_{tier}"].mean(), abs=1e-12)


def test_threshold_replay_beats_the_weak_tier(trace_path, tmp_path):
    path, df = trace_path
    summary = run(path, {"policy": "threshold", "thresholds": 0.85}, tmp_path)
    shares = summary["router"]["first_tier_shares"]
    assert 0.0 < shares["weak"] < 1.0
    assert summary["accuracy"] > df["correct_weak"].mean() + 0.02
