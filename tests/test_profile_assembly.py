"""A profile of known tables gives the hand-computed step time; gaps fall back to the roofline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tiersim.hardware import get_model
from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape
from tiersim.perf.profile import Profile, Table
from tiersim.perf.roofline import RooflineOps

LLAMA = get_model("llama-3.1-8b")
TP = 2
# Llama-3.1-8B per GPU at tp=2: 16 query heads, 4 KV heads, head_dim 128, hidden 4096.
QKV = ((16 + 2 * 4) * 128, 4096)
O_PROJ = (4096, 16 * 128)
GATE_UP = (2 * 14336 // TP, 4096)
DOWN = (4096, 14336 // TP)
LM_HEAD = (math.ceil(128256 / TP), 4096)
ATTN_KEY = {"heads": 16, "kv_heads": 4, "head_dim": 128}


def gemm(n, k, lat_at_1, lat_at_100, precision="fp8"):
    """A two-point GEMM table: lat_at_1 at m=1, lat_at_100 at m=100."""
    return Table(
        "gemm",
        precision,
        "harness",
        {"n": n, "k": k},
        {"m": np.array([1.0, 100.0])},
        np.array([lat_at_1, lat_at_100]),
    )


def known_tables(skip: str | None = None) -> list[Table]:
    tables = {
        "qkv": gemm(*QKV, 10e-6, 40e-6),
        "o": gemm(*O_PROJ, 5e-6, 20e-6),
        "gate_up": gemm(*GATE_UP, 30e-6, 90e-6),
        "down": gemm(*DOWN, 15e-6, 45e-6),
        "lm_head": gemm(*LM_HEAD, 120e-6, 360e-6, precision="bf16"),  # 525 MB: >= 109 us
        "decode": Table(
            "attn_decode",
            "bf16",
            "public",
            dict(ATTN_KEY),
            {"batch": np.array([1.0, 4.0]), "context": np.array([100.0, 1000.0])},
            np.array([[8e-6, 20e-6], [16e-6, 40e-6]]),
            {"engine_version": "9.9"},
        ),
        "prefill": Table(
            "attn_prefill",
            "bf16",
            "public",
            dict(ATTN_KEY),
            {"tokens": np.array([16.0, 256.0]), "context": np.array([1.0, 1000.0])},
            np.array([[10e-6, 30e-6], [50e-6, 90e-6]]),
        ),
        "allreduce": Table(
            "allreduce",
            None,
            "public",
            {"tp": TP},
            {"bytes": np.array([8192.0, 819200.0])},
            np.array([6e-6, 26e-6]),
        ),
    }
    tables.pop(skip, None)
    return list(tables.values())


def make_profile(skip: str | None = None) -> Profile:
    return Profile(
        "known",
        "H200",
        {"source": "harness", "tool": "test"},
        1e-3,
        "harness",
        known_tables(skip),
        overhead_per_layer_s=5e-6,
    )


def test_decode_step_is_the_hand_computed_sum():
    model = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=make_profile())
    # batch 4 at 1000 tokens of context each: every table read at a grid point except the
    # all-reduce (4 tokens x 4096 x 2 bytes = 32768 bytes, a power law between its points).
    ar = 6e-6 * (26e-6 / 6e-6) ** (math.log(32768 / 8192) / math.log(100))
    per_layer_gemm = [10e-6, 5e-6, 30e-6, 15e-6]
    per_layer_gemm = [
        lo * (hi / lo) ** (math.log(4) / math.log(100))
        for lo, hi in zip(per_layer_gemm, [40e-6, 20e-6, 90e-6, 45e-6], strict=True)
    ]
    layer = sum(per_layer_gemm) + 2 * ar + 40e-6
    lm_head = 120e-6 * 3.0 ** (math.log(4) / math.log(100))
    expected = 32 * layer + lm_head + 1e-3 + 32 * 5e-6
    got = model.step_time(StepShape(decode_seqs=4, decode_context=4000))
    assert got == pytest.approx(expected, rel=1e-12)
    assert model.decode_times(4, np.array([4000.0]))[0] == pytest.approx(expected, rel=1e-12)


def test_prefill_step_is_the_hand_computed_sum():
    model = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=make_profile())
    # one chunk of 100 new tokens after 1000 cached (m = 100: GEMMs at their upper points)
    ar = 6e-6 * (26e-6 / 6e-6) ** (math.log(819200 / 8192) / math.log(100))
    attn = 30e-6 * (90e-6 / 30e-6) ** (math.log(100 / 16) / math.log(256 / 16))
    layer = 40e-6 + 20e-6 + 90e-6 + 45e-6 + 2 * ar + attn
    expected = 32 * layer + 120e-6 + 1e-3 + 32 * 5e-6
    got = model.step_time(StepShape(prefill_chunks=((100, 1000),)))
    assert got == pytest.approx(expected, rel=1e-12)


def test_sources_label_every_table():
    model = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=make_profile())
    src = model.sources()
    # two-point GEMM tables (m = 1, 100) are tabulated past 100 tokens along the roofline
    assert src["gemm fp8 n=3072 k=4096"] == (
        "harness (continued along the roofline past its last point)")
    assert src["attn_decode bf16 heads=16 kv_heads=4 head_dim=128"] == "measured:test 9.9"
    assert src["overhead"] == "harness"
    assert "roofline" not in src.values()
    assert model.source == "profile:known (harness)"


def test_missing_table_is_anchored_on_the_nearest_table_and_reported():
    full = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=make_profile())
    gap = build_step_model(LLAMA, "fp8", "h200", tp=TP, profile=make_profile(skip="down"))
    label = gap.sources()["gemm fp8 n=4096 k=7168"]
    assert label.startswith("anchored:harness (gemm fp8 n=")
    assert "roofline" not in gap.sources().values()
    table = gap.ops._table("gemm", "fp8", {"n": 4096, "k": 7168})
    near = next(t for t in gap.ops.profile.tables if t.name == table.extra["anchored_from"])
    roof = RooflineOps(LLAMA, "fp8", "h200", tp=TP)
    # rescaled at the source's grid points (m = 1 and 100), then read as a table at m = 4
    grid = near.axes["m"]
    at_grid = near.latency * roof.gemm(grid, *DOWN, "fp8") / roof.gemm(
        grid, near.key["n"], near.key["k"], "fp8")
    anchored = at_grid[0] * (at_grid[1] / at_grid[0]) ** (math.log(4) / math.log(100))
    down_table = 15e-6 * 3.0 ** (math.log(4) / math.log(100))
    delta = 32 * (anchored - down_table)
    shape = StepShape(decode_seqs=4, decode_context=4000)
    assert gap.step_time(shape) == pytest.approx(full.step_time(shape) + delta, rel=1e-12)


def test_operator_without_any_table_of_its_dtype_is_roofline():
    model = build_step_model(LLAMA, "w4a16", "h200", tp=TP, profile=make_profile())
    src = model.sources()
    assert src["gemm w4a16 n=4096 k=7168"] == "roofline"


def test_profile_for_another_gpu_is_refused():
    from tiersim.errors import ProfileError

    with pytest.raises(ProfileError, match="measured on H200, not B200"):
        build_step_model(LLAMA, "fp8", "b200", tp=TP, profile=make_profile())


def test_no_profile_is_the_roofline():
    assert build_step_model(LLAMA, "fp8", "h200", tp=TP).source == "roofline"
