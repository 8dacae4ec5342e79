"""Round 29 (sglm): the SGLang profiles in benchmarks/data carry NVIDIA's measured sets.

The shipped vLLM profiles and, since this round, the TensorRT-LLM ones hold every GQA attention
shape, the dense-GEMM grid and the other measured sets NVIDIA's tables have
(``import_aiconfigurator``'s ``measured``). The H200 SGLang profile held only the shapes of its
models, and H100 and B200 had no SGLang profile at all (each row imported its own tables into
an empty one), so a shape a row looked up that NVIDIA had not measured was read from a
neighbour among those few tables or from the roofline. SGLang's profiles of all three GPUs are
now built, and saved, with the measured sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import fidelity_silicon as fs  # noqa: E402
import test_round29_trt  # noqa: E402

from tiersim.perf import aiconfigurator as aic  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402

#: the fixture that records every import the refresh functions make (nothing is written)
imports = test_round29_trt.imports
SGLANG_SYSTEMS = {"h200": "h200_sxm", "h100": "h100_sxm", "b200": "b200_sxm"}


def lacking_shapes(profile, imp) -> list[tuple]:
    """The GQA attention shapes (both KV dtypes) and dense-GEMM grid shapes of
    ``SHIPPED_GEMM_FORMATS`` that ``imp``'s data measured and ``profile`` holds no table of."""
    lacking = [(op, kv, shape) for op in aic.ATTENTION_FILES for kv in aic.SHIPPED_KV_DTYPES
               for shape in aic.attention_shapes(imp, op, kv)
               if profile.find(op, kv, dict(zip(("heads", "kv_heads", "head_dim"), shape,
                                                strict=True))) is None]
    return lacking + [("gemm", precision, shape) for precision in aic.SHIPPED_GEMM_FORMATS
                      for shape in aic.gemm_shapes(imp, precision)
                      if profile.find("gemm", precision, {"n": shape[0], "k": shape[1]}) is None]


def test_the_sglang_profiles_are_rebuilt_with_the_measured_sets(imports, monkeypatch):
    """``--refresh-data`` imported SGLang's H200 tables without the measured sets and built no
    SGLang profile of H100 or B200 (their rows imported their own tables into an empty one);
    it now builds all three with them, and the other engines' imports are as before."""
    monkeypatch.setattr(fs, "ENGINE_IMPORTS", {"sglang": fs.ENGINE_IMPORTS["sglang"]})
    fs.refresh_profiles()
    for system in ("h100_sxm", "b200_sxm"):
        fs.refresh_system_profiles(system)
    sglang = [(gpu, measured) for gpu, engine, measured in imports if engine == "sglang"]
    others = [(gpu, engine, measured) for gpu, engine, measured in imports if engine != "sglang"]
    assert sglang == [("h200", True), ("h100", True), ("b200", True)]
    assert others == [("h100", "vllm", True), ("h100", "trtllm", True),
                      ("b200", "vllm", True), ("b200", "trtllm", True)]


@pytest.mark.parametrize("gpu", sorted(SGLANG_SYSTEMS))
def test_the_saved_sglang_profiles_hold_every_measured_attention_and_gemm_shape(gpu):
    """Each GPU's saved SGLang profile holds NVIDIA's SGLang rows of that GPU at every GQA
    attention shape and dense-GEMM grid shape they measured (the H200 file of 2026-12-05 held
    84 tables, its models' shapes; H100 and B200 had no file)."""
    pytest.importorskip("aiconfigurator_core")
    path = Path(fs.profile_file("sglang", SGLANG_SYSTEMS[gpu]))
    assert path.is_file(), path
    assert lacking_shapes(load_profile(path), aic.Importer(gpu, "sglang")) == []


@pytest.mark.parametrize("gpu", sorted(SGLANG_SYSTEMS))
def test_the_saved_sglang_profiles_keep_the_fitted_eager_cost(gpu):
    """The rebuilt profiles keep SGLang's fitted eager cost (``fit.json``'s ``sglang`` entry,
    applied unchanged off H200) with their own GPU's CUDA-graph sizes."""
    system = SGLANG_SYSTEMS[gpu]
    profile = load_profile(fs.profile_file("sglang", system))
    fitted = fs.fitted()["sglang"]["eager_s"]
    assert (profile.eager.per_layer_s, profile.eager.per_moe_layer_s) == (
        fitted["per_layer_s"], fitted["per_moe_layer_s"])
    assert profile.eager.source.startswith("fitted: ")
    graph = fs.engine_graph("sglang", fs.SYSTEM_GPU[system])
    assert profile.eager.graph_max_tokens == graph["graph_max_tokens"]
    assert tuple(profile.eager.graph_max_tokens_by_tp) == graph["graph_max_tokens_by_tp"]
    assert profile.provenance["engine"] == "sglang" and profile.gpu == gpu.upper()


def test_an_unfitted_overhead_moves_to_another_gpu_as_a_savable_profile(tmp_path):
    """SGLang's per-iteration overhead is the roofline's (not fitted): ``with_h200_fit``
    labelled it 'roofline; applied unchanged to h100_sxm rows', a source no profile may carry,
    so saving SGLang's H100 profile ended in a ProfileError. A fitted source is still labelled
    as moved; an unfitted one stays what it is."""
    from tiersim.perf.profile import Profile, save_profile

    moved = fs.with_h200_fit(Profile("p", "H100", {"source": "public"}, 0.0, "roofline", []),
                             "sglang", "h100_sxm")
    assert moved.overhead_source == "roofline"
    assert moved.eager.source.endswith("; applied unchanged to h100_sxm rows")
    save_profile(moved, tmp_path / "h100.json")
    assert load_profile(tmp_path / "h100.json").overhead_source == "roofline"
