"""Sliding-window KV: a sliding-window layer holds blocks for at most a window and one block of
a sequence's latest tokens (vLLM V1's SlidingWindowManager), so long sequences take fewer
blocks than with full attention; the engine admits, grows and preempts on that count, exactly
as the naive reference loop does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_scheduler import (
    assert_fast_forward_exact_and_conserving,
    assert_matches_reference,
    assert_same_per_request,
    reference_run,
)
from test_prefix_cache import shared_prefix_workload

from tiersim.engine import (
    SchedulerLimits,
    SpecDecoding,
    TierSpec,
    Workload,
    longest_sequence,
    simulate,
)
from tiersim.engine.request import UNBOUNDED, seq_blocks
from tiersim.fleet import kv_blocks, limits
from tiersim.hardware import get_gpu, get_model
from tiersim.perf.base import LinearStepModel
from tiersim.perf.memory import (
    kv_capacity_blocks,
    kv_groups,
    kv_pages,
    vllm_longest_sequence,
)
from tiersim.scenario import TierConfig

#: Mistral-7B-v0.1's window at a 16-token block: every layer slides over 4,096 tokens.
MISTRAL = dict(max_num_seqs=64, max_num_batched_tokens=8192, block_size=16, watermark=0.01)


def _limits(**kw) -> SchedulerLimits:
    return SchedulerLimits(**{**MISTRAL, **kw})


def test_a_long_sequence_holds_a_window_of_blocks():
    full, slide = _limits(), _limits(window=4096, window_groups=1, full_groups=0)
    # 16,384 + 1,024 tokens: 1,088 blocks with full attention; with the window, a decode step
    # holds ceil(4096 / 16) + 1 = 257, a prefill chunk of 8,192 ceil(12287 / 16) + 1 = 769
    assert seq_blocks(full, 17408) == 1088
    assert seq_blocks(slide, 17408) == 257
    assert seq_blocks(slide, 16384, 8192) == 769
    assert seq_blocks(slide, 100) == 7  # within the window: every block
    # gpt-oss: one full and one sliding group (128 tokens): 1,088 + 9 pages
    oss = _limits(window=128, window_groups=1, full_groups=1)
    assert seq_blocks(oss, 17408) == 1088 + 9
    assert longest_sequence(slide, 1000) == UNBOUNDED
    assert longest_sequence(oss, 2000) == (2000 - 20 - 521) * 16  # 521: a chunk of 8,192


def _long_context(n=8, prompt=16384, output=64):
    return Workload(np.zeros(n), np.full(n, prompt), np.full(n, output),
                    np.zeros(n, dtype=np.int64))


def test_window_avoids_preemptions_full_counting_has():
    # 4,000 blocks: full counting holds 3 of 8 sequences of 16,448 tokens (1,028 blocks each)
    # and preempts; with the window each holds 257 blocks decoding (769 while prefilling),
    # all 8 fit (8 x 257 = 2,056 <= 4,000 - 40)
    work = _long_context()
    full = TierSpec("t", 1, 4000, LinearStepModel(), _limits())
    slide = TierSpec("t", 1, 4000, LinearStepModel(),
                     _limits(window=4096, window_groups=1, full_groups=0))
    a, b = simulate([full], work), simulate([slide], work)
    assert a.preemptions.sum() > 0
    assert b.preemptions.sum() == 0
    assert max(b.kv_peak_blocks["t"]) <= 4000
    assert np.nanmax(b.finish_s) < np.nanmax(a.finish_s)


def test_long_request_fits_only_with_the_window():
    # 2,000 blocks: 40,000 tokens need 2,500 with full attention (dropped); windowed, 769
    work = _long_context(n=1, prompt=40000, output=8)
    full = TierSpec("t", 1, 2000, LinearStepModel(), _limits())
    slide = TierSpec("t", 1, 2000, LinearStepModel(),
                     _limits(window=4096, window_groups=1, full_groups=0))
    assert simulate([full], work).dropped.all()
    assert not simulate([slide], work).dropped.any()


def _work(n, seed, rate, max_in, max_out):
    rng = np.random.default_rng(seed)
    return Workload(np.cumsum(rng.exponential(1.0 / rate, n)), rng.integers(1, max_in, n),
                    rng.integers(1, max_out, n), np.zeros(n, dtype=np.int64))


workloads = st.builds(_work, n=st.integers(1, 50), seed=st.integers(0, 10_000),
                      rate=st.floats(1.0, 200.0), max_in=st.integers(2, 900),
                      max_out=st.integers(2, 300))
windowed = st.fixed_dictionaries({
    "max_num_seqs": st.integers(1, 32),
    "max_num_batched_tokens": st.integers(32, 1024),
    "block_size": st.sampled_from([1, 4, 16]),
    "window": st.integers(1, 300),
    "full_groups": st.integers(0, 2),
    "window_groups": st.integers(1, 3),
    "num_blocks": st.integers(60, 600),
})
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tier(lim: dict, prefix: bool = False) -> TierSpec:
    lim = dict(lim)
    nb = lim.pop("num_blocks")
    return TierSpec("t", 1, nb, LinearStepModel(),
                    SchedulerLimits(watermark=0.01, enable_prefix_caching=prefix, **lim))


@fast
@given(workloads, windowed, st.booleans())
def test_windowed_kv_never_over_capacity_and_fast_forward_exact(work, lim, prefix):
    spec = _tier(lim, prefix)  # prefix caching: a preempted request's whole run is reused
    res = simulate([spec], work, sample_every=1e-9)
    assert max(res.kv_peak_blocks["t"]) <= spec.num_blocks
    assert all(s[3] <= spec.num_blocks for s in res.samples["t"][0])
    assert_fast_forward_exact_and_conserving(spec, work, simulate)


@fast
@given(workloads, windowed)
def test_windowed_matches_naive_vllm_loop(work, lim):
    spec = _tier(lim)
    assert_matches_reference(simulate([spec], work), work, spec)


@fast
@given(workloads, windowed, st.integers(1, 3))
def test_windowed_fast_forward_with_replicas(work, lim, replicas):
    spec = _tier(lim)
    spec.replicas = replicas
    assert_same_per_request(simulate([spec], work, fast_forward=True),
                            simulate([spec], work, fast_forward=False))


prefixed = st.builds(
    shared_prefix_workload, n=st.integers(1, 40), seed=st.integers(0, 10_000),
    rate=st.floats(1.0, 200.0), max_in=st.integers(2, 600), max_out=st.integers(2, 300),
    families=st.integers(1, 4), block=st.sampled_from([16, 32]),
)


@fast
@given(prefixed, windowed, st.booleans())
def test_windowed_prefix_cache_matches_naive_loop(work, lim, prefix):
    spec = _tier(lim, prefix)
    assert_matches_reference(simulate([spec], work), work, spec)


@fast
@given(prefixed, windowed, st.integers(1, 4), st.sampled_from([0.0, 0.5, 0.9]), st.booleans())
def test_windowed_speculative_decoding_matches_naive_loop(work, lim, k, accept, prefix):
    lim = dict(lim)
    lim["max_num_batched_tokens"] = max(lim["max_num_batched_tokens"],
                                        lim["max_num_seqs"] * (k + 1))
    spec = _tier(lim, prefix)
    spec.spec_decoding = SpecDecoding(k, (accept,), head_cost=0.05)
    assert_matches_reference(simulate([spec], work), work, spec, spec=spec.spec_decoding)
    assert_fast_forward_exact_and_conserving(spec, work, simulate)


MISTRAL_7B = {"architectures": ["MistralForCausalLM"], "model_type": "mistral",
              "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
              "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": 4096,
              "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
GPT_OSS = Path(__file__).parent.parent / "benchmarks/data/configs/gpt-oss-120b/config.json"


def test_a_tier_reads_its_models_window_groups(tmp_path):
    mistral = tmp_path / "config.json"
    mistral.write_text(json.dumps(MISTRAL_7B))
    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0)
    lim = limits(tier, str(mistral))
    assert (lim.window, lim.full_groups, lim.window_groups) == (4096, 0, 1)
    model = get_model(str(mistral))
    assert kv_blocks(str(mistral), "H100", tier) == kv_capacity_blocks(model, "bf16",
                                                                      get_gpu("H100"))
    # gpt-oss: 18 full + 18 sliding (128) layers, two groups: twice the pages of all 36 layers
    oss = get_model(str(GPT_OSS))
    assert kv_groups(oss) == (128, 1, 1)
    assert kv_pages(oss, 1000) == 2000
    assert kv_groups(get_model("Llama-3.1-8B")) == (0, 1, 0)
    plain = limits(tier, "Llama-3.1-8B")
    assert (plain.window, plain.full_groups, plain.window_groups) == (0, 1, 0)


def test_the_short_kv_note_counts_the_window():
    from tiersim.scenario import _short_kv_note

    # gpt-oss at 0.47 of an H200: 2,837 blocks of all 36 layers, 5,674 pages of two groups;
    # a sequence of n tokens holds ceil(n / 16) full pages + 521 sliding (a step of 8,192)
    lim = SchedulerLimits(window=128, full_groups=1, window_groups=1, max_model_len=131072)
    tier = TierConfig(name="mx", precision="bf16", replicas=1, cost_per_gpu_hour=1.0)
    room = longest_sequence(lim, 5674)
    assert room == (5674 - 56 - 521) * 16 == 81552
    assert _short_kv_note(lim, 5674, tier, room, 82448) == (
        "one sequence may hold at most 81,552 tokens of its KV cache per replica (5,674 blocks "
        "of 16 tokens, one per layer group: 1 full-attention and 1 sliding-window of 128 "
        "tokens, less 56 blocks for the watermark), less than max_model_len 131,072: a longer "
        "request is dropped here (vLLM refuses to start when max_model_len exceeds the "
        "cache's 82,448 tokens); set scheduler.max_model_len to at most 81,552, or give the "
        "tier more memory")


@pytest.mark.parametrize("types, window, pages, size", [
    (["sliding_attention"] * 4, 128, 349, 4), (["sliding_attention"] * 4, 100000, 349, 4),
    (["sliding_attention", "full_attention"] * 2, 128, 2308, 2),
    (["sliding_attention", "full_attention"] * 2, 100000, 1200, 2),
    (["sliding_attention"] * 3 + ["full_attention"] * 2, 17, 3000, 2)])
def test_vllm_longest_sequence_is_vllms_start_up_check(tmp_path, types, window, pages, size):
    """The largest max_model_len vLLM starts with: its check passes there and fails one token
    above (a window wider than a step plus the sequence; groups padded to ``size`` layers)."""
    cfg = {**MISTRAL_7B, "num_hidden_layers": len(types), "layer_types": types,
           "sliding_window": window}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = get_model(str(tmp_path / "config.json"))
    most = vllm_longest_sequence(model, pages, 16, 8192)
    need = _vllm_layer_pages(model, 16, 8192)
    assert need(most) <= pages * size < need(most + 1)  # the cache holds pages x size layers'


def test_vllm_longest_sequence_of_an_all_sliding_cache(tmp_path):
    """Mistral 7B v0.1, every layer sliding over 4,096 tokens: any length once a step's window
    (ceil(12,287 / 16) + 1 = 769 pages) fits, else one block less than the cache (vLLM counts
    one block beyond a shorter sequence); gpt-oss: the full group's pages beside 521."""
    (tmp_path / "config.json").write_text(json.dumps(MISTRAL_7B))
    mistral = get_model(str(tmp_path / "config.json"))
    assert vllm_longest_sequence(mistral, 769, 16, 8192) is None
    assert vllm_longest_sequence(mistral, 768, 16, 8192) == 767 * 16
    assert vllm_longest_sequence(mistral, 500, 16, 8192) == 499 * 16
    assert vllm_longest_sequence(get_model(str(GPT_OSS)), 5674, 16, 8192) == 5153 * 16


