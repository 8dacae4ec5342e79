"""Static FP8 input scales: a per-tensor FP8 GEMM of a checkpoint with calibrated activation
scales skips the scale computation NVIDIA's GEMM tables time (their ``compute_scale`` rows).

NVIDIA's per-tensor FP8 GEMM tables time each GEMM with its input quantised dynamically. A
ModelOpt FP8 export (``nvidia/Llama-3.1-70B-Instruct-FP8``), an ``fp8`` block with
``activation_scheme: static`` or a compressed-tensors group with ``dynamic: false`` inputs does
not compute the scale; tiersim reads its GEMMs less the profile's ``fp8_scale`` table, never
below the physical limit (the speed of light) nor above the timed GEMM, as aiconfigurator's
``fp8_static`` mode does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_profile import make_doc, make_ops
from tiersim.errors import ProfileError
from tiersim.hardware.hf_quant import checkpoint_static_fp8
from tiersim.hardware.models import get_model
from tiersim.perf import build_step_model
from tiersim.perf.aic_tables import fp8_scale_latency
from tiersim.perf.profile import profile_from_json
from tiersim.perf.profile_interp import monotone

ROOT = Path(__file__).resolve().parents[1]
TRTLLM_H200 = ROOT / "benchmarks" / "data" / "h200_aiconfigurator_trtllm.json"


@pytest.mark.parametrize("quant, static", [
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, True),
    ({"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, True),
    ({"quant_algo": "NVFP4", "group_size": 16}, False),
    ({"quant_algo": "MIXED_PRECISION",
      "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}}, True),
    ({"quant_method": "fp8", "activation_scheme": "static"}, True),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, False),
    ({"quant_method": "fp8"}, False),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, False),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"type": "float", "num_bits": 8},
        "input_activations": {"type": "float", "num_bits": 8, "dynamic": False,
                              "strategy": "tensor"}}}}, True),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"type": "float", "num_bits": 8},
        "input_activations": {"type": "float", "num_bits": 8, "dynamic": True,
                              "strategy": "token"}}}}, False),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"type": "int", "num_bits": 4}, "input_activations": None}}}, False),
    ({"quant_method": "awq", "bits": 4}, False),
])
def test_which_checkpoints_carry_static_fp8_input_scales(tmp_path, quant, static):
    assert checkpoint_static_fp8(tmp_path / "config.json", quant) is static


def test_a_modelopt_side_file_is_read_where_the_config_has_no_block(tmp_path):
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}))
    assert checkpoint_static_fp8(tmp_path / "config.json", None) is True


def llama_config(tmp_path: Path, quant: dict | None) -> Path:
    """A Llama-3.1-70B config.json (aiconfigurator-core's) with ``quant`` as its block."""
    aic = pytest.importorskip("aiconfigurator_core")
    src = Path(aic.__file__).parent / "model_configs" / "meta-llama--Meta-Llama-3.1-70B_config.json"
    cfg = json.loads(src.read_text())
    if quant is not None:
        cfg["quantization_config"] = quant
    folder = tmp_path / ("static" if quant and quant.get("activation_scheme") == "static"
                         else "dynamic")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_the_model_records_whether_its_fp8_scales_are_static(tmp_path):
    static = get_model(str(llama_config(tmp_path, {"quant_method": "fp8",
                                                   "activation_scheme": "static"})))
    dynamic = get_model(str(llama_config(tmp_path, {"quant_method": "fp8"})))
    assert static.static_fp8_activations is True
    assert dynamic.static_fp8_activations is False
    assert get_model("llama-3.1-70b").static_fp8_activations is False


def scale_doc(scale_s: list[float], k: int = 32):
    doc = make_doc()
    doc["tables"] += [
        {"op": "gemm", "precision": "fp8", "source": "public", "key": {"n": 64, "k": 32},
         "axes": {"m": [1, 10, 100]}, "latency_s": [2e-5, 2e-5, 1e-4]},
        {"op": "fp8_scale", "source": "public", "key": {"k": k},
         "axes": {"m": [1, 10, 100]}, "latency_s": scale_s},
    ]
    return doc


def test_a_static_gemm_is_its_table_less_the_scale_time():
    ops = make_ops(scale_doc([5e-6, 5e-6, 9.5e-5]), precision="fp8")
    assert ops.gemm(10, 64, 32, "fp8") == pytest.approx(2e-5)  # dynamic: as timed
    assert ops.gemm(10, 64, 32, "fp8", static_scale=True) == pytest.approx(1.5e-5)
    # no physical limit without a roofline on a known GPU (the stand-in's 7e-6 is no floor)
    assert ops.gemm(100, 64, 32, "fp8", static_scale=True) == pytest.approx(5e-6)
    assert ops.sources()["fp8_scale k=32"] == "measured:public"


def test_a_gemm_the_roofline_answers_keeps_its_time_and_lists_no_scale_table():
    """The roofline's FP8 GEMM computes no scale (its quantising pass is a static one's): a
    profile's scale table takes nothing off it."""
    doc = make_doc()
    doc["tables"].append(scale_doc([5e-6] * 3)["tables"][-1])  # the scale table, no FP8 GEMM
    ops = make_ops(doc, precision="fp8")
    assert ops.gemm(10, 64, 32, "fp8", static_scale=True) == pytest.approx(7e-6)
    assert ops.sources()["gemm fp8 n=64 k=32"] == "roofline"
    assert not any(name.startswith("fp8_scale") for name in ops.sources())


def test_a_static_gemm_is_never_slower_than_the_dynamic_one_nor_below_the_physical_limit():
    """Llama-3.1-70B at TP 1 on NVIDIA's H200 TensorRT-LLM tables: the 4,096-token gate/up
    projection is 2,327 us as timed less 56 us of scale time, 2,271 us static. Floored at the
    derated roofline (70% of the FP8 peak, 2,804 us) it once read 20% slower than dynamic;
    aiconfigurator floors at the speed of light (1,945 us), as tiersim's physical limit is."""
    from tiersim.hardware.gpus import get_gpu
    from tiersim.hardware.precisions import weight_formats
    from tiersim.perf.profile import ProfileOps, load_profile
    from tiersim.perf.roofline import PhysicalLimitOps, RooflineOps

    arch = get_model("llama-3.1-70b")
    prec, gpu = weight_formats(arch, "fp8"), get_gpu("h200")
    ops = ProfileOps(load_profile(TRTLLM_H200), arch, prec, gpu, tp=1, kv_dtype="fp8",
                     fallback=RooflineOps(arch, prec, gpu, tp=1, kv_dtype="fp8"))
    limit = PhysicalLimitOps(arch, prec, gpu, 1, "fp8")
    m = np.array([1.0, 32.0, 512.0, 4096.0, 16384.0, 65536.0])
    for n, k in ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)):
        timed = ops.gemm(m, n, k, "fp8")
        static = ops.gemm(m, n, k, "fp8", static_scale=True)
        assert (static <= timed).all() and (static < timed).any()
        assert (static >= limit.gemm(m, n, k, "fp8") * (1 - 1e-12)).all()
    at = np.array([4096.0])
    assert ops.gemm(at, 57344, 8192, "fp8")[0] == pytest.approx(2327e-6, rel=1e-3)
    assert ops.gemm(at, 57344, 8192, "fp8", static_scale=True)[0] == pytest.approx(
        2271.1e-6, rel=1e-3)


