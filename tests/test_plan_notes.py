"""The planner tries raised router floors on purpose: one out of the router's reach is that
design's missed accuracy in the plan, not a ``note:`` line per floor tried (a run of a
scenario with such a floor still prints the note: tests/test_round6_routing.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tiersim.cli import main

TRACE = Path(__file__).resolve().parents[1] / "tiersim" / "traces" / "azure2023_code.parquet"


def _scenario(tmp_path: Path, floor: float) -> Path:
    """Two tiers on one minute of the code trace (roofline), floor router, ``floor``; W4A16
    at 2.5 USD an hour, cheaper per request than BF16 at 3.5 (at one price, round 53's price
    at the load's decode batch reads W4A16 the dearer, and the run notes the tiers' order)."""
    tiers = "".join(
        f"  - {{name: {name}, precision: {name}, replicas: 1, cost_per_gpu_hour: {usd}, "
        f"accuracy: {{easy: {easy}, hard: {hard}, hopeless: 0.0}}}}\n"
        for name, usd, easy, hard in (("w4a16", 2.5, 0.99, 0.6), ("bf16", 3.5, 1.0, 0.8)))
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
        f"trace: {{path: {TRACE}, window: [240, 300]}}\n"
        f"workload: {{difficulty: {{kind: three_type, p_hopeless: 0.14, hint_auroc: 0.72}}}}\n"
        f"tiers:\n{tiers}router: {{policy: floor}}\n"
        f"slo: {{ttft_p99_s: 2.0, tpot_p99_s: 0.1}}\naccuracy_floor: {floor}\n")
    return path


def test_plan_reports_an_unreachable_floor_as_missed_accuracy_not_notes(tmp_path, capsys):
    code = main(["plan", str(_scenario(tmp_path, 0.815)), "--out", str(tmp_path / "p"),
                 "--no-report"])
    out, err = capsys.readouterr()
    assert code == 1  # no fleet meets the floor
    assert "note:" not in err and "note:" not in out
    assert "w4a16+bf16: accuracy 81.07% < floor 81.50%" in out
    assert json.loads((tmp_path / "p" / "plan.json").read_text())["plan"] is None


def test_a_cost_gap_below_the_plan_reads_cheaper_not_negative_dearer():
    from tiersim.plan.planner import _dearer

    assert _dearer(0.02) == "2.00 % dearer than the plan"
    assert _dearer(-0.007) == "0.700 % cheaper than the plan"


def test_plan_lists_each_uniform_fleet_with_its_size_and_one_no_size_fits_as_no_baseline(
        tmp_path, capsys):
    path = tmp_path / "drop.yaml"
    path.write_text(
        "name: drop\nseed: 3\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
        f"trace: {{path: {TRACE.with_name('azure2023_conv.parquet')}, window: [0, 120]}}\n"
        "workload: {difficulty: {kind: two_type, p_easy: 0.8}}\n"
        "tiers:\n"
        "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 2.5,"
        " scheduler: {max_model_len: 1500}}\n"
        "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"
        "router: {policy: static_split, fractions: [0.6, 0.4]}\n"
        "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\ncost_model: provisioned\n")
    main(["plan", str(path), "--out", str(tmp_path / "p"), "--no-report"])
    out = capsys.readouterr().out
    fp8 = next(line for line in out.splitlines() if line.startswith("  uniform fp8 "))
    assert fp8.startswith("  uniform fp8 (") and " GPU): latency: " in fp8
    assert "(tried fp8 on 1 GPU per replica); cost at that size " in fp8
    assert fp8.endswith(" USD, no baseline")
    assert "  uniform bf16 (1 x 1 GPU): meets every constraint, cost " in out


def test_plan_prints_each_trace_note_once_under_the_path_the_scenario_gives(
        tmp_path, monkeypatch, capsys):
    """The search reads the trace as the scenario names it and the planned run reads the same
    file: its notes print once, not again under the trace's absolute path."""
    import numpy as np
    import pandas as pd
    import yaml

    n = 300
    pd.DataFrame({"Timestamp": 5.0 + 0.25 * np.arange(n), "Model": "ChatGPT",
                  "Request tokens": 200, "Response tokens": [0] + [50] * (n - 1),
                  "Total tokens": 250, "Log Type": "API log"}).to_csv(tmp_path / "bg.csv",
                                                                     index=False)
    doc = yaml.safe_load((Path(__file__).resolve().parents[1] / "scenarios" / "tiny.yaml")
                         .read_text())
    doc["trace"] = {"path": "bg.csv", "format": "burstgpt"}
    doc["tiers"][0]["cost_per_gpu_hour"] = 2.5  # w4a16 cheaper per request: no order note
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "s.yaml", "--out", "p", "--no-report", "--max-replicas", "4",
                 "--gpus-per-replica", "1"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: bg.csv: dropped 1 of 300 rows with 0 response tokens (failed "
                     "requests in BurstGPT; first at row 1)",
                     "note: bg.csv: times count from the first request kept (row 2, "
                     "0.25 s after the first row)"]
