"""A run's saving per hour gives the two rates it is the share of: the run's own fleet's and
each sized uniform fleet's USD per hour, in summary.json, the console and the report (before,
"saved vs uniform ... per hour" stood beside costs over the run alone, which do not give it)."""

from __future__ import annotations

import json

import pytest
from test_savings import TTFT_SLO, tiny

from tiersim.results import RunResult, without_noise
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

PRICE = 3.5  # the tiny scenario's USD per GPU-hour, every tier


@pytest.fixture(scope="module")
def hourly(tmp_path_factory):
    """The tiny scenario under provisioned cost, run with simulated baselines into a folder
    (test_savings' TTFT SLO: 0.3 s, as 0.15 s is missed on the calibrated roofline)."""
    folder = tmp_path_factory.mktemp("hourly")
    path = tiny(folder, cost_model="provisioned",
                slo={"ttft_p99_s": TTFT_SLO, "tpot_p99_s": 0.1})
    run = run_scenario(load_scenario(path), out_dir=folder / "o", scenario_path=path,
                       baselines=True, report=True)
    return run, folder / "o"


def test_the_rates_are_the_fleets_gpus_times_their_price(hourly):
    run, _ = hourly
    s = run.savings
    assert s.saving_basis == "per_hour" and s.shows_rates
    routed = sum(t.replicas * t.gpus_per_replica for t in run.tiers) * PRICE
    assert s.routed_cost_per_hour_usd == pytest.approx(routed)
    for base in s.uniform:
        assert base.cost_per_hour_usd == pytest.approx(base.replicas * base.gpus_per_replica
                                                       * PRICE)
    base = next(b for b in s.uniform if b.tier == s.baseline_uniform_tier)
    # the saving per hour is the share of exactly these two rates
    assert s.vs_uniform_frac == without_noise(1 - s.routed_cost_per_hour_usd
                                              / base.cost_per_hour_usd)


def test_summary_json_holds_the_rates_and_reads_back(hourly):
    run, out = hourly
    written = json.loads((out / "summary.json").read_text())["savings"]
    assert written["routed_cost_per_hour_usd"] == pytest.approx(run.savings
                                                                .routed_cost_per_hour_usd)
    assert all(u["cost_per_hour_usd"] > 0 for u in written["uniform"].values())
    read = RunResult.read(out / "summary.json").savings
    assert read.routed_cost_per_hour_usd == written["routed_cost_per_hour_usd"]
    assert {u.tier: u.cost_per_hour_usd for u in read.uniform} == {
        name: u["cost_per_hour_usd"] for name, u in written["uniform"].items()}


def test_a_summary_written_before_the_rates_shows_no_rate_column(hourly, tmp_path):
    run, out = hourly
    doc = json.loads((out / "summary.json").read_text())
    del doc["savings"]["routed_cost_per_hour_usd"]
    for u in doc["savings"]["uniform"].values():
        del u["cost_per_hour_usd"]
    old = RunResult.from_json(json.dumps(doc))
    assert not old.savings.shows_rates
    assert all(u.cost_per_hour_usd is None for u in old.savings.uniform)


def test_the_console_and_the_report_show_the_rates(hourly):
    from rich.console import Console

    from tiersim.cli.run import baseline_table

    run, out = hourly
    console = Console(width=160, record=True)
    console.print(baseline_table(run))
    text = console.export_text()
    assert "USD/hour" in text
    rate = run.savings.routed_cost_per_hour_usd
    routed_line = next(line for line in text.splitlines() if "routed (this run)" in line)
    assert f"{rate:.3g}" in routed_line
    assert "cost (USD per hour)" in (out / "report.html").read_text()


def test_an_estimate_shows_no_rates(tmp_path):
    path = tiny(tmp_path, cost_model="provisioned")
    s = run_scenario(load_scenario(path), scenario_path=path).savings
    assert s.estimated and not s.shows_rates and s.routed_cost_per_hour_usd is None
    assert "cost_per_hour_usd" not in json.dumps(s.to_json()["uniform"])


