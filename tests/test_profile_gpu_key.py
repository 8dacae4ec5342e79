"""A profile whose gpu field is another GPU, or no GPU tiersim knows, is named by the file the
scenario gives (not the profile's internal name, which a copied file keeps), and an unknown
gpu is refused with the known ones."""

from __future__ import annotations

import pytest
from conftest import edited_profile, scenario_naming_profile

from tiersim.errors import ProfileError, ScenarioError
from tiersim.perf import build_step_model
from tiersim.scenario import load_scenario


@pytest.mark.parametrize(("gpu", "problem"), [
    ("H100", "gpu: measured on H100, not H200; use a H200 profile"),
    ("banana", "gpu: unknown GPU 'banana'; known GPUs: H200, H100, B200, B300; use a H200 profile"),
])
def test_the_scenario_names_the_profile_file(tmp_path, gpu, problem):
    profile = edited_profile(tmp_path, gpu=gpu)
    path, line = scenario_naming_profile(tmp_path, profile)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: line {line}: profile: {profile}: {problem} or "
                              "profile: null (roofline)")


def test_a_step_model_names_the_profile_file(tmp_path):
    profile = edited_profile(tmp_path, gpu="banana")
    with pytest.raises(ProfileError, match=rf"^{profile}: gpu: unknown GPU 'banana'"):
        build_step_model("Qwen3-Coder-30B-A3B", "bf16", "H200", profile=str(profile))