def test_other_formats_and_profiles_without_the_table_read_as_before():
    ops = make_ops(scale_doc([5e-6, 5e-6, 5e-6]), precision="fp8")
    assert ops.gemm(10, 64, 32, "bf16", static_scale=True) == pytest.approx(1e-5)
    plain = make_doc()
    plain["tables"].append(scale_doc([5e-6] * 3)["tables"][-2])  # the fp8 GEMM, no scale table
    ops = make_ops(plain, precision="fp8")
    assert ops.gemm(10, 64, 32, "fp8", static_scale=True) == pytest.approx(2e-5)
    assert not any(name.startswith("fp8_scale") for name in ops.sources())


def test_a_width_without_its_own_table_reads_the_nearest_one_and_says_so():
    ops = make_ops(scale_doc([5e-6, 5e-6, 5e-6], k=4096), precision="fp8")
    assert ops.gemm(10, 64, 32, "fp8", static_scale=True) == pytest.approx(1.5e-5)
    assert ops.sources()["fp8_scale k=32"] == "anchored:measured:public (nearest k 4096)"


def test_a_scale_table_round_trips_and_a_missing_key_is_one_line():
    doc = scale_doc([5e-6, 5e-6, 5e-6])
    prof = profile_from_json(json.loads(json.dumps(doc)), "p.json")
    table = [t for t in prof.tables if t.op == "fp8_scale"][0]
    assert table.to_json() == doc["tables"][-1]
    del doc["tables"][-1]["key"]["k"]
    with pytest.raises(ProfileError) as err:
        profile_from_json(doc, "p.json")
    assert str(err.value) == ("p.json: tables[4].key.k: must be a whole number from 1 to "
                              "2147483648 (got null)")


def frame(rows):
    return pd.DataFrame(rows, columns=["op_name", "kernel_source", "m", "k", "latency"])


def test_the_import_reads_nvidias_rows_at_k_and_between_widths():
    df = frame([("compute_scale", "torch_ops", m, k, lat) for m, k, lat in [
        (1, 1024, 0.006), (32, 1024, 0.007), (1, 4096, 0.008), (32, 4096, 0.011)]])
    m, lat, kernel, note = fp8_scale_latency(df, 1024)
    assert m.tolist() == [1.0, 32.0] and lat.tolist() == pytest.approx([6e-6, 7e-6])
    assert (kernel, note) == ("torch_ops", "k 1024 as measured")
    m, lat, _, note = fp8_scale_latency(df, 2048)  # a third of the way from 1024 to 4096
    assert lat.tolist() == pytest.approx([6e-6 + 2e-6 / 3, 7e-6 + 4e-6 / 3])
    assert note == "k 2048 linear between measured k 1024 and 4096"
    assert fp8_scale_latency(df, 8192)[1].tolist() == pytest.approx([8e-6, 11e-6])


