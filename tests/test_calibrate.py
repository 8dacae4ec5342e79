"""Tests of the microbenchmark harness (tiersim.calibrate) on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from tiersim.calibrate import attention, grids, moe, quant, schema, shapes  # noqa: E402
from tiersim.calibrate.cli import main  # noqa: E402
from tiersim.calibrate.errors import CalibrateError  # noqa: E402
from tiersim.calibrate.runner import run_calibration  # noqa: E402
from tiersim.calibrate.timing import Timer  # noqa: E402

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[1]


HEAVY = ("simpy", "pydantic", "typer", "rich", "plotly", "pandas", "tiersim.perf",
         "tiersim.hardware")


@pytest.fixture(scope="module")
def quick_profile(tmp_path_factory) -> tuple[dict, str, set[str]]:
    """The profile written by the exact command of the issue, its stdout, and the modules it
    imported (from ``python -X importtime``)."""
    out = tmp_path_factory.mktemp("cal") / "P.json"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tiersim.calibrate", "--device", "cpu",
         "--quick", "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    return json.loads(out.read_text()), proc.stdout, imported


def test_quick_cli_writes_a_valid_profile(quick_profile):
    doc, stdout, _ = quick_profile
    assert schema.problems(doc) == []
    assert doc["schema"] == "tiersim.profile/1" and doc["gpu"] == "cpu"
    assert "wrote" in stdout


def test_quick_profile_covers_every_precision_and_table(quick_profile):
    doc, _, _ = quick_profile
    have = {(t["op"], t.get("precision") or t.get("kv_dtype")) for t in doc["tables"]}
    for p in quant.PRECISIONS:
        assert ("gemm", p) in have
    for p in moe.PRECISIONS:
        assert ("moe", p) in have
    for kv in ("bf16", "fp8"):
        assert ("attn_decode", kv) in have and ("attn_prefill", kv) in have
    assert doc["overhead_s"]["value"] > 0
    assert {t["source"] for t in doc["tables"]} == {"harness"}
    assert [s["table"] for s in doc["provenance"]["skipped"]] == ["allreduce"]
    assert doc["provenance"]["status"] == "complete"


def test_quick_profile_records_kernels_and_provenance(quick_profile):
    doc, _, _ = quick_profile
    kernels = {t.get("precision"): t["kernel"] for t in doc["tables"] if t["op"] == "gemm"}
    assert "_scaled_mm" in kernels["fp8"]
    assert "_weight_int4pack_mm_for_cpu" in kernels["w4a16"]
    assert "dequantise" in kernels["nvfp4"]
    nvfp4 = [t for t in doc["tables"] if t.get("precision") == "nvfp4" and t["op"] == "gemm"]
    assert all(t["parts"]["dequant_s"] > 0 and "dequantising" in t["notes"] for t in nvfp4)
    fp8 = [t for t in doc["tables"] if t.get("precision") == "fp8" and t["op"] == "gemm"]
    assert all(len(t["parts"]["act_quant_s"]) == len(t["axes"]["m"]) for t in fp8)
    assert not any("dequantising" in t["notes"] for t in fp8)
    prov = doc["provenance"]
    for field in ("torch", "date", "gpu_name", "driver", "cuda", "clocks"):
        assert field in prov
    assert all(err < 0.01 for err in prov["checks"].values())


def test_quick_profile_loads_through_perf_loader(quick_profile, tmp_path):
    profile_mod = pytest.importorskip("tiersim.perf.profile")
    if not hasattr(profile_mod, "load_profile"):
        pytest.skip("tiersim.perf.profile.load_profile not written yet")
    doc, _, _ = quick_profile
    path = tmp_path / "P.json"
    path.write_text(json.dumps(doc))
    assert profile_mod.load_profile(path) is not None


TINY_CONFIG = {"model_type": "qwen3_moe", "hidden_size": 256, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
               "vocab_size": 1024, "num_experts": 16, "num_experts_per_tok": 2,
               "moe_intermediate_size": 128, "intermediate_size": 512}


@pytest.mark.parametrize(("precision", "kv_dtype"), [("bf16", "bf16"), ("fp8", "fp8"),
                                                     ("w4a16", "bf16"), ("nvfp4", "fp8")])
def test_quick_profile_drives_the_step_assembly(quick_profile, tmp_path, precision, kv_dtype):
    perf = pytest.importorskip("tiersim.perf")
    from tiersim.perf.base import StepShape

    # The file format and the table keys are under test, not the numbers: the CPU profile is
    # relabelled H200 because the assembly refuses a profile of another GPU.
    doc = {**quick_profile[0], "gpu": "H200",
           "provenance": {**quick_profile[0]["provenance"], "gpu_name": "NVIDIA H200"}}
    (tmp_path / "P.json").write_text(json.dumps(doc))
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    assert shapes.from_config(tmp_path / "config.json", "tiny") == shapes.TINY
    model = perf.build_step_model(str(tmp_path / "config.json"), precision, "H200",
                                  kv_dtype=kv_dtype, profile=str(tmp_path / "P.json"))
    step = model.step_time(StepShape(prefill_chunks=((16, 16),), decode_seqs=2,
                                     decode_context=32))
    assert step > 0
    sources = model.sources()
    # the quick grid's GEMMs (m <= 64) end where an H200 is not yet bound: read past their
    # last points along the roofline, and labelled so
    continued = " (continued along the roofline past its last point)"
    assert {s.removesuffix(continued) for s in sources.values()} == {"harness on H200"}
    assert f"moe {precision} hidden=256 inter=128 num_experts=16 top_k=2 ep=1 tp=1" in sources


def test_harness_imports_none_of_the_simulator_dependencies(quick_profile):
    _, _, imported = quick_profile
    assert "torch" in imported
    assert [m for m in HEAVY if m in imported] == []


@pytest.mark.parametrize("precision", quant.PRECISIONS)
def test_linear_kernels_match_float32(precision):
    gen = quant.generator(CPU, 3)
    lin = quant.make_linear(precision, 128, 256, CPU, gen)
    assert quant.check_linear(lin, 256, CPU, gen) < 1e-2


def test_nvfp4_round_trip_is_exact_on_representable_weights():
    gen = quant.generator(CPU, 4)
    codes = torch.randint(0, 16, (32, 64), generator=gen)
    scales = torch.tensor([0.5, 1.0, 2.0, 4.0])[torch.randint(0, 4, (32, 4, 1), generator=gen)]
    blocks = quant.e2m1_lut(CPU).float()[codes].reshape(32, 4, 16)
    blocks[:, :, 0] = 6.0  # each block's amax is 6 x its scale
    w = (blocks * scales).reshape(32, 64)
    packed, bscale, gscale = quant.nvfp4_quantize(w)
    back = quant.nvfp4_dequantize(packed, bscale, gscale, quant.e2m1_lut(CPU)).float()
    assert torch.allclose(back, w, rtol=1e-2, atol=1e-6)


@pytest.mark.parametrize(("grouped", "exact"), [(True, False), (True, True), (False, False)])
def test_moe_layer_matches_reference(grouped, exact):
    gen = quant.generator(CPU, 5)
    hidden, inter, experts, top_k = 64, 32, 8, 2
    w_router = quant.randn((experts, hidden), CPU, gen)
    w13 = quant.randn((experts, 2 * inter, hidden), CPU, gen) * 0.1
    w2 = quant.randn((experts, hidden, inter), CPU, gen) * 0.1
    x = quant.randn((20, hidden), CPU, gen)
    fwd = moe.layer_forward(top_k, inter, [moe._bf16_experts(w13, grouped),
                                           moe._bf16_experts(w2, grouped)], exact)
    ref = moe.reference_moe((w_router, w13, w2), x, top_k)
    out = fwd(x, x @ w_router.t()).float()
    assert float((out - ref).norm() / ref.norm()) < 2e-2


@pytest.mark.parametrize("precision", moe.PRECISIONS)
def test_moe_layer_runs_in_every_precision(precision):
    gen = quant.generator(CPU, 6)
    layer = moe.make_moe(precision, 64, 32, 16, 2, CPU, gen)
    x = quant.randn((8, 64), CPU, gen)
    out = layer.run(x, layer.router(x))
    assert out.shape == (8, 64) and bool(torch.isfinite(out.float()).all())


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp8"])
def test_prefill_attention_is_causal_from_the_bottom_right(kv_dtype):
    from torch.nn.attention.bias import causal_lower_right

    gen = quant.generator(CPU, 7)
    q = quant.randn((1, 4, 8, 32), CPU, gen)
    k = quant.randn((1, 2, 24, 32), CPU, gen)
    v = quant.randn((1, 2, 24, 32), CPU, gen)
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=causal_lower_right(8, 24), enable_gqa=True).float()
    ref = attention.reference_prefill(q, k, v)
    assert float((out - ref).norm() / ref.norm()) < 1e-2
    fn, backend = attention.make_prefill(8, 16, 4, 2, 32, kv_dtype, CPU, gen)
    assert fn().shape == (1, 4, 8, 32) and backend in {b for b, _ in attention.BACKENDS}


def test_timer_runs_warmup_then_bounded_repeats():
    calls = []
    timer = Timer(CPU, warmup=2, min_repeats=3, max_repeats=7, target_s=1.0, flush_bytes=0)
    assert timer.measure(lambda: calls.append(1)) > 0
    assert len(calls) == 2 + 1 + 7


def test_schema_finds_broken_tables(quick_profile):
    doc, _, _ = quick_profile
    gemm = next(t for t in doc["tables"] if t["op"] == "gemm")
    breakages = {
        "descending": {**gemm, "axes": {"m": gemm["axes"]["m"][::-1]}},
        "short": {**gemm, "latency_s": gemm["latency_s"][:-1]},
        "negative": {**gemm, "latency_s": [-1.0] * len(gemm["latency_s"])},
        "op": {**gemm, "op": "conv"},
        "key": {**gemm, "key": {"n": 1}},
        "precision": {**gemm, "precision": "int3"},
        "source": {**gemm, "source": "guess"},
    }
    for what, bad in breakages.items():
        assert schema.problems({**doc, "tables": [bad]}), what


def test_grids_are_ascending_and_positive():
    for grid in (grids.FULL, grids.QUICK):
        for axis in ("gemm_m", "moe_tokens", "prefill_tokens", "prefill_context",
                     "decode_batch", "decode_context", "allreduce_bytes"):
            values = list(getattr(grid, axis))
            assert values == sorted(set(values)) and values[0] > 0


def test_gemm_shapes_of_known_models():
    qwen = shapes.resolve_model("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    got = {(s.n, s.k): s.layers for s in shapes.gemm_shapes(qwen)}
    assert got == {(5120, 2048): ("qkv",), (2048, 4096): ("o",), (151936, 2048): ("lm_head",),
                   (128, 2048): ("router",)}
    llama = shapes.resolve_model("llama-3.1-70b")
    tp4 = {s.layers[0]: (s.n, s.k) for s in shapes.gemm_shapes(llama, tp=4)}
    assert tp4 == {"qkv": (2560, 8192), "o": (8192, 2048), "lm_head": (32064, 8192),
                   "gate_up": (14336, 8192), "down": (8192, 7168)}


def test_shapes_from_config_json(tmp_path):
    cfg = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32,
           "num_key_value_heads": 4,
           "head_dim": 128, "vocab_size": 151936, "num_hidden_layers": 48,
           "num_experts": 128, "moe_intermediate_size": 768, "num_experts_per_tok": 8,
           "intermediate_size": 6144}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert shapes.from_config(path, "x") == shapes.replace(
        shapes.resolve_model("qwen3-coder-30b-a3b"), name="x")
    del cfg["num_hidden_layers"]
    path.write_text(json.dumps(cfg))
    with pytest.raises(CalibrateError, match="num_hidden_layers"):
        shapes.from_config(path)
    # a DeepSeek-V3 (MLA) config was measured as a dense model of the wrong shapes
    path.write_text(json.dumps({**cfg, "model_type": "deepseek_v3"}))
    with pytest.raises(CalibrateError) as err:
        shapes.from_config(path)
    assert str(err.value) == (
        f"{path}: model_type 'deepseek_v3': the harness measures the shapes of llama, mistral, "
        "qwen2, qwen3, qwen3_moe, qwen2_moe, mixtral, gpt_oss, minimax_m2 models (dense "
        "attention, a dense or Qwen3-style MoE FFN); pass one of those, or --model")


def test_bad_input_is_one_line_and_exit_1(tmp_path, capsys):
    assert main(["--device", "cpu", "--model", "gpt-9", "--out", str(tmp_path / "p.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "gpt-9" in err and "--config" in err
    assert main(["--device", "cpu", "--quick", "--precisions", "int3",
                 "--out", str(tmp_path / "p.json")]) == 1
    with pytest.raises(CalibrateError, match="--tp 3"):
        shapes.shard(shapes.resolve_model("llama-3.1-8b"), 3)


def test_budget_spent_before_any_table_writes_nothing_and_says_so(tmp_path):
    """Round 6: an empty run wrote status 'complete' and a profile that does not load."""
    out = tmp_path / "p.json"
    with pytest.raises(CalibrateError) as err:
        run_calibration("cpu", quick=True, out=str(out), ops=("gemm", "attn_decode"),
                        precisions=("bf16",), budget_s=1e-9, log=lambda s: None)
    assert str(err.value) == (f"--budget-s 1e-09: spent before any table was measured; {out} "
                              "not written; allow more seconds")
    assert list(tmp_path.iterdir()) == []


def test_allreduce_over_two_gloo_ranks():
    from tiersim.calibrate import comm

    values, kernel = comm.allreduce_latencies(2, [1024, 65536], "cpu", warmup=1, repeats=3)
    assert len(values) == 2 and all(v > 0 for v in values) and "gloo" in kernel


@settings(max_examples=25, deadline=None)
@given(tokens=st.integers(1, 40), experts=st.integers(2, 12), top_k=st.integers(1, 4),
       seed=st.integers(0, 10_000), exact=st.booleans())
def test_route_and_pack_puts_every_pair_in_its_aligned_expert_group(tokens, experts, top_k,
                                                                    seed, exact):
    top_k = min(top_k, experts)
    gen = quant.generator(CPU, seed)
    x = quant.randn((tokens, 8), CPU, gen)
    logits = quant.randn((tokens, experts), CPU, gen)
    p = moe.route_and_pack(x, logits, top_k, exact)
    counts, starts, ends = p.counts.tolist(), p.pstart.tolist(), p.offs.tolist()
    assert sum(counts) == tokens * top_k
    assert all(s % moe.ALIGN == 0 for s in starts) and ends[-1] <= p.xs.shape[0]
    assert len(set(p.dest.tolist())) == tokens * top_k  # no two pairs share a row
    chosen = torch.topk(logits.float(), top_k, dim=-1).indices
    for row, token in zip(p.dest.tolist(), p.token_of.tolist(), strict=True):
        expert = next(e for e in range(experts) if starts[e] <= row < starts[e] + counts[e])
        assert expert in chosen[token].tolist()
        assert torch.equal(p.xs[row], x[token])
    assert torch.allclose(p.weight.float().reshape(-1).sum(), torch.tensor(float(tokens)),
                          atol=0.05 * tokens)


def test_cuda_call_signatures_pass_torch_shape_checks():
    """No GPU here: run the CUDA calls on fake CUDA tensors, so torch's shape, dtype and layout
    checks for the CUDA kernels (meta functions) see exactly what the harness passes."""
    fake = pytest.importorskip("torch._subclasses.fake_tensor")
    cuda = torch.device("cuda", 0)
    with fake.FakeTensorMode(allow_non_fake_inputs=True):
        lin = quant.make_linear("fp8", 5120, 2048, cuda, None)
        x = torch.randn(16, 2048, device=cuda, dtype=torch.bfloat16)
        assert lin.run(lin.prepare(x)).shape == (16, 5120)
        pairs = torch.empty(5120, 1024, device=cuda, dtype=torch.uint8)  # [n, k/2] as pack_int4
        packed = torch.ops.aten._convert_weight_to_int4pack(pairs, quant._inner_k_tiles(2048))
        sz = torch.empty(2048 // quant.int4_group_size(2048), 5120, 2, device=cuda,
                         dtype=torch.bfloat16)
        assert quant.int4_mm(x, packed, quant.int4_group_size(2048), sz).shape == (16, 5120)
        experts, rows = 8, 2 * 64 + 8 * (moe.ALIGN - 1)
        xs = torch.randn(rows, 256, device=cuda, dtype=torch.bfloat16)
        offs = torch.arange(1, experts + 1, device=cuda, dtype=torch.int32) * moe.ALIGN
        p = moe.Packed(xs, None, offs, None, None, None, None)
        w = torch.randn(experts, 2 * 128, 256, device=cuda, dtype=torch.bfloat16)
        for make in (moe._bf16_experts, moe._fp8_experts):
            assert make(w, True)(xs, p).shape == (rows, 256)
        q = torch.randn(4, 32, 1, 128, device=cuda, dtype=torch.bfloat16)
        for kv_dtype in ("bf16", "fp8"):
            k, v = attention._kv(4, 4, 1024, 128, kv_dtype, cuda, None)()
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            assert out.shape == (4, 32, 1, 128)


def test_a_wrapper_config_names_its_own_type_and_the_inner_key(tmp_path, capsys):
    # a Qwen3.5 config was refused as "model_type 'qwen3_5_moe_text'", a type the file's
    # top level does not carry
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen3_5_moe", "vision_config": {},
                                "text_config": {"model_type": "qwen3_5_moe_text"}}))
    assert main(["--device", "cpu", "--config", str(path), "--out", str(tmp_path / "p.json")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {path}: model_type 'qwen3_5_moe' (key 'text_config.model_type': "
        "'qwen3_5_moe_text'): the harness measures the shapes of llama, mistral, qwen2, qwen3, "
        "qwen3_moe, qwen2_moe, mixtral, gpt_oss, minimax_m2 models (dense attention, a dense or "
        "Qwen3-style MoE FFN); pass one of those, or --model")


@pytest.mark.parametrize(("argv", "line"), [
    ([], "Error: the following arguments are required: --out; see tiersim calibrate --help"),
    (["--out", "x.json", "--bogus"],
     "Error: unrecognized arguments: --bogus; see tiersim calibrate --help"),
    (["--out", "x.json", "--tp", "abc"],
     "Error: argument --tp: input should be a valid integer, unable to parse string as an "
     "integer; see tiersim calibrate --help"),
])
def test_a_usage_error_is_one_line_and_exit_1(capsys, argv, line):
    """argparse printed a usage block and exited 2; every tiersim command gives one line."""
    from tiersim.calibrate.cli import main as harness

    with pytest.raises(SystemExit) as stop:
        harness(argv)
    assert stop.value.code == 1
    assert capsys.readouterr().err == line + "\n"
