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



#: A BurstGPT CSV's header and 30 rows.
BURSTGPT = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"] + [
    f"{i * 0.5},ChatGPT,{100 + i},20,{120 + i},Conversation log" for i in range(30)]


def _opened(lines: list[str], index: int, word: str = "ChatGPT") -> list[str]:
    """``lines`` with a quote opened before ``word`` on line ``index`` (0: the header)."""
    return [*lines[:index], lines[index].replace(word, '"' + word, 1), *lines[index + 1:]]


@pytest.mark.parametrize(("lines", "where"), [
    (_opened(BURSTGPT, 1), "row 1: a quote in this row is never closed (the file ends inside "
                           "it; file line 2)"),
    (_opened([*BURSTGPT[:3], BURSTGPT[3].replace("ChatGPT", '"Chat\nGPT"'), *BURSTGPT[4:]], 10),
     "row 10: a quote in this row is never closed (the file ends inside it; file line 12)"),
    (_opened(BURSTGPT, 0, "Model"), "a quote in the header is never closed (the file ends "
                                    "inside it; file line 1)"),
], ids=["first row", "after a quoted line break", "header"])
def test_a_csv_quote_never_closed_names_its_row_and_line(tmp_path, capsys, lines, where):
    """A trace CSV with a quote never closed read pandas' words and no fix: "cannot parse the
    CSV (Error tokenizing data. C error: EOF inside string starting at row 9)", whose row
    counts records from the header (a quoted line break before the quote moved it off the
    file's line). It now names the data row and file line of the quote, and the fix."""
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: {where}; close the quote, or write a quote inside a "
                    'quoted cell as two ("")')


_INT4_GROUP = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
                                                  "group_size": 128, "strategy": "group"}}


def _ct(**weights) -> dict:
    """A compressed-tensors block of one group with ``weights`` changed."""
    return {"quant_method": "compressed-tensors", "config_groups": {
        "g": {**_INT4_GROUP, "weights": {**_INT4_GROUP["weights"], **weights}}}}


HUGE = 10**400
CUT = "1000000000000000000000000000000000000..."


@pytest.mark.parametrize(("edit", "said"), [
    ({"max_position_embeddings": HUGE}, f"key 'max_position_embeddings': {CUT} tokens is more "
     "than the 100,000,000 a context may hold; give the value the model card states"),
    ({"rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": HUGE}},
     f"key 'rope_scaling.original_max_position_embeddings': {CUT} tokens is more than the "
     "100,000,000 a context may hold; give the value the model card states"),
    ({"num_attention_heads": -HUGE}, "key 'num_attention_heads': must be a positive integer "
     "(got -100000000000000000000000000000000000...)"),
    ({"quantization_config": _ct(group_size=HUGE)}, "key 'quantization_config.config_groups.g."
     f"weights.group_size': must be a whole number of weights from 1 to 65536 (got {CUT})"),
    ({"quantization_config": _ct(num_bits=HUGE)}, "key 'quantization_config.config_groups.g."
     f"weights': {CUT}-bit int weights (group size 128) are not a format tiersim models (bf16, "
     "fp8, fp8_block, w4a16, nvfp4, mxfp4)"),
    ({"quantization_config": _ct(num_bits=3, type="i" * 1000)}, "key 'quantization_config."
     'config_groups.g.weights\': 3-bit "iiiiiiiiiiiiiiii... weights (group size 128) are not a '
     # round 52: the type as JSON writes text (it read 'iii...)
     "format tiersim models (bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4)"),
], ids=["context", "yarn original", "heads", "group size", "bits", "type"])
def test_a_config_value_of_hundreds_of_digits_is_shown_cut(tmp_path, capsys, edit, said):
    """A 400-digit number (or a 1,000-character type) in a model's config.json was written out
    whole in its error line (700 characters of digits and commas for a context length); it is
    now cut to its first digits, as the config's other keys are."""
    scenario = _model_scenario(tmp_path, {**LLAMA, **edit})
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == f"Error: {scenario}: line 3: model: {tmp_path}/m/config.json: {said}"


