"""Tests of the calibration-profile format, its interpolation rule and ProfileOps fallback."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiersim.errors import ProfileError, TiersimError
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.models import get_model
from tiersim.perf.profile import (
    ProfileOps,
    interp_1d,
    interp_2d,
    load_profile,
    profile_from_json,
    save_profile,
)

QWEN = get_model("qwen3-coder-30b-a3b")


def make_doc(**overrides):
    """A small valid profile document; keyword overrides replace top-level fields."""
    doc = {
        "schema": "tiersim.profile/1",
        "name": "tiny",
        "gpu": "H200",
        "provenance": {"source": "harness", "date": "2026-01-01"},
        "overhead_s": {"value": 0.002, "source": "harness"},
        "tables": [
            {
                "op": "gemm",
                "precision": "bf16",
                "source": "harness",
                "key": {"n": 64, "k": 32},
                "axes": {"m": [1, 10, 100]},
                "latency_s": [1e-5, 1e-5, 1e-4],
            },
            {
                "op": "attn_decode",
                "kv_dtype": "bf16",
                "source": "public",
                "engine_version": "0.24.0",
                "key": {"heads": 32, "kv_heads": 4, "head_dim": 128},
                "axes": {"batch": [1, 4], "context": [100, 1000]},
                "latency_s": [[1e-5, 2e-5], [4e-5, 8e-5]],
            },
            {
                "op": "allreduce",
                "source": "roofline",
                "key": {"tp": 2},
                "axes": {"bytes": [1000, 1e6]},
                "latency_s": [5e-6, 1e-4],
            },
        ],
    }
    doc.update(overrides)
    return doc


def write(tmp_path, doc, name="p.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


class RecordingFallback:
    """A stand-in roofline: constant answers per op, and a log of what it was asked."""

    def __init__(self):
        self.calls = []

    def gemm(self, m, n, k, precision):
        self.calls.append(("gemm", n, k, precision))
        return np.full(np.shape(m), 7e-6)

    def moe(self, tokens):
        self.calls.append(("moe",))
        return np.full(np.shape(tokens), 3e-4)

    def attn_prefill(self, tokens, context):
        self.calls.append(("attn_prefill",))
        return np.full(np.broadcast(tokens, context).shape, 2e-5)

    def attn_decode(self, batch, context):
        self.calls.append(("attn_decode",))
        return np.full(np.broadcast(batch, context).shape, 2e-5)

    def allreduce(self, nbytes):
        self.calls.append(("allreduce",))
        return np.full(np.shape(nbytes), 9e-6)


# ---------------------------------------------------------------- interpolation


def test_interp_on_grid_points_is_exact():
    axis, lat = np.array([1.0, 10.0, 100.0]), np.array([2e-5, 3e-5, 9e-5])
    assert np.allclose(interp_1d(axis, lat, axis), lat)


def test_interp_between_points_is_a_power_law():
    axis, lat = np.array([1.0, 100.0]), np.array([1e-5, 1e-3])
    # log-log midpoint of (1, 1e-5) and (100, 1e-3) is (10, 1e-4)
    assert interp_1d(axis, lat, 10.0) == pytest.approx(1e-4)


def test_interp_below_grid_is_flat_and_above_is_linear():
    axis, lat = np.array([10.0, 20.0]), np.array([1e-5, 3e-5])
    assert interp_1d(axis, lat, 0.0) == pytest.approx(1e-5)
    assert interp_1d(axis, lat, 1.0) == pytest.approx(1e-5)
    # slope (3e-5 - 1e-5) / 10 per unit beyond 20
    assert interp_1d(axis, lat, 40.0) == pytest.approx(3e-5 + 20 * 2e-6)


def test_interp_above_grid_never_decreases():
    axis, lat = np.array([10.0, 20.0]), np.array([3e-5, 1e-5])
    assert interp_1d(axis, lat, 1000.0) == pytest.approx(1e-5)


def test_interp_2d_bilinear_in_log_space():
    grid = np.array([[1e-5, 1e-4], [1e-3, 1e-2]])
    got = interp_2d(np.array([1.0, 100.0]), np.array([1.0, 100.0]), grid, 10.0, 10.0)
    assert got == pytest.approx(np.exp(np.mean(np.log(grid))))


@given(
    st.lists(st.floats(1e-6, 1e-1), min_size=2, max_size=8).map(sorted),
    st.floats(0.0, 1e6),
    st.floats(0.0, 1e6),
)
def test_interp_monotone_when_table_is(lats, x1, x2):
    axis = np.geomspace(1, 1e4, len(lats))
    lo, hi = sorted((x1, x2))
    assert interp_1d(axis, np.array(lats), lo) <= interp_1d(axis, np.array(lats), hi) * (1 + 1e-12)


def test_interp_vectorised_matches_scalar():
    axis, lat = np.array([1.0, 8.0, 64.0]), np.array([1e-5, 2e-5, 1e-4])
    xs = np.array([0.5, 3.0, 20.0, 500.0])
    assert np.allclose(interp_1d(axis, lat, xs), [interp_1d(axis, lat, x) for x in xs])


# ---------------------------------------------------------------- load / save


def test_round_trip(tmp_path):
    prof = load_profile(write(tmp_path, make_doc()))
    again = load_profile(save_profile(prof, tmp_path / "out" / "q.json"))
    assert again.to_json() == prof.to_json()
    assert [t.name for t in again.tables][0] == "gemm bf16 n=64 k=32"



def test_resolve_profile_reads_a_file_rewritten_with_its_mtime_kept(tmp_path):
    """A profile replaced with its size and mtime kept (``cp`` then ``touch -d``, as ``cp -p``
    and ``rsync -a`` do) is read again: a sweep point must run on the version it records."""
    import os

    from tiersim.perf import resolve_profile

    path = write(tmp_path, make_doc())
    os.utime(path, ns=(1_735_689_600_000_000_000,) * 2)
    assert resolve_profile(path).overhead_s == 0.002
    path.write_text(json.dumps(make_doc(overhead_s={"value": 0.005, "source": "harness"})))
    os.utime(path, ns=(1_735_689_600_000_000_000,) * 2)
    assert resolve_profile(path).overhead_s == 0.005
    assert resolve_profile(path) is resolve_profile(path)  # one version is read once


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(schema="x"), "schema: expected 'tiersim.profile/1', got \"x\""),
        (lambda d: d.pop("gpu"), "gpu: must be a non-empty string"),
        (lambda d: d["overhead_s"].update(value=-1), "overhead_s.value: must be a number"),
        (lambda d: d["tables"][0].update(op="conv"), "tables[0].op: must be one of gemm"),
        (lambda d: d["tables"][0].pop("precision"), "tables[0].precision: required for op"),
        (lambda d: d["tables"][1].update(source="guess"), "tables[1].source: must be one of"),
        (lambda d: d["tables"][0]["key"].pop("k"),
         "tables[0].key.k: must be a whole number from 1 to 2147483648"),
        (
            lambda d: d["tables"][0]["axes"].update(m=[1, 1, 2]),
            "tables[0].axes.m: must be strictly",
        ),
        (
            lambda d: d["tables"][0].update(latency_s=[1, 2]),
            "tables[0].latency_s: must have shape (3,)",
        ),
        (
            lambda d: d["tables"][1]["latency_s"][1].__setitem__(0, 0),
            "tables[1].latency_s[1, 0]: latencies must be seconds from 1e-09 to 3600",
        ),
        (lambda d: d["tables"].append(dict(d["tables"][0])), "tables[3]: duplicates tables[0]"),
        (lambda d: d.update(overhead=1), "unknown field 'overhead'; allowed: schema, name"),
        (lambda d: d["tables"][0].update(latency=[1]),
         "tables[0]: unknown field 'latency'; allowed: op, precision"),
        (lambda d: d["overhead_s"].update(value=1e300),
         "overhead_s.value: must be a number of seconds from 0 to 3600 (got 1e+300)"),
        (lambda d: d["tables"][1]["latency_s"][0].__setitem__(1, 1e300),
         "tables[1].latency_s[0, 1]: latencies must be seconds from 1e-09 to 3600"),
        (lambda d: d["tables"][1]["latency_s"][0].__setitem__(1, 1e-320),
         "tables[1].latency_s[0, 1]: latencies must be seconds from 1e-09 to 3600"),
        (lambda d: d["tables"][0].update(latency_s=["1e-5", 2e-5, 3e-5]),
         "tables[0].latency_s: must have shape (3,) to match the axes (got ragged or "
         "non-numeric)"),
    ],
)
def test_profile_errors_name_file_and_field(tmp_path, mutate, expected):
    doc = make_doc()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ")
    assert expected in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["tables"][0]["key"].update(tp=2),
         "tables[0].key.tp: not a key field of op 'gemm' (its key is n, k); remove it"),
        (lambda d: d["tables"][0].update(kv_dtype="fp8"),
         "tables[0].kv_dtype: not a field of op 'gemm' (it takes precision); remove it"),
        (lambda d: d["tables"][2].update(precision="fp8"),
         "tables[2].precision: not a field of op 'allreduce' (it has no dtype field); "
         "remove it"),
        (lambda d: d["tables"][0].update(timing="Eager"),
         "tables[0].timing: must be one of eager, graph (got \"Eager\"); eager: timed outside "
         "CUDA graphs"),
        (lambda d: d["tables"][1].update(timing="eager"),
         "tables[1].timing: 'eager' applies to gemm tables only (their launch floor is removed "
         "in CUDA-graph steps); remove it from this attn_decode table"),
    ],
)
def test_a_table_field_its_op_ignores_is_refused(tmp_path, mutate, expected):
    """A table is matched on its op, dtype and whole key: a stray key field (a TP size typed
    into a GEMM's key), another op's dtype field or a misspelt timing was read as if absent,
    and the table used where the user meant it not to be, or read with its launch floor."""
    doc = make_doc()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert str(err.value) == f"{path}: {expected}"


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(ProfileError, match="file not found"):
        load_profile(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema":\n')
    with pytest.raises(ProfileError, match=r"bad.json: line 2: not valid JSON"):
        load_profile(bad)


@pytest.mark.parametrize(("reader", "what"), [(load_profile, "a profile"),
                                              (load_hf_config, "a model config")])
def test_json_that_is_not_utf8_or_nested_absurdly_is_one_line(tmp_path, reader, what):
    """Both JSON readers a user feeds (profiles, model configs) share one reader's errors."""
    bad = tmp_path / "config.json"
    bad.write_bytes(b'{"schema": "\xff"}')
    with pytest.raises(TiersimError, match=rf"config.json: byte 12: not UTF-8 text; {what} is"):
        reader(bad)
    bad.write_text("[" * 100_000)
    with pytest.raises(TiersimError, match=rf"config.json: JSON nested too deeply to be {what}"):
        reader(bad)


# ---------------------------------------------------------------- ProfileOps


def make_ops(doc=None, precision="bf16", tp=2, fallback=None):
    prof = profile_from_json(doc or make_doc(), "mem.json")
    return ProfileOps(
        prof,
        QWEN,
        precision,
        gpu=None,
        tp=tp,
        kv_dtype="bf16",
        fallback=fallback if fallback is not None else RecordingFallback(),
    )


def test_ops_read_tables_and_label_sources():
    # Qwen has 32 heads / 4 kv heads; tp=8 -> 4 heads, 1 kv head per GPU: no such table
    doc = make_doc()
    doc["tables"][1]["key"] = {"heads": 4, "kv_heads": 1, "head_dim": 128}
    doc["tables"][2]["key"] = {"tp": 8}
    ops = make_ops(doc, tp=8)
    assert ops.gemm(10, 64, 32, "bf16") == pytest.approx(1e-5)
    assert ops.attn_decode(4, 1000) == pytest.approx(8e-5)
    assert ops.allreduce(1e6) == pytest.approx(1e-4)
    assert ops.overhead_s == 0.002
    assert ops.sources() == {
        "overhead": "harness",
        "gemm bf16 n=64 k=32": "harness",
        "attn_decode bf16 heads=4 kv_heads=1 head_dim=128": "measured:public 0.24.0",
        "allreduce tp=8": "roofline",
    }
    assert ops.fallback.calls == []


def test_missing_tables_fall_back_to_roofline_and_are_reported():
    fb = RecordingFallback()
    ops = make_ops(precision="fp8", fallback=fb)
    assert ops.gemm(10, 64, 32) == pytest.approx(7e-6)  # no fp8 table at this shape
    assert ops.moe(np.array([1, 2])) == pytest.approx([3e-4, 3e-4])
    assert ops.attn_prefill(100, 0) == pytest.approx(2e-5)
    assert ("gemm", 64, 32, "fp8") in fb.calls
    src = ops.sources()
    assert src["gemm fp8 n=64 k=32"] == "roofline"
    assert src["moe fp8 hidden=2048 inter=768 num_experts=128 top_k=8 ep=1 tp=2"] == "roofline"
    assert src["attn_prefill bf16 heads=16 kv_heads=2 head_dim=128"] == "roofline"


def test_missing_table_without_fallback_is_an_error():
    prof = profile_from_json(make_doc(), "mem.json")
    ops = ProfileOps(prof, QWEN, "fp8", gpu=None, tp=1, fallback=None)
    with pytest.raises(ProfileError, match="mem.json: no gemm fp8 n=64 k=32 table"):
        ops.gemm(1, 64, 32)


def test_tp1_allreduce_is_free():
    ops = make_ops(tp=1)
    assert ops.allreduce(1e9) == 0.0
    assert not any(k.startswith("allreduce") for k in ops.sources())
