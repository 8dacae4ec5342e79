"""A new user's first hour: what `tiersim --help` and the docs tell a capacity planner who
installed the wheel, checked against what the commands and the shipped files do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import run_cli, tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.paths import available


def help_text(capsys, *argv: str) -> str:
    """``tiersim ARGV --help`` as printed, its box borders and line breaks read as spaces."""
    assert main([*argv, "--help"]) == 0
    return re.sub(r"[│\s]+", " ", capsys.readouterr().out)


@pytest.mark.parametrize("command", ["run", "plan", "sweep", "disagg", "analytic"])
def test_a_scenario_commands_help_names_the_bundled_scenarios(capsys, command):
    shown = help_text(capsys, command)
    names = [Path(name).stem for name in available("scenarios")]
    assert "tiny" in names and "default" in names
    missing = [name for name in names if not re.search(rf"\b{name}\b", shown)]
    assert missing == [], f"tiersim {command} --help does not name {missing}"


def test_the_traces_readme_quotes_mooncakes_prefix_reuse_as_trace_inspect_prints_it():
    from tiersim.paths import bundled
    from tiersim.trace import load_trace, trace_stats

    readme = bundled("traces", "mooncake_synthetic").parent / "README.md"
    row = next(line for line in readme.read_text().splitlines()
               if line.startswith("| `mooncake_synthetic.parquet`"))
    reuse = trace_stats(load_trace(bundled("traces", "mooncake_synthetic")))["prefix_reuse"]
    printed = f"{100 * reuse:.1f}%"  # tiersim trace inspect's "prefix hits, unbounded cache"
    assert printed in row, f"traces/README.md's Mooncake row does not quote {printed}: {row}"


def fidelity_benchmark():
    """``benchmarks/fidelity_silicon.py`` as a module (it writes the shipped fidelity record)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon

    return fidelity_silicon


def shipped_record(fs, system: str) -> dict:
    """The shipped fidelity record of ``system``'s default profile (its vLLM rows)."""
    import json

    from tiersim import fidelity

    stem = fs.bundled_profile(fs.SYSTEM_GPU[system]).stem
    return json.loads(fidelity.CHECK_FILE.read_text())["profiles"][stem]


@pytest.mark.parametrize("system", ["h200_sxm", "h100_sxm", "b200_sxm"])
def test_each_checked_model_is_recognised_by_its_shapes_as_they_are_read_today(system):
    """A run names a tier's checked rows when its model's shape_id is the record's: a record
    written before ModelArch changed names none (Llama-3.1-70B on H100 and B200 read 'not among
    the checked models' though 45 and 120 of its rows were replayed there)."""
    pytest.importorskip("aiconfigurator_core")  # NVIDIA's NVFP4 configs are read from it
    fs = fidelity_benchmark()
    rows = fs.load_rows(system)
    rows = rows[rows["backend"] == "vllm"]
    stale = {model: entry["shape_id"]
             for model, entry in shipped_record(fs, system)["models"].items()
             if entry["shape_id"] != fs.rows_shape_id(rows[rows["model"] == model])}
    assert stale == {}, (f"fidelity_check.json's {system} record has stale shape_ids; run "
                         f"python benchmarks/fidelity_silicon.py --system {system} --write-check")


def test_the_b200_record_is_what_its_minimax_rows_replay_to_today():
    """The B200 record was left from before the B200 profile was rebuilt: MiniMax-M2.5 16.3%
    |TPOT| (and all 497 rows 10.7%) where the benchmark, and docs/fidelity.md, give 16.5%
    (10.6%). Replays the model's 134 rows, as --write-check does."""
    pytest.importorskip("aiconfigurator_core")
    fs = fidelity_benchmark()
    system, model = "b200_sxm", "MiniMax-M2.5"
    rows = fs.load_rows(system)
    rows = rows[(rows["backend"] == "vllm") & (rows["model"] == model)]
    rows = fs.with_aic(rows.reset_index(drop=True), system)
    args = fs.build_parser().parse_args(["--system", system])
    res = fs.run(rows, args.kv_dtype, fs.protocol_from_args(args), 2)
    cpp = fs.cpp_moe_rows(res, args.kv_dtype, 2)  # --fit-cpp-moe's training rows there
    replayed = fs.check_entry(res, "vllm", system, cpp)["models"][model]
    assert shipped_record(fs, system)["models"][model] == replayed


def test_a_plan_under_provisioned_cost_writes_no_unread_price_on_a_tier_it_leaves_out(tmp_path):
    """Every tier priced per request under provisioned cost: the plan keeps BF16 and writes
    W4A16 under baselines:, where its cost_per_request_usd is read by nothing; it was written
    there anyway, and the plan printed 'note: baseline w4a16: cost_per_request_usd is read
    only under cost_model fixed_per_request ...' of a tier the user's file lists as a tier."""
    doc = tiny_doc()
    for tier, price in zip(doc["tiers"], (0.001, 0.0025)):
        tier["cost_per_request_usd"] = price
    scenario = write_yaml(tmp_path / "priced.yaml", doc)
    out = tmp_path / "plan"
    result = run_cli("plan", str(scenario), "--out", str(out), "--max-replicas", "2",
                     "--gpus-per-replica", "1", "--no-report")
    assert result.returncode == 0, result.stderr
    planned = yaml.safe_load((out / "scenario.yaml").read_text())
    assert [t["name"] for t in planned["baselines"]] == ["w4a16"]  # the case this checks
    assert "cost_per_request_usd" not in planned["baselines"][0]
    assert planned["tiers"][0]["cost_per_request_usd"] == 0.0025  # a kept tier's price stays
    assert "cost_per_request_usd" not in result.stderr
