"""Gated delta-net hybrids (Qwen3-Next, Qwen3.5): read from config.json, weights and the
per-sequence state in memory, the state's blocks in the scheduler, and the step time."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from reference_scheduler import reference_run
from test_engine import fast, limits, make_tier, workloads

from tiersim.engine import simulate
from tiersim.errors import TiersimError
from tiersim.hardware import get_gpu
from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf import build_step_model
from tiersim.perf.memory import kv_bytes_per_token, kv_capacity_blocks, state_blocks

#: Qwen3.5-397B-A17B's language model, as its config.json's text_config gives it.
QWEN35_397B = {
    "model_type": "qwen3_5_moe_text", "hidden_size": 4096, "num_hidden_layers": 60,
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 248320, "max_position_embeddings": 262144, "attn_output_gate": True,
    "layer_types": ["linear_attention"] * 3 * 15 + ["full_attention"] * 15,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 64, "linear_value_head_dim": 128, "mlp_only_layers": [],
    "moe_intermediate_size": 1024, "num_experts": 512, "num_experts_per_tok": 10,
    "shared_expert_intermediate_size": 1024, "mtp_num_hidden_layers": 1,
    "tie_word_embeddings": False,
}


def _write(tmp_path, config: dict, wrap: bool = False):
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    data = {"model_type": "qwen3_5_moe", "text_config": config} if wrap else config
    (folder / "config.json").write_text(json.dumps(data))
    return folder


def test_qwen35_397b_has_its_published_parameter_count(tmp_path):
    m = load_hf_config(_write(tmp_path, QWEN35_397B, wrap=True))
    assert (m.layers, m.linear_layers, m.attention_layers) == (60, 45, 15)
    assert m.attn_gate and m.is_moe and m.shared_intermediate == 1024
    # 397 B published, its vision tower (~0.4 B) included; tiersim counts the language model
    assert m.total_params == pytest.approx(396.3e9, rel=0.002)
    assert m.active_params == pytest.approx(17e9, rel=0.05)


def test_full_attention_interval_places_the_softmax_layers(tmp_path):
    config = {k: v for k, v in QWEN35_397B.items() if k != "layer_types"}
    config.update(model_type="qwen3_next", num_hidden_layers=48, full_attention_interval=4)
    m = load_hf_config(_write(tmp_path, config))
    assert (m.linear_layers, m.attention_layers) == (36, 12)


def test_only_softmax_layers_hold_kv_per_token_and_each_sequence_holds_its_state(tmp_path):
    m = load_hf_config(_write(tmp_path, QWEN35_397B))
    # 15 softmax layers x K and V x 2 KV heads x 256 x 2 bytes (tp 1)
    assert kv_bytes_per_token(m, "bf16", 1) == 15 * 2 * 2 * 256 * 2
    # per delta-net layer: 64 x 128 x 128 BF16 state + (2 x 2048 + 8192) x 3 BF16 conv window
    per_layer = 64 * 128 * 128 * 2 + (2 * 2048 + 8192) * 3 * 2
    assert m.state_bytes_per_seq(8) == pytest.approx(45 * per_layer / 8)
    blocks = state_blocks(m, tp=8, block_size=16, kv_dtype="bf16")
    assert blocks == math.ceil(45 * per_layer / 8 / (kv_bytes_per_token(m, "bf16", 8) * 16))


def test_the_config_may_keep_the_state_in_float32(tmp_path):
    m16 = load_hf_config(_write(tmp_path, QWEN35_397B))
    m32 = load_hf_config(_write(tmp_path, {**QWEN35_397B, "mamba_ssm_dtype": "float32"}))
    assert m32.state_bytes_per_seq() > 1.9 * m16.state_bytes_per_seq()


@pytest.mark.parametrize(("change", "text"), [
    ({"layer_types": ["linear_attention"] * 60},
     "key 'layer_types': leaves no full-attention layer; tiersim models hybrids with at "
     "least one"),
    ({"layer_types": ["sliding_attention"] * 60},
     "key 'layer_types': must be a list of 60 layer types, each 'linear_attention' or "
     "'full_attention'"),
    ({"linear_num_value_heads": 24}, "key 'linear_num_value_heads': must be a multiple of "
     "linear_num_key_heads (16)"),
    ({"mamba_ssm_dtype": "int8"}, "key 'mamba_ssm_dtype': must be one of float32, bfloat16, "
     'float16 (got "int8")'),
])
def test_a_hybrid_config_tiersim_cannot_read_is_one_line(tmp_path, change, text):
    folder = _write(tmp_path, {**QWEN35_397B, **change})
    with pytest.raises(TiersimError) as err:
        load_hf_config(folder)
    assert str(err.value) == f"{folder / 'config.json'}: {text}"


def test_the_linear_heads_must_split_over_the_gpus(tmp_path):
    m = load_hf_config(_write(tmp_path, {**QWEN35_397B, "linear_num_key_heads": 2,
                                         "linear_num_value_heads": 8}))
    with pytest.raises(Exception, match="linear-attention key / value heads are not divisible"):
        kv_capacity_blocks(m, "bf16", get_gpu("h200"), tp=4)


def test_a_long_context_costs_a_hybrid_less_than_softmax_in_every_layer(tmp_path):
    hybrid = load_hf_config(_write(tmp_path, QWEN35_397B))
    step = build_step_model(hybrid, "bf16", "h200", tp=8)
    assert {"gdn_decode", "gdn_prefill"} <= set(step.sources())
    softmax_only = build_step_model(
        hybrid.__class__(**{**hybrid.__dict__, "linear_layers": 0}), "bf16", "h200", tp=8)
    ctx = np.array([64 * 32768.0])
    # only a quarter of the layers read the 32k-token KV of 64 sequences
    assert step.decode_times(64, ctx)[0] < softmax_only.decode_times(64, ctx)[0]
    short, long = step.decode_times(64, np.array([64 * 1024.0, 64 * 32768.0]))
    assert short < long


# ------------------------------------------------------------------ the scheduler


def test_every_admitted_request_holds_its_state_blocks():
    tier = make_tier(num_blocks=400, state_blocks=5)
    from tiersim.engine import ReplicaScheduler, Req

    sched = ReplicaScheduler(tier.limits, tier.num_blocks)
    sched.add(Req(0, prompt=40, output=3, arrival=0.0))
    plan = sched.schedule(0.0)
    assert sched.used_blocks() == math.ceil(40 / 16) + 5
    sched.complete(plan, 1, 0.1, 0.1)
    while sched.running:
        sched.complete(sched.schedule(0.2), 1, 0.3, 0.1)
    assert sched.used_blocks() == 0


@fast
@given(workloads, limits)
def test_state_blocks_keep_kv_within_capacity_and_match_the_reference_loop(work, lim):
    lim = dict(lim)
    nb = lim.pop("num_blocks")
    spec = make_tier(num_blocks=nb, state_blocks=3, **lim)
    res = simulate([spec], work, sample_every=1e-9)
    assert max(res.kv_peak_blocks["t"]) <= spec.num_blocks
    done = ~np.isnan(res.finish_s)
    assert np.all(done ^ res.dropped)
    ft, fin, dropped, _ = reference_run(work.arrival_s, work.input_tokens, work.output_tokens,
                                        spec.limits, spec.num_blocks, spec.step_model)
    np.testing.assert_array_equal(res.dropped, dropped)
    np.testing.assert_allclose(res.finish_s[~dropped], fin[~dropped], rtol=0, atol=1e-9)


def test_the_shipped_profile_reads_measured_delta_net_kernels(tmp_path):
    # Qwen3.5-35B-A3B's shapes: NVIDIA's vLLM 0.24 tables of its delta-net kernels
    config = {**QWEN35_397B, "hidden_size": 2048, "num_hidden_layers": 40,
              "num_attention_heads": 16, "layer_types": ["linear_attention"] * 30
              + ["full_attention"] * 10, "linear_num_value_heads": 32, "num_experts": 256,
              "num_experts_per_tok": 8, "moe_intermediate_size": 512,
              "shared_expert_intermediate_size": 512}
    step = build_step_model(load_hf_config(_write(tmp_path, config)), "bf16", "h200", tp=1,
                            profile="h200_aiconfigurator_vllm")
    sources = step.sources()
    assert sources["gdn_decode hidden=2048 k_heads=16 v_heads=32 k_dim=128 v_dim=128"] == (
        "measured:aiconfigurator vllm 0.24.0")
    assert sources["gdn_prefill hidden=2048 k_heads=16 v_heads=32 k_dim=128 v_dim=128"] == (
        "measured:aiconfigurator vllm 0.24.0")
    # more sequences never decode faster, a longer chunk never prefills faster
    times = step.decode_times(1, np.array([2048.0]))[0], step.decode_times(64, np.array([
        64 * 2048.0]))[0]
    assert times[0] < times[1]


# ------------------------------------------------------------------ round 16, from outside


def test_speculative_decoding_keeps_a_state_per_position_and_a_hybrid_drafts_too(tmp_path):
    m = load_hf_config(_write(tmp_path, QWEN35_397B))
    one = state_blocks(m, tp=8, block_size=16)
    assert state_blocks(m, tp=8, block_size=16, copies=4) == math.ceil(
        4 * m.state_bytes_per_seq(8) / (kv_bytes_per_token(m, "bf16", 8) * 16))
    assert state_blocks(m, tp=8, block_size=16, copies=4) > 3 * one
    # a hybrid draft's state joins the target's (and its KV per token the block's size)
    with_draft = state_blocks(m, tp=8, block_size=16, draft=m)
    assert with_draft == math.ceil(2 * m.state_bytes_per_seq(8)
                                   / (2 * kv_bytes_per_token(m, "bf16", 8) * 16))


def test_a_split_tier_moves_the_recurrent_state_with_the_kv():
    from tiersim.engine import Disagg

    link = Disagg(1, 1, 1e9, 0.0, kv_bytes_per_token=1000.0, state_bytes=5e6)
    assert link.transfer_s(1000) == pytest.approx((1000 * 1000.0 + 5e6) / 1e9)


def test_a_hybrid_states_dtype_must_be_a_name(tmp_path):
    folder = _write(tmp_path, {**QWEN35_397B, "mamba_ssm_dtype": ["float32"]})
    with pytest.raises(TiersimError) as err:
        load_hf_config(folder)
    assert str(err.value) == (f"{folder / 'config.json'}: key 'mamba_ssm_dtype': must be one of "
                              'float32, bfloat16, float16 (got ["float32"])')


def test_prefix_caching_a_hybrid_is_noted(tmp_path, capsys):
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    folder = _write(tmp_path, {**QWEN35_397B, "num_hidden_layers": 8, "layer_types":
                               ["linear_attention"] * 6 + ["full_attention"] * 2,
                               "num_experts": 64})
    doc = tiny_doc(model=str(folder), router={"policy": "uniform"})
    doc["tiers"] = [{"name": "h", "precision": "bf16", "replicas": 1, "gpus_per_replica": 1,
                     "cost_per_gpu_hour": 3.5, "accuracy": 0.9,
                     "scheduler": {"enable_prefix_caching": True}}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    assert ("note: tier h: its model's delta-net layers need their recurrent state at a cached "
            "prefix's end") in err


@pytest.mark.parametrize(("left_bf16", "expected"), [
    ("linear", ("experts", "bf16", (45 * 16 + 15 * 8) / 60)),
    ("softmax", ("experts", "fp8", (45 * 8 + 15 * 16) / 60)),
])
def test_a_hybrids_experts_are_weighed_in_every_layer(tmp_path, left_bf16, expected):
    """The MLP of a delta-net layer is a module like any other: an ignore list naming the
    experts of the linear layers (or of the softmax ones) leaves that share of them BF16."""
    linear = {i for i, t in enumerate(QWEN35_397B["layer_types"]) if t == "linear_attention"}
    chosen = linear if left_bf16 == "linear" else set(range(60)) - linear
    skip = [f"model.layers.{i}.mlp.experts" for i in sorted(chosen)]
    config = {**QWEN35_397B, "quantization_config": {"quant_method": "fp8",
                                                     "modules_to_not_convert": skip}}
    m = load_hf_config(_write(tmp_path, config))
    experts = next(f for f in m.checkpoint if f[0] == "experts")
    assert experts[:2] == expected[:2]
    assert experts[2] == pytest.approx(expected[2])


def _util_for_blocks(model, blocks: int) -> float:
    """The gpu_memory_utilization at which ``model`` holds about ``blocks`` KV blocks on one
    H200 (BF16, default scheduler)."""
    from tiersim.perf.memory import default_activation_reserve, weight_bytes

    need = (weight_bytes(model, "bf16") + default_activation_reserve(model)
            + (blocks + 0.5) * kv_bytes_per_token(model) * 16)
    return round(need / get_gpu("H200").hbm_bytes, 9)


@pytest.mark.parametrize("blocks", [8, 250])
def test_a_kv_cache_short_of_a_hybrids_state_says_what_fits(tmp_path, capsys, blocks):
    """Each sequence of a delta-net hybrid holds its state's blocks besides its tokens' (here
    199 blocks); the note counted all the cache as tokens, so with 8 blocks it advised
    max_model_len 128, with which still no request could be served."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    folder = _write(tmp_path, {**QWEN35_397B, "num_hidden_layers": 8, "layer_types":
                               ["linear_attention"] * 6 + ["full_attention"] * 2,
                               "num_experts": 64})
    model = load_hf_config(folder)
    assert state_blocks(model) == 199
    doc = tiny_doc(model=str(folder), router={"policy": "uniform"})
    doc["tiers"] = [{"name": "h", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 3.5,
                     "accuracy": 0.9, "gpu_memory_utilization": _util_for_blocks(model, blocks)}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    note = " ".join(err.split())
    if blocks < 199:
        assert ("note: tier h: one sequence may hold no token of its KV cache per replica (8 "
                "blocks of 16 tokens, less 199 for the sequence's delta-net state), so no "
                "request can be served (vLLM refuses to start so; give the tier more memory); "
                "here every request is dropped") in note
    else:
        assert ("note: tier h: one sequence may hold at most 784 tokens of its KV cache per "
                "replica (250 blocks of 16 tokens, less 2 blocks for the watermark, 199 for the "
                "sequence's delta-net state), less than max_model_len 262,144: a longer request "
                "is dropped here (vLLM refuses to start when max_model_len exceeds the cache's "
                "4,000 tokens); set scheduler.max_model_len to at most 784, or give the tier "
                "more memory") in note
