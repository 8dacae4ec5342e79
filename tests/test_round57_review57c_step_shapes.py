"""Round 57 (review57c): the one-chunk mixed step read without the memo, on more model shapes.

speed57 sums a mixed step of one prefill chunk directly (its linear work plus its chunk's
attention) instead of through the mixed-step memo, and holds it to the memoised sum to the bit
on Llama-3.1-8B/70B and Qwen3-Coder-30B-A3B at one GPU. The sum's terms differ by model shape,
so this holds it on the others the engine serves: MLA (DeepSeek-V3's attention) with tensor,
data and expert parallelism, a hybrid model's gated delta-net layers on 8 GPUs, sliding-window
layers (roofline and profiled, 2 GPUs), an FP8 KV cache, and a MoE model's data-parallel ranks.
"""

from __future__ import annotations

import dataclasses
import functools
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from test_hybrid import QWEN35_397B
from test_parallel_mla import MLA
from test_round57_speed57 import _memoised, shapes

from tiersim.hardware import get_model
from tiersim.hardware.hf_config import load_hf_config
from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.profile import load_profile

KINDS = [
    "mla_tp2_dp2_ep4",
    "mla_fp8",
    "hybrid_tp8",
    "sliding",
    "sliding_profiled_tp2",
    "llama70b_fp8_tp4",
    "qwen_moe_dp4_ep4",
    "llama8b_fp8_kv",
]


@functools.cache
def _models(folder: str) -> dict:
    """One step model per entry of :data:`KINDS` (configs written under ``folder``)."""
    import pathlib

    root = pathlib.Path(folder)
    (root / "mla.json").write_text(json.dumps({**MLA, "max_position_embeddings": 65536}))
    (root / "hybrid.json").write_text(json.dumps(QWEN35_397B))
    mla, hybrid = load_hf_config(root / "mla.json"), load_hf_config(root / "hybrid.json")
    sliding = dataclasses.replace(
        get_model("Llama-3.1-8B"), name="llama-sliding", sliding_window=128, sliding_layers=16
    )
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    return {
        "mla_tp2_dp2_ep4": build_step_model(mla, "bf16", "H200", tp=2, dp=2, ep=4),
        "mla_fp8": build_step_model(mla, "fp8", "H200"),
        "hybrid_tp8": build_step_model(hybrid, "bf16", "H200", tp=8),
        "sliding": build_step_model(sliding, "bf16", "H200"),
        "sliding_profiled_tp2": build_step_model(sliding, "fp8", "H200", tp=2, profile=profile),
        "llama70b_fp8_tp4": build_step_model("Llama-3.1-70B", "fp8", "H200", tp=4, profile=profile),
        "qwen_moe_dp4_ep4": build_step_model(
            "Qwen3-Coder-30B-A3B", "bf16", "H200", dp=4, ep=4, profile=profile
        ),
        "llama8b_fp8_kv": build_step_model(
            "Llama-3.1-8B", "bf16", "H200", kv_dtype="fp8", profile=profile
        ),
    }


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(KINDS), shape=shapes)
def test_every_model_shape_reads_the_memoised_sum(tmp_path_factory, kind, shape):
    """One chunk or several, asked twice: the float the memoised sum gave."""
    model = _models(str(tmp_path_factory.getbasetemp()))[kind]
    expected = _memoised(model, shape)
    assert model.step_time(shape) == expected
    assert model.step_time(shape) == expected