def _mixed_per_expert(layers: int, experts: int) -> dict:
    """A Qwen3-MoE config whose MIXED_PRECISION block names every module, each expert's
    projections one by one (NVFP4), the attention projections FP8, as ModelOpt writes it."""
    quantized = {}
    for layer in range(layers):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            quantized[f"model.layers.{layer}.self_attn.{proj}"] = {"quant_algo": "FP8"}
        for expert in range(experts):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                quantized[f"model.layers.{layer}.mlp.experts.{expert}.{proj}"] = {
                    "quant_algo": "NVFP4", "group_size": 16}
    return {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": layers,
            "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
            "vocab_size": 151936, "num_experts": experts, "num_experts_per_tok": 8,
            "moe_intermediate_size": 768, "max_position_embeddings": 40960,
            "quantization_config": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                    "group_size": 16, "quantized_layers": quantized}}


def test_a_mixed_precision_block_naming_every_expert_is_read(tmp_path):
    """A MIXED_PRECISION block naming each expert's projections (ModelOpt's layout; 94 layers
    of 128 experts: 36,472 keys) matched every module of a layer against every key of it in
    turn, 1.3 billion matches, and was refused after the 2 s regex budget: "matching its
    ignore list against the module names of the model's 94 layers took over 2 s (...);
    simplify it", though it has no ignore list and nothing to simplify. A plain key is now
    looked up: 48 layers (18,624 keys) read in well under the budget."""
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_mixed_per_expert(48, 128)))
    formats = weight_formats(load_hf_config(path), "checkpoint")
    assert (formats.attention.name, formats.experts.name) == ("fp8", "nvfp4")


def test_a_run_reads_a_large_model_config_once(tmp_path, capsys):
    """A run asks for its tiers' model some fifty times, and each read the config again: with
    a MIXED_PRECISION block naming every expert of 94 layers (36,472 keys, 4 MB; 0.7 s a
    read) ``tiersim run`` of two minutes of trace took 80 s. A config read before, with the
    same bytes, is now read once: 48 layers' run reads it once, and says the same."""
    from tiersim.hardware import hf_config

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(_mixed_per_expert(48, 128)))
    doc = tiny_doc(model=str(tmp_path / "m"))
    for tier in doc["tiers"]:
        tier["precision"] = "checkpoint"
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    reads = []
    real = hf_config._load
    hf_config._load = lambda path: reads.append(path) or real(path)
    try:
        code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    finally:
        hf_config._load = real
    assert code == 0, err
    assert len(reads) == 1


def test_a_config_changed_between_reads_is_read_again(tmp_path):
    """The models kept are keyed by the bytes read: a config (or the hf_quant_config.json
    beside it) rewritten in place, even at the same size, is read again."""
    from tiersim.hardware.hf_config import load_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": 4}))
    assert load_hf_config(path).layers == 4
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": 8}))
    assert load_hf_config(path).layers == 8
    side = tmp_path / "hf_quant_config.json"
    side.write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    assert load_hf_config(path).checkpoint[0][1] == "fp8"


def _mooncake(path, ids: dict[int, list[int]]):
    """A Mooncake JSON-lines trace of 6 rows, each row's hash ids its own but as ``ids``."""
    rows = [{"timestamp": i * 100, "input_length": 1000, "output_length": 20,
             "hash_ids": ids.get(i, [1000 + 2 * i, 1001 + 2 * i])} for i in range(6)]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return path


