"""Round 29 (trt): the anchoring reports read any profile's GPU and engine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import fidelity_silicon as fs  # noqa: E402
import moe_anchoring  # noqa: E402
import op_anchoring  # noqa: E402

from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402

TRTLLM_PROFILES = {"h200": fs.ENGINE_PROFILES["trtllm"],
                   "h100": fs.profile_file("trtllm", "h100_sxm"),
                   "b200": fs.profile_file("trtllm", "b200_sxm")}


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
