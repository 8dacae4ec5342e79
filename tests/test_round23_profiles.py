"""Round 23 (profiles): hostile calibration profiles a scenario names, and the aiconfigurator
import's rebuild over an existing profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BUNDLED_H200_PROFILE, REPO, scenario_naming_profile
from test_round19 import error_line, run_cli

from tiersim.errors import ProfileError
from tiersim.perf.profile import load_profile


def _profile(tmp_path: Path, edit) -> Path:
    """The bundled H200 profile with ``edit(doc)`` applied, written to ``tmp_path/p.json``."""
    doc = json.loads(BUNDLED_H200_PROFILE.read_text())
    edit(doc)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_misspelt_overhead_field_is_refused(tmp_path, capsys):
    """``overhead_s: {"value": 0, "per_layer": 0.001}`` (``per_layer_s`` misspelt) was read
    as no per-layer overhead at all: the run's TPOT p50 came out 4.7 ms, not 69 ms."""
    def edit(doc):
        doc["overhead_s"] = {"value": 0.0, "per_layer": 0.001, "source": "public"}

    profile = _profile(tmp_path, edit)
    scenario, line = scenario_naming_profile(tmp_path, profile)
    assert error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "r")) == (
        f"Error: {scenario}: line {line}: profile: {profile}: overhead_s: unknown field "
        "'per_layer'; allowed: value, per_layer_s, source, kernel, notes, parts")
    assert not (tmp_path / "r").exists()


def test_the_harness_overhead_fields_are_read(tmp_path):
    """The harness's overhead object also carries kernel, notes and parts."""
    def edit(doc):
        doc["overhead_s"] = {"value": 0.001, "source": "harness", "kernel": "chain",
                             "notes": "parts from a chain", "parts": {"launch": 1e-5}}

    assert load_profile(_profile(tmp_path, edit)).overhead_s == 0.001


def test_a_harness_profile_without_an_overhead_is_read_with_the_roofline_s(tmp_path, capsys):
    """``tiersim calibrate --ops gemm`` (or a run whose overhead section failed) writes no
    ``overhead_s``, which the harness's own check accepts; a scenario naming it was refused
    ('overhead_s: must be an object like ...'), telling the user to type in a number."""
    from tiersim.calibrate import schema
    from tiersim.perf.roofline import RooflineConstants

    table = schema.table("gemm", {"n": 5120, "k": 2048}, {"m": [1, 2, 4]},
                         [1e-5, 1.1e-5, 1.2e-5], "torch", precision="bf16")
    doc = schema.profile("mine", "H200", {"source": "harness", "gpu_name": "NVIDIA H200",
                                          "status": "complete"}, None, [table])
    assert schema.problems(doc) == []
    path = tmp_path / "h.json"
    schema.write(path, doc)
    loaded = load_profile(path)
    constants = RooflineConstants()
    assert (loaded.overhead_s, loaded.overhead_per_layer_s, loaded.overhead_source) == (
        constants.base_overhead_s, constants.per_layer_overhead_s, "roofline")
    scenario, _ = scenario_naming_profile(tmp_path, path)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "r", "--no-baselines")
    assert code == 0, err


def test_an_eager_cost_with_no_graph_size_is_refused(tmp_path, capsys):
    """``eager_s.graph_max_tokens: 0`` turns the eager cost off: its ``per_layer_s`` and
    ``per_moe_layer_s`` were read as nothing (vLLM's --enforce-eager, every step eager, is
    the natural reading of 0 graph tokens), and the run took no host time for any step."""
    def edit(doc):
        doc["eager_s"]["graph_max_tokens"] = 0

    profile = _profile(tmp_path, edit)
    scenario, line = scenario_naming_profile(tmp_path, profile)
    fitted = json.loads(BUNDLED_H200_PROFILE.read_text())["eager_s"]["per_layer_s"]  # a refit's
    assert error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "r")) == (
        f"Error: {scenario}: line {line}: profile: {profile}: eager_s.graph_max_tokens: 0 "
        f"turns the eager-step cost off, so per_layer_s {fitted:g} would be ignored; give the "
        "largest step the engine replays from a CUDA graph (vLLM: 512 tokens by default), or "
        "remove eager_s")


