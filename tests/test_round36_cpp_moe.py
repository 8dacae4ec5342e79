"""The eager host time of a MoE layer by how its experts are launched (``per_cpp_moe_layer_s``).

vLLM's fitted ``per_moe_layer_s`` was measured on H200 rows whose experts launch Triton kernels
from Python (Triton fused MoE, OpenAI's Triton MXFP4 kernels); experts launched from C++ alone
(Marlin, FlashInfer) pay the rate ``benchmarks/fidelity_silicon.py --fit-cpp-moe`` fitted.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from tests.test_profile import make_doc, make_ops
from tests.test_profile_eager import EAGER, QWEN
from tiersim.errors import ProfileError
from tiersim.hardware.models import get_model
from tiersim.perf import build_step_model, default_profile_name, resolve_profile
from tiersim.perf.profile import EagerCost, profile_from_json
from tiersim.perf.profile_data import cpp_launched

CONFIGS = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "configs"


@pytest.mark.parametrize("kernel, cpp", [
    ("vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts", True),
    ("vllm_marlin_int4_moe", True),
    ("vllm_gptossmxfp4moe_flashinfer_trtllm_mxfp4_bf16_trtllmmxfp4expertsmonolithic", True),
    ("vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic", True),
    ("vllm_fp8moe_flashinfer_cutlass_flashinferexperts", True),
    ("vllm_fp8moe_triton_tritonexperts", False),
    ("vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic", False),
    ("vllm_unquantizedfusedmoe_triton_tritonexperts", False),
    ("vllm_fused_moe", False),
    ("", False),
])
def test_the_kernel_name_says_how_the_experts_are_launched(kernel, cpp):
    assert cpp_launched(kernel) is cpp


def test_the_cpp_rate_applies_to_cpp_experts_only_and_defaults_to_the_fitted_one():
    cost = EagerCost(512, 2e-4, 8e-4, "fitted: a", per_cpp_moe_layer_s=1e-4,
                     cpp_moe_source="fitted: b")
    assert cost.seconds(10, 4) == pytest.approx(10 * 2e-4 + 4 * 8e-4)
    assert cost.seconds(10, 4, cpp_moe=True) == pytest.approx(10 * 2e-4 + 4 * 1e-4)
    assert cost.moe_source(cpp_moe=True) == "fitted: a; fitted: b"
    assert cost.moe_source() == "fitted: a"
    plain = EagerCost(512, 2e-4, 8e-4, "fitted: a")  # a profile without the field: as before
    assert plain.seconds(10, 4, cpp_moe=True) == plain.seconds(10, 4)


def cpp_doc(kernel: str, **eager):
    doc = make_doc(eager_s={**EAGER, **eager})
    m = QWEN
    doc["tables"].append({
        "op": "moe", "precision": "bf16", "source": "harness", "kernel": kernel,
        "key": {"hidden": m.hidden, "inter": m.expert_intermediate,
                "num_experts": m.num_experts, "top_k": m.top_k, "ep": 1, "tp": 2},
        "axes": {"tokens": [1, 8192]}, "latency_s": [1e-5, 1e-3]})
    return doc


@pytest.mark.parametrize("kernel, per_moe", [
    ("vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts", 1e-4),
    ("vllm_fp8moe_triton_tritonexperts", 9e-4),
])
def test_a_profile_step_pays_the_rate_of_its_moe_tables_kernel(kernel, per_moe):
    doc = cpp_doc(kernel, per_cpp_moe_layer_s=1e-4, cpp_moe_source="fitted: on C++ rows")
    ops = make_ops(doc)
    got = ops.eager_s(np.array([100.0, 9000.0]))
    assert got.tolist() == [0.0, pytest.approx(48 * 2e-4 + 48 * per_moe)]
    cpp = per_moe == 1e-4
    assert ops.sources()["eager"] == ("fitted: by hand; fitted: on C++ rows" if cpp
                                      else "fitted: by hand")
    # the step runs another path (DeepGEMM's, Triton helpers): the Triton rate
    assert ops.eager_s(np.array([9000.0]), triton_moe=True)[0] == pytest.approx(48 * 11e-4)


def test_the_cpp_fields_round_trip_through_a_profile_file():
    doc = cpp_doc("vllm_marlin_int4_moe", per_cpp_moe_layer_s=1e-4, cpp_moe_source="fitted: x")
    prof = profile_from_json(doc, "mem.json")
    assert prof.eager.per_cpp_moe_layer_s == 1e-4
    assert prof.eager.to_json() == {**EAGER, "per_cpp_moe_layer_s": 1e-4,
                                    "cpp_moe_source": "fitted: x"}


# an absent key is named so, a value spelt as JSON since round 53 (it read None, 'guessed')
@pytest.mark.parametrize("eager, line", [
    ({"per_cpp_moe_layer_s": 1e-4},
     "mem.json: eager_s: per_cpp_moe_layer_s and cpp_moe_source go together, the source "
     "starting with 'fitted' (got per_cpp_moe_layer_s 0.0001, no cpp_moe_source); give both "
     "or neither"),
    ({"per_cpp_moe_layer_s": 1e-4, "cpp_moe_source": "guessed"},
     "mem.json: eager_s: per_cpp_moe_layer_s and cpp_moe_source go together, the source "
     "starting with 'fitted' (got per_cpp_moe_layer_s 0.0001, cpp_moe_source \"guessed\"); give "
     "both or neither"),
    ({"graph_max_tokens": 0, "per_layer_s": 0.0, "per_moe_layer_s": 0.0,
      "per_cpp_moe_layer_s": 1e-4, "cpp_moe_source": "fitted: x"},
     "mem.json: eager_s.graph_max_tokens: 0 turns the eager-step cost off, so "
     "per_cpp_moe_layer_s 0.0001 would be ignored; give the largest step the engine replays "
     "from a CUDA graph (vLLM: 512 tokens by default), or remove eager_s"),
])
def test_a_bad_cpp_rate_is_one_line(eager, line):
    doc = copy.deepcopy(make_doc(eager_s={**EAGER, **eager}))
    with pytest.raises(ProfileError) as err:
        profile_from_json(doc, "mem.json")
    assert str(err.value) == line


def shipped_eager(model: str, precision: str, tp: int, **kw) -> tuple[float, str]:
    profile = resolve_profile(default_profile_name())
    step = build_step_model(get_model(str(CONFIGS / model)), precision, "h200", tp=tp,
                            kv_dtype="fp8", profile=profile, **kw)
    seconds = float(step._eager(np.array([8192.0]))[0])
    return seconds, step.sources()["eager"]


def test_the_shipped_profile_charges_marlin_experts_the_cpp_rate():
    eager = resolve_profile(default_profile_name()).eager
    assert eager.per_cpp_moe_layer_s is not None and eager.cpp_moe_source.startswith("fitted")
    kimi = get_model(str(CONFIGS / "Kimi-K2.5"))
    seconds, source = shipped_eager("Kimi-K2.5", "checkpoint", 8)
    assert seconds == pytest.approx(eager.per_layer_s * kimi.layers
                                    + eager.per_cpp_moe_layer_s * kimi.moe_layers)
    assert "--fit-cpp-moe" in source


def test_the_shipped_profile_charges_triton_experts_the_fitted_rate():
    eager = resolve_profile(default_profile_name()).eager
    oss = get_model(str(CONFIGS / "gpt-oss-120b"))
    seconds, source = shipped_eager("gpt-oss-120b", "checkpoint", 1)
    assert seconds == pytest.approx(eager.per_layer_s * oss.layers
                                    + eager.per_moe_layer_s * oss.moe_layers)
    assert "--fit-cpp-moe" not in source
