"""Load or recompute: a request whose prefix blocks sit in an offload level recomputes them when
its prefill is modelled faster than the load. A very slow link then costs about what no offload
costs (not hours), and the recomputes are counted; a fast link loads exactly as the always-load
rule did. The engine matches the naive loop's choices, and each choice is the cheaper one."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import assert_same_per_request, reference_run
from test_kv_offload import offload_setups, offload_tier, workloads

from tiersim.cli.run import fmt
from tiersim.engine import KVLevel, Req, SchedulerLimits, TierSpec, Workload, simulate
from tiersim.engine.prefix_cache import PrefixCache
from tiersim.errors import TiersimError
from tiersim.paths import bundled
from tiersim.perf.base import LinearStepModel
from tiersim.results import RunResult
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict


def recurring_prefixes(n=120, families=30, blocks=8, hbt=64) -> Workload:
    """``families`` long shared prefixes asked round robin: a small GPU cache loses them, a host
    level beneath it holds them, so every repeat finds its prefix below the GPU."""
    hashes = [np.arange(blocks) + 1000 * (i % families) for i in range(n)]
    return Workload(np.arange(n) * 0.5, np.full(n, blocks * hbt), np.full(n, 4),
                    np.zeros(n, dtype=np.int64), prefix_hashes=hashes, hash_block_tokens=hbt)


def tier(read_bw: float, recompute: bool = True, host_blocks: int = 400):
    """The small GPU cache of :func:`recurring_prefixes` over a host level read at
    ``read_bw`` bytes/s (a 128-byte block; prefill costs 5 ms + 20 us a token)."""
    return offload_tier(num_blocks=2000, prefix_cache_fraction=0.1, hbt=64,
                        max_num_batched_tokens=2048, host_blocks=host_blocks, read_bw=read_bw,
                        write_bw=1e7, kv_recompute=recompute)


def test_a_very_slow_link_recomputes_and_lasts_about_as_long_as_no_offload():
    work = recurring_prefixes()
    gpu_only = simulate([tier(1.0, host_blocks=0)], work)
    loads = simulate([tier(1.0, recompute=False)], work)  # 128 s a block: hours in all
    rule = simulate([tier(1.0)], work)
    assert loads.end_s > 3600
    assert rule.end_s == pytest.approx(gpu_only.end_s, rel=0.01)
    s = rule.prefix_stats["t"]
    assert s.offload_recomputes > 0 and s.offload_loads == 0 and s.hit_tokens[1] == 0
    assert s.recomputed_tokens > 0.5 * s.bound_tokens
    assert loads.prefix_stats["t"].offload_recomputes == 0
    assert np.all(~np.isnan(rule.finish_s))


def test_a_fast_link_loads_exactly_as_the_always_load_rule():
    work = recurring_prefixes()
    rule, loads = simulate([tier(1e7)], work), simulate([tier(1e7, recompute=False)], work)
    assert_same_per_request(rule, loads)
    a, b = rule.prefix_stats["t"], loads.prefix_stats["t"]
    assert a.hit_tokens == b.hit_tokens and a.hit_tokens[1] > 0
    assert a.offload_loads == b.offload_loads > 0
    assert a.offload_recomputes == a.recomputed_tokens == 0


setups = offload_setups((1e1, 1e3, 1e4, 1e5, 1e8))  # slow links too: recomputes happen
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(workloads, setups)
def test_engine_makes_the_naive_loops_choices_and_loses_nothing(work, setup):
    spec = offload_tier(hbt=work.hash_block_tokens, **setup)
    res = simulate([spec], work)
    ft, fin, dropped, cached = reference_run(
        work.arrival_s, work.input_tokens, work.output_tokens, spec.limits, spec.num_blocks,
        spec.step_model, hashes=work.prefix_hashes, hash_block_tokens=work.hash_block_tokens)
    np.testing.assert_array_equal(res.dropped, dropped)
    np.testing.assert_array_equal(res.cache_hit_tokens, cached)
    np.testing.assert_allclose(res.finish_s, fin, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(res.first_token_s, ft, rtol=1e-9, equal_nan=True)
    choices = [c for c, gone in zip(reference_run.choices, dropped) if not gone]
    s = res.prefix_stats["t"]
    assert s.recomputed_tokens == sum(redo for redo, _ in choices)
    assert s.offload_loads == sum(loaded is True for _, loaded in choices)
    assert s.offload_recomputes == sum(loaded is False for _, loaded in choices)
    assert np.all(~np.isnan(res.finish_s) ^ res.dropped)
    assert sum(s.hit_tokens) + s.recomputed_tokens <= s.bound_tokens <= s.prompt_tokens
    assert_same_per_request(res, simulate([spec], work, fast_forward=False))


ops = st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=12), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ops, st.integers(0, 4), st.integers(0, 6), st.integers(0, 8),
       st.floats(0.5, 50.0), st.floats(0.0, 5.0), st.floats(0.0, 0.5))
def test_each_admission_pays_the_cheaper_of_load_and_recompute(seq, gpu, host, ssd, read_bw,
                                                               overhead, per_token):
    levels = (KVLevel("host", host * 10.0, read_bw, 1.0),
              KVLevel("ssd", ssd * 10.0, read_bw / 4, 1.0))
    cache = PrefixCache(gpu, 10, levels, kv_bytes_per_token=1.0)
    def prefill_s(start, prompt, budget=7):  # a step cost per chunk of up to 7 tokens
        return sum(overhead + per_token * min(budget, prompt - d) + 1e-3 * d
                   for d in range(start, prompt, budget))

    cache.prefill_s = prefill_s
    for i, hashes in enumerate(seq):
        req = Req(i, prompt=10 * len(hashes) - i % 3, output=1, arrival=0.0, hashes=hashes)
        found = [cache._where[h] for h in hashes[:cache.hits(hashes)]]
        load = sum(cache.read_s[lvl] for lvl in found if lvl)
        first = next((j for j, lvl in enumerate(found) if lvl), len(found))
        gpu_tokens = min(10 * first, req.prompt - 1)
        redo = min(10 * len(found), req.prompt - 1) - gpu_tokens
        recompute = (cache.prefill_s(gpu_tokens, req.prompt)
                     - cache.prefill_s(gpu_tokens + redo, req.prompt)) if redo else 0.0
        expect = cache.cached_tokens(req)
        cache.take_transfer()
        assert cache.admit(req) == expect
        if not any(found):
            assert req.offload_loaded is None and req.recomputed == 0
        elif req.offload_loaded:
            assert load <= recompute and req.recomputed == 0 and expect == gpu_tokens + redo
        else:
            assert recompute < load and req.recomputed == redo and expect == gpu_tokens
            assert cache.take_transfer() == 0.0  # nothing read, so nothing pushed out either
        cache.fill(req, req.prompt)


def _scenario(level_links: dict[str, float] | None, **sched) -> dict:
    """The bundled kv_offload scenario's summary with its levels' read bandwidths replaced
    (``None``: without offload levels) and ``sched`` added to its scheduler."""
    path = bundled("scenarios", "kv_offload.yaml")
    doc = yaml.safe_load(path.read_text())
    scheduler = doc["tiers"][0]["scheduler"]
    if level_links is None:
        del scheduler["kv_offload"]
    for level in scheduler.get("kv_offload", []):
        level["read_gb_s"] = level_links.get(level["name"], level["read_gb_s"])
    scheduler.update(sched)
    return run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()


def test_scenario_with_a_0_01_gb_s_host_link_lasts_as_long_as_no_offload():
    none, slow = _scenario(None), _scenario({"host": 0.01})
    assert slow["completed"] == slow["requests"] == none["requests"]
    assert slow["duration_s"] == pytest.approx(none["duration_s"], rel=0.01)  # ~17 minutes
    tier_ = slow["tiers"]["bf16"]
    assert tier_["offload_recomputes"] > 0 and tier_["prefix_recompute_rate"] > 0
    assert tier_["prefix_hit_by_level"]["host"] == 0
    assert tier_["prefix_hit_rate"] + tier_["prefix_recompute_rate"] <= tier_["prefix_hit_bound"]
    assert "offload_recomputes" not in none["tiers"]["bf16"]  # no offload, no counts
    always = _scenario({"host": 0.01}, kv_offload_recompute=False)
    assert always["duration_s"] > 10 * 3600 and always["tiers"]["bf16"]["offload_recomputes"] == 0


def test_scenario_with_its_bundled_links_mostly_loads():
    # at 50 GB/s host and 6 GB/s SSD reads a whole block loads faster than it computes; only a
    # hit block that holds a few of the request's tokens costs less to compute than to read
    rule, always = _scenario({}), _scenario({}, kv_offload_recompute=False)
    t, a = rule["tiers"]["bf16"], always["tiers"]["bf16"]
    assert t["offload_loads"] > 100 * t["offload_recomputes"] > 0
    assert 0 < t["prefix_recompute_rate"] < 1e-3 and a["offload_recomputes"] == 0
    assert rule["duration_s"] == pytest.approx(always["duration_s"], rel=1e-3)
    assert RunResult.from_json(rule).to_json() == rule  # the counts read back


def test_a_misspelt_recompute_key_is_one_line():
    with pytest.raises(TiersimError, match=r"tiers\[0\]\.scheduler\.kv_offload_recompte: "
                       r"unknown key \(did you mean 'kv_offload_recompute'\?\)") as err:
        _scenario({}, kv_offload_recompte=False)
    assert "\n" not in str(err.value)


def test_the_terminal_says_how_many_offloaded_prefixes_were_recomputed():
    from tiersim.cli.run import prefix_lines

    slow = RunResult.from_json(_scenario({"host": 0.01}))
    tier_ = slow.tiers[0]
    (line,) = prefix_lines(slow)
    assert line.endswith(f"; offloaded prefixes {tier_.offload_loads:,} loaded, "
                         f"{tier_.offload_recomputes:,} recomputed (link slower than prefill; "
                         f"{fmt(tier_.prefix_recompute_rate, ' %', 100)} of prompt tokens)")
    assert "offloaded prefixes" not in " ".join(prefix_lines(RunResult.from_json(
        _scenario(None))))


def _third_ttft(read_bw: float, recompute: bool, chunk: int = 512) -> float:
    """TTFT of the third of three requests whose first and third share an 8,192-token prefix
    that the second pushes down to the host level; one prefill chunk a step of ``chunk``
    tokens, 50 ms a step plus 10 us a token."""
    hbt, bpt = 64, 2.0
    limits = SchedulerLimits(
        max_num_seqs=16, max_num_batched_tokens=chunk, block_size=16, watermark=0.01,
        enable_prefix_caching=True, prefix_cache_fraction=1.0,
        kv_levels=(KVLevel("host", 1000 * bpt * hbt, read_bw, 1e12),), kv_overlap=True,
        kv_recompute=recompute, kv_bytes_per_token=bpt)
    spec = TierSpec("t", 1, 8448 // 16 + 8, LinearStepModel(overhead=0.05,
                                                            per_prefill_token=1e-5), limits)
    shared = list(range(128))
    work = Workload(np.array([0.0, 100.0, 200.0]), np.full(3, 8192 + 64), np.full(3, 2),
                    np.zeros(3, dtype=np.int64),
                    prefix_hashes=[shared + [5000], list(range(10000, 10129)), shared + [6000]],
                    hash_block_tokens=hbt)
    return float(simulate([spec], work).first_token_s[2] - 200.0)


@pytest.mark.parametrize("load_s", [0.3, 0.6, 1.0, 2.0])
def test_the_rule_is_never_slower_than_loading_or_recomputing_alone(load_s):
    # an isolated request: the rule's TTFT is the better of the two choices it has, counting
    # every prefill chunk the recompute takes (once it was costed as one step: 0.13 s against
    # 0.93 s run, and the rule recomputed where loading took 0.3 s)
    read_bw = 128 * 2.0 * 64 / load_s
    rule, load = _third_ttft(read_bw, True), _third_ttft(read_bw, False)
    redo = _third_ttft(1e-6, True)  # a link so slow the rule must recompute
    assert rule <= min(load, redo) + 1e-6
