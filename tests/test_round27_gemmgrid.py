"""Dense GEMMs at the shapes NVIDIA measured: the shipped H200 profile carries a table at every
``(n, k)`` of NVIDIA's vLLM GEMM grid (from 1,024 up before round 28), for each format of
``SHIPPED_GEMM_FORMATS``, so a model the shipped list does not hold reads NVIDIA's own rows at
its grid shapes instead of a shipped model's table rescaled by the roofline (block FP8:
0.39-4.08x its own, ``docs/fidelity.md``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import BUNDLED_H200_PROFILE
from test_aiconfigurator import FakeImporter

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps

COLS = ["gemm_dtype", "kernel_source", "m", "n", "k", "latency"]


def test_gemm_shapes_are_the_measured_ones_with_both_sides_from_the_smallest_up():
    # every measured shape by default (round 28: the shipped grid no longer starts at 1,024)
    rows = [("fp8_block", "deepgemm", m, n, k, 0.01 * m)
            for m in (1, 64) for n, k in ((512, 4096), (1024, 4096), (4096, 1024),
                                          (4096, 8192))]
    rows += [("bfloat16", "torch", 1, 2048, 2048, 0.01)]
    imp = FakeImporter(pd.DataFrame(rows, columns=COLS))
    assert aic.gemm_shapes(imp, "fp8_block", smallest=1024) == [
        (1024, 4096), (4096, 1024), (4096, 8192)]
    assert aic.gemm_shapes(imp, "fp8_block") == [
        (512, 4096), (1024, 4096), (4096, 1024), (4096, 8192)]
    assert aic.gemm_shapes(imp, "w4a16") == []  # no GEMM rows for the format
    requests = aic.measured_gemm_requests(imp, ("fp8_block",))
    assert [(op, dtype, tuple(key.values())) for op, dtype, key, _, _ in requests] == [
        ("gemm", "fp8_block", (512, 4096)), ("gemm", "fp8_block", (1024, 4096)),
        ("gemm", "fp8_block", (4096, 1024)), ("gemm", "fp8_block", (4096, 8192))]
    table = aic._import_one(imp, *requests[0])
    assert table.key == {"n": 512, "k": 4096} and "measured at this shape" in table.extra["notes"]


def _ops(precision):
    """The shipped H200 profile's operators for a stand-in model on one GPU."""
    model = get_model("llama-3.1-8b")
    return ProfileOps(load_profile(BUNDLED_H200_PROFILE), model, precision, "h200",
                      fallback=RooflineOps(model, precision, "h200"))


@pytest.mark.parametrize("precision", ["fp8_block", "fp8", "bf16"])
def test_the_shipped_h200_profile_holds_every_measured_gemm_shape(precision):
    assert precision in aic.SHIPPED_GEMM_FORMATS
    profile = load_profile(BUNDLED_H200_PROFILE)
    shapes = aic.gemm_shapes(aic.Importer("h200", "vllm"), precision)
    assert len(shapes) > 200
    lacking = [s for s in shapes if profile.find("gemm", precision, {"n": s[0], "k": s[1]})
               is None]
    assert lacking == []


@pytest.mark.parametrize("precision, n, k", [
    ("fp8_block", 3072, 5120),    # anchored on n=2560 before
    ("fp8_block", 1024, 1024),
    ("fp8_block", 65536, 8192),
    ("fp8", 3072, 5120),
    ("fp8", 1024, 1024),
    ("bf16", 3072, 5120),
    ("bf16", 12288, 1024),
])
def test_an_unseen_gemm_shape_reads_its_own_measured_table(precision, n, k):
    assert precision in aic.SHIPPED_GEMM_FORMATS
    ops = _ops(precision)
    tokens = np.array([1.0, 32.0, 2048.0, 8192.0])
    got = ops.gemm(tokens, n, k)
    (label,) = [v for name, v in ops.sources().items() if name.startswith("gemm")]
    assert "anchored" not in label and "measured:" in label, label
    own = aic.Importer("h200", "vllm").gemm(precision, n, k)
    assert "measured at this shape" in own.extra["notes"]
    profile = load_profile(BUNDLED_H200_PROFILE)
    shipped = profile.find("gemm", precision, {"n": n, "k": k})
    assert np.allclose(shipped.lookup(tokens), own.lookup(tokens), rtol=1e-4)
    assert np.all(got > 0)
