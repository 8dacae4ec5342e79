"""A p99 no served request has (every output one token long: no TPOT; a response cache that
answers every request: the fleet serves none) meets its limit when nothing was dropped. Before,
such a fleet "missed" the SLO at every size: `tiersim plan` found no fleet and the uniform
baselines escalated to 4 replicas of 8 GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from tiersim.cli import main
from tiersim.paths import bundled
from tiersim.plan.planner import OVERSHOOT_CAP, _overshoot

TRACE = Path(__file__).resolve().parents[1] / "tiersim" / "traces" / "azure2023_code.parquet"


def _one_token_scenario(tmp_path: Path) -> Path:
    """300 requests of the code trace, every output one token long, one BF16 tier."""
    df = pd.read_parquet(TRACE).head(300)
    df["output_tokens"] = 1
    df.to_parquet(tmp_path / "one.parquet")
    path = tmp_path / "one.yaml"
    path.write_text("name: one\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\n"
                    "trace: {path: one.parquet}\n"
                    "tiers:\n  - {name: bf16, precision: bf16, replicas: 1, "
                    "cost_per_gpu_hour: 3.5}\n"
                    "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n")
    return path


def test_a_missing_p99_is_met_unless_nothing_finished_to_measure():
    assert _overshoot(None, 0.1, dropped=0, finished=0) < 0  # no request sent at all
    assert _overshoot(None, 0.1, dropped=0, finished=5) < 0  # one-token outputs: no TPOT
    assert _overshoot(None, 0.1, dropped=3, finished=5) < 0  # the drops fail it on their own
    assert _overshoot(None, 0.1, dropped=3, finished=0) == OVERSHOOT_CAP
    assert _overshoot(0.2, 0.1, dropped=0, finished=5) == 1.0


def test_one_token_outputs_meet_the_tpot_slo_and_can_be_planned(tmp_path, capsys):
    path = _one_token_scenario(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-report"]) == 0
    saving = json.loads((tmp_path / "o" / "summary.json").read_text())["savings"]
    assert saving["routed_slo_met"] is True
    assert saving["uniform"]["bf16"]["slo_met"] is True
    assert (saving["uniform"]["bf16"]["replicas"], saving["uniform"]["bf16"]["gpus_per_replica"]) \
        == (1, 1)
    capsys.readouterr()
    assert main(["plan", str(path), "--out", str(tmp_path / "p"), "--no-report"]) == 0
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())["plan"]
    assert plan is not None and plan["replicas"] == {"bf16": 1}


def test_a_cache_that_answers_everything_leaves_a_fleet_that_meets_its_slos(tmp_path, capsys):
    doc = yaml.safe_load(bundled("scenarios", "response_cache.yaml").read_text())
    doc["router"]["response_cache"]["popularity"]["distinct"] = 5  # top 20 holds them all
    doc["trace"]["path"] = str(bundled("traces", "azure2023_conv.parquet"))
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-report"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["response_cache"]["hit_rate"] == 1.0 and summary["requests"] == 0
    saving = summary["savings"]
    assert saving["routed_slo_met"] is True and saving["uniform"]["bf16"]["replicas"] == 1
    assert "nan" not in out
