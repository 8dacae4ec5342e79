"""The roofline's calibration for runs with no profile (tiersim.perf.roofline_calibration): the
shipped file is what its command derives from the shipped profiles, and a run with no profile
applies it (kernel efficiencies by format, vLLM's fitted host time, the MoE eager rate by the
format's usual kernel), while a profile's fallback keeps the bare roofline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tiersim.hardware import get_gpu, get_model
from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf import roofline_calibration as rc
from tiersim.perf.profile import load_profile
from tiersim.perf.roofline import RooflineOps


@pytest.fixture(scope="module")
def cal() -> rc.Calibration:
    """The shipped calibration."""
    found = rc.shipped()
    assert found is not None
    return found


def test_shipped_file_is_what_its_command_derives():
    profiles = {name: load_profile(bundled("profiles", name))
                for name in {rc.SOURCE_PROFILE, *rc.KERNEL_PROFILES}}
    derived = json.loads(json.dumps(rc.derive(profiles)))
    assert derived == json.loads(rc.CALIBRATION_FILE.read_text())


def test_factors_are_the_measured_medians_that_run_slower_than_the_roofline(cal):
    # every factor is a roofline / measured median under 1: the bare roofline is fast there
    assert set(cal.gemm) == {"fp8", "fp8_block"} and set(cal.moe) >= {"fp8", "w4a16", "nvfp4"}
    assert all(0 < f < 1 for pair in cal.gemm.values() for bins in pair for f in bins)
    assert all(len(bins) == len(rc.WEIGHT_EDGES) + 1 for pair in cal.gemm.values()
               for bins in pair)
    assert all(0 < f < 1 for f in cal.moe.values())
    assert cal.gemm["fp8_block"] == cal.gemm["fp8"]  # block FP8 read through per-tensor FP8


def ops_pair(model: str, precision: str, gpu: str, cal, **kw):
    """(bare, calibrated) RooflineOps of one replica."""
    return (RooflineOps(model, precision, gpu, **kw),
            RooflineOps(model, precision, gpu, calibration=cal, **kw))


@pytest.mark.parametrize(("n", "k", "size"), [(2048, 4096, 0), (4096, 4096, 1),
                                              (8192, 8192, 2), (28672, 8192, 2)])
def test_fp8_gemms_divide_by_their_row_range_and_weight_size_factor(cal, n, k, size):
    bare, calibrated = ops_pair("Llama-3.1-8B", "fp8", "H200", cal)
    m = np.array([1.0, 64.0, 256.0, 257.0, 4096.0])
    small, large = (bins[size] for bins in cal.gemm["fp8"])
    expect = bare.gemm(m, n, k, "fp8") / np.array([small, small, small, large, large])
    np.testing.assert_allclose(calibrated.gemm(m, n, k, "fp8"), expect)
    np.testing.assert_allclose(calibrated.gemm(m, n, k, "bf16"), bare.gemm(m, n, k, "bf16"))


def test_moe_factor_holds_only_where_the_format_computes_as_on_h200(cal):
    tokens = np.array([1.0, 128.0, 4096.0])
    bare, calibrated = ops_pair("Qwen3-Coder-30B-A3B", "nvfp4", "H200", cal)
    np.testing.assert_allclose(calibrated.moe(tokens), bare.moe(tokens) / cal.moe["nvfp4"])
    # native FP4 on Blackwell is a path no H200 table timed: the bare roofline
    bare, calibrated = ops_pair("Qwen3-Coder-30B-A3B", "nvfp4", "B200", cal)
    np.testing.assert_allclose(calibrated.moe(tokens), bare.moe(tokens))
    bare, calibrated = ops_pair("Qwen3-Coder-30B-A3B", "fp8", "B200", cal)
    np.testing.assert_allclose(calibrated.moe(tokens), bare.moe(tokens) / cal.moe["fp8"])


def test_host_time_is_vllms_fitted_one(cal):
    model = get_model("Qwen3-Coder-30B-A3B")
    _, calibrated = ops_pair(model, "bf16", "H200", cal)
    assert calibrated.overhead_s == pytest.approx(
        cal.host.overhead_s + cal.host.overhead_per_layer_s * model.layers)
    eager = cal.host.eager
    graph = eager.graph_tokens(1)
    below, above = calibrated.eager_s(np.array([graph, graph + 1.0]))
    assert below == 0.0
    assert above == pytest.approx(eager.per_layer_s * model.layers
                                  + eager.per_moe_layer_s * model.moe_layers)


@pytest.mark.parametrize(("precision", "gpu", "ep", "cpp"), [
    ("fp8", "H200", 1, False), ("w4a16", "H200", 1, True), ("nvfp4", "H100", 1, True),
    ("fp8", "B200", 1, True), ("bf16", "B300", 1, True),
    # vLLM's FP8 experts on Hopper: Triton at EP 1, FlashInfer CUTLASS over several ranks
    ("fp8", "H200", 4, True), ("bf16", "H200", 4, False)])
def test_moe_eager_rate_follows_the_formats_usual_kernel(cal, precision, gpu, ep, cpp):
    model = get_model("Qwen3-Coder-30B-A3B")
    _, calibrated = ops_pair(model, precision, gpu, cal, dp=ep, ep=ep)
    eager = cal.host.eager
    tokens = np.array([eager.graph_tokens(ep) + 1.0])
    assert calibrated.eager_s(tokens)[0] == pytest.approx(
        eager.seconds(model.layers, model.moe_layers, cpp))
    # DeepGEMM's experts launch Triton kernels whatever the format
    assert calibrated.eager_s(tokens, triton_moe=True)[0] == pytest.approx(
        eager.seconds(model.layers, model.moe_layers, False))


def test_sources_say_where_the_host_time_was_fitted(cal):
    _, calibrated = ops_pair("Qwen3-Coder-30B-A3B", "fp8", "B300", cal)
    calibrated.eager_s(np.array([4096.0]))
    sources = calibrated.sources()
    assert sources["overhead"].startswith("fitted: benchmarks/fidelity_silicon.py --fit")
    # fitted on the H200: "applied unchanged" to the B300, as a shipped profile's copy reads
    on = "; fitted on the H200, applied unchanged to tiersim's roofline of the B300"
    assert sources["overhead"].endswith(on)
    assert sources["eager"].endswith(on)
    # FP8 computes in FP8 on the B300 as on the H200: its MoE is divided, and says so
    assert sources["moe fp8"] == ("roofline; calibrated: divided by 0.71, the median ratio of "
                                  "bare-roofline to measured time over NVIDIA's H200 fp8 MoE "
                                  "tables")


@pytest.mark.parametrize(("precision", "gpu", "moe", "gemm"), [
    ("nvfp4", "B200", "roofline", "roofline"),  # native FP4: no H200 table times that path
    ("nvfp4", "H200", "roofline; calibrated: divided by 0.46", "roofline"),  # 4-bit GEMMs bare
    ("bf16", "H200", "roofline", "roofline"),
    ("fp8_block", "H100", "roofline; calibrated: divided by 0.72",
     "roofline; calibrated: divided by 0.36-0.86 (by rows and weight size), the median ratio "
     "of bare-roofline to measured time over NVIDIA's H200 fp8 GEMM tables (fp8_block takes "
     "fp8's factors)"),
])
def test_a_family_says_it_is_calibrated_exactly_where_a_factor_divides_it(precision, gpu, moe,
                                                                         gemm, cal):
    """The label of each GEMM and MoE family follows the factor: divided -> "calibrated: divided
    by" what; not divided -> plain "roofline"."""
    bare, calibrated = ops_pair("Qwen3-Coder-30B-A3B", precision, gpu, cal)
    sources = calibrated.sources()
    assert sources[f"moe {precision}"].split(",")[0] == moe
    assert sources[f"gemm {precision}"] == gemm
    assert set(bare.sources().values()) == {"roofline"}
    tokens = np.array([8.0, 4096.0])
    divided = not np.allclose(calibrated.moe(tokens), bare.moe(tokens))
    assert divided == (moe != "roofline")


