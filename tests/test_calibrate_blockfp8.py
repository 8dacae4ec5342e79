"""The harness's block-FP8 GEMM (``fp8_block``) and the script that checks the graph-read rule
against it, on the CPU (the CUDA kernel's layout probe is exercised with a stand-in kernel)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tiersim.calibrate import quant  # noqa: E402
from tiersim.calibrate.runner import run_calibration  # noqa: E402

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[1]


def test_block_quantisation_keeps_one_scale_per_block_and_round_trips():
    gen = quant.generator(CPU, 11)
    w = quant.randn((256, 384), CPU, gen).float()
    w[:128, :128] *= 100.0  # one block far larger than the rest keeps its own scale
    codes, scale = quant.fp8_quantize_blocks(w)
    assert scale.shape == (2, 3) and codes.dtype == quant.FP8
    assert float(scale[0, 0]) == pytest.approx(float(scale[1, 1]) * 100, rel=0.5)
    back = quant.block_dequant(codes, scale, rows=128)
    assert float((back - w).norm() / w.norm()) < 0.05
    a8, sa = quant.fp8_quantize_groups(w[:5])
    assert sa.shape == (5, 3)
    assert float((quant.block_dequant(a8, sa, rows=1) - w[:5]).norm() / w[:5].norm()) < 0.05


def test_cpu_block_fp8_is_emulated_labelled_and_correct():
    gen = quant.generator(CPU, 12)
    lin = quant.make_linear("fp8_block", 256, 256, CPU, gen)
    assert lin.kernel.startswith("emulated:") and "no block-scaled _scaled_mm on cpu" in lin.kernel
    assert lin.act_quant == "per-token-group (1 x 128)"
    assert quant.check_linear(lin, 256, CPU, gen) < 1e-2


def test_block_fp8_refuses_shapes_that_are_not_whole_blocks():
    with pytest.raises(ValueError, match=r"fp8_block needs n and k divisible by 128 \(got "
                                         r"n=100, k=256\)"):
        quant.make_linear("fp8_block", 100, 256, CPU, quant.generator(CPU, 1))


def _strict_block_mm(calls: list):
    """A stand-in for CUDA's block-scaled _scaled_mm that accepts only rows in multiples of 4
    and m-major activation scales, and computes the block-scaled product exactly."""

    def fake(a, b, scale_a, scale_b, out_dtype=None, **_):
        calls.append(a.shape[0])
        if scale_a.dim() != 2 or scale_a.shape[1] == 1:
            raise RuntimeError("not block scales")
        if a.shape[0] % 4:
            raise RuntimeError("rows must be a multiple of 4")
        if scale_a.stride(0) != 1 and scale_a.shape[0] > 1:
            raise RuntimeError("activation scales must be m-major")
        kb = a.shape[1] // 128
        if scale_b.shape[0] != kb:
            raise RuntimeError("k-blocks of the weight scale")
        sa = scale_a.float().repeat_interleave(128, dim=1)
        sb = scale_b.float().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
        return ((a.float() * sa) @ (b.float() * sb)).to(out_dtype)

    return fake


def test_layout_probe_picks_the_first_layout_the_kernel_accepts(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(torch, "_scaled_mm", _strict_block_mm(calls))
    gen = quant.generator(CPU, 13)
    lin = quant.make_linear("fp8_block", 256, 384, CPU, gen)
    assert lin.kernel.endswith("rows padded to 4") and "torch._scaled_mm" in lin.kernel
    for m in (1, 5, 8):
        x = quant.randn((m, 384), CPU, gen)
        out = lin.run(lin.prepare(x))
        assert out.shape == (m, 256)
        ref = quant._groups_seen(x) @ lin.reference().t()
        assert float((out.float() - ref).norm() / ref.norm()) < 1e-2
    assert calls and all(rows % 4 == 0 for rows in calls[-3:])


def test_layout_probe_reports_why_no_layout_ran(monkeypatch):
    def refuse(*_a, **_k):
        raise RuntimeError("Invalid scaling configuration")

    monkeypatch.setattr(torch, "_scaled_mm", refuse)
    gen = quant.generator(CPU, 14)
    w8, sw = quant.fp8_quantize_blocks(quant.randn((128, 128), CPU, gen))
    layout, why = quant._block_layout(w8, sw, CPU, gen)
    assert layout is None
    assert why == "rows and k-blocks padded to 4: Invalid scaling configuration"


@pytest.fixture(scope="module")
def block_profile(tmp_path_factory) -> dict:
    """A --quick CPU profile of bf16, fp8 and fp8_block GEMMs."""
    out = tmp_path_factory.mktemp("blk") / "P.json"
    return run_calibration("cpu", quick=True, precisions=("fp8", "fp8_block"),
                           ops=("overhead", "gemm", "moe"), out=str(out), log=lambda _s: None)


def test_harness_measures_block_fp8_only_where_checkpoints_quantise(block_profile):
    gemms = {(t["key"]["n"], t["key"]["k"]): t for t in block_profile["tables"]
             if t["op"] == "gemm" and t["precision"] == "fp8_block"}
    assert sorted(gemms) == [(256, 256), (512, 256)]  # o and qkv; not lm_head, not router
    assert all(len(t["parts"]["act_quant_s"]) == len(t["axes"]["m"]) for t in gemms.values())
    assert "per-token-group (1 x 128) activation quantisation not included" in gemms[
        (512, 256)]["notes"]
    notes = block_profile["provenance"]["notes"]
    assert "fp8_block gemm: left out lm_head n=1024 k=256, router n=16 k=256" in notes
    assert "fp8_block moe: not measured" in notes
    assert [t["precision"] for t in block_profile["tables"] if t["op"] == "moe"] == ["fp8"]
    assert block_profile["provenance"]["checks"]["gemm/fp8_block/512x256"] < 1e-2


def _as_h200(doc: dict, path: Path, shapes: list[tuple[int, int]]) -> Path:
    """The profile relabelled H200 with its fp8_block tables moved to ``shapes`` (the format
    and the arithmetic are under test, not the CPU's numbers)."""
    doc = json.loads(json.dumps(doc))
    doc["gpu"] = "H200"
    blocks = [t for t in doc["tables"] if t.get("precision") == "fp8_block"]
    for table, (n, k) in zip(blocks, shapes, strict=True):
        table["key"] = {"n": n, "k": k}
    path.write_text(json.dumps(doc))
    return path


def test_profile_reads_a_harness_block_fp8_table_as_a_kernel_time(block_profile, tmp_path):
    from tiersim.hardware import get_gpu, get_model
    from tiersim.perf.profile import ProfileOps, load_profile

    path = _as_h200(block_profile, tmp_path / "P.json", [(512, 256), (256, 256)])
    prof = load_profile(path)
    ops = ProfileOps(prof, get_model("Qwen3-30B-A3B"), "fp8_block", get_gpu("H200"))
    table = prof.find("gemm", "fp8_block", {"n": 512, "k": 256})
    assert float(ops.gemm(4, 512, 256, "fp8_block")) == pytest.approx(float(table.lookup(4)))
    assert ops.sources()["gemm fp8_block n=512 k=256"] == "harness"


def test_rule_check_sets_the_shipped_rule_beside_the_measured_kernel(block_profile, tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import blockfp8_rule

    # Qwen3-235B-A22B-FP8 at TP 4: qkv (2304 x 4096), o (4096 x 2048), both in NVIDIA's tables.
    path = _as_h200(block_profile, tmp_path / "P.json", [(2304, 4096), (4096, 2048)])
    rows = blockfp8_rule.compare(str(path), max_m=16)
    assert {(r["n"], r["k"]) for r in rows} == {(2304, 4096), (4096, 2048)}
    assert all(r["m"] <= 16 for r in rows) and all(r["emulated"] for r in rows)
    ops = blockfp8_rule.shipped_ops(blockfp8_rule.SHIPPED)
    for r in rows:
        rule = float(ops.gemm(float(r["m"]), r["n"], r["k"], "fp8_block"))
        assert r["rule_s"] == pytest.approx(rule)
        assert r["rule_over_measured"] == pytest.approx(rule / r["measured_s"])
        assert r["nvidia_eager_s"] > r["rule_s"]  # the launch floor is what the rule removes
        assert r["rule_source"].startswith("graph-read:")
    text = blockfp8_rule.render(rows, 16)
    assert "harness EMULATED" in text
    assert "graph-read rule / measured block-FP8, 1 <= m <= 16: median" in text


def test_rule_check_refuses_a_profile_of_another_gpu(block_profile, tmp_path):
    path = tmp_path / "P.json"
    path.write_text(json.dumps(block_profile))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "blockfp8_rule.py"),
                           str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"error: {path}: measured on cpu, the rule's profile "
                                   f"h200_aiconfigurator_vllm on H200; compare profiles of "
                                   f"one GPU")


