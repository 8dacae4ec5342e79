"""Round 29 (trt): the TensorRT-LLM profiles in benchmarks/data carry NVIDIA's measured sets.

The shipped vLLM profiles hold every GQA attention shape, the dense-GEMM grid and the other
measured sets NVIDIA's tables have (``import_aiconfigurator``'s ``measured``); the TensorRT-LLM
profiles ``fidelity_silicon.py --refresh-data`` builds held only the shapes of their models, so
a shape they lacked was read from a neighbour rescaled (anchored). They are now built, and
saved, with the same measured sets; the anchoring reports read any profile's GPU and engine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import fidelity_silicon as fs  # noqa: E402
import moe_anchoring  # noqa: E402
import op_anchoring  # noqa: E402

from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf import aiconfigurator as aic  # noqa: E402
from tiersim.perf.profile import Profile, load_profile  # noqa: E402

TRTLLM_PROFILES = {"h200": fs.ENGINE_PROFILES["trtllm"],
                   "h100": fs.profile_file("trtllm", "h100_sxm"),
                   "b200": fs.profile_file("trtllm", "b200_sxm")}


@pytest.fixture
def imports(monkeypatch):
    """The ``(gpu, engine, measured)`` of every import the refresh functions make (nothing is
    imported or written)."""
    seen = []

    def fake_import(gpu, engine, out=None, models=None, name=None, measured=None, **kwargs):
        seen.append((gpu, engine, measured))
        return Profile(name or "p", gpu, {}, 0.0, "roofline", []), []

    monkeypatch.setattr(aic, "import_aiconfigurator", fake_import)
    monkeypatch.setattr(fs, "with_h200_fit", lambda profile, engine, system: profile)
    monkeypatch.setattr("tiersim.perf.profile.save_profile", lambda profile, out: None)
    return seen


def test_the_trtllm_profiles_are_rebuilt_with_the_measured_sets(imports, monkeypatch):
    """``--refresh-data`` imported TensorRT-LLM's tables of every GPU without ``measured``
    (None on H200, False on H100 and B200); the vLLM default profiles with it, as before."""
    monkeypatch.setattr(fs, "ENGINE_IMPORTS", {"trtllm": fs.ENGINE_IMPORTS["trtllm"]})
    fs.refresh_profiles()
    for system in ("h100_sxm", "b200_sxm"):
        fs.refresh_system_profiles(system)
    trtllm = [(gpu, measured) for gpu, engine, measured in imports if engine == "trtllm"]
    vllm = [(gpu, measured) for gpu, engine, measured in imports if engine == "vllm"]
    assert trtllm == [("h200", True), ("h100", True), ("b200", True)]
    assert vllm == [("h100", True), ("b200", True)]


@pytest.mark.parametrize("gpu", sorted(TRTLLM_PROFILES))
def test_the_saved_trtllm_profiles_hold_every_measured_attention_and_gemm_shape(gpu):
    """Each saved TensorRT-LLM profile holds NVIDIA's TensorRT-LLM rows of its GPU at every
    GQA attention shape (both KV dtypes) and every dense-GEMM grid shape of
    ``SHIPPED_GEMM_FORMATS`` they measured (the 2026-12-01/02 files held 40-44 attention and
    44-77 GEMM tables, the shapes of their models, in 95-136 tables)."""
    pytest.importorskip("aiconfigurator_core")
    imp = aic.Importer(gpu, "trtllm")
    profile = load_profile(TRTLLM_PROFILES[gpu])
    lacking = [(op, kv, shape) for op in aic.ATTENTION_FILES for kv in aic.SHIPPED_KV_DTYPES
               for shape in aic.attention_shapes(imp, op, kv)
               if profile.find(op, kv, dict(zip(("heads", "kv_heads", "head_dim"), shape,
                                                strict=True))) is None]
    lacking += [("gemm", precision, shape) for precision in aic.SHIPPED_GEMM_FORMATS
                for shape in aic.gemm_shapes(imp, precision)
                if profile.find("gemm", precision, {"n": shape[0], "k": shape[1]}) is None]
    assert lacking == []


def test_the_anchoring_reports_read_the_profiles_gpu_and_engine():
    """``op_anchoring.py`` / ``moe_anchoring.py --profile`` compared any profile with NVIDIA's
    H200 vLLM rows, read on H200s: a B200 TensorRT-LLM profile was set beside another GPU's
    and engine's tables. They now read the profile's own (its ``gpu`` and provenance
    ``engine``)."""
    pytest.importorskip("aiconfigurator_core")
    profile = load_profile(TRTLLM_PROFILES["b200"])
    imp = moe_anchoring.importer_of(profile)
    assert (imp.gpu, imp.engine) == ("b200", "trtllm")
    ops = op_anchoring.ops_of(profile, get_model("llama-3.1-8b"), "bf16")
    assert ops.gpu == profile.gpu == "B200"


def test_op_anchoring_reads_an_mla_decode_the_profile_lacks_from_the_roofline():
    """``op_anchoring.py --profile`` on the 2026-12-01 TensorRT-LLM profiles (no MLA table at
    DeepSeek-V3's TP 2 heads) ended in a TypeError: its decode read passed every batch size at
    once to the roofline, which takes one. Now one batch at a time, as the table path reads."""
    model = get_model(aic.aic_model_path("aic:deepseek-ai--DeepSeek-V3"))
    empty = Profile("empty", "H200", {}, 0.0, "roofline", [])
    seconds = op_anchoring.read(op_anchoring.ops_of(empty, model, "fp8_block", 2, "fp8"),
                                "attn_decode")
    assert seconds.shape == (3,) and np.all(np.isfinite(seconds)) and np.all(np.diff(seconds) > 0)


def test_moe_anchoring_counts_the_shapes_a_profile_answers_from_the_roofline(capsys,
                                                                           monkeypatch):
    """A format the profile holds no MoE table of is answered by the roofline, not anchored:
    ``moe_anchoring.py`` printed ``nothing anchored`` for it (BF16 and FP8 on the 2026-12-01
    H200 TensorRT-LLM profile, which has 8 MoE tables). It now also prints those."""
    pytest.importorskip("aiconfigurator_core")
    monkeypatch.setattr(moe_anchoring, "FORMATS", ("mxfp4",))
    imp = aic.Importer("h200", "trtllm")
    splits = sum(len(s) for s in moe_anchoring.measured(imp, "mxfp4").values())
    moe_anchoring.against_profile(imp, Profile("empty", "H200", {}, 0.0, "roofline", []))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["mxfp4", "nothing", "anchored"]
    assert lines[1].startswith(f"mxfp4      {splits:3d} on the roofline shape-splits: ")
