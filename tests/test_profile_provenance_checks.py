"""A profile's provenance against the run that reads it: a profile the harness measured on a
CPU (or another GPU) whose ``gpu`` field was edited to the scenario's GPU is refused, and a
partial profile (a calibration cut short or killed) is read with a note saying so."""

from __future__ import annotations

import warnings

import pytest
from conftest import edited_profile, scenario_naming_profile

from tiersim.errors import Note, ScenarioError
from tiersim.runner import run_scenario
from tiersim.scenario import check_layouts, load_scenario


@pytest.mark.parametrize(("gpu_name", "said"), [
    ("cpu", "its provenance.gpu_name says it was measured on a CPU (cpu)"),
    ("NVIDIA H100", "its provenance.gpu_name says it was measured on H100 (NVIDIA H100)"),
])
def test_a_profile_measured_elsewhere_is_refused(tmp_path, gpu_name, said):
    """A `tiersim calibrate --device cpu` profile with `gpu: H200` typed in was read as
    H200's measured tables ("measured profile"), TPOT 134 s per token."""
    profile = edited_profile(tmp_path, gpu_name=gpu_name)
    path, line = scenario_naming_profile(tmp_path, profile)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (
        f"{path}: line {line}: profile: {profile}: gpu: says H200, but {said}; use a H200 "
        "profile or profile: null (roofline)")


def test_a_matching_gpu_name_is_read(tmp_path):
    profile = edited_profile(tmp_path, gpu_name="NVIDIA H200")
    load_scenario(scenario_naming_profile(tmp_path, profile)[0])


def test_a_partial_profile_is_read_with_a_note(tmp_path):
    """A profile a cut-short calibration wrote (P.partial.json, ``status: partial: ...``) was
    read with no word: its missing tables ran on the roofline, its cut tables were extrapolated
    past their last point, and both were labelled as any complete profile's."""
    status = "partial: the run stopped after section gemm"
    profile = edited_profile(tmp_path, status=status)
    scenario = load_scenario(scenario_naming_profile(tmp_path, profile)[0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_layouts(scenario)
    assert [str(w.message) for w in seen if issubclass(w.category, Note)] == [
        f"profile {profile}: provenance.status says '{status}': a calibration that did not "
        "finish; operators it has no table for run on the roofline, and a table cut short is "
        "extrapolated past its last measured point; rerun tiersim calibrate to completion"]


@pytest.mark.parametrize("status", [None, "complete"])
def test_a_complete_profile_has_no_note(tmp_path, status):
    profile = edited_profile(tmp_path, **({} if status is None else {"status": status}))
    scenario = load_scenario(scenario_naming_profile(tmp_path, profile)[0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_layouts(scenario)
    assert not [w for w in seen if issubclass(w.category, Note)]


def test_the_note_is_a_run_note(tmp_path):
    """The note reaches the run's notes (what the CLI prints as ``note:``)."""
    profile = edited_profile(tmp_path, status="partial: interrupted by SIGINT during moe")
    scenario = load_scenario(scenario_naming_profile(tmp_path, profile)[0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run_scenario(scenario, baselines=False)
    assert any("provenance.status says 'partial: interrupted by SIGINT during moe'"
               in str(w.message) for w in seen)


def test_a_cpu_profile_is_refused_as_measured_on_a_cpu(tmp_path):
    """A `tiersim calibrate --device cpu` profile as written (`gpu: cpu`) was refused as
    "gpu: unknown GPU 'cpu'; known GPUs: H200, H100, B200", as if the name were a typo."""
    profile = edited_profile(tmp_path, gpu="cpu", gpu_name="cpu")
    path, line = scenario_naming_profile(tmp_path, profile)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (
        f"{path}: line {line}: profile: {profile}: gpu: cpu: measured on a CPU (tiersim "
        "calibrate --device cpu, which checks the harness's code paths, not a GPU's speed); use "
        "a H200 profile or profile: null (roofline)")


def test_a_harness_profile_of_an_h100_sxm_is_read_as_h100():
    """On an H100 SXM torch names the device "NVIDIA H100 80GB HBM3", so the harness wrote
    `gpu: H100 80GB HBM3`, and every H100 scenario refused its own GPU's profile as
    "unknown GPU 'H100 80GB HBM3'"."""
    from types import SimpleNamespace

    from tiersim.perf import profile_gpu_problem

    profile = SimpleNamespace(gpu="H100 80GB HBM3",
                              provenance={"gpu_name": "NVIDIA H100 80GB HBM3"})
    assert profile_gpu_problem(profile, "H100", "p.json") is None
    assert profile_gpu_problem(profile, "H200", "p.json") == (
        "p.json: gpu: measured on H100, not H200; use a H200 profile")
