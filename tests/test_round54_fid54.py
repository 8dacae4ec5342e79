"""benchmarks/vllm012_tables.py: NVIDIA's vLLM 0.12.0 tables read from an aiconfigurator wheel.

The script's inputs are refused in one line each (no traceback), and its profile scaling
multiplies each FP8 GEMM point by the ratio of the two grids, nothing else.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("vllm012_tables",
                                                  ROOT / "benchmarks" / "vllm012_tables.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


vt = _module()


def _grid(dtype: str, scale: float) -> pd.DataFrame:
    axes = ((1, 64, 4096), (1024, 4096, 16384), (1024, 4096, 16384))
    return pd.DataFrame([{"gemm_dtype": dtype, "m": m, "n": n, "k": k,
                          "latency": scale * 1e-6 * (1 + m * n * k / 1e9)}
                         for m, n, k in itertools.product(*axes)])


def test_missing_wheel_is_one_line(tmp_path, capsys):
    assert vt.main(["--wheel", str(tmp_path / "nope.whl")]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: --wheel {tmp_path / 'nope.whl'}: no such file; download it with "
                   "`pip download aiconfigurator==0.8.0 --no-deps -d DIR`\n")


def test_not_a_zip_is_one_line(tmp_path, capsys):
    bad = tmp_path / "a.whl"
    bad.write_text("not a zip")
    assert vt.main(["--wheel", str(bad)]) == 1
    assert capsys.readouterr().err == (f"error: --wheel {bad}: not a wheel (zip) file; give "
                                       "aiconfigurator-0.8.0-py3-none-any.whl\n")


def test_wheel_without_the_tables_is_one_line(tmp_path, capsys):
    whl = tmp_path / "aiconfigurator-0.9.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("aiconfigurator/__init__.py", "")
    assert vt.main(["--wheel", str(whl)]) == 1
    assert capsys.readouterr().err == (
        f"error: --wheel {whl}: has no {vt.WHEEL_DIR}gemm_perf.txt; give an aiconfigurator "
        "wheel of version 0.5.0 to 0.8.0\n")


def test_wheel_tables_are_read(tmp_path):
    whl = tmp_path / "w.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for name in vt.WHEEL_FILES:
            zf.writestr(vt.WHEEL_DIR + name, "a,b\n1,2\n")
    tables = vt.wheel_tables(whl)
    assert sorted(tables) == sorted(vt.WHEEL_FILES)
    assert tables["gemm_perf.txt"].to_dict("records") == [{"a": 1, "b": 2}]


def test_scaled_profile_multiplies_by_the_grids_ratio():
    old, new = vt.GemmGrid(_grid("fp8", 2.0), "fp8"), vt.GemmGrid(_grid("fp8", 1.0), "fp8")
    profile = {"tables": [
        {"op": "gemm", "precision": "fp8", "key": {"n": 4096, "k": 4096}, "axes": {"m": [1, 64]},
         "latency_s": [1e-5, 2e-5], "notes": "measured at this shape"},
        {"op": "gemm", "precision": "bf16", "key": {"n": 4096, "k": 4096}, "axes": {"m": [1]},
         "latency_s": [3e-5]},
    ]}
    assert vt.scaled_profile(profile, old, new) == 1
    fp8, bf16 = profile["tables"]
    assert fp8["latency_s"] == pytest.approx([2e-5, 4e-5])
    assert fp8["notes"] == ("measured at this shape; scaled to NVIDIA's vLLM 0.12.0 tables "
                            "(benchmarks/vllm012_tables.py)")
    assert bf16["latency_s"] == [3e-5]


def test_grid_clamps_outside_its_range():
    grid = vt.GemmGrid(_grid("fp8", 1.0), "fp8")
    assert grid(10**6, 4096, 4096) == pytest.approx(grid(4096, 4096, 4096))
    assert grid(64, 512, 4096) == pytest.approx(grid(64, 1024, 4096))
