"""A tier in a format the GPU has no tensor cores for (NVFP4 on H200) says it runs
weight-only (fresh54b: an NVFP4 tier read exactly as fast as a W4A16 one, with nothing saying
why)."""

from __future__ import annotations

import warnings

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.inputs import _note_weight_only_formats
from tiersim.scenario import load_scenario


def _notes(tmp_path, gpu: str, precision: str) -> list[str]:
    """The weight-only notes of tiny with its first tier at ``precision`` on ``gpu``."""
    doc = tiny_doc(gpu=gpu, profile=None)
    doc["tiers"][0].update(name="cheap", precision=precision)
    scenario = load_scenario(write_yaml(tmp_path / f"{gpu}_{precision}.yaml", doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_weight_only_formats(scenario)
    return [str(w.message) for w in caught]


def test_nvfp4_on_hopper_is_said_to_run_weight_only(tmp_path):
    """H200 has no FP4 tensor cores: one line names the tier, the format and what it saves."""
    assert _notes(tmp_path, "H200", "nvfp4") == [
        "tier cheap: H200 has no NVFP4 tensor cores, so vLLM runs its NVFP4 layers "
        "weight-only (the weights dequantised to BF16 math, as W4A16 runs); its step times "
        "are modelled that way: the format saves weight memory and reads here, not compute"]


@pytest.mark.parametrize(("gpu", "precision"), [("H200", "w4a16"), ("H200", "fp8"),
                                                ("H200", "bf16"), ("B200", "nvfp4")])
def test_a_format_the_gpu_computes_in_or_a_weight_only_one_gets_no_note(tmp_path, gpu,
                                                                         precision):
    """W4A16 is weight-only by name, FP8 and BF16 are native on Hopper, NVFP4 on Blackwell."""
    assert _notes(tmp_path, gpu, precision) == []


def test_a_baseline_at_nvfp4_is_told_too(tmp_path):
    """A baseline tier is sized and shown beside the routed fleet: it gets the note too."""
    doc = tiny_doc(gpu="H200", profile=None)
    doc["baselines"] = [{**doc["tiers"][1], "name": "base4", "precision": "nvfp4"}]
    scenario = load_scenario(write_yaml(tmp_path / "b.yaml", doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_weight_only_formats(scenario)
    assert [str(w.message).split(":")[0] for w in caught] == ["tier base4"]
