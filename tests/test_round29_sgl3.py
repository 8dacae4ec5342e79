"""Round 29 (helper sgl3): SGLang's CUDA-graph size per GPU and tensor-parallel size."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_fidelity import fs

from tests.test_profile import make_doc, make_ops
from tiersim.errors import ProfileError
from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape
from tiersim.perf.profile import EagerCost, load_profile, profile_from_json, save_profile

BY_TP = {"graph_max_tokens": 512, "graph_max_tokens_by_tp": {"1": 256, "2": 256, "3": 256},
         "per_layer_s": 2e-4, "per_moe_layer_s": 4e-4, "source": "fitted: by hand"}


# ---------------------------------------------------------------- SGLang's CUDA-graph sizes


@pytest.mark.parametrize("gpu, tp, tokens", [
    ("h100", 1, 256), ("h100", 2, 256), ("h100", 3, 256), ("h100", 4, 512), ("h100", 8, 512),
    ("h200", 1, 256), ("h200", 2, 256), ("h200", 4, 512), ("h200", 64, 512),
    ("b200", 1, 512), ("b200", 2, 512), ("b200", 8, 512),
])
def test_sglang_graph_size_follows_its_gpu_memory_rule(gpu, tp, tokens):
    """``ServerArgs._handle_gpu_memory_settings``: 80-160 GiB (H100, H200) 256 below TP 4, else
    512; 160 GiB and more (B200) 512 at any TP."""
    assert fs.sglang_graph_max_tokens(gpu, tp) == tokens


def test_engine_graph_fields_per_gpu():
    """The profile fields of that rule: the size at TP 4 and the smaller sizes where it
    differs; an engine with no rule keeps vLLM's 512 at every TP."""
    assert fs.engine_graph("sglang", "h200") == {
        "graph_max_tokens": 512, "graph_max_tokens_by_tp": ((1, 256), (2, 256), (3, 256))}
    assert fs.engine_graph("sglang", "b200") == {"graph_max_tokens": 512,
                                                 "graph_max_tokens_by_tp": ()}
    assert fs.engine_graph("trtllm", "h100") == {"graph_max_tokens": 512,
                                                 "graph_max_tokens_by_tp": ()}


@pytest.mark.parametrize("system, by_tp", [("h100_sxm", ((1, 256), (2, 256), (3, 256))),
                                           ("b200_sxm", ())])
def test_another_gpus_sglang_profile_gets_that_gpus_graph_sizes(system, by_tp):
    """The H200 fit moves to another GPU with that GPU's CUDA-graph sizes (B200: 512 at TP 1-2,
    where H200's are 256); the eager seconds are H200's, unchanged."""
    h200 = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"]).eager
    prof = fs.empty_profile("sglang", system)
    assert prof.eager.graph_max_tokens_by_tp == by_tp
    assert (prof.eager.per_layer_s, prof.eager.per_moe_layer_s) == (h200.per_layer_s,
                                                                    h200.per_moe_layer_s)


def test_the_shipped_sglang_profile_has_smaller_graphs_below_tp4():
    """SGLang's H200 profile and its fit.json entry carry H200's sizes: 256 at TP 1-3, 512 from
    TP 4 (the training rows' TP 8 and 64 read as before)."""
    eager = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"]).eager
    assert [eager.graph_tokens(tp) for tp in (1, 2, 3, 4, 8, 64)] == [256] * 3 + [512] * 3
    assert fs.fitted()["sglang"]["eager_s"] == eager.to_json()


@pytest.mark.parametrize("tp, eager", [(1, True), (2, True), (4, False)])
def test_a_large_sglang_decode_step_is_eager_below_tp4(tp, eager):
    """Through the step model on the shipped profile: 300 Llama-3.1-8B decodes (H200 SGLang's
    TP 1-2 rows run up to 512 clients) pay the eager cost at TP 1-2 (graphs up to 256) and not
    at TP 4 (up to 512); the same profile with one size at every TP charges none."""
    prof = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"])
    one_size = dataclasses.replace(prof, eager=dataclasses.replace(prof.eager,
                                                                   graph_max_tokens_by_tp=()))
    shape = StepShape(((1, 1500),) * 300)
    times = [build_step_model("llama-3.1-8b", "fp8", "h200", tp=tp, profile=p).step_time(shape)
             for p in (prof, one_size)]
    extra = prof.eager.seconds(32, 0) if eager else 0.0
    assert times[0] - times[1] == pytest.approx(extra, rel=1e-6, abs=1e-12)


