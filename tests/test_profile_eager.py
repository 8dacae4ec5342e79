"""Tests of a profile's CUDA-graph / eager distinction: ``eager_s`` and ``timing: eager`` tables."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_profile import RecordingFallback, make_doc, make_ops
from tiersim.errors import ProfileError
from tiersim.hardware.models import get_model
from tiersim.perf import build_step_model, default_profile_name, resolve_profile
from tiersim.perf.base import StepShape
from tiersim.perf.profile import EagerCost, load_profile, profile_from_json, save_profile

QWEN = get_model("qwen3-coder-30b-a3b")  # 48 layers, every one MoE
LLAMA = get_model("llama-3.1-70b")  # 80 dense layers

EAGER = {"graph_max_tokens": 512, "per_layer_s": 2e-4, "per_moe_layer_s": 9e-4,
         "source": "fitted: by hand"}


def eager_doc(eager=EAGER, timing=None):
    doc = make_doc(eager_s=dict(eager) if eager is not None else None)
    if eager is None:
        del doc["eager_s"]
    if timing:
        doc["tables"][0]["timing"] = timing
    return doc


def test_eager_cost_is_per_layer_and_per_moe_layer():
    cost = EagerCost(512, 2e-4, 9e-4)
    assert cost.seconds(LLAMA.layers, LLAMA.moe_layers) == pytest.approx(80 * 2e-4)
    assert cost.seconds(QWEN.layers, QWEN.moe_layers) == pytest.approx(48 * 2e-4 + 48 * 9e-4)


def test_eager_time_only_above_the_graph_size():
    ops = make_ops(eager_doc())
    tokens = np.array([1.0, 512.0, 513.0, 8192.0])
    expected = 48 * 2e-4 + 48 * 9e-4
    assert ops.eager_s(tokens).tolist() == [0.0, 0.0, pytest.approx(expected),
                                           pytest.approx(expected)]
    assert ops.sources()["eager"] == "fitted: by hand"


def test_no_eager_section_means_no_eager_time_and_no_source():
    ops = make_ops(eager_doc(eager=None))
    assert ops.eager_s(np.array([100.0, 9000.0])).tolist() == [0.0, 0.0]
    assert "eager" not in ops.sources()


def test_an_eager_timed_gemm_loses_its_launch_floor_inside_graphs_only():
    # the bf16 table: 10 us at m <= 10, 100 us at m = 100; the stand-in roofline says 7 us
    ops = make_ops(eager_doc(timing="eager"))
    m = np.array([1.0, 10.0, 100.0, 600.0])
    got = np.asarray(ops.gemm(m, 64, 32, "bf16"))
    plain = np.asarray(make_ops(eager_doc()).gemm(m, 64, 32, "bf16"))
    assert got[0] == pytest.approx(7e-6)  # floor removed, roofline bound
    assert got[2] == pytest.approx(1e-4 - 1e-5)  # latency less the floor
    assert got[3] == plain[3]  # above 512 tokens the iteration is eager: as measured
    assert np.asarray(ops.gemm(10.0, 64, 32, "bf16")) == pytest.approx(7e-6)  # scalar path


def test_a_graph_timed_gemm_is_read_as_measured():
    ops = make_ops(eager_doc())
    assert np.asarray(ops.gemm(np.array([1.0]), 64, 32, "bf16"))[0] == pytest.approx(1e-5)


def test_eager_section_round_trips(tmp_path):
    prof = profile_from_json(eager_doc(timing="eager"), "mem.json")
    path = save_profile(prof, tmp_path / "p.json")
    back = load_profile(path)
    assert back.eager == EagerCost(512, 2e-4, 9e-4, "fitted: by hand")
    assert back.tables[0].extra["timing"] == "eager"
    assert json.loads(path.read_text())["eager_s"] == EAGER


@pytest.mark.parametrize("mutate, expected", [
    (lambda e: e.update(graph_max_tokens=-1),
     "mem.json: eager_s.graph_max_tokens: must be a whole number of tokens from 0 to "
     "2147483648 (got -1)"),
    (lambda e: e.update(graph_max_tokens=True),
     "mem.json: eager_s.graph_max_tokens: must be a whole number of tokens from 0 to "
     "2147483648 (got true)"),
    (lambda e: e.update(per_layer_s="fast"),
     "mem.json: eager_s.per_layer_s: must be a number of seconds from 0 to 3600 (got \"fast\")"),
    (lambda e: e.update(per_moe_layer_s=-1e-3),
     "mem.json: eager_s.per_moe_layer_s: must be a number of seconds from 0 to 3600 (got -0.001)"),
    (lambda e: e.update(extra=1),
     "mem.json: eager_s: unknown field 'extra'; allowed: graph_max_tokens, "
     "graph_max_tokens_by_tp, per_layer_s, per_moe_layer_s, "
     "per_cpp_moe_layer_s, cpp_moe_source, source"),
    (lambda e: e.update(source="guessed"),
     "mem.json: eager_s.source: must be one of harness, public, roofline or start with 'fitted' "
     "(got \"guessed\")"),
])
def test_eager_section_errors_are_one_line(mutate, expected):
    eager = dict(EAGER)
    mutate(eager)
    with pytest.raises(ProfileError) as err:
        profile_from_json(eager_doc(eager), "mem.json")
    assert str(err.value) == expected


def test_eager_iterations_cost_more_in_the_step_model():
    """Through the assembly: a prefill of 513 tokens pays the eager time, one of 512 does not,
    on the shipped profile (whose eager_s is fitted)."""
    step = build_step_model("llama-3.1-70b", "fp8", "h200", tp=4,
                            profile=resolve_profile(default_profile_name()))
    eager = step.ops.profile.eager
    assert eager.graph_max_tokens == 512 and eager.per_layer_s > 0
    t512 = step.step_time(StepShape(((512, 0),)))
    t513 = step.step_time(StepShape(((513, 0),)))
    assert t513 - t512 > 0.9 * eager.seconds(80, 0)
    assert step.sources()["eager"].startswith("fitted")


def test_roofline_fallback_used_for_the_graph_floor():
    fb = RecordingFallback()
    ops = make_ops(eager_doc(timing="eager"), fallback=fb)
    ops.gemm(np.array([4.0]), 64, 32, "bf16")
    assert ("gemm", 64, 32, "bf16") in fb.calls


def block_fp8_doc(per_tensor_latency=None):
    """An eager-timed block-FP8 GEMM table (60 us flat to m = 10, 150 us at m = 100) and, where
    given, a graph-timed per-tensor FP8 table of the same shape."""
    doc = eager_doc()
    doc["tables"][0].update(precision="fp8_block", timing="eager",
                            latency_s=[6e-5, 6e-5, 1.5e-4])
    if per_tensor_latency is not None:
        doc["tables"].append({"op": "gemm", "precision": "fp8", "source": "harness",
                              "key": {"n": 64, "k": 32}, "axes": {"m": [1, 10, 100]},
                              "latency_s": per_tensor_latency})
    return doc


def test_a_graph_read_block_fp8_gemm_is_never_faster_than_per_tensor_fp8():
    # the same shape, the same weight bytes and MACs: the per-tensor kernel is a floor
    m = np.array([1.0, 10.0, 100.0])
    alone = np.asarray(make_ops(block_fp8_doc()).gemm(m, 64, 32, "fp8_block"))
    assert alone.tolist() == pytest.approx([7e-6, 7e-6, 9e-5])  # roofline, then less the floor
    floored = np.asarray(make_ops(block_fp8_doc([2e-5, 2e-5, 3e-5])).gemm(m, 64, 32, "fp8_block"))
    assert floored.tolist() == pytest.approx([2e-5, 2e-5, 9e-5])
    # an eager iteration (> 512 tokens) reads the block table as measured, floor or not
    eager = make_ops(block_fp8_doc([2e-5, 2e-5, 3e-5])).gemm(600.0, 64, 32, "fp8_block")
    assert eager == pytest.approx(make_ops(block_fp8_doc()).gemm(600.0, 64, 32, "fp8_block"))


def test_the_launch_floor_is_the_median_of_the_small_token_rows_not_one_low_point():
    # grid 1, 2, 4, 8, 100 tokens: 40 us at 1 token (one low point), 60 us to 8, 150 us at 100;
    # the floor is 60 us, so the 100-token step is 90 us, not 110 us of noise plus kernel
    doc = eager_doc()
    doc["tables"][0].update(precision="fp8_block", timing="eager", axes={"m": [1, 2, 4, 8, 100]},
                            latency_s=[4e-5, 6e-5, 6e-5, 6e-5, 1.5e-4])
    got = np.asarray(make_ops(doc).gemm(np.array([100.0]), 64, 32, "fp8_block"))
    assert got[0] == pytest.approx(9e-5)


@pytest.mark.parametrize("gpu", ["H200", "B200"])
@pytest.mark.parametrize("config", ["Qwen--Qwen3-32B-FP8", "Qwen--Qwen3-235B-A22B-FP8"])
def test_more_tensor_parallel_gpus_never_decode_a_block_fp8_checkpoint_slower(gpu, config):
    """NVIDIA's B200 block-FP8 rows are launch noise at every size; with a floor read from one
    low point, three shapes kept up to 70 us of it and TP 4 decoded slower than TP 2."""
    root = pytest.importorskip("aiconfigurator_core").__file__
    path = f"{root.rsplit('/', 1)[0]}/model_configs/{config}_config.json"
    profile = default_profile_name(gpu)
    shape = StepShape(decode_seqs=64, decode_context=64 * 2048)
    steps = [build_step_model(path, "checkpoint", gpu, tp=tp, profile=profile).step_time(shape)
             for tp in (2, 4, 8)]
    assert steps == sorted(steps, reverse=True)