@pytest.mark.parametrize(("ids", "said"), [
    ({1: [2**60 + 7, 5], 4: [2**64, 9]}, "row 5, column 'hash_ids': hash id "
     "18446744073709551616 out of range (must be 0 <= id < 2^63) (file line 5)"),
    ({0: [2**63, 1]}, "row 1, column 'hash_ids': hash id 9223372036854775808 out of range "
     "(must be 0 <= id < 2^63) (file line 1)"),
], ids=["a valid large id before", "2^63"])
def test_a_mooncake_hash_id_past_int64_is_named_as_written(tmp_path, capsys, ids, said):
    """One hash id of 2^63 or more anywhere in a Mooncake file makes Arrow read every row's ids
    as floats: the first id past 2^53 was then refused, though valid, in the wrong row ("row 2
    ... hash id 1.15292e+18 is not a whole number within range (must be an integer below
    2^63, written without a decimal point)"), and 2^63 itself read "9.22337e+18 is not a whole
    number". The ids are now read again exactly, and the one out of range is named as written."""
    path = _mooncake(tmp_path / "t.jsonl", ids)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == f"Error: {path}: {said}"


def test_the_match_budget_names_the_lists_and_experts_it_matched(tmp_path, monkeypatch):
    """A MIXED_PRECISION block past the match budget read "matching its ignore list against
    the module names of the model's 48 layers took over ...", a list it does not have, and
    no word of the 128 experts each layer's modules were matched for."""
    from tiersim.errors import TiersimError
    from tiersim.hardware import hf_config

    monkeypatch.setattr(hf_config, "REGEX_BUDGET_S", 0.001)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_mixed_per_expert(48, 128)))
    with pytest.raises(TiersimError) as err:
        hf_config.load_hf_config(path)
    assert str(err.value) == (
        f"{path}: key 'quantization_config': matching its quantized_layers keys against the "
        "module names of the model's 48 layers of 128 experts each took over 0.001 s (a 're:' "
        "pattern that backtracks without end, a list that long, or that many layers or "
        "experts); simplify it")


def test_a_huge_token_budget_beside_weights_that_do_not_fit_names_both_fixes(tmp_path,
                                                                            capsys):
    """Llama-3.1-70B at BF16 (141.1 GB of weights) on one H200 (135.7 GB usable) with
    max_num_batched_tokens 2,000,000 was told only "lower scheduler.max_num_batched_tokens (it
    sets the activation reserve)": done, the weights still did not fit, a second run away."""
    doc = tiny_doc(model="Llama-3.1-70B", router={"policy": "static_split", "fractions": [1.0]},
                   tiers=[{"name": "bf16", "precision": "bf16", "replicas": 1,
                           "cost_per_gpu_hour": 3.5,
                           "scheduler": {"max_num_batched_tokens": 2_000_000}}])
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    at = scenario.read_text().splitlines().index("- name: bf16") + 1
    assert line == (
        f"Error: {scenario}: line {at}: tiers[0]: "
        "tier 'bf16': Llama-3.1-70B at BF16 does not fit on 1x H200: weights 141.1 GB + reserve "
        "517.6 GB > usable 135.7 GB (short by 523.0 GB); lower scheduler.max_num_batched_tokens "
        "(it sets the activation reserve), and use more gpus_per_replica, a smaller precision or "
        "a GPU with more memory (the weights alone do not fit)")


LONG = "g" * 5000
CUT_NAME = "g" * 37 + "..."


@pytest.mark.parametrize(("edit", "said"), [
    ({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        LONG: {"targets": ["Linear"], "weights": {"num_bits": 3, "type": "int"}}}}},
     f"key 'quantization_config.config_groups.{CUT_NAME}.weights': 3-bit int weights (no group "
     "size) are not a format tiersim models (bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4)"),
    # round 52: "(group size None)" spelt the missing key as Python does
    ({"rope_scaling": {LONG: {"factor": -1}}},
     f"key 'rope_scaling.{CUT_NAME}.factor': must be a finite number above 0 (got -1)"),
], ids=["group", "rope layer type"])
def test_a_5000_character_name_in_a_config_key_path_is_cut(tmp_path, capsys, edit, said):
    """A config group (or a per-layer-type rope block) named by 5,000 characters was named in
    full in the key path of its error line (5,176 characters); each name is now cut."""
    scenario = _model_scenario(tmp_path, {**LLAMA, **edit})
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == f"Error: {scenario}: line 3: model: {tmp_path}/m/config.json: {said}"
