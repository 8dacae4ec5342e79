"""A dense GEMM the profile lacks but whose grid tables bracket it is interpolated between them
in log n, log k (as the aiconfigurator importer reads NVIDIA's grid), not anchored on one
rescaled neighbour; beyond the grid it is still anchored."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tiersim.hardware import get_model
from tiersim.perf.profile import Profile, ProfileOps, Table, load_profile
from tiersim.perf.roofline import RooflineOps

M = np.array([1.0, 64.0, 4096.0])
MODEL = get_model("llama-3.1-8b")
SHIPPED = "tiersim/profiles/h200_aiconfigurator_vllm.json"


def _table(n: int, k: int, scale: float, **extra) -> Table:
    """A GEMM table whose latency grows with ``scale`` (distinct at each corner)."""
    return Table("gemm", "bf16", "harness", {"n": n, "k": k}, {"m": M},
                 scale * np.array([1e-5, 2e-5, 4e-4]), dict(extra))


def _corner_profile(**far_extra) -> Profile:
    tables = [_table(1024, 4096, 1.0), _table(1024, 8192, 2.0), _table(4096, 4096, 3.0),
              _table(4096, 8192, 5.0, **far_extra)]
    return Profile("grid", "h200", {}, 0.0, "harness", tables)


def _ops(profile: Profile) -> ProfileOps:
    return ProfileOps(profile, MODEL, "bf16", "h200", fallback=RooflineOps(MODEL, "bf16", "h200"))


def test_a_gemm_inside_the_grid_is_interpolated_between_its_four_corners():
    ops = _ops(_corner_profile())
    got = ops.gemm(M, 2048, 5793)
    t_n, t_k = 0.5, math.log(5793 / 4096) / math.log(2)
    weights = [(1 - t_n) * (1 - t_k), (1 - t_n) * t_k, t_n * (1 - t_k), t_n * t_k]
    scale = math.exp(sum(w * math.log(s) for w, s in zip(weights, (1, 2, 3, 5), strict=True)))
    assert got == pytest.approx(scale * np.array([1e-5, 2e-5, 4e-4]), rel=1e-9)
    label = ops.sources()["gemm bf16 n=2048 k=5793"]
    assert label == "interpolated:harness (between grid tables gemm bf16 n=1024..4096 k=4096..8192)"


def test_a_gemm_on_one_grid_axis_is_interpolated_between_two_tables():
    ops = _ops(_corner_profile())
    got = ops.gemm(M, 2048, 4096)
    assert got == pytest.approx(math.sqrt(3.0) * np.array([1e-5, 2e-5, 4e-4]), rel=1e-9)
    assert "between grid tables gemm bf16 n=1024..4096 k=4096)" in ops.sources()[
        "gemm bf16 n=2048 k=4096"]


def test_a_gemm_beyond_the_grid_is_still_anchored():
    ops = _ops(_corner_profile())
    ops.gemm(M, 8192, 5000)
    assert ops.sources()["gemm bf16 n=8192 k=5000"].startswith("anchored:harness (gemm bf16 n=4096")


def test_corners_timed_differently_are_not_blended():
    ops = _ops(_corner_profile(timing="eager"))
    ops.gemm(M, 2048, 5793)
    assert ops.sources()["gemm bf16 n=2048 k=5793"].startswith("anchored:")


def test_interpolation_needs_no_roofline_fallback():
    ops = ProfileOps(_corner_profile(), MODEL, "bf16", "h200")
    assert ops.gemm(M, 2048, 4096) == pytest.approx(
        math.sqrt(3.0) * np.array([1e-5, 2e-5, 4e-4]), rel=1e-9)


@pytest.mark.parametrize(("precision", "n", "k"), [
    ("bf16", 1280, 5120 + 1000),   # between grid points on both axes
    ("fp8", 3000, 7000),
    ("bf16", 1000, 5000),
])
def test_the_shipped_profile_reads_an_off_grid_gemm_as_the_importer_does(precision, n, k):
    aic = pytest.importorskip("tiersim.perf.aiconfigurator")
    pytest.importorskip("aiconfigurator_core")
    profile = load_profile(SHIPPED)
    own = aic.Importer("h200", "vllm").gemm(precision, n, k)
    alone = dataclasses.replace(profile, tables=[own, *profile.tables])
    points = np.array([1.0, 16.0, 256.0, 2048.0, 8192.0])
    model = get_model("llama-3.1-8b")

    def read(p):
        return ProfileOps(p, model, precision, "h200",
                          fallback=RooflineOps(model, precision, "h200")).gemm(points, n, k)

    assert read(profile) == pytest.approx(read(alone), rel=1e-4)  # the JSON keeps 6 digits