@pytest.mark.parametrize(("name", "config"), [
    ("Qwen/Qwen3-235B-A22B-FP8", "Qwen--Qwen3-235B-A22B-FP8_config.json"),
    ("MiniMaxAI/MiniMax-M2.5", "MiniMaxAI--MiniMax-M2.5_config.json"),
])
def test_builtin_block_fp8_models_match_their_published_configs(name, config):
    from tiersim.calibrate import shapes

    aic = pytest.importorskip("aiconfigurator_core")
    path = Path(aic.__file__).parent / "model_configs" / config
    builtin = shapes.resolve_model(name)
    assert builtin == shapes.from_config(path, builtin.name)


def test_device_script_times_block_fp8_first(tmp_path):
    env = {"OUT": str(tmp_path), "DEVICE": "cpu", "QUICK": "1", "PYTHON": sys.executable,
           "BUDGET_S": "60", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(["bash", str(ROOT / "tiersim" / "calibrate" / "device_run.sh")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    block = json.loads((tmp_path / "blockfp8_quick_tp1.json").read_text())
    assert {t["precision"] for t in block["tables"]} == {"fp8", "fp8_block"}
    assert "blockfp8 quick tp1 exit 0" in (tmp_path / "blockfp8.log").read_text()
    main = json.loads((tmp_path / "cpu_harness_tiny_tp1_quick.json").read_text())
    assert any(t.get("precision") == "fp8_block" for t in main["tables"])