def test_the_static_splits_figures_over_the_trace_are_of_the_split_chosen_per_hour():
    """Under provisioned cost the split is chosen per hour; its cost and gap over the trace are
    of that split. Before, they came from the split cheapest over the trace: uniform a and b
    both reach the accuracy, a at 10 USD/hour draining long (30 USD over the trace), b at
    12 USD/hour (24 USD): the figures per hour were a's and those over the trace b's."""
    from tiersim.routing.metrics import static_split_saving

    uniform = [(30.0, 10.0, 0.9), (24.0, 12.0, 0.9)]  # (over the trace, USD/hour, accuracy)
    split = static_split_saving("provisioned", 0.85, (20.0, 11.0), uniform)
    assert split["static_split_cost_per_hour_usd"] == 10.0
    assert split["static_split_cost_usd"] == 30.0  # a's, not b's 24
    assert split["vs_static_split_usd"] == 10.0
    assert split["vs_static_split_frac"] == pytest.approx(1 - 11.0 / 10.0)
    assert split["vs_static_split_over_trace_frac"] == pytest.approx(1 - 20.0 / 30.0)
    # other cost models choose over the trace: b
    assert static_split_saving("attributed", 0.85, (20.0, None),
                               uniform)["static_split_cost_usd"] == 24.0


def test_a_tie_per_hour_is_split_on_the_cost_over_the_trace():
    from tiersim.routing.metrics import static_split_saving

    uniform = [(30.0, 10.0, 0.9), (24.0, 10.0, 0.9)]
    split = static_split_saving("provisioned", 0.85, (20.0, 11.0), uniform)
    assert split["static_split_cost_usd"] == 24.0


def test_a_draft_heads_default_cost_is_not_called_the_scenarios():
    """The latency source named a speculative tier's draft head cost "scenario" where the
    scenario left it out and tiersim's default 0.05 was used."""
    from tiersim.scenario import SpeculativeConfig
    from tiersim.summary import _spec_words

    unset = SpeculativeConfig(k=3, acceptance=0.7)
    assert _spec_words(unset, (0, 10)) == ("speculative acceptance 0.7, draft head cost 0.05 "
                                           "(tiersim's default)")
    given = SpeculativeConfig(k=3, acceptance=0.7, head_cost=0.05)
    assert _spec_words(given, (0, 10)) == "speculative acceptance 0.7, draft head cost 0.05"


def test_a_tensorrt_llm_row_sizes_its_kv_cache_as_tensorrt_llm_does():
    """TensorRT-LLM gives the KV cache 0.9 of the memory left free after the weights and the
    activations (``free_gpu_memory_fraction``), vLLM and SGLang 0.9 of the whole GPU less them.
    Before, a TensorRT-LLM row was replayed with vLLM's rule: B200 DeepSeek-R1 at TP 4 held
    40,544 tokens where TensorRT-LLM holds 528,960, and the replay preempted all along."""
    import dataclasses
    import math
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    from tiersim.hardware.gpus import get_gpu
    from tiersim.hardware.models import get_model
    from tiersim.perf.memory import kv_capacity_blocks

    model = "Llama-3.1-70B"
    args = (get_model(model), "fp8", get_gpu("h200"), 2, fs.BLOCK_SIZE)
    kw = {"kv_dtype": "fp8", "max_num_batched_tokens": fs.MAX_BATCHED_TOKENS}
    vllm = fs.Case(model, "fp8", tp=2, dp=1, ep=1, engine="vllm")
    trt = fs.Case(model, "fp8", tp=2, dp=1, ep=1, engine="trtllm")
    assert fs.engine_kv_blocks(vllm, "fp8", {}) == kv_capacity_blocks(*args, **kw)
    sglang = dataclasses.replace(vllm, engine="sglang")
    assert fs.engine_kv_blocks(sglang, "fp8", {}) == kv_capacity_blocks(*args, **kw)
    free = kv_capacity_blocks(*args, gpu_memory_utilization=1.0, **kw)
    assert fs.engine_kv_blocks(trt, "fp8", {}) == math.floor(0.9 * free)
    assert fs.engine_kv_blocks(trt, "fp8", {}) > kv_capacity_blocks(*args, **kw)
