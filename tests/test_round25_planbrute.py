"""Round 25 (planbrute): ``tiersim plan`` against a brute force over the design space it says
it searches, on the disaggregated and agentic scenarios and small planning inputs."""

from __future__ import annotations

import json

from conftest import REPO
from test_round19 import run_cli


def test_a_disaggregated_tier_is_sized_served_aggregated_too(tmp_path, capsys):
    """The plan picks a disaggregated tier's split among every split and aggregated serving
    (as ``tiersim disagg``), but sized its replicas on the splits alone: disagg.yaml at
    --slo-ttft-p99 1.0 --slo-tpot-p99 0.2 planned bf16 6 x 2 GPUs (42 USD/hour), served
    aggregated, and said one fewer missed (p99 TTFT 1.232 s, split 4P 1D), though 5 x 2
    aggregated (35 USD/hour) met every constraint, and plan.json gave 5P 1D's p99s and cost
    beside the aggregated split its scenario ran."""
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", REPO / "scenarios" / "disagg.yaml", "--slo-ttft-p99",
                        "1.0", "--slo-tpot-p99", "0.2", "--out", out, "--no-report")
    assert code == 0, err
    plan = json.loads((out / "plan.json").read_text())
    assert plan["plan"]["replicas"] == {"bf16": 5}
    assert plan["plan"]["cost_per_hour_usd"] == 35.0
    assert plan["disaggregation"]["chosen"]["prefill_replicas"] == 0  # aggregated
    assert plan["plan"]["ttft_p99_s"] <= 1.0
    # the plan's figures are the split it chose (before: 5P 1D's p99 TTFT 0.956 s beside
    # the aggregated split the written scenario runs, 0.840 s)
    chosen = plan["disaggregation"]["splits"][0]
    assert (chosen["label"], chosen["ttft_p99_s"]) == ("aggregated", plan["plan"]["ttft_p99_s"])
