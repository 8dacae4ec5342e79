"""Attention data parallelism, expert parallelism and MLA in the step assembly and roofline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tiersim.hardware import get_model
from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf import build_step_model
from tiersim.perf.aiconfigurator import table_requests
from tiersim.perf.assembly import AssembledStepModel
from tiersim.perf.base import StepShape
from tiersim.perf.roofline import RooflineOps

QWEN = get_model("Qwen3-Coder-30B-A3B")
MLA = {
    "model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 1000,
    "intermediate_size": 2048, "moe_intermediate_size": 256, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
    "q_lora_rank": 384, "kv_lora_rank": 128, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
    "v_head_dim": 32,
}


@pytest.fixture
def mla_model(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MLA))
    return load_hf_config(path)


class RecordingOps(RooflineOps):
    """The roofline, recording what the assembly asks for."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.moe_tokens: list[float] = []
        self.allreduce_gpus: set = set()

    def moe(self, tokens):
        self.moe_tokens.append(float(np.max(tokens)))
        return super().moe(tokens)

    def allreduce(self, nbytes, gpus=None):
        self.allreduce_gpus.add(gpus)
        return super().allreduce(nbytes, gpus)


def test_moe_of_a_dp_rank_sees_every_rank_tokens_and_spans_all_gpus():
    ops = RecordingOps(QWEN, "bf16", "H200", tp=1, dp=4)
    model = AssembledStepModel(QWEN, "bf16", 1, ops, "test", dp=4)
    ops.moe_tokens.clear()
    model._linear(np.array([100.0]))
    assert ops.moe_tokens == [400.0]  # lockstep: 4 ranks x 100 tokens reach each MoE layer
    assert 4 in ops.allreduce_gpus  # all-gather + reduce-scatter over the 4 GPUs
    assert (ops.moe_tp, ops.moe_ep) == (4, 1)


def test_dp_rank_shares_the_experts_but_not_the_attention():
    lone = build_step_model(QWEN, "bf16", "H200", tp=1)
    rank = build_step_model(QWEN, "bf16", "H200", tp=1, dp=4)
    ctx = np.array([64 * 1000.0])
    t_lone, t_rank = lone.decode_times(64, ctx)[0], rank.decode_times(64, ctx)[0]
    assert t_rank < t_lone  # the experts' weights are read from 4 GPUs at once
    attention = QWEN.layers * (lone.ops.attn_decode(64, ctx / 64)[0]
                               + lone._attention_linear(np.array([64.0]))[0])
    assert t_rank > attention  # each rank still runs its whole attention


def test_expert_parallel_splits_experts_not_widths():
    tp_ops = RooflineOps(QWEN, "bf16", "H200", tp=2)
    ep_ops = RooflineOps(QWEN, "bf16", "H200", tp=2, ep=2)
    assert (tp_ops.moe_tp, tp_ops.moe_ep) == (2, 1) and (ep_ops.moe_tp, ep_ops.moe_ep) == (1, 2)
    big = np.array([8192.0])  # every expert touched: same bytes and FLOPs per GPU
    assert ep_ops.moe(big)[0] == pytest.approx(tp_ops.moe(big)[0], rel=1e-9)


def test_an_expert_width_that_does_not_split_is_refused():
    """768-wide experts over 512 GPUs with no expert parallelism cannot run in vLLM (it was
    simulated anyway); with expert_parallel every expert stays whole."""
    from tiersim.perf.memory import FitError, check_parallel

    with pytest.raises(FitError, match=r"expert width 768 is not divisible by the experts' "
                                       r"tensor parallelism 512 \(tp x data_parallel / "
                                       r"expert_parallel\); set expert_parallel"):
        check_parallel(QWEN, tp=1, dp=512)
    check_parallel(QWEN, tp=1, dp=128, ep=128)  # 128 experts, one per GPU