def test_a_run_with_no_profile_is_calibrated_and_a_profiles_fallback_is_not():
    roof = build_step_model("Qwen3-Coder-30B-A3B", "fp8", "H200")
    assert roof.ops.cal is rc.shipped()
    prof = build_step_model("Qwen3-Coder-30B-A3B", "fp8", "H200",
                            profile="h200_aiconfigurator_vllm")
    assert prof.ops.fallback.cal is None
    assert get_gpu("H200").name == rc.shipped().source_gpu


@pytest.mark.parametrize("gpu", ["H100", "B200", "B300"])
def test_host_time_off_its_gpu_reads_as_another_gpus_fit_as_a_profile_run_does(gpu):
    """The H200 fit applied to another GPU's roofline is "fitted on another GPU's serving rows",
    as the same numbers copied into that GPU's shipped profile read ("applied unchanged to
    <gpu>_sxm rows"); on the H200 it stays "fitted on measured serving rows"."""
    from tiersim.summary import source_kind

    another = "fitted on another GPU's serving rows"
    roof = build_step_model("Qwen3-Coder-30B-A3B", "bf16", gpu).sources()
    assert source_kind(roof["overhead"]) == another
    assert "H200" in roof["overhead"]
    if gpu in ("H100", "B200"):
        prof = build_step_model("Qwen3-Coder-30B-A3B", "bf16", gpu,
                                profile=f"{gpu.lower()}_aiconfigurator_vllm").sources()
        assert source_kind(prof["overhead"]) == another
    on_h200 = build_step_model("Qwen3-Coder-30B-A3B", "bf16", "H200").sources()
    assert source_kind(on_h200["overhead"]) == "fitted on measured serving rows"


@pytest.fixture
def calibration_file(tmp_path, monkeypatch):
    """The calibration file moved to ``tmp_path`` (absent until a test writes it), the cache
    cleared before and after."""
    path = tmp_path / "roofline_calibration.json"
    monkeypatch.setattr(rc, "CALIBRATION_FILE", path)
    rc.shipped.cache_clear()
    yield path
    rc.shipped.cache_clear()


def _run_tiny(capsys) -> tuple[int, str]:
    from tiersim.cli import main

    capsys.readouterr()
    code = main(["run", str(bundled("scenarios", "tiny")), "--no-baselines", "--no-report"])
    return code, capsys.readouterr().err.strip()


def test_a_missing_calibration_file_is_one_line_not_a_bare_roofline(calibration_file, capsys):
    code, err = _run_tiny(capsys)
    assert (code, err) == (1, f"Error: {calibration_file}: missing, and a run with no profile "
                              "reads the roofline's calibration from it; reinstall tiersim, or "
                              "rewrite it with python benchmarks/roofline_ratios.py --write in "
                              "tiersim's source repository")


def test_a_hand_edited_calibration_file_is_one_line(calibration_file, capsys):
    raw = json.loads((bundled("profiles", rc.SOURCE_PROFILE).parents[1] / "data"
                      / "roofline_calibration.json").read_text())
    del raw["moe"]
    calibration_file.write_text(json.dumps(raw))
    code, err = _run_tiny(capsys)
    assert (code, err) == (1, f"Error: {calibration_file}: not a roofline calibration of schema "
                              "tiersim.roofline_calibration/1 (KeyError: 'moe'); reinstall "
                              "tiersim, or rewrite it with python benchmarks/roofline_ratios.py "
                              "--write in tiersim's source repository")
