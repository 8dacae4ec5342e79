"""review55b: the weight-only note names each format the GPU lacks tensor cores for once, by
the format's name. A checkpoint whose group is "not all in one format" (an ignore list, so
its label reads "NVFP4 (8.78 bits a weight: some modules in another format)") read, for
NVIDIA's DeepSeek-V3.1-NVFP4 on H200, "H200 has no NVFP4 and NVFP4 (8.78 bits a weight: some
modules in another format) tensor cores, so vLLM runs its NVFP4 and NVFP4 (...) layers": one
format named twice, and a storage figure as if it were a kind of tensor core."""

from __future__ import annotations

import types
import warnings

import pytest

from tiersim.inputs import _note_weight_only_formats


def _notes(model: str, gpu: str) -> list[str]:
    tier = types.SimpleNamespace(name="ds", precision="checkpoint")
    scenario = types.SimpleNamespace(gpu=gpu, tiers=[tier], baselines=[],
                                     tier_model_ref=lambda t: model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_weight_only_formats(scenario)
    return [str(w.message) for w in caught]


def test_a_checkpoint_of_nvfp4_groups_stored_at_two_widths_names_nvfp4_once():
    pytest.importorskip("aiconfigurator_core", reason="needs the aic extra (its model configs)")
    from tiersim.hardware.models import shipped_config

    path = shipped_config("nvidia/DeepSeek-V3.1-NVFP4")
    assert path is not None
    assert _notes(str(path), "H200") == [
        "tier ds: H200 has no NVFP4 tensor cores, so vLLM runs its NVFP4 layers weight-only "
        "(the weights dequantised to BF16 math, as W4A16 runs); its step times are modelled "
        "that way: the format saves weight memory and reads here, not compute"]
    assert _notes(str(path), "B200") == []