def test_a_measured_zero_is_the_least_time_and_no_difference_at_all_is_no_table():
    df = frame([("compute_scale", "x", 1, 1024, 0.0), ("compute_scale", "x", 32, 1024, 0.002)])
    assert fp8_scale_latency(df, 1024)[1].tolist() == pytest.approx([1e-9, 2e-6])
    assert fp8_scale_latency(frame([("compute_scale", "sglang", 1, 1024, 0.0)]), 1024) is None


def test_the_shipped_trtllm_step_of_a_static_checkpoint_is_shorter_by_the_scale_times(tmp_path):
    """Llama-3.1-70B at TP 8, 32 decoding sequences, on NVIDIA's H200 TensorRT-LLM tables: the
    static checkpoint's step is the dynamic one's less, over 80 layers, each of the four GEMMs'
    scale time at 32 tokens (read from the profile file as every padded table is read,
    non-decreasing in tokens: ``monotone``), where that leaves the GEMM above its physical
    limit, else down to it (none does: the 8,192 x 1,024 output projection, 13.8 us less 7.2,
    is above its 1.8 us; the derated roofline's 7.0 us is no floor)."""
    static = llama_config(tmp_path, {"quant_method": "fp8", "activation_scheme": "static"})
    dynamic = llama_config(tmp_path, {"quant_method": "fp8"})
    ctx = np.array([32 * 2048.0])
    models = [build_step_model(str(p), "checkpoint", "h200", tp=8, kv_dtype="fp8",
                               profile=str(TRTLLM_H200)) for p in (dynamic, static)]
    steps = [m.decode_times(32, ctx)[0] for m in models]
    doc = json.loads(TRTLLM_H200.read_text())
    scale = {t["key"]["k"]: monotone(np.array(t["latency_s"]))[t["axes"]["m"].index(32)]
             for t in doc["tables"] if t["op"] == "fp8_scale"}
    ops, m32 = models[0].ops, np.array([32.0])
    saved, floored = 0.0, []
    for n, k in ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)):  # qkv, o, gate_up, down
        timed, roof = ops.gemm(m32, n, k, "fp8")[0], ops._limit_ops().gemm(m32, n, k, "fp8")[0]
        saved += timed - max(roof, timed - scale[k])
        floored += [k] if timed - scale[k] < roof else []
    assert steps[0] - steps[1] == pytest.approx(80 * saved, rel=1e-9)
    assert floored == []
    assert 2.0e-3 < 80 * saved < 2.6e-3  # about 7 us a GEMM, as NVIDIA measured


def test_the_shipped_profiles_hold_the_tables_the_import_gives():
    pytest.importorskip("aiconfigurator_core")
    script = ROOT / "benchmarks" / "fp8_scale_tables.py"
    import runpy
    mod = runpy.run_path(str(script), run_name="not_main")
    assert mod["main"](["--check"]) == 0


def test_static_scales_are_the_checkpoints_not_the_shape(tmp_path):
    """A run's fidelity line finds the checked model by its shapes: the catalogue Llama-3.1-70B
    (a BF16 tier) and NVIDIA's static FP8 export the rows ran are one shape."""
    from tiersim.fidelity import shape_id

    static = get_model(str(llama_config(tmp_path, {"quant_method": "fp8",
                                                   "activation_scheme": "static"})))
    assert static.static_fp8_activations
    assert shape_id(static) == shape_id(get_model("llama-3.1-70b"))


def test_an_import_carries_the_scale_table_of_each_fp8_gemm_width():
    """``build_profile`` (``tiersim calibrate --from aiconfigurator``) adds an ``fp8_scale``
    table at every ``k`` of its per-tensor FP8 GEMMs, so a re-import keeps what the shipped
    profiles hold; a BF16 GEMM asks for none."""
    pytest.importorskip("aiconfigurator_core")
    from tiersim.perf.aic_importer import build_profile

    model = get_model("llama-3.1-70b")
    requests = [("gemm", "fp8", {"n": 1280, "k": 8192}, model, 8),
                ("gemm", "fp8", {"n": 8192, "k": 1024}, model, 8),
                ("gemm", "bf16", {"n": 8192, "k": 3584}, model, 8)]
    profile, missing = build_profile("t", "h200", "trtllm", requests, (0.0, 0.0))
    scale = sorted(t.key["k"] for t in profile.tables if t.op == "fp8_scale")
    assert scale == [1024, 8192] and missing == []
    at_32 = [t for t in profile.tables if t.op == "fp8_scale" and t.key["k"] == 8192][0]
    assert 6e-6 < float(at_32.lookup(np.array([32.0]))[0]) < 9e-6  # NVIDIA's 7.4-7.5 us
