"""`tiersim report` reads scenario.yaml within the scenario reader's limits, and `tiersim disagg`
scores the tier it splits (sixth hostile round)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiersim.cli import main
from tiersim.disagg import compare_splits
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tiersim" / "scenarios" / "tiny.yaml"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "o"
    assert main(["run", str(TINY), "--out", str(out), "--no-baselines", "--no-report"]) == 0
    return out


@pytest.mark.parametrize("make,expected", [
    (lambda p: os.mkfifo(p), "not a regular file (a device or pipe)"),  # hung, holding the lock
    (lambda p: p.write_text("x: " + "[" * 50000 + "]" * 50000),
     "line 1: nested more than 64 levels deep"),  # a RecursionError traceback
    (lambda p: p.write_text("name: big\nnotes:\n" + "  - aaaa\n" * 200_000),
     "file is larger than 1,000,000 bytes"),  # 20 MB took 39 s and went into the page
])
def test_report_reads_scenario_yaml_within_the_scenario_limits(run_folder, tmp_path, capsys,
                                                               make, expected):
    folder = tmp_path / "copy"
    shutil.copytree(run_folder, folder)
    (folder / "scenario.yaml").unlink()
    make(folder / "scenario.yaml")
    capsys.readouterr()
    assert main(["report", str(folder)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: {folder / 'scenario.yaml'}: ") and expected in err


def _two_tiers() -> dict:
    doc = yaml.safe_load(TINY.read_text())
    doc["trace"]["path"] = str(REPO / "tiersim" / "traces" / "azure2023_code.parquet")
    doc["tiers"][1]["replicas"] = 2
    return doc


def test_disagg_scores_the_split_tier_by_its_own_latencies(tmp_path):
    """With two tiers, every row showed (and was scored by) the fleet's p99, set by the other
    tier; the p50 columns were the fleet's too, then '-' in a multi-tier scenario: they are
    the tier's own p50s."""
    doc = _two_tiers()
    rows = compare_splits(scenario_from_dict(doc, "s.yaml"), "bf16")
    aggregated = next(r for r in rows if r.label == "aggregated")
    own = run_scenario(scenario_from_dict(doc, "s.yaml"), tmp_path / "o").tier("bf16")
    assert (aggregated.ttft_p99_s, aggregated.tpot_p99_s) == (own.ttft_p99_s, own.tpot_p99_s)
    requests = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    mine = requests[requests["final_tier"] == "bf16"]
    assert aggregated.ttft_p50_s == pytest.approx(mine["ttft_s"].median())
    assert aggregated.tpot_p50_s == pytest.approx(mine["tpot_s"].median())
    assert [r.score for r in rows] == sorted(r.score for r in rows)


def test_disagg_splits_the_tier_with_a_disaggregation_block_by_default(tmp_path, capsys):
    """The first tier (one replica) was chosen though the second was the only one with a
    disaggregation block: "tier 'w4a16' has one replica: no prefill/decode split of it
    exists"."""
    doc = _two_tiers()
    doc["tiers"][1]["disaggregation"] = {"prefill_replicas": 1, "decode_replicas": 1}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main(["disagg", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "1P 1D" in out and "one replica" not in err
    assert main(["disagg", str(path), "--tier", "w4a16"]) == 0
    # among the notes (round 53: tiny's own tier-order note comes first, W4A16 at one price
    # costing more per request at tiny's load)
    assert (
        "note: tier 'w4a16' has one replica: no prefill/decode split of it exists, so only "
        "aggregated serving is shown; choose --tier bf16") in capsys.readouterr().err.splitlines()


def test_disagg_without_any_tpot_scores_on_ttft(tmp_path, capsys):
    """One-token outputs have no TPOT: a TypeError traceback before."""
    trace = tmp_path / "one.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n" +
                     "".join(f"{i * 0.5},500,1\n" for i in range(40)))
    doc = yaml.safe_load(TINY.read_text())
    doc["trace"] = {"path": str(trace)}
    doc["tiers"] = [{"name": "bf16", "precision": "bf16", "replicas": 2,
                     "cost_per_gpu_hour": 3.5}]
    doc["router"] = {"policy": "uniform"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert main(["disagg", str(path)]) == 0
    out = capsys.readouterr().out
    assert "aggregated" in out and "1P 1D" in out and "best: " in out
