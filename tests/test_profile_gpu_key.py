"""A profile whose gpu field is another GPU, or no GPU tiersim knows, is named by the file the
scenario gives (not the profile's internal name, which a copied file keeps), and an unknown
gpu is refused with the known ones."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from tiersim.errors import ProfileError, ScenarioError
from tiersim.perf import build_step_model
from tiersim.scenario import load_scenario

BUNDLED = REPO / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


def copied_profile(tmp_path, gpu: str):
    """The bundled H200 profile copied to ``tmp_path/p.json`` with its gpu field set."""
    doc = json.loads(BUNDLED.read_text())
    doc["gpu"] = gpu
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


def scenario_with(tmp_path, profile):
    """The tiny scenario on H200 naming ``profile``; its path and the profile key's line."""
    text = (REPO / "scenarios" / "tiny.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("profile: null", f"profile: {profile}", 1))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                if t.startswith("profile:"))
    return path, line


@pytest.mark.parametrize(("gpu", "problem"), [
    ("H100", "gpu: measured on H100, not H200; use a H200 profile"),
    ("banana", "gpu: unknown GPU 'banana'; known GPUs: H200, H100, B200; use a H200 profile"),
])
def test_the_scenario_names_the_profile_file(tmp_path, gpu, problem):
    profile = copied_profile(tmp_path, gpu)
    path, line = scenario_with(tmp_path, profile)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: line {line}: profile: {profile}: {problem} or "
                              "profile: null (roofline)")


def test_a_step_model_names_the_profile_file(tmp_path):
    profile = copied_profile(tmp_path, "banana")
    with pytest.raises(ProfileError, match=rf"^{profile}: gpu: unknown GPU 'banana'"):
        build_step_model("Qwen3-Coder-30B-A3B", "bf16", "H200", profile=str(profile))
