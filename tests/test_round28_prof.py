"""The shipped H200 profile answers unseen model shapes from NVIDIA's own rows: GQA attention at
every per-GPU shape NVIDIA's vLLM attention rows measured, dense GEMMs at every measured grid
``(n, k)``, and the block-FP8 GEMMs a ``moe_backend: deepgemm`` tier's experts read."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import BUNDLED_H200_PROFILE
from test_aiconfigurator import FakeImporter, attn_frame, moe_frame
from test_round27_gemmgrid import (
    test_an_unseen_gemm_shape_reads_its_own_measured_table as reads_own_table,
)

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps


def _attention_rows():
    """Rows of three shapes: one measured in full, one only under a sliding window, one (FP8
    KV) only at batch 2 in prefill."""
    rows = []
    for isl, step in ((1024, 0), (4096, 0), (1, 1023)):
        for batch in (1, 2):
            rows.append((32, 8, 128, 0, "bfloat16", batch, isl, step, 1e-5 * batch * isl, "fa"))
            rows.append((16, 2, 64, 128, "bfloat16", batch, isl, step, 1e-5 * batch * isl, "fa"))
        rows.append((8, 1, 128, 0, "fp8", 2, isl, step, 2e-5 * isl, "fa"))
    return attn_frame(rows)


def test_attention_shapes_are_the_full_attention_rows_measured():
    imp = FakeImporter(_attention_rows())
    assert aic.attention_shapes(imp, "attn_prefill", "bf16") == [(32, 8, 128)]
    assert aic.attention_shapes(imp, "attn_decode", "bf16") == [(32, 8, 128)]
    assert aic.attention_shapes(imp, "attn_prefill", "fp8") == []  # no batch-1 prompt rows
    assert aic.attention_shapes(imp, "attn_decode", "fp8") == [(8, 1, 128)]
    assert aic.attention_shapes(imp, "attn_decode", "int4") == []  # no such KV rows


def test_measured_attention_requests_import_a_table_at_each_shape():
    imp = FakeImporter(_attention_rows())
    requests = aic.measured_attention_requests(imp, ("bf16", "fp8"))
    assert [(op, kv, tuple(key.values())) for op, kv, key, _, _ in requests] == [
        ("attn_prefill", "bf16", (32, 8, 128)), ("attn_decode", "bf16", (32, 8, 128)),
        ("attn_decode", "fp8", (8, 1, 128))]
    for request in requests:
        table = aic._import_one(imp, *request)
        assert (table.op, table.dtype, table.key) == request[:3]


@pytest.mark.parametrize("precision, n, k", [
    ("bf16", 768, 5120),        # a TP-split qkv (n below 1,024; Llama-3.1-8B's is shipped)
    ("fp8", 5120, 768),         # a TP-split o projection (k below 1,024)
    ("fp8_block", 256, 7168),   # DeepSeek-V3's router (n = experts)
    ("bf16", 32, 2048),         # the grid's smallest side
])
def test_a_small_side_grid_gemm_reads_its_own_measured_table(precision, n, k):
    reads_own_table(precision, n, k)


def test_moe_backends_are_what_check_moe_backend_admits():
    qwen_fp8 = aic.aic_model_path("aic:Qwen--Qwen3-235B-A22B-FP8")
    assert aic.moe_backends(qwen_fp8, "checkpoint", 4) == ("auto", "deepgemm")
    assert aic.moe_backends(qwen_fp8, "checkpoint", 1, 2, 1) == ("auto", "deepgemm")
    assert aic.moe_backends(qwen_fp8, "checkpoint", 8) == ("auto",)  # experts at MoE TP 8
    assert aic.moe_backends("qwen3-coder-30b-a3b", "bf16", 1) == ("auto",)
    assert aic.moe_backends("llama-3.1-8b", "fp8_block", 1) == ("auto",)  # no experts


def test_measured_deepgemm_requests_are_the_expert_gemms_below_moe_tp_8():
    imp = FakeImporter(moe_frame((1, 2, 8), hidden=256, inter=128))
    got = [(op, dtype, (key["n"], key["k"])) for op, dtype, key, _, _ in
           aic.measured_deepgemm_requests(imp)]
    # 2 x the expert width by the hidden size, and back, at each split DeepGEMM runs (not TP 8)
    assert sorted(set(got)) == sorted({("gemm", "fp8_block", s) for s in
                                       ((256, 256), (256, 128), (128, 256), (256, 64))})


def test_an_import_of_a_block_fp8_moe_layout_holds_what_a_deepgemm_tier_reads(tmp_path):
    import warnings

    from tiersim.perf import build_step_model

    name = "aic:Qwen--Qwen3-30B-A3B-FP8"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile, _ = aic.import_aiconfigurator(
            "h200", "vllm", models={name: (("checkpoint",), (2,))}, kv_dtypes=("bf16",))
        step = build_step_model(aic.aic_model_path(name), "checkpoint", "h200", tp=2,
                                profile=profile, moe_backend="deepgemm")
    read = {k: v for k, v in step.sources().items() if k.startswith("gemm fp8_block")}
    # the experts' per-GPU GEMMs (768 x 2048 and 2048 x 384), read from their own tables
    assert {"gemm fp8_block n=768 k=2048", "gemm fp8_block n=2048 k=384"} <= set(read)
    assert not [v for v in read.values() if "anchored" in v or "roofline" in v], read
    assert step.sources()["moe deepgemm"] == "deepgemm: measured:aiconfigurator vllm 0.24.0"


@pytest.mark.parametrize("op", ["attn_prefill", "attn_decode"])
@pytest.mark.parametrize("kv", aic.SHIPPED_KV_DTYPES)
def test_the_shipped_h200_profile_holds_every_measured_attention_shape(op, kv):
    profile = load_profile(BUNDLED_H200_PROFILE)
    shapes = aic.attention_shapes(aic.Importer("h200", "vllm"), op, kv)
    assert len(shapes) > 90
    lacking = [s for s in shapes if profile.find(
        op, kv, dict(zip(("heads", "kv_heads", "head_dim"), s, strict=True))) is None]
    assert lacking == []


def test_an_unseen_attention_shape_reads_its_own_measured_table():
    # 10 query heads, 2 KV heads per GPU: anchored on another shape before
    model = dataclasses.replace(get_model("llama-3.1-8b"), heads=10, kv_heads=2)
    ops = ProfileOps(load_profile(BUNDLED_H200_PROFILE), model, "bf16", "h200",
                     fallback=RooflineOps(model, "bf16", "h200"))
    got = np.asarray(ops.attn_decode(np.array([1.0, 16.0]), 4096.0), np.float64)
    own = aic.Importer("h200", "vllm").attention("attn_decode", "bf16", 10, 2, 128)
    label = ops.sources()["attn_decode bf16 heads=10 kv_heads=2 head_dim=128"]
    assert "anchored" not in label and "measured:" in label, label
    assert np.allclose(got, own.lookup(np.array([1.0, 16.0]), 4096.0), rtol=1e-4)


def test_a_deepgemm_tier_on_the_shipped_profile_reads_measured_expert_gemms():
    """Every block-FP8 expert shape and split NVIDIA measured that DeepGEMM runs (MoE TP below
    8), on the shipped profile alone (no import): both expert GEMMs read their own tables."""
    from tiersim.perf import build_step_model

    profile = load_profile(BUNDLED_H200_PROFILE)
    formats = {"fp8_block": aic.SHIPPED_MOE_SHAPES["fp8_block"]}
    checked = 0
    for _, _, key, model, _ in aic.measured_moe_requests(aic.Importer("h200", "vllm"), formats):
        if key["tp"] >= 8:
            continue
        step = build_step_model(model, "fp8_block", "h200", key["tp"] * key["ep"],
                                profile=profile, ep=key["ep"], moe_backend="deepgemm")
        width, sources = model.expert_intermediate // key["tp"], step.sources()
        for n, k in ((2 * width, model.hidden), (model.hidden, width)):
            label = sources[f"gemm fp8_block n={n} k={k}"]
            assert "anchored" not in label and "measured:" in label, (key, label)
        checked += 1
    assert checked > 40


def test_an_import_with_a_model_list_adds_the_measured_sets_when_asked(monkeypatch):
    """``measured``: the H100 and B200 default profiles are built from a model list with the
    measured sets of the bundled build (``fidelity_silicon.refresh_system_profiles``)."""
    marker = ("gemm", "bf16", {"n": 1, "k": 1}, None, 1)
    seen = []

    def build(name, gpu, engine, requests, overhead, notes=""):
        seen.append(marker in list(requests))
        return aic.Profile(name, gpu, {}, 0.0, "roofline", []), []

    for helper in ("measured_moe_requests", "measured_module_requests",
                   "measured_attention_requests", "measured_gemm_requests",
                   "measured_deepgemm_requests"):
        monkeypatch.setattr(aic, helper, lambda *args, **kwargs: [marker])
    monkeypatch.setattr(aic, "build_profile", build)
    models = {"llama-3.1-8b": (("bf16",), (1,))}
    aic.import_aiconfigurator("h200", "vllm", models=models, kv_dtypes=("bf16",))
    aic.import_aiconfigurator("h200", "vllm", models=models, kv_dtypes=("bf16",), measured=True)
    assert seen == [False, True]