def test_no_graph_size_and_no_eager_cost_is_read(tmp_path):
    """graph_max_tokens 0 with no costs says the same as no eager_s."""
    def edit(doc):
        doc["eager_s"] = {"graph_max_tokens": 0, "per_layer_s": 0, "source": "roofline"}

    assert load_profile(_profile(tmp_path, edit)).eager.graph_max_tokens == 0


@pytest.mark.parametrize(("named", "gpu"), [("NVIDIA H200 NVL", "H200"),
                                            ("NVIDIA H100 PCIe", "H100"),
                                            ("H100 NVL", "H100")])
def test_a_profile_measured_on_another_part_of_the_gpu_is_refused(tmp_path, capsys, named, gpu):
    """The harness on an H200 NVL writes gpu 'H200 NVL', which a scenario refuses as an
    unknown GPU; with gpu typed in as H200 (as a CPU run's was) the NVL's slower tables were
    read as the SXM part's, the part the catalogue's figures are, because a gpu_name the
    catalogue does not know was left unchecked."""
    def edit(doc):
        doc["gpu"] = gpu
        doc["provenance"]["gpu_name"] = named

    profile = _profile(tmp_path, edit)
    text = (REPO / "scenarios" / "tiny.yaml").read_text().replace("gpu: H200", f"gpu: {gpu}")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text.replace("profile: null", f"profile: {profile}"))
    line = text.splitlines().index("profile: null                     # roofline: independent "
                                   "of any shipped profile") + 1
    assert error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "r")) == (
        f"Error: {scenario}: line {line}: profile: {profile}: gpu: says {gpu}, but its "
        f"provenance.gpu_name says it was measured on {named}, another part than the SXM "
        f"{gpu} tiersim's figures are; use a {gpu} profile or profile: null (roofline)")


@pytest.mark.parametrize("named", ["NVIDIA H200", "NVIDIA H100 80GB HBM3", "H200 SXM",
                                   "my rented box"])
def test_a_gpu_name_of_the_catalogues_part_or_unknown_is_read(tmp_path, named):
    """The names torch gives the catalogued parts, and names of no catalogued GPU, pass."""
    from tiersim.perf import measured_elsewhere

    def edit(doc):
        doc["provenance"]["gpu_name"] = named

    gpu = "H100" if "H100" in named else "H200"
    profile = load_profile(_profile(tmp_path, edit))
    assert measured_elsewhere(profile, gpu) is None