def _vllm_layer_pages(model, bs: int, budget: int):
    """vLLM's start-up check's sum over every attention layer (``FullAttentionSpec``: a page
    per block; ``SlidingWindowSpec``: one block beyond ``min(window - 1 + budget, n)``), in
    pages of one layer, as a function of max_model_len ``n``."""
    sliding = model.sliding_layers
    full = model.attention_layers - sliding
    step = model.sliding_window - 1 + budget
    return lambda n: full * -(-n // bs) + sliding * (-(-min(step, n) // bs) + 1)


def _random_cases(seed: int, count: int):
    """``count`` random windowed tiers (prefix caching mostly on) and workloads."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 50))
        rate = float(rng.uniform(1, 200))
        work = Workload(np.cumsum(rng.exponential(1 / rate, n)),
                        rng.integers(1, int(rng.integers(2, 900)), n),
                        rng.integers(1, int(rng.integers(2, 300)), n), np.zeros(n, dtype=np.int64))
        bs, seqs = int(rng.choice([1, 4, 16])), int(rng.integers(1, 32))
        lim = SchedulerLimits(
            max_num_seqs=seqs, max_num_batched_tokens=int(rng.integers(max(32, seqs), 1024)),
            block_size=bs, watermark=0.01, window=int(rng.integers(1, 300)),
            full_groups=int(rng.integers(0, 3)), window_groups=int(rng.integers(1, 4)),
            enable_prefix_caching=bool(rng.random() < 0.7))
        yield TierSpec("t", 1, int(rng.integers(60, 600)), LinearStepModel(), lim), work


def test_a_parked_run_eroded_mid_stretch_is_exact():
    # seed 3's ninth case: a preempted head's whole run is cached, the decoders' blocks evict
    # part of it, and its re-admission (now from nothing, a smaller first chunk) fits at once
    for spec, work in _random_cases(3, 9):
        a = simulate([spec], work)
        assert_same_per_request(a, simulate([spec], work, fast_forward=False))
        _, fin, dropped, _ = reference_run(work.arrival_s, work.input_tokens,
                                           work.output_tokens, spec.limits, spec.num_blocks,
                                           spec.step_model)
        np.testing.assert_allclose(a.finish_s, fin, rtol=1e-9, equal_nan=True)


#: A small Mistral-style model (4 layers, every one sliding over 128 tokens): on 0.0131 of an
#: H200 its cache holds 349 pages of 16 tokens.
SMALL_MISTRAL = {**MISTRAL_7B, "hidden_size": 1024, "intermediate_size": 2816,
                 "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
                 "head_dim": 64, "max_position_embeddings": 131072, "sliding_window": 128}


def _small_mistral_run(tmp_path, capsys, **scheduler) -> str:
    """A run of SMALL_MISTRAL without a watermark; its stderr on one line."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    (tmp_path / "config.json").write_text(json.dumps(SMALL_MISTRAL))
    pd.DataFrame({"arrival_s": [0.0], "input_tokens": [100], "output_tokens": [10]}).to_csv(
        tmp_path / "t.csv", index=False)
    doc = tiny_doc(model=str(tmp_path / "config.json"), router={"policy": "uniform"},
                   trace={"path": str(tmp_path / "t.csv")})
    doc["tiers"] = [{"name": "a", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 1.0,
                     "gpu_memory_utilization": 0.0131,
                     "scheduler": {"watermark": 0.0, **scheduler}}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    return " ".join(err.split())


def test_the_short_kv_note_advises_a_length_vllm_starts_with(tmp_path, capsys):
    """Before, the note quoted 349 x 16 = 5,584 tokens as vLLM's limit and advised it, though
    vLLM counts each sliding layer one block beyond a sequence shorter than its window and step
    and refuses 5,584 (4 layers x 350 pages > 4 x 349); vLLM starts at 5,568, and there the
    note is gone."""
    cache = ("(349 blocks of 16 tokens, one per layer group: 0 full-attention and 1 "
             "sliding-window of 128 tokens)")
    assert (f"note: tier a: one sequence may hold at most 5,584 tokens of its KV cache per "
            f"replica {cache}, less than max_model_len 131,072: a longer request is dropped "
            "here (vLLM refuses to start when max_model_len exceeds the cache's 5,568 "
            "tokens); set scheduler.max_model_len to at most 5,568, or give the tier more "
            "memory") in _small_mistral_run(tmp_path, capsys)
    assert (f"note: tier a: vLLM refuses to start at max_model_len 5,584: by its count the KV "
            f"cache per replica {cache} holds one sequence of at most 5,568 tokens (it counts "
            "a sliding-window layer one block beyond its window and step); set "
            "scheduler.max_model_len to at most 5,568, or give the tier more memory"
            ) in _small_mistral_run(tmp_path, capsys, max_model_len=5584)
    assert "tier a:" not in _small_mistral_run(tmp_path, capsys, max_model_len=5568)


@pytest.mark.parametrize("connector", [
    {"disaggregation": {"prefill_replicas": 1, "decode_replicas": 1, "link_gb_s": 50}},
    {"scheduler": {"enable_prefix_caching": True,
                   "kv_offload": [{"name": "host", "capacity_gb": 10, "read_gb_s": 50,
                                   "write_gb_s": 50}]}}])
def test_a_kv_connector_turns_the_window_off(tmp_path, connector):
    """vLLM turns its hybrid KV cache manager off whenever a KV connector is set (P/D
    disaggregation, KV offload: ``--kv-transfer-config``), and then charges a sliding layer for
    every token: such a tier holds blocks of every layer, as with a draft model."""
    config = tmp_path / "config.json"  # gpt-oss's layout: 2 sliding + 2 full layers
    config.write_text(json.dumps({**SMALL_MISTRAL, "layer_types": [
        "sliding_attention", "full_attention"] * 2}))
    tier = TierConfig(name="t", precision="bf16", replicas=2, cost_per_gpu_hour=1.0,
                      **connector)
    plain = TierConfig(name="t", precision="bf16", replicas=2, cost_per_gpu_hour=1.0)
    assert limits(plain, str(config)).window_groups == 1
    lim = limits(tier, str(config))
    assert (lim.window, lim.full_groups, lim.window_groups) == (0, 1, 0)
    blocks = kv_capacity_blocks(get_model(str(config)), "bf16", get_gpu("H200"))
    assert kv_blocks(str(config), "H200", plain) == 2 * blocks  # two groups' pages
    assert kv_blocks(str(config), "H200", tier) == blocks


def _run_or_fail_after(seconds: int, run):
    """``run()``, failing the test if it does not return within ``seconds`` (a request that
    is queued but can never be admitted spins the engine forever)."""
    import signal

    def hung(*_):
        raise AssertionError(f"the run did not end within {seconds} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_short_prompt_is_dropped_when_its_recompute_cannot_fit():
    # Mistral's window on 400 pages (396 above the watermark). Request 1 (6,000 + 4,000
    # tokens) fits by its own steps: its prompt's chunk holds 375 pages, a decode step 257.
    # But request 0, older and growing, preempts it once its KV holds 8,128 tokens, and its
    # recompute of those in one chunk needs 508 pages: a drop rule by the request's own
    # prompt chunk and decode steps admits it and the run never ends. It counts a chunk of
    # max_num_batched_tokens (vLLM's start-up check counts the same): 6,336 tokens at most.
    lim = _limits(window=4096, window_groups=1, full_groups=0)
    assert seq_blocks(lim, 6000, 6000) == 375 and seq_blocks(lim, 10000) == 257
    assert seq_blocks(lim, 8128, 8128) == 508 > 400 - 4
    assert longest_sequence(lim, 400) == 6336
    work = Workload(np.zeros(2), np.array([160, 6000]), np.array([4000, 4000]),
                    np.zeros(2, dtype=np.int64))
    spec = TierSpec("t", 1, 400, LinearStepModel(), lim)
    res = _run_or_fail_after(60, lambda: simulate([spec], work))
    assert res.dropped.tolist() == [False, True]
    assert np.isfinite(res.finish_s[0])
    assert_matches_reference(res, work, spec)
