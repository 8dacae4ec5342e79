"""A uniform baseline that costs 0 USD has no share to save against (1 - cost / 0): the
console and the report print the USD gap, not a bare dash that hid it."""

from __future__ import annotations

from conftest import tiny_doc, write_yaml

from tiersim.cli.run import router_rows
from tiersim.report.page import savings_section
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

GAP = "costs 0.0293 USD more (the baseline costs 0 USD: no percentage)"
"""The routed fleet is the dearer: worded as ``tiersim plan`` words it (round 49; it read
"-0.0293 USD (...)")."""


def _free_cheap_tier_run(tmp_path):
    """tiny with a free W4A16 tier that alone meets a floor of 0.9: the routed fleet also pays
    for a BF16 replica."""
    doc = tiny_doc(accuracy_floor=0.9)
    doc["tiers"][0]["cost_per_gpu_hour"] = 0.0
    doc["trace"]["window"] = [240, 270]
    return run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), baselines=True)


def test_the_gap_to_a_free_baseline_is_printed_in_usd(tmp_path):
    """Before, "saved vs uniform w4a16" read "-" in both, though summary.json held
    vs_uniform_usd < 0: the routed fleet costs that much more than the free one."""
    run = _free_cheap_tier_run(tmp_path)
    s = run.savings
    assert s.baseline_uniform_tier == "w4a16" and s.vs_uniform_frac is None
    assert f"costs {-s.vs_uniform_usd:.3g} USD more" == GAP.split(" (")[0]
    row = [r for r in router_rows(run, "prior") if r[0].startswith("saved vs uniform")]
    assert row == [("saved vs uniform w4a16", GAP, "provisioned; uniform fleets simulated")]
    assert f"<td>saved vs that tier</td><td>{GAP}</td>" in savings_section(run)
