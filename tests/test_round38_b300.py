"""Round 38 (b300): NVIDIA B300 (Blackwell Ultra), a GPU nothing was fitted on, held out whole.

The catalogue knows the B300 (``get_gpu``), and ``benchmarks/fidelity_silicon.py --system
b300_sxm`` replays the silicon sample's B300 vLLM and SGLang rows on NVIDIA's B300 tables
(``benchmarks/data/b300_aiconfigurator_<engine>.json``, imported by ``--refresh-data --system
b300_sxm`` for the models and layouts those rows run) with the H200 fit applied unchanged.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fidelity_silicon as fs  # noqa: E402

from tiersim.hardware import get_gpu  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402

SYSTEM = "b300_sxm"
ENGINES = ("vllm", "sglang")


# ---------------------------------------------------------------- the catalogue


@pytest.mark.parametrize("name", ["B300", "b300", "b300 sxm", "b300_sxm", "B300-SXM"])
def test_every_spelling_of_b300_is_one_gpu(name):
    assert get_gpu(name) is get_gpu("b300")
    assert get_gpu(name).name == "B300"


def test_b300_figures_are_the_dense_ones_of_its_data_sheet():
    """Memory as the device reports it, dense tensor-core peaks (no 2:4 sparsity doubling),
    NVFP4 native (Blackwell's FP4 tensor cores), NVLink 5, ConnectX-8 between nodes."""
    b300 = get_gpu("b300")
    assert b300.hbm_bytes == 275_040 * 2**20
    assert b300.hbm_bw_bytes_s == 7.75e12
    assert (b300.peak("bf16"), b300.peak("fp8"), b300.peak("fp4")) == (2.25e15, 4.5e15, 14e15)
    assert {"bf16", "fp8", "nvfp4"} <= b300.native
    assert b300.nvlink_bw_bytes_s == 1.8e12 == get_gpu("b200").nvlink_bw_bytes_s
    assert b300.internode_bw_bytes_s == 2 * get_gpu("b200").internode_bw_bytes_s == 100e9
    assert b300.hbm_bytes > get_gpu("b200").hbm_bytes


def test_b300_figures_are_aiconfigurators_systems_yaml():
    """The figures the docstring cites: aiconfigurator-core's ``systems/b300_sxm.yaml``."""
    pytest.importorskip("aiconfigurator_core")
    yaml = pytest.importorskip("yaml")
    spec = yaml.safe_load((fs._aic_root() / "systems" / "b300_sxm.yaml").read_text())
    gpu, node = spec["gpu"], spec["node"]
    b300 = get_gpu("b300_sxm")
    assert b300.hbm_bytes == gpu["mem_capacity"]
    assert b300.hbm_bw_bytes_s == gpu["mem_bw"]
    assert b300.peak("bf16") == gpu["bfloat16_tc_flops"]
    assert b300.peak("fp8") == gpu["fp8_tc_flops"]
    assert b300.peak("fp4") == gpu["fp4_tc_flops"]
    assert b300.nvlink_bw_bytes_s == 2 * node["intra_node_bw"]  # the yaml's is one direction
    assert b300.internode_bw_bytes_s == node["inter_node_bw"]
    assert b300.gpus_per_node == node["num_gpus_per_node"]


# ---------------------------------------------------------------- the benchmark knows it


def test_the_benchmark_takes_b300_sxm_as_a_system():
    assert fs.SYSTEM_GPU[SYSTEM] == "b300"
    assert fs.build_parser().parse_args(["--system", SYSTEM]).system == SYSTEM
    assert SYSTEM in fs.SYSTEM_IMPORTS and set(fs.SYSTEM_IMPORTS[SYSTEM]) == set(ENGINES)
    assert fs.bundled_profile("b300") is None  # no default profile ships: benchmarks/data's
    for engine in ENGINES:
        assert Path(fs.profile_file(engine, SYSTEM)) == (
            fs.DATA / f"b300_aiconfigurator_{engine}.json")


def test_the_copied_rows_are_the_samples_b300_rows():
    rows = fs.load_rows(SYSTEM)
    assert set(rows["system"]) == {SYSTEM}
    agg = rows[rows["mode"] == "agg"]
    assert agg.groupby("backend").size().to_dict() == {"sglang": 123, "vllm": 132}
    assert set(rows.loc[rows["backend"] == "trtllm", "mode"]) == {"disagg"}
    copied = fs.read_rows_file(fs.rows_csv(SYSTEM))
    assert len(copied) == 381
    if fs.aic_installed():
        import pandas as pd

        sample = pd.read_csv(fs._aic_root() / "systems" / "silicon_sample.csv", dtype=str)
        assert sorted(sample.loc[sample["system"] == SYSTEM, "id"]) == sorted(copied["id"])


def imported_name(case) -> str:
    """The model name a case's table import is keyed by, as in ``SYSTEM_IMPORTS`` after
    ``aic:org--``: the config's folder or the shipped config file's model."""
    return Path(case.model).name.removesuffix("_config.json").split("--")[-1]


def layout(case) -> int | tuple[int, int, int]:
    """A case's layout as ``SYSTEM_IMPORTS`` writes it (TP alone, else ``(tp, dp, ep)``)."""
    return case.tp if (case.dp, case.ep) == (1, 1) else (case.tp, case.dp, case.ep)


@pytest.fixture(scope="module")
def replayed_cases():
    """``(engine, imported name, precision, layout)`` of every B300 row the benchmark
    replays, and the one-line reasons of those it cannot."""
    pytest.importorskip("aiconfigurator_core")  # NVIDIA's NVFP4 configs are read from it
    cases, reasons = set(), set()
    for row in fs.load_rows(SYSTEM).to_dict("records"):
        try:
            case = fs.case_of(row)
        except fs.Unrepresentable as exc:
            reasons.add((row["backend"], row["model"], str(exc)))
            continue
        cases.add((row["backend"], imported_name(case), case.precision, layout(case)))
    return cases, reasons


def test_system_imports_cover_every_replayed_row_and_no_layout_no_row_runs(replayed_cases):
    """Each replayed row's model, format and layout is one ``--refresh-data`` imports, and
    every model, format and layout imported is one some row runs (an import takes each model's
    formats times its layouts, so a pair may be imported that no row runs)."""
    cases, _ = replayed_cases
    imported = {(engine, name.split("--")[-1], precision, lay)
                for engine, models in fs.SYSTEM_IMPORTS[SYSTEM].items()
                for name, (precisions, layouts) in models.items()
                for precision in precisions for lay in layouts}
    assert cases - imported == set()
    for engine, models in fs.SYSTEM_IMPORTS[SYSTEM].items():
        for name, (precisions, layouts) in models.items():
            run = [c for c in cases if c[:2] == (engine, name.split("--")[-1])]
            assert {c[2] for c in run} == set(precisions), name
            assert {c[3] for c in run} == set(layouts), name


def test_the_rows_that_cannot_replay_say_why_in_one_line(replayed_cases):
    """B300's TensorRT-LLM rows are disaggregated; its DeepSeek FP4 SGLang rows ran an NVFP4
    checkpoint no config of which ships."""
    _, reasons = replayed_cases
    assert reasons == {
        ("trtllm", "DeepSeek-R1", "disaggregated prefill/decode serving is not modelled"),
        ("sglang", "DeepSeek-V3", "an FP4 run of a checkpoint that declares other formats, "
                                  "and no NVIDIA NVFP4 config of it to read")}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_b300_profiles_name_b300_and_carry_the_h200_fit_applied_unchanged(engine):
    profile = load_profile(fs.profile_file(engine, SYSTEM))
    h200 = fs.resolve_profile(fs.ENGINE_PROFILES[engine])
    assert profile.gpu == "B300" and get_gpu(profile.gpu) is get_gpu("b300")
    assert profile.provenance["gpu_name"] == "NVIDIA B300"
    assert profile.provenance["engine"] == engine
    assert len(profile.tables) > 300  # the measured sets, as every other GPU's profile has
    assert (profile.overhead_s, profile.overhead_per_layer_s) == (
        h200.overhead_s, h200.overhead_per_layer_s)
    assert (profile.eager.per_layer_s, profile.eager.per_moe_layer_s) == (
        h200.eager.per_layer_s, h200.eager.per_moe_layer_s)
    moved = f"; applied unchanged to {SYSTEM} rows"
    assert profile.eager.source == h200.eager.source + moved
    assert profile.overhead_source == fs.moved_source(h200.overhead_source, SYSTEM)
    if h200.overhead_source.startswith("fitted"):
        assert profile.overhead_source.endswith(moved)
    graph = fs.engine_graph(engine, "b300")
    assert profile.eager.graph_max_tokens == graph["graph_max_tokens"]


def test_the_b300_vllm_profile_carries_the_cpp_moe_rate_fitted_on_b200():
    profile = load_profile(fs.profile_file("vllm", SYSTEM))
    b200 = load_profile(fs.profile_file("vllm", fs.FIT_CPP_MOE_SYSTEM))
    assert profile.eager.per_cpp_moe_layer_s == b200.eager.per_cpp_moe_layer_s is not None
    assert profile.eager.cpp_moe_source == (b200.eager.cpp_moe_source
                                            + f"; applied unchanged to {SYSTEM} rows")


# ---------------------------------------------------------------- a small replay


@pytest.mark.parametrize(("engine", "model", "tp"), [("vllm", "MiniMax-M2.5-NVFP4", 2),
                                                     ("sglang", "GLM-5", 8)])
def test_two_b300_rows_replay_on_b300_tables_to_finite_times(engine, model, tp):
    """One vLLM NVFP4 row (native FP4 MoE on Blackwell) and one SGLang row, 4 clients, two
    requests each: finite TTFT and TPOT, every table NVIDIA's B300 one."""
    pytest.importorskip("aiconfigurator_core")
    rows = fs.load_rows(SYSTEM)
    rows = rows[(rows["backend"] == engine) & (rows["model"] == model)
                & (rows["tp_size"] == tp) & (rows["batch_size"] == 4) & (rows["isl"] == 1024)]
    rows = fs.with_aic(rows.head(1).reset_index(drop=True), SYSTEM)
    assert len(rows) == 1
    res = fs.run(rows, "auto", fs.Protocol(per_client=2), 1)
    got = res.iloc[0]
    assert math.isfinite(got["sim_ttft_ms"]) and got["sim_ttft_ms"] > 0
    assert math.isfinite(got["sim_tpot_ms"]) and got["sim_tpot_ms"] > 0
    assert got["roofline_tables"] == 0
    assert fs.case_of(rows.iloc[0].to_dict()).gpu == "b300"
