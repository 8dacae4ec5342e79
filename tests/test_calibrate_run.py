"""Issue 3, Done-when 2: `tiersim calibrate --device cpu --quick` writes a profile that loads
and drives a whole run (a small model from a config.json, a window of a bundled trace)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")

from tiersim.runner import run_scenario  # noqa: E402
from tiersim.scenario import load_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {"model_type": "qwen3_moe", "hidden_size": 256, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
          "vocab_size": 1024, "num_experts": 16, "num_experts_per_tok": 2,
          "moe_intermediate_size": 128, "intermediate_size": 512,
          "max_position_embeddings": 32768}


def test_quick_cpu_profile_drives_a_run(tmp_path):
    profile = tmp_path / "P.json"
    proc = subprocess.run([sys.executable, "-m", "tiersim.calibrate", "--device", "cpu",
                           "--quick", "--out", str(profile)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(profile.read_text())
    doc["gpu"] = "H200"  # the CPU's numbers stand in for an H200's: the format is under test
    doc["provenance"]["gpu_name"] = "NVIDIA H200"  # both, or it is refused as a CPU's
    profile.write_text(json.dumps(doc))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    scenario = {
        "name": "harness-run", "seed": 0, "model": "config.json", "gpu": "H200",
        "profile": str(profile),
        "trace": {"path": "azure2023_code.parquet", "window": [0, 120]},
        "tiers": [{"name": p, "precision": p, "replicas": 1, "cost_per_gpu_hour": 3.5}
                  for p in ("nvfp4", "fp8", "bf16")],
        "router": {"policy": "static_split", "fractions": [0.4, 0.3, 0.3]},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    summary = run_scenario(load_scenario(path), scenario_path=path).to_json()
    assert summary["completed"] == summary["requests"] > 0
    sources = summary["profile"]["sources"]
    # the quick grid's tables end where the H200 is not yet bound (GEMMs at m <= 64): read
    # past their last points along the roofline, and labelled so
    continued = "harness on H200 (continued along the roofline past its last point)"
    assert {s for tier in sources.values() for t, s in tier.items() if t != "overhead"} \
        == {"harness on H200", continued}
    assert summary["sources"]["latency"].startswith("measured profile on H200")