@pytest.mark.parametrize(("gpu", "engine"), [("h200", "sglang"), ("h100", "vllm")])
def test_an_import_over_another_engines_or_gpus_profile_keeps_no_fit(tmp_path, gpu, engine):
    """``tiersim calibrate --from aiconfigurator --engine sglang --out h200.json`` over the
    vLLM profile kept vLLM's fitted overhead and eager cost in the SGLang profile (a --gpu
    h100 import kept H200's, unlabelled, so the summary called it fitted on that GPU's rows):
    the fit belongs to the engine and GPU it was fitted for."""
    import shutil
    import warnings

    pytest.importorskip("aiconfigurator_core")
    from tiersim.errors import Note
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    out = tmp_path / "p.json"
    shutil.copy(BUNDLED_H200_PROFILE, out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profile, _ = import_aiconfigurator(gpu, engine, out=out,
                                           models={"qwen3-coder-30b-a3b": (("bf16",), (1,))})
    assert (profile.overhead_source, profile.eager.graph_max_tokens) == ("roofline", 0)
    assert load_profile(out).overhead_source == "roofline"
    notes = [str(w.message) for w in caught if issubclass(w.category, Note)]
    assert notes == [
        f"{out}: its fitted overhead_s and eager_s are vllm's on H200, not kept in this {engine} "
        f"profile of {gpu.upper()} (the roofline's overhead and no eager cost); refit them with "
        "benchmarks/fidelity_silicon.py --fit in tiersim's source repository"]


def test_an_import_over_its_own_engine_and_gpu_keeps_the_fit(tmp_path):
    """A rebuild of the same GPU and engine keeps the fitted values, as before."""
    import shutil

    pytest.importorskip("aiconfigurator_core")
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    out = tmp_path / "p.json"
    shutil.copy(BUNDLED_H200_PROFILE, out)
    profile, _ = import_aiconfigurator("h200", "vllm", out=out,
                                       models={"qwen3-coder-30b-a3b": (("bf16",), (1,))})
    assert profile.overhead_source.startswith("fitted")
    assert profile.eager.graph_max_tokens == 512


def test_a_tier_on_fp8_e4m3_reads_the_profiles_fp8_attention_tables():
    """``kv_dtype: fp8_e4m3`` (accepted: vLLM's name of what ``fp8`` runs) looked up tables
    named ``fp8_e4m3``, which no profile ships: its attention ran on the roofline, not on the
    measured FP8 tables a tier saying ``fp8`` reads."""
    import numpy as np

    from tiersim.perf import build_step_model

    def attention(kv):
        model = build_step_model("Qwen3-Coder-30B-A3B", "bf16", "H200", kv_dtype=kv,
                                 profile="h200_aiconfigurator_vllm")
        step = model.decode_times(64, np.array([4096.0])).tolist()
        return step, {k: v for k, v in model.sources().items() if k.startswith("attn")}

    assert attention("fp8_e4m3") == attention("fp8")


def test_a_profiles_fp8_e4m3_table_serves_an_fp8_tier(tmp_path):
    """A table saved with ``kv_dtype: fp8_e4m3`` is the FP8 table, and is refused beside an
    ``fp8`` one of the same shape as its duplicate."""
    def rename(doc):
        for table in doc["tables"]:
            if table.get("kv_dtype") == "fp8":
                table["kv_dtype"] = "fp8_e4m3"

    profile = load_profile(_profile(tmp_path, rename))
    assert {t.dtype for t in profile.tables if t.op.startswith("attn")} >= {"fp8"}

    def duplicate(doc):
        first = next(t for t in doc["tables"] if t.get("kv_dtype") == "fp8")
        doc["tables"].append(dict(first, kv_dtype="fp8_e4m3"))

    with pytest.raises(ProfileError, match=r"duplicates tables\[\d+\] \(attn_\w+ fp8 "):
        load_profile(_profile(tmp_path, duplicate))


@pytest.mark.parametrize(("text", "problem"), [
    (b"", "empty; a profile is a UTF-8 JSON file"),
    (b"{", "line 1: not valid JSON: it ends mid-document after 1 byte, as a file cut short "
     "does (a copy or save that did not finish); give the whole file"),
    (BUNDLED_H200_PROFILE.read_bytes()[:5000],
     "line 1: not valid JSON: it ends mid-document after 5,000 bytes, as a file cut short "
     "does (a copy or save that did not finish); give the whole file"),
])
def test_an_empty_or_truncated_profile_says_so(tmp_path, capsys, text, problem):
    """A profile cut short (a copy or download stopped: the saved profiles are one line) said
    ``line 1: not valid JSON (Expecting ',' delimiter)``, as if a comma were missing."""
    profile = tmp_path / "p.json"
    profile.write_bytes(text)
    scenario, line = scenario_naming_profile(tmp_path, profile)
    assert error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "r")) == (
        f"Error: {scenario}: line {line}: profile: {profile}: {problem}")


@pytest.mark.parametrize(("schema", "problem"), [
    ("tiersim.profile/2", "schema: 'tiersim.profile/2' is a profile format this tiersim does "
     "not read (it reads 'tiersim.profile/1'); use the tiersim that wrote it, or write the "
     "profile as 'tiersim.profile/1'"),
    (None, "schema: missing; a profile starts {\"schema\": \"tiersim.profile/1\", ...}: is this "
     "file a profile?"),
    ("x" * 300, f"schema: expected 'tiersim.profile/1', got \"{'x' * 36}...; is this file a "
     "profile?"),
])
def test_a_profile_of_another_schema_says_what_to_do(tmp_path, capsys, schema, problem):
    """A profile from a later tiersim (``tiersim.profile/2``) said only ``expected
    'tiersim.profile/1', got 'tiersim.profile/2'``, no fix; a schema of any length was quoted
    whole."""
    def edit(doc):
        if schema is None:
            del doc["schema"]
        else:
            doc["schema"] = schema

    profile = _profile(tmp_path, edit)
    scenario, line = scenario_naming_profile(tmp_path, profile)
    assert error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "r")) == (
        f"Error: {scenario}: line {line}: profile: {profile}: {problem}")
