"""The KV offload example: on the Mooncake synthetic trace, host DRAM and SSD beneath each GPU's
prefix cache bring the token hit rate within a few points of the unbounded-cache bound (the GPU
cache alone stays far below it), and TTFT falls."""

from __future__ import annotations

import pytest
import yaml

from tiersim.errors import TiersimError
from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict


def _run(offload: bool, **sched) -> dict:
    path = bundled("scenarios", "kv_offload.yaml")
    doc = yaml.safe_load(path.read_text())
    if not offload:
        del doc["tiers"][0]["scheduler"]["kv_offload"]
    doc["tiers"][0]["scheduler"].update(sched)
    return run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()


@pytest.fixture(scope="module")
def runs():
    return _run(True), _run(False)


def test_offload_reaches_the_bound_the_gpu_cache_alone_misses(runs):
    on, off = runs
    t_on, t_off = on["tiers"]["bf16"], off["tiers"]["bf16"]
    assert t_on["prefix_hit_bound"] == t_off["prefix_hit_bound"] > 0.3
    assert t_off["prefix_hit_rate"] < t_off["prefix_hit_bound"] - 0.2
    assert t_on["prefix_hit_rate"] > t_on["prefix_hit_bound"] - 0.05
    levels = t_on["prefix_hit_by_level"]
    assert set(levels) == {"gpu", "host", "ssd"} and levels["host"] > 0 and levels["ssd"] > 0
    assert sum(levels.values()) == pytest.approx(t_on["prefix_hit_rate"])
    assert list(t_off["prefix_hit_by_level"]) == ["gpu"]


def test_offload_lowers_ttft_and_loses_nothing(runs):
    on, off = runs
    assert on["completed"] == off["completed"] == on["requests"]
    assert on["ttft_p50_s"] < 0.5 * off["ttft_p50_s"]
    assert on["ttft_p99_s"] < off["ttft_p99_s"]
    assert on["sources"]["latency"].endswith("; scenario (bf16: KV offload bandwidths)")
    assert "scenario" not in off["sources"]["latency"]


def _ssd_hits(write_gb_s: float) -> float:
    """The SSD level's share of prompt tokens in the example, its SSD writing at
    ``write_gb_s``."""
    path = bundled("scenarios", "kv_offload.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0]["scheduler"]["kv_offload"][1]["write_gb_s"] = write_gb_s
    summary = run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()
    return summary["tiers"]["bf16"]["prefix_hit_by_level"]["ssd"]


def test_a_slow_ssd_write_link_bounds_what_reaches_the_ssd():
    """The SSD's write_gb_s was never used: at 0.01 GB/s the run was byte-identical to 3 GB/s
    (12.2% of prompt tokens from the SSD), though 0.01 GB/s writes ~200 blocks of 50.3 MB in
    the run's 1,022 s per GPU."""
    fast, slow = _ssd_hits(3), _ssd_hits(0.01)
    assert fast > 0.1 and slow < fast / 100


def test_offload_without_prefix_caching_is_one_line():
    with pytest.raises(TiersimError, match="kv_offload needs enable_prefix_caching") as err:
        _run(True, enable_prefix_caching=False)
    assert "\n" not in str(err.value)


def test_a_tier_keeping_no_offload_level_names_no_offload_bandwidths():
    """Every level too small for one prompt block is left out: the run is the one without
    kv_offload, and its latency source names no bandwidth it did not use."""
    empty = [{"name": "host", "capacity_gb": 0, "read_gb_s": 1, "write_gb_s": 1}]
    path = bundled("scenarios", "kv_offload.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["trace"]["window"] = [0, 20]
    doc["tiers"][0]["scheduler"]["kv_offload"] = empty
    with pytest.warns(UserWarning, match="holds no prompt block"):
        on = run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()
    del doc["tiers"][0]["scheduler"]["kv_offload"]
    off = run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()
    assert on["sources"]["latency"] == off["sources"]["latency"]
    assert "KV offload" not in on["sources"]["latency"]
