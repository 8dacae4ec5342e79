"""Round 57, review57: the plan's last line on where its latencies come from is plan.json's
``sources.latency``, the step times of the GPU counts its designs ran, as the report's plan
section now says too. It was the step times of the scenario's own layout: tiny with its tiers
written at 2 GPUs a replica, every design sized at 1 GPU, read "roofline (5 ops)" (the 2-GPU
tables) where plan.json said "roofline (4 ops)".
"""

from __future__ import annotations

import json
from html import escape

import yaml

from tiersim.cli import main
from tiersim.paths import bundled
from tiersim.report.page import plan_section
from tiersim.results import PlanResult


def _two_gpu_tiny(tmp_path):
    doc = yaml.safe_load(bundled("scenarios", "tiny").read_text())
    doc["trace"]["path"] = str(bundled("traces", doc["trace"]["path"]))
    for tier in doc["tiers"]:
        tier["gpus_per_replica"] = 2
    path = tmp_path / "t2.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_plans_latency_line_is_plan_jsons_source(tmp_path, capsys):
    out = tmp_path / "p"
    capsys.readouterr()
    code = main(
        [
            "plan",
            str(_two_gpu_tiny(tmp_path)),
            "--out",
            str(out),
            "--check-seeds",
            "0",
            "--no-report",
        ]
    )
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    data = json.loads((out / "plan.json").read_text())
    assert data["plan"]["gpus_per_replica"] == {"bf16": 1}  # sized at 1 GPU, not the 2 written
    said = [line for line in lines if line.startswith("latencies ")]
    assert said == [f"latencies {data['sources']['latency']}"]
    page = plan_section(PlanResult.from_json(data))
    assert escape(data["sources"]["latency"]) in page
    assert escape(data["sources"]["cost"]) in page


def test_a_400_digit_count_in_plan_json_current_is_quoted_cut():
    """A hand-edited plan.json's 400-digit replicas is quoted as its first 40 digits and its
    length, as ``--current`` quotes it (round 56, 6f997d64); the reader repeated it whole."""
    import pytest

    from tiersim.results_plan import _check_current

    current = {
        "seeds": [0],
        "given": "--current",
        "tiers": ["bf16"],
        "replicas": {"bf16": 10**400},
        "gpus_per_replica": {"bf16": 1},
    }
    with pytest.raises(ValueError) as err:
        _check_current(current, None)
    assert str(err.value) == (
        "'plan.current.replicas.bf16' must be a whole number from 1 to 100,000 (what a "
        f"scenario may give), got 1{'0' * 39}... (401 characters)"
    )
