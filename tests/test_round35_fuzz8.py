"""Round 35, hostile input (helper fuzz8): Hugging Face config values past a double's range."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

#: A small llama config that fits any GPU tiersim models.
LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816,
         "vocab_size": 32000, "max_position_embeddings": 8192}


def _model_scenario(tmp_path, config: dict):
    """A tiny scenario whose model is ``tmp_path/m`` holding ``config``."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    return write_yaml(tmp_path / "s.yaml", tiny_doc(model=str(tmp_path / "m")))


@pytest.mark.parametrize("kind", ["linear", "yarn"])
def test_a_rope_factor_past_a_double_is_one_line(tmp_path, capsys, kind):
    """A ``rope_scaling.factor`` written as a whole number past a double's range (a 400-digit
    int, which Python's JSON reader takes) was an OverflowError traceback ("int too large to
    convert to float"); 2**64 already read as stretching the context too far. It now reads as
    that too."""
    config = {**LLAMA, "rope_scaling": {"type": kind, "factor": 10**400,
                                        "original_max_position_embeddings": 4096}}
    scenario = _model_scenario(tmp_path, config)
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 3: model: {tmp_path}/m/config.json: key "
                    "'rope_scaling.factor': 1000000000000000000000000000000000000... stretches "
                    "the context to more than 100,000,000 tokens; give the factor the model "
                    "card states")


def test_mlp_only_layers_past_a_double_names_no_layer(tmp_path, capsys):
    """A Qwen MoE ``mlp_only_layers`` entry past a double's range was an OverflowError
    traceback; like any index past the layers, it names none (vLLM's ``in`` test)."""
    config = {**LLAMA, "model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 768, "mlp_only_layers": [10**400, -1.0, 1e308]}
    scenario = _model_scenario(tmp_path, config)
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert "Traceback" not in err