def test_vllm_and_trtllm_profiles_move_to_another_gpu_as_before():
    """Engines without a rule keep their H200 eager cost unchanged but for the source."""
    for engine in ("vllm", "trtllm"):
        h200 = fs.resolve_profile(fs.ENGINE_PROFILES[engine]).eager
        moved = fs.empty_profile(engine, "b200_sxm").eager
        # vLLM's C++ MoE rate was fitted on B200 rows (--fit-cpp-moe): labelled as fitted there
        cpp = (h200.cpp_moe_source.split("; applied unchanged to ")[0]
               if h200.per_cpp_moe_layer_s is not None else "")
        assert moved == EagerCost(h200.graph_max_tokens, h200.per_layer_s, h200.per_moe_layer_s,
                                  h200.source + "; applied unchanged to b200_sxm rows",
                                  per_cpp_moe_layer_s=h200.per_cpp_moe_layer_s,
                                  cpp_moe_source=cpp)
    assert fs.empty_profile("vllm", "b200_sxm").eager.cpp_moe_source.endswith("FlashInfer)")


# ---------------------------------------------------------------- the profile field


def by_tp_doc(eager=BY_TP):
    """A small profile document with ``eager`` as its ``eager_s``."""
    return make_doc(eager_s=dict(eager))


def test_a_decode_step_above_its_tps_graph_size_is_eager():
    """A step of 300 tokens is eager at TP 2 (graph size 256 there) and replayed from a graph
    at TP 4 (512); the step model reads its own TP's size."""
    tokens = np.array([256.0, 300.0, 513.0])
    cost = 48 * 2e-4 + 48 * 4e-4  # the stand-in model: 48 layers, every one MoE
    at_tp2 = make_ops(by_tp_doc(), tp=2).eager_s(tokens)
    at_tp4 = make_ops(by_tp_doc(), tp=4).eager_s(tokens)
    assert at_tp2.tolist() == [0.0, pytest.approx(cost), pytest.approx(cost)]
    assert at_tp4.tolist() == [0.0, 0.0, pytest.approx(cost)]


def test_graph_sizes_by_tp_round_trip(tmp_path):
    """Written as read; a profile without the field writes none (every shipped profile's file
    reads as before)."""
    path = save_profile(profile_from_json(by_tp_doc(), "mem.json"), tmp_path / "p.json")
    back = load_profile(path)
    assert back.eager.graph_max_tokens_by_tp == ((1, 256), (2, 256), (3, 256))
    assert json.loads(path.read_text())["eager_s"] == BY_TP
    plain = dict(BY_TP)
    del plain["graph_max_tokens_by_tp"]
    path = save_profile(profile_from_json(by_tp_doc(plain), "mem.json"), tmp_path / "q.json")
    assert json.loads(path.read_text())["eager_s"] == plain


WHERE = "mem.json: eager_s.graph_max_tokens_by_tp"
LIKE = 'like {"1": 256, "2": 256, "3": 256}'


@pytest.mark.parametrize("by_tp, expected", [
    ([256], f"{WHERE}: must be an object of tensor-parallel sizes to tokens, {LIKE} (got [256])"),
    ({"two": 256}, f"{WHERE}: 'two' is no tensor-parallel size; the keys are whole numbers from "
                   f"1 written as text, {LIKE}"),
    ({"0": 256}, f"{WHERE}: '0' is no tensor-parallel size; the keys are whole numbers from 1 "
                 f"written as text, {LIKE}"),
    ({"2": 0}, f"{WHERE}.2: must be a whole number of tokens from 1 to 2147483648 (got 0)"),
    ({"2": 25.5}, f"{WHERE}.2: must be a whole number of tokens from 1 to 2147483648 (got 25.5)"),
])
def test_bad_graph_sizes_by_tp_are_one_line(by_tp, expected):
    """A malformed ``graph_max_tokens_by_tp`` is one line naming the file, the field and the
    form it takes."""
    eager = dict(BY_TP, graph_max_tokens_by_tp=by_tp)
    with pytest.raises(ProfileError) as err:
        profile_from_json(by_tp_doc(eager), "mem.json")
    assert str(err.value) == expected


def test_graph_sizes_by_tp_beside_no_graph_are_refused():
    """graph_max_tokens 0 turns the eager cost off at every TP: sizes by TP would be ignored."""
    eager = {"graph_max_tokens": 0, "graph_max_tokens_by_tp": {"1": 256}, "source": "roofline"}
    with pytest.raises(ProfileError) as err:
        profile_from_json(by_tp_doc(eager), "mem.json")
    assert str(err.value) == (
        "mem.json: eager_s.graph_max_tokens_by_tp: graph_max_tokens 0 turns the eager-step cost "
        "off at every size, so these sizes would be ignored; give graph_max_tokens, or remove "
        "graph_max_tokens_by_tp")
