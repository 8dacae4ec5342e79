"""Tests of the step assembly and the roofline model: public bounds, invariants, hand sums."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.hardware import ModelArch, get_model
from tiersim.perf.assembly import AssembledStepModel, expected_experts
from tiersim.perf.base import StepShape
from tiersim.perf.memory import weight_bytes
from tiersim.perf.roofline import RooflineConstants, RooflineModel, RooflineOps

MODELS = {
    (name, precision, gpu, tp): RooflineModel(name, precision, gpu, tp)
    for name, tp in (("Qwen3-Coder-30B-A3B", 1), ("Llama-3.1-8B", 1), ("Llama-3.1-70B", 4))
    for precision in ("bf16", "fp8", "w4a16", "nvfp4")
    for gpu in ("H200", "B200")
}


def decode(model, seqs: int, context_per_seq: int) -> float:
    """Step time of a pure-decode iteration."""
    return model.step_time(StepShape(decode_seqs=seqs, decode_context=seqs * context_per_seq))


def prefill(model, tokens: int, cached: int = 0) -> float:
    """Step time of an iteration running one prefill chunk."""
    return model.step_time(StepShape(prefill_chunks=((tokens, cached),)))


# ----------------------------------------------------------------------------- public facts


def test_h200_decode_of_bf16_8b_is_bounded_by_weight_streaming():
    model = MODELS[("Llama-3.1-8B", "bf16", "H200", 1)]
    floor = weight_bytes(get_model("Llama-3.1-8B"), "bf16") / 4.8e12  # 3.35 ms
    t = decode(model, 1, 128)
    assert t >= floor
    assert t < 2.5 * floor  # and not absurdly slow: vLLM does ~150-200 tok/s here


def test_source_is_roofline_everywhere():
    model = MODELS[("Llama-3.1-70B", "fp8", "H200", 4)]
    assert model.source == "roofline"
    sources = model.sources()
    assert set(sources.values()) == {"roofline"}
    assert "allreduce tp=4" in sources and "gemm fp8" in sources and "overhead" in sources
    assert "moe bf16" in MODELS[("Qwen3-Coder-30B-A3B", "bf16", "H200", 1)].sources()


def test_lower_precision_decodes_faster_at_batch_one():
    times = [decode(MODELS[("Llama-3.1-8B", p, "H200", 1)], 1, 512) for p in ("bf16", "fp8")]
    w4 = decode(MODELS[("Llama-3.1-8B", "w4a16", "H200", 1)], 1, 512)
    assert w4 < times[1] < times[0]
    assert 1.3 < times[0] / times[1] < 2.0  # halving precision: 1.3-1.7x where memory-bound


def test_nvfp4_prefill_is_native_only_on_blackwell():
    """Hopper dequantises NVFP4 to BF16 math; Blackwell computes in FP4."""
    h200 = {p: prefill(MODELS[("Llama-3.1-8B", p, "H200", 1)], 8192) for p in ("bf16", "nvfp4")}
    b200 = {p: prefill(MODELS[("Llama-3.1-8B", p, "B200", 1)], 8192) for p in ("fp8", "nvfp4")}
    assert h200["nvfp4"] >= h200["bf16"]  # no FP4 tensor cores: no compute saving
    assert b200["nvfp4"] < b200["fp8"]


def test_large_gemm_runs_at_the_rate_of_the_compute_dtype():
    """Compute-bound GEMM: FP8 at twice BF16 on Hopper (plus quantising the activations);
    weight-only formats at BF16 rate derated for dequantisation; NVFP4 at the FP4 rate only
    on Blackwell."""
    m, n, k = np.array([16384.0]), 8192, 8192
    bw = {"H200": 4.8e12 * 0.8, "B200": 8e12 * 0.8}

    def gemm(gpu: str, precision: str) -> float:
        return RooflineOps("Llama-3.1-8B", precision, gpu).gemm(m, n, k, precision)[0]

    def quantise(gpu: str, out_bytes: float) -> float:
        return m[0] * k * (2 + out_bytes) / bw[gpu]

    dequant = RooflineConstants().dequant_factor
    fp8_h200 = gemm("H200", "fp8") - quantise("H200", 1)
    assert fp8_h200 == pytest.approx(gemm("H200", "bf16") / 2, rel=0.01)
    for fmt in ("w4a16", "nvfp4"):
        assert gemm("H200", fmt) == pytest.approx(gemm("H200", "bf16") / dequant, rel=0.01)
    fp8_b200 = gemm("B200", "fp8") - quantise("B200", 1)
    assert gemm("B200", "nvfp4") - quantise("B200", 4.5 / 8) == pytest.approx(
        fp8_b200 / 2, rel=0.01
    )
    assert gemm("B200", "w4a16") == pytest.approx(gemm("B200", "bf16") / dequant, rel=0.01)


def test_tensor_parallel_adds_two_allreduces_per_layer():
    class NoAllReduce(RooflineOps):
        def allreduce(self, nbytes):
            return np.zeros_like(np.asarray(nbytes, dtype=np.float64))

    arch = get_model("Llama-3.1-70B")
    ops = RooflineOps(arch, "fp8", "H200", tp=2)
    with_ar = AssembledStepModel(arch, "fp8", 2, ops, "roofline")
    without = AssembledStepModel(arch, "fp8", 2, NoAllReduce(arch, "fp8", "H200", 2), "x")
    shape = StepShape(prefill_chunks=((1000, 0),), decode_seqs=24, decode_context=24 * 900)
    tokens = shape.num_tokens
    expected = arch.layers * 2 * ops.allreduce(np.array([tokens * arch.hidden * 2.0]))[0]
    assert with_ar.step_time(shape) - without.step_time(shape) == pytest.approx(expected)
    assert expected > 0


def test_tensor_parallel_splits_weight_streaming():
    one = decode(MODELS[("Llama-3.1-70B", "fp8", "H200", 4)], 1, 256)
    two = decode(RooflineModel("Llama-3.1-70B", "fp8", "H200", tp=2), 1, 256)
    assert one < two  # TP4 streams a quarter of the weights per GPU, pays more all-reduce


# ----------------------------------------------------------------------------- MoE


def test_expected_experts_formula():
    assert expected_experts(1, 128, 8) == pytest.approx(8)
    assert expected_experts(2, 128, 8) == pytest.approx(128 * (1 - (120 / 128) ** 2))
    assert expected_experts(10_000, 128, 8) == pytest.approx(128)
    touched = expected_experts(np.arange(1, 200), 128, 8)
    assert np.all(np.diff(touched) > 0)


def test_expected_experts_matches_sampling():
    rng = np.random.default_rng(7)
    experts, k, tokens, trials = 128, 8, 16, 2000
    # Each token picks k distinct experts: the first k of a random permutation.
    picks = rng.random((trials, tokens, experts)).argsort(axis=-1)[..., :k]
    hit = np.zeros((trials, experts), dtype=bool)
    np.put_along_axis(hit, picks.reshape(trials, -1), True, axis=1)
    counts = hit.sum(axis=1)
    assert counts.mean() == pytest.approx(expected_experts(tokens, experts, k), rel=0.01)


def test_moe_at_batch_one_reads_top_k_experts():
    arch = get_model("Qwen3-Coder-30B-A3B")
    ops = RooflineOps(arch, "bf16", "H200", constants=RooflineConstants(moe_floor_s=0.0))
    expert_bytes = 3 * arch.hidden * arch.expert_intermediate * 2
    streaming = 8 * expert_bytes / (4.8e12 * ops.c.bw_eff)
    assert ops.moe(np.array([1.0]))[0] == pytest.approx(streaming, rel=0.01)
    assert ops.moe(np.array([512.0]))[0] > 10 * streaming  # all 128 experts and more math


# ----------------------------------------------------------------------------- assembly


class LinearOps:
    """Hand-checkable operator times: each op a simple function of its arguments."""

    overhead_s = 1e-3

    def gemm(self, m, n, k, precision):
        scale = 1.0 if precision == "bf16" else 0.5
        return scale * np.asarray(m, dtype=np.float64) * n * k * 1e-15

    def moe(self, tokens):
        return np.asarray(tokens, dtype=np.float64) * 1e-7

    def attn_prefill(self, tokens, context):
        return tokens * (context + tokens) * 1e-12

    def attn_decode(self, batch, context_per_seq):
        return batch * np.asarray(context_per_seq, dtype=np.float64) * 1e-10

    def allreduce(self, nbytes):
        return 2e-6 + np.asarray(nbytes, dtype=np.float64) * 1e-12

    def sources(self):
        return {"everything": "test"}


def test_assembly_matches_hand_sum_for_moe_tp2():
    arch = get_model("Qwen3-Coder-30B-A3B")
    model = AssembledStepModel(arch, "fp8", 2, LinearOps(), "test")
    shape = StepShape(prefill_chunks=((300, 100), (50, 0)), decode_seqs=4, decode_context=4000)
    T = 354
    gemm = LinearOps().gemm
    q, kv, hd, h = 16, 2, 128, 2048  # per GPU at tp=2
    per_layer = (
        gemm(T, (q + 2 * kv) * hd, h, "fp8")
        + gemm(T, h, q * hd, "fp8")
        + gemm(T, 128, h, "bf16")  # router
        + T * 1e-7  # moe
        + 2 * (2e-6 + T * h * 2 * 1e-12)  # two all-reduces
        + 300 * 400 * 1e-12
        + 50 * 50 * 1e-12  # prefill attention
        - 1 * 1 * 1e-12  # one of the two chunks' fixed part (a 1-token chunk), shared
        + 4 * 1000 * 1e-10  # decode attention
    )
    lm_head = gemm(4 + 2, 151936 // 2, h, "bf16")
    expected = 48 * per_layer + lm_head + 1e-3
    assert model.step_time(shape) == pytest.approx(expected, rel=1e-12)
    assert model.sources() == {"everything": "test"}


def test_assembly_matches_hand_sum_for_dense_decode():
    arch = get_model("Llama-3.1-8B")
    model = AssembledStepModel(arch, "w4a16", 1, LinearOps(), "test")
    gemm = LinearOps().gemm
    n, ctx = 8, 8 * 700
    per_layer = (
        gemm(n, 48 * 128, 4096, "w4a16")
        + gemm(n, 4096, 4096, "w4a16")
        + gemm(n, 2 * 14336, 4096, "w4a16")
        + gemm(n, 4096, 14336, "w4a16")
        + n * 700 * 1e-10
    )
    expected = 32 * per_layer + gemm(n, 128256, 4096, "bf16") + 1e-3
    assert model.decode_times(n, np.array([ctx]))[0] == pytest.approx(expected, rel=1e-12)


def test_decode_times_is_vectorised_and_matches_step_time_exactly():
    model = MODELS[("Qwen3-Coder-30B-A3B", "nvfp4", "H200", 1)]
    contexts = np.arange(0, 64 * 40_000, 64 * 97, dtype=np.float64)
    times = model.decode_times(64, contexts)
    assert times.shape == contexts.shape
    singles = [model.step_time(StepShape(decode_seqs=64, decode_context=int(c))) for c in contexts]
    assert np.array_equal(times, np.array(singles))


def test_empty_iteration_costs_the_overhead():
    model = MODELS[("Llama-3.1-8B", "bf16", "H200", 1)]
    assert model.step_time(StepShape()) == model.ops.overhead_s


def test_sliding_window_layers_cap_context():
    gpt_oss = ModelArch(
        name="gpt-oss-20b",
        layers=24,
        hidden=2880,
        heads=64,
        kv_heads=8,
        head_dim=64,
        vocab=201088,
        num_experts=32,
        expert_intermediate=2880,
        top_k=4,
        sliding_window=128,
        sliding_layers=12,
    )
    full = dataclasses.replace(gpt_oss, sliding_window=0, sliding_layers=0)
    windowed, dense = RooflineModel(gpt_oss, "bf16", "H200"), RooflineModel(full, "bf16", "H200")
    assert decode(windowed, 64, 100) == pytest.approx(decode(dense, 64, 100))
    assert decode(windowed, 64, 20_000) < decode(dense, 64, 20_000)


def test_constants_are_configurable():
    slow = RooflineConstants(bw_eff=0.4, base_overhead_s=5e-3)
    base = MODELS[("Llama-3.1-8B", "bf16", "H200", 1)]
    assert decode(RooflineModel("Llama-3.1-8B", "bf16", "H200", constants=slow), 1, 1) > 1.5 * (
        decode(base, 1, 1)
    )


# ----------------------------------------------------------------------------- invariants

model_keys = st.sampled_from(sorted(MODELS))


@settings(max_examples=150, deadline=None)
@given(
    key=model_keys,
    seqs=st.integers(0, 512),
    ctx=st.integers(0, 4096),
    extra_seqs=st.integers(0, 64),
    extra_ctx=st.integers(0, 4096),
)
def test_decode_time_non_decreasing_in_batch_and_context(key, seqs, ctx, extra_seqs, extra_ctx):
    model = MODELS[key]
    base = model.step_time(StepShape(decode_seqs=seqs, decode_context=seqs * ctx))
    more_ctx = model.step_time(StepShape(decode_seqs=seqs, decode_context=seqs * (ctx + extra_ctx)))
    bigger = model.step_time(
        StepShape(decode_seqs=seqs + extra_seqs, decode_context=(seqs + extra_seqs) * ctx)
    )
    assert more_ctx >= base and bigger >= base


@settings(max_examples=150, deadline=None)
@given(
    key=model_keys,
    new=st.integers(1, 8192),
    cached=st.integers(0, 32_000),
    extra=st.integers(0, 4096),
    seqs=st.integers(0, 128),
)
def test_mixed_step_non_decreasing_in_tokens(key, new, cached, extra, seqs):
    model = MODELS[key]

    def at(new_tokens: int, cached_tokens: int, decode_seqs: int) -> float:
        chunk = ((new_tokens, cached_tokens),)
        shape = StepShape(chunk, decode_seqs=decode_seqs, decode_context=decode_seqs * 1000)
        return model.step_time(shape)

    base = at(new, cached, seqs)
    assert at(new + extra, cached, seqs) >= base
    assert at(new, cached + extra, seqs) >= base
    assert at(new, cached, seqs + 1) >= base
    assert base > model.step_time(StepShape(decode_seqs=seqs, decode_context=seqs * 1000))


@settings(max_examples=60, deadline=None)
@given(key=model_keys, seqs=st.integers(1, 1024), contexts=st.lists(st.integers(0, 10**8)))
def test_decode_times_equal_step_time(key, seqs, contexts):
    model = MODELS[key]
    ctx = np.array(contexts, dtype=np.int64)
    times = model.decode_times(seqs, ctx)
    for c, t in zip(contexts, times, strict=True):
        assert model.step_time(StepShape(decode_seqs=seqs, decode_context=c)) == t
