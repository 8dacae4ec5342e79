"""Round 56, hostile-input round (fuzz23): a multimodal wrapper whose ``text_config`` is null.

A Qwen3-VL config with ``text_config: null`` read "key 'model_type': 'qwen3_vl' is not
supported; supported: ...", though tiersim reads qwen3_vl (through its text_config); the line
now names the key, as a text_config of another kind ("llama", a list) was already named.
"""

from __future__ import annotations

import json

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware.hf_config import load_hf_config


@pytest.mark.parametrize("key", ["text_config", "llm_config", "language_config"])
def test_a_null_language_config_of_a_wrapper_is_named(tmp_path, key):
    """The exact line, for each key a wrapper holds its language model under."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen3_vl", "vision_config": {}, key: None}))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key '{key}': must be an object, the config of the language model the "
        "wrapper holds (got null)"
    )
