"""Model types read from a Hugging Face config.json: multimodal wrappers, DeepSeek-V2, and the
line naming what tiersim lacks for the types it does not serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.hardware.hf_config import load_hf_config

QWEN3_TEXT = {"model_type": "qwen3_vl_text", "hidden_size": 2048, "intermediate_size": 6144,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "num_hidden_layers": 28, "vocab_size": 151936}


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("outer", "inner", "tied"), [
    (True, None, True),  # the wrapper's key, where text_config has none
    (None, True, True),
    (True, False, False),  # the language model's own key first
    (None, None, False),
])
def test_a_wrapper_ties_lm_head_as_its_text_config_or_else_itself_says(tmp_path, outer, inner,
                                                                       tied):
    """A wrapper saying ``tie_word_embeddings: true`` outside its text_config was counted
    with a separate lm_head (311 M parameters too many here)."""
    text = QWEN3_TEXT if inner is None else {**QWEN3_TEXT, "tie_word_embeddings": inner}
    wrapper = {"model_type": "qwen3_vl", "text_config": text}
    if outer is not None:
        wrapper["tie_word_embeddings"] = outer
    model = load_hf_config(_write(tmp_path, wrapper))
    assert model.tie_embeddings is tied
    assert model.total_params == (1_720_574_976 if tied else 2_031_739_904)
