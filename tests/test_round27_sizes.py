"""docs/models.md's weight table against the published checkpoint sizes (issue 9): the table
in the docs is the one ``decode_table.py --weights`` prints, BF16 checkpoints whose index
``total_size`` was found match tiersim to the byte, a tied ``lm_head`` is counted once
(Qwen3-1.7B's checkpoint stores a copy that vLLM does not load), and MTP layers an ignore
list names are counted in BF16."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from tiersim.hardware import get_model
from tiersim.perf.aiconfigurator import aic_model_path
from tiersim.perf.memory import checkpoint_bytes

ROOT = Path(__file__).resolve().parents[1]
SIZES = pd.read_csv(ROOT / "benchmarks" / "data" / "published_sizes.csv").set_index("config")

pytest.importorskip("aiconfigurator_core")


def _tiersim_bytes(config: str) -> int:
    """tiersim's checkpoint bytes of one config aiconfigurator-core ships."""
    return checkpoint_bytes(get_model(aic_model_path("aic:" + config.replace("/", "--"))))


def _published_bytes(config: str) -> int:
    """The published byte count benchmarks/data/published_sizes.csv holds for ``config``."""
    return int(SIZES.loc[config, "published_bytes"])


def test_docs_table_is_the_one_the_command_prints():
    """docs/models.md quotes ``python benchmarks/decode_table.py --weights`` verbatim, so a
    published figure added to the CSV (or a change to tiersim's count) shows in the docs."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import decode_table

    table = decode_table.weight_markdown(decode_table.weight_rows())
    assert table in (ROOT / "docs" / "models.md").read_text()


@pytest.mark.parametrize("config", [
    "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-235B-A22B",
    "mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x22B-v0.1",
])
def test_bf16_checkpoints_match_their_index_total_size_to_the_byte(config):
    """Untied BF16 checkpoints: the index ``total_size`` is two bytes a parameter, tiersim's
    count exactly (Qwen3-8B 16,381,470,720 B, Mixtral-8x22B 281,241,268,224 B)."""
    assert _tiersim_bytes(config) == _published_bytes(config)


def test_a_tied_lm_head_is_counted_once():
    """Qwen3-1.7B ties ``lm_head`` to the embedding; its checkpoint still stores
    ``lm_head.weight`` (151,936 x 2,048 BF16), which vLLM skips: the index total_size
    (4,063,479,808 B) is tiersim's 3,441,149,952 B plus exactly that copy."""
    lm_head_copy = 151_936 * 2_048 * 2
    assert _tiersim_bytes("Qwen/Qwen3-1.7B") + lm_head_copy == _published_bytes("Qwen/Qwen3-1.7B")


def _mtp_share(config: str) -> tuple[float, int]:
    """The bytes tiersim's checkpoint count gives the multi-token-prediction layers of one
    aiconfigurator-core config, and their parameters."""
    model = get_model(aic_model_path("aic:" + config.replace("/", "--")))
    without = dataclasses.replace(model, mtp_layers=0)
    return checkpoint_bytes(model) - checkpoint_bytes(without), sum(
        model.mtp_param_groups().values())


@pytest.mark.parametrize("config", [
    "nvidia/Qwen3.5-122B-A10B-NVFP4",  # ignore: "mtp*" (mtp.layers.0.* modules)
    "nvidia/DeepSeek-V3.1-NVFP4",  # hf_quant_config exclude_modules: "model.layers.61*"
])
def test_mtp_layers_an_ignore_list_names_are_counted_in_bf16(config):
    """ModelOpt's NVFP4 exports leave the MTP layers BF16 by name; tiersim counted their
    experts in NVFP4 like the model's (Qwen3.5-122B-A10B-NVFP4 79.1 GB, now 82.6 GB against
    the published 83.5 GB, whose 0.9 GB vision tower tiersim does not count)."""
    mtp_bytes, mtp_params = _mtp_share(config)
    assert mtp_bytes == 2 * mtp_params


def test_mtp_layers_no_ignore_list_names_keep_the_models_format():
    """DeepSeek-V3's block-FP8 checkpoint quantises its MTP layer like the others."""
    mtp_bytes, mtp_params = _mtp_share("deepseek-ai/DeepSeek-V3")
    assert mtp_bytes < 1.1 * mtp_params


def test_mtp_layers_no_group_targets_are_bf16_not_refused(tmp_path):
    """A compressed-tensors checkpoint whose targets name decoder layers 0-60 only: its MTP
    layer (61), which tiersim does not serve, is counted in BF16; reading its formats once
    refused the config ('no group targets model.layers.61.self_attn.q_a_proj')."""
    config = json.loads(Path(aic_model_path("aic:deepseek-ai--DeepSeek-V3")).read_text())
    fp8 = {"num_bits": 8, "type": "float", "dynamic": False, "symmetric": True}
    config["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"g": {
            "targets": [r"re:model\.layers\.([0-9]|[1-5][0-9]|60)\..*"],
            "weights": {**fp8, "strategy": "channel"},
            "input_activations": {**fp8, "strategy": "token", "dynamic": True}}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = get_model(str(tmp_path / "config.json"))
    assert model.mtp_checkpoint == ()
    without = dataclasses.replace(model, mtp_layers=0)
    assert checkpoint_bytes(model) - checkpoint_bytes(without) == 2 * sum(
        model.mtp_param_groups().values())
