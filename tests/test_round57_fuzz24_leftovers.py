"""Round 57, hostile-input round (fuzz24): two leftovers of earlier rounds.

An aiperf-style trace (text ``session_id``, its turns in file order, no ``step``) under
``workload.sessions.source: trace`` was told "the trace has no session_id and step columns;
add them or use source: generate": it has a session_id, the trace file went unnamed, and the
fix offered replaced the trace. The line now names the file, the one column missing and what
it holds, and ``source: off``.

A model ``config.json`` with ``quantization_config: {}`` was read as having none: BF16 weights
without a word. An empty block names no format; it is refused, as a block without its
``quant_method`` already was.
"""

from __future__ import annotations

import json

import pytest
from test_hostile_inputs import TINY, run_cli

from tiersim.errors import TiersimError
from tiersim.hardware.hf_config import load_hf_config

AIPERF = [
    {"session_id": "conv_0", "timestamp": 0, "input_length": 100, "output_length": 20},
    {"session_id": "conv_0", "timestamp": 1000, "input_length": 200, "output_length": 20},
    {"session_id": "conv_1", "timestamp": 1500, "input_length": 50, "output_length": 10},
]


def _session_scenario(tmp_path, trace: str):
    """The tiny scenario over ``trace`` (beside it), its sessions read from the trace."""
    text = TINY.replace("azure2023_code.parquet", trace).replace("  window: [240, 360]\n", "")
    path = tmp_path / "s.yaml"
    path.write_text(text + "workload:\n  sessions: {source: trace}\n")
    return path


def test_a_trace_with_session_ids_and_no_step_is_told_the_step_column(tmp_path, capsys):
    """The exact line: the file, the missing column, what it holds, and source: off."""
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in AIPERF))
    scenario = _session_scenario(tmp_path, "t.jsonl")
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {scenario}: workload.sessions.source is 'trace' but the trace "
        f"{tmp_path / 't.jsonl'} has no step column; add a step column (each row's place in "
        "its session: 0, 1, 2, ... in the order the session's turns follow one another), or "
        "set source: off to replay every row as an independent request at its own arrival_s"
    )
    assert not (tmp_path / "o").exists()


def test_a_trace_with_steps_and_no_session_id_is_told_the_session_id_column(tmp_path, capsys):
    """The other column alone missing is named alone."""
    (tmp_path / "t.csv").write_text(
        "step,arrival_s,input_tokens,output_tokens\n0,0,10,5\n1,1,10,5\n"
    )
    scenario = _session_scenario(tmp_path, "t.csv")
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o")
    assert code == 1
    assert (
        "has no session_id column; add a session_id column (the task each row belongs "
        "to), or set source: off" in err.splitlines()[-1]
    )


LLAMA = {
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "intermediate_size": 2048,
    "vocab_size": 1000,
    "max_position_embeddings": 8192,
}


def test_an_empty_quantization_config_is_refused(tmp_path):
    """The exact line; read as none, the weights were BF16 without a word."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": {}}))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config': an empty object names no weight format (no "
        "quant_method); remove the key if the weights are BF16, or give its quant_method "
        "(fp8, mxfp4, compressed-tensors, modelopt, awq, gptq, fbgemm_fp8) and settings"
    )


def test_a_null_quantization_config_is_still_bf16(tmp_path):
    """null (as absent) still reads as no quantisation."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "quantization_config": None}))
    assert load_hf_config(path).checkpoint == ()
