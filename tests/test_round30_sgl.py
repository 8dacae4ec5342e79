"""Round 30, helper sgl: attention tables anchor only at their own head width.

A GQA attention table measured at one ``head_dim`` does not answer a read at another (SGLang's
FP8-KV prefill, measured by NVIDIA only at head_dim 512, read Llama-3.1-8B's head_dim 128); the
read is the roofline's, labelled so. Other head counts at the same ``head_dim`` still anchor.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_profile_assembly import ATTN_KEY, LLAMA, TP, make_profile

from tiersim.perf import build_step_model
from tiersim.perf.profile import anchors_attention, table_name
from tiersim.perf.roofline import RooflineOps

PREFILL = table_name("attn_prefill", "bf16", ATTN_KEY)
DECODE = table_name("attn_decode", "bf16", ATTN_KEY)


def attention_at(key: dict[str, int]):
    """The known profile (Llama-3.1-8B at TP 2) with its two attention tables keyed ``key``."""
    profile = make_profile()
    tables = [dataclasses.replace(t, key=dict(key)) if t.op.startswith("attn") else t
              for t in profile.tables]
    return dataclasses.replace(profile, tables=tables)


@pytest.mark.parametrize("key", [{"heads": 16, "kv_heads": 2, "head_dim": 512},
                                 {"heads": 8, "kv_heads": 2, "head_dim": 256}])
def test_attention_at_another_head_dim_is_not_anchored_but_the_roofline(key):
    model = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=attention_at(key))
    assert model.sources()[PREFILL] == "roofline"
    assert model.sources()[DECODE] == "roofline"
    roof = RooflineOps(LLAMA, "fp8", "h200", tp=TP)
    assert model.ops.attn_prefill(2048, 0) == pytest.approx(roof.attn_prefill(2048, 0),
                                                           rel=1e-12)
    assert model.ops.attn_decode(16, 4096) == pytest.approx(roof.attn_decode(16, 4096),
                                                           rel=1e-12)


def test_attention_at_another_head_count_of_the_same_head_dim_still_anchors():
    key = {"heads": 32, "kv_heads": 8, "head_dim": 128}
    model = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=attention_at(key))
    source = table_name("attn_prefill", "bf16", key)
    assert model.sources()[PREFILL].startswith("anchored:")
    assert model.sources()[PREFILL].endswith(f"({source})")
    assert model.sources()[DECODE].startswith("anchored:")


def test_the_rule_leaves_other_operators_and_modules_as_they_were():
    gemm = {"n": 4096, "k": 7168}
    assert anchors_attention("gemm", "fp8", gemm, {"n": 1024, "k": 512})
    assert anchors_attention("moe", "fp8", {"tp": 1}, {"tp": 2})
    mla = {"heads": 16, "kv_heads": 1, "head_dim": 576}
    assert anchors_attention("attn_decode", "fp8 mla-bf16", mla, {**mla, "heads": 128})
    assert not anchors_attention("attn_decode", "fp8 mla-bf16", mla, {**mla, "head_dim": 320})
    assert not anchors_attention("attn_prefill", "fp8", {**ATTN_KEY, "head_dim": 64}, ATTN_KEY)
    assert anchors_attention("attn_prefill", "fp8", {**ATTN_KEY, "heads": 64}, ATTN_KEY)



def test_sglangs_fp8_kv_prefill_at_head_dim_512_does_not_answer_llamas_128():
    """NVIDIA's SGLang rows of H200 time FP8-KV prefill attention only at head_dim 512; with
    them in the benchmark's SGLang profile, Llama-3.1-8B's FP8-KV prefill (32 x 8 x 128)
    anchored on 16 x 2 x 512, which made its TPOT 9.9% -> 27.7% off. It is the roofline's, as
    before those tables were carried; its decode attention is measured at its own shape."""
    from tiersim.hardware import get_model

    path = Path(__file__).resolve().parents[1] / "benchmarks/data/h200_aiconfigurator_sglang.json"
    model = build_step_model(get_model("llama-3.1-8b"), "fp8", "h200", tp=1, kv_dtype="fp8",
                             profile=path)
    key = {"heads": 32, "kv_heads": 8, "head_dim": 128}
    assert model.sources()[table_name("attn_prefill", "fp8", key)] == "roofline"
    assert model.sources()[table_name("attn_decode", "fp8", key)].startswith("measured:")