def test_profile_requests_carry_the_moe_split(mla_model):
    keys = {(op, d, tuple(sorted(k.items()))) for op, d, k, _, _ in
            table_requests(QWEN, "fp8", 2, "bf16", dp=2, ep=4)}
    moe = [k for op, _, k in keys if op == "moe"]
    assert moe and dict(moe[0])["tp"] == 1 and dict(moe[0])["ep"] == 4
    assert ("allreduce", None, (("tp", 4),)) in keys


def test_mla_attention_tables_are_keyed_by_the_latent(mla_model):
    found = table_requests(mla_model, "checkpoint", 2, "fp8")
    attn = [(op, d, k) for op, d, k, _, _ in found if op.startswith("attn")]
    assert {d for _, d, _ in attn} == {"fp8 mla-bf16"}
    assert all(k == {"heads": 8, "kv_heads": 1, "head_dim": 144, "hidden": 1024, "q_lora": 384,
                     "rope": 16, "nope": 32, "v_dim": 32} for _, _, k in attn)


def test_mla_decode_reads_the_latent_once_per_token(mla_model):
    ops = RooflineOps(mla_model, "bf16", "H200", tp=2)
    ctx = np.array([1e6])
    t = ops.attn_decode(64, ctx)[0]
    latent_read = 64 * 1e6 * (128 + 16) * 2.0 / (4.8e12 * ops.c.bw_eff)
    assert t == pytest.approx(latent_read, rel=0.05)
    # The cache is the same on every TP GPU, so the read does not shrink with tp.
    t4 = RooflineOps(mla_model, "bf16", "H200", tp=4).attn_decode(64, ctx)[0]
    assert t4 == pytest.approx(t, rel=0.05)


@pytest.mark.parametrize("dp,ep", [(1, 1), (2, 1), (2, 4)])
def test_pure_decode_step_equals_vectorised_decode(mla_model, dp, ep):
    model = build_step_model(mla_model, "bf16", "H200", tp=2, dp=dp, ep=ep)
    for seqs, ctx in ((1, 100), (7, 7000), (64, 300000)):
        shape = StepShape(decode_seqs=seqs, decode_context=ctx)
        vec = model.decode_times(seqs, np.array([float(ctx)]))[0]
        assert model.step_time(shape) == pytest.approx(vec, rel=1e-12)


def test_mla_attention_ops_hold_the_whole_block_as_the_measured_modules_do(mla_model):
    model = build_step_model(mla_model, "bf16", "H200", tp=1)
    # No attention GEMMs outside the attention ops (NVIDIA's MLA modules include them).
    assert model._attention_linear(np.array([64.0]))[0] == 0.0
    down = f"n={384 + 128 + 16} k=1024"  # the fused q_a + kv_a projection
    assert not any(down in k for k in model.sources())
    ops = model.ops
    proj = ops._mla_decode_projections(8)
    assert proj > 0 and ops.attn_decode(8, np.array([4.0]))[0] > proj
    down = ops._mla_down(np.array([256.0]), "bf16")[0]
    assert ops.attn_prefill(256, 0) > down  # the prefill block includes its projections


def test_4bit_weight_only_on_hopper_saves_bytes_not_flops():
    ops = RooflineOps("Llama-3.1-8B", "bf16", "H200")
    n, k = 14336, 4096
    one = {p: ops.gemm(np.array([1.0]), n, k, p)[0] for p in ("bf16", "mxfp4", "nvfp4")}
    big = {p: ops.gemm(np.array([8192.0]), n, k, p)[0] for p in ("bf16", "mxfp4", "nvfp4")}
    assert one["mxfp4"] < 0.35 * one["bf16"]  # memory-bound: 4.25 of 16 bits
    assert big["mxfp4"] == pytest.approx(big["bf16"] / ops.c.dequant_factor, rel=0.01)
    assert big["nvfp4"] == pytest.approx(big["mxfp4"], rel=0.01)  # BF16 math either way
