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


def _memory(t: torch.Tensor, rows: int, ld: int) -> torch.Tensor:
    """``rows`` x ``ld`` floats read from ``t``'s data pointer whatever its strides, as cuBLAS
    reads a scale tensor (NaN past the end of its storage: a kernel reading there gets junk)."""
    whole = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    flat = torch.full((rows * ld,), float("nan"))
    got = whole[t.storage_offset():t.storage_offset() + rows * ld].float()
    flat[:got.numel()] = got
    return flat.view(rows, ld)


def _cublas_block_product(a, b, scale_a, scale_b, rows_multiple: int):
    """What cuBLASLt's VEC128 x BLK128x128 GEMM computes from the raw scale memory: activation
    scales m-major with leading dimension m, weight scales with each 128-row block's k-blocks
    padded to a multiple of 4 (the layout torch's v2 checks enforce, PR pytorch#166752)."""
    m, k = a.shape
    kb, nb = k // 128, b.shape[1] // 128
    if m % rows_multiple:
        raise RuntimeError("CUDA error: CUBLAS_STATUS_NOT_SUPPORTED")
    sa = _memory(scale_a, kb, m).t().repeat_interleave(128, dim=1)
    sb = _memory(scale_b, nb, -(-kb // 4) * 4)[:, :kb].t()
    sb = sb.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    return (a.float() * sa) @ (b.float() * sb)


def _size_stride(t, dim: int, size: int, stride: int) -> bool:
    """torch's check_size_stride: the size matches, and the stride too where size > 1."""
    return t.size(dim) == size and (size <= 1 or t.stride(dim) == stride)


def _operands_ok(a, b, scales, fast: bool) -> None:
    """Checks both entry points share: e4m3 operands, b column-major, fp32 2-D scales, no fast
    accumulation (CUDABlas get_scale_mode)."""
    if a.dtype != quant.FP8 or b.dtype != quant.FP8 or b.stride(0) != 1:
        raise RuntimeError("operands must be e4m3, mat2 column-major")
    if any(s.dtype != torch.float32 or s.dim() != 2 for s in scales):
        raise RuntimeError("Invalid scaling configuration")
    if fast:
        raise RuntimeError("scaled_gemm doesn't support fast accum with 1x128 blockwise scaling")


def _strict_v1(calls: list, rows_multiple: int = 1):
    """A stand-in for CUDA's torch._scaled_mm with block scales: the v1 checks (ScaledBlas.cpp
    is_blockwise_1x128_scaling on (a, scale_a), is_blockwise_128x128_scaling on (b.t(),
    scale_b.t())), then cuBLAS's product from the raw scale memory."""

    def fake(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
             use_fast_accum=False):
        calls.append(("v1", a.shape[0]))
        _operands_ok(a, b, (scale_a, scale_b), use_fast_accum)
        m, kb, nb = a.shape[0], a.shape[1] // 128, b.shape[1] // 128
        sbt = scale_b.t()
        if not (_size_stride(scale_a, 0, m, 1) and _size_stride(scale_a, 1, kb, m)
                and _size_stride(sbt, 0, nb, kb) and _size_stride(sbt, 1, kb, 1)):
            raise RuntimeError("Invalid scaling configuration.")
        return _cublas_block_product(a, b, scale_a, scale_b, rows_multiple).to(out_dtype)

    return fake


def _strict_v2(calls: list, rows_multiple: int = 1):
    """A stand-in for CUDA's F.scaled_mm: the recipe and the checks of ScaledBlas.cpp's
    _scaled_block1x128_block128x128 (scale_a [m, k/128] stride (1, m); scale_b [L4, n/128]
    stride (1, L4)), then cuBLAS's product from the raw scale memory."""
    fn = torch.nn.functional

    def fake(a, b, scale_a, recipe_a, scale_b, recipe_b, swizzle_a=None, swizzle_b=None,
             bias=None, output_dtype=torch.bfloat16, contraction_dim=(), use_fast_accum=False):
        calls.append(("v2", a.shape[0]))
        _operands_ok(a, b, (scale_a, scale_b), use_fast_accum)
        if (recipe_a, recipe_b) != (fn.ScalingType.BlockWise1x128,
                                    fn.ScalingType.BlockWise128x128):
            raise ValueError("Invalid scaling configuration.")
        m, kb, nb = a.shape[0], a.shape[1] // 128, b.shape[1] // 128
        l4 = -(-kb // 4) * 4
        if not (scale_a.shape == (m, kb) and scale_a.stride(0) == 1
                and (scale_a.stride(1) == m or (kb == 1 and scale_a.stride(1) == 1))):
            raise ValueError(f"scale_a strides must be (1, {m}); got: {scale_a.stride()}")
        if not (scale_b.shape == (l4, nb) and scale_b.stride(0) == 1
                and (scale_b.stride(1) == l4 or (nb == 1 and scale_b.stride(1) == 1))):
            raise ValueError(f"scale_b must have shape {l4} x {nb}, strides (1, {l4})")
        return _cublas_block_product(a, b, scale_a, scale_b, rows_multiple).to(output_dtype)

    return fake


def _install(monkeypatch, calls: list, v2: bool = True, rows_multiple: int = 1) -> None:
    """Replace both entry points with the stand-ins (``v2`` False: a torch without
    F.scaled_mm)."""
    monkeypatch.setattr(torch, "_scaled_mm", _strict_v1(calls, rows_multiple))
    if v2:
        monkeypatch.setattr(torch.nn.functional, "scaled_mm", _strict_v2(calls, rows_multiple))
    else:
        monkeypatch.delattr(torch.nn.functional, "scaled_mm", raising=False)


def _runs_right(lin, k: int, gen, rows=(1, 5, 8, 130)) -> None:
    """The linear's product matches the dequantised reference at each row count."""
    for m in rows:
        x = quant.randn((m, k), CPU, gen)
        out = lin.run(lin.prepare(x))
        assert out.shape == (m, lin.reference().shape[0])
        ref = quant._groups_seen(x) @ lin.reference().t()
        assert float((out.float() - ref).norm() / ref.norm()) < 1e-2


def test_layout_probe_uses_f_scaled_mm_with_k_blocks_padded_to_4(monkeypatch):
    calls: list = []
    _install(monkeypatch, calls)
    gen = quant.generator(CPU, 13)
    lin = quant.make_linear("fp8_block", 256, 384, CPU, gen)  # k/128 = 3: padding matters
    assert lin.kernel.endswith("via F.scaled_mm (BlockWise1x128, BlockWise128x128), k-blocks "
                               "padded to 4")
    calls.clear()
    _runs_right(lin, 384, gen)
    assert {c[0] for c in calls} == {"v2"}


def test_layout_probe_without_f_scaled_mm_pads_v1_scales_in_memory(monkeypatch):
    calls: list = []
    _install(monkeypatch, calls, v2=False)
    gen = quant.generator(CPU, 15)
    lin = quant.make_linear("fp8_block", 384, 640, CPU, gen)  # k/128 = 5, n/128 = 3
    assert lin.kernel.endswith("torch._scaled_mm, k-blocks padded to 4 in memory")
    _runs_right(lin, 640, gen)


def test_layout_probe_pads_rows_where_cublas_wants_whole_groups_of_4(monkeypatch):
    calls: list = []
    _install(monkeypatch, calls, rows_multiple=4)
    gen = quant.generator(CPU, 16)
    lin = quant.make_linear("fp8_block", 256, 384, CPU, gen)
    assert lin.kernel.endswith("rows and k-blocks padded to 4")
    calls.clear()
    _runs_right(lin, 384, gen)
    assert calls and all(rows % 4 == 0 for _, rows in calls)


@pytest.mark.parametrize(("k", "found"), [(384, False), (512, True)])
def test_probe_rejects_unpadded_scales_that_cublas_misreads(monkeypatch, k, found):
    """Without the padded layouts the probe finds no layout where k/128 is not a multiple of 4
    (the kernel runs but reads the wrong scales), and the unpadded one where it is."""
    _install(monkeypatch, [])
    monkeypatch.setattr(quant, "BLOCK_LAYOUTS", tuple(
        lay for lay in quant.BLOCK_LAYOUTS if lay.kblocks == "plain"))
    gen = quant.generator(CPU, 17)
    w8, sw = quant.fp8_quantize_blocks(quant.randn((256, k), CPU, gen))
    layout, why = quant._block_layout(w8, sw, CPU, gen)
    assert (layout is not None) == found
    assert found or "relative error" in why


@pytest.mark.parametrize(("m", "k"), [(1, 384), (5, 384), (1, 128), (6, 640)])
def test_layouts_pass_torchs_own_checks_on_meta_tensors(m, k):
    """Each layout's scales pass the installed torch's shape and stride checks for its entry
    point (torch/_meta_registrations.py), one row included (v2 wants scale_a.stride(0) == 1)."""
    meta = torch.device("meta")
    a8 = torch.empty((m, k), dtype=quant.FP8, device=meta)
    w8 = torch.empty((256, k), dtype=quant.FP8, device=meta)
    sa, sw = torch.empty((m, k // 128), device=meta), torch.empty((2, k // 128), device=meta)
    for lay in quant.BLOCK_LAYOUTS:
        if lay.api == "v2" and not hasattr(torch.nn.functional, "scaled_mm"):
            continue
        a, s = lay.activation(a8, sa)
        assert lay.mm(a, w8.t(), s, lay.weight_scale(sw)).shape == (a.shape[0], 256)


def test_layout_probe_reports_why_no_layout_ran(monkeypatch):
    def refuse(*_a, **_k):
        raise RuntimeError("Invalid scaling configuration")

    monkeypatch.setattr(torch, "_scaled_mm", refuse)
    monkeypatch.setattr(torch.nn.functional, "scaled_mm", refuse)
    gen = quant.generator(CPU, 14)
    w8, sw = quant.fp8_quantize_blocks(quant.randn((128, 128), CPU, gen))
    layout, why = quant._block_layout(w8, sw, CPU, gen)
    assert layout is None
    first, last = quant.BLOCK_LAYOUTS[0].name, quant.BLOCK_LAYOUTS[-1].name
    assert why == (f"{first}: Invalid scaling configuration; "
                   f"{last}: Invalid scaling configuration")


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
    doc["provenance"]["gpu_name"] = "NVIDIA H200"
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
    assert ops.sources()["gemm fp8_block n=512 k=256"] == "harness on H200"


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
