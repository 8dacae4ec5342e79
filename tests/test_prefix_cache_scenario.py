"""The prefix-cache example: on Mooncake-style shared prefixes, caching cuts TTFT and cost."""

from __future__ import annotations

import yaml

from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict


def _run(caching: bool) -> tuple[dict, float]:
    path = bundled("scenarios", "prefix_cache.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0]["scheduler"]["enable_prefix_caching"] = caching
    summary = run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()
    return summary, summary["ttft_p50_s"]


def test_prefix_caching_lowers_ttft_and_cost_on_shared_prefixes():
    on, ttft_on = _run(True)
    off, ttft_off = _run(False)
    assert on["completed"] == off["completed"] == on["requests"]
    assert ttft_on < ttft_off
    assert on["cost_usd"] < off["cost_usd"]
