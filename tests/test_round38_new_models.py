"""Models a new user brings that tiersim's benchmarks do not cover (helper newmodels, round 46):
a KV-cache note names the file and key it was read from; a folder in Mistral's own format
(params.json) is one line saying which config.json to write; a tier no plan GPU count loads
(Qwen2.5-72B in block FP8 on H100s) is an infeasible baseline, not a traceback; Ministral 3's
``ministral3`` reads as Mistral. Each test names what a user saw before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli
from test_round38_fuzz11 import run_harness

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import load_hf_config
from tiersim.hf_text import MISTRAL_KEYS
from tiersim.perf.memory import checkpoint_bytes, kv_bytes_per_token

#: meta-llama/Llama-3.1-8B-Instruct's config.json (https://huggingface.co/meta-llama/
#: Llama-3.1-8B-Instruct/blob/main/config.json), the keys that shape the model.
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
              "max_position_embeddings": 131072, "tie_word_embeddings": False,
              "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192,
                               "rope_type": "llama3"}}
#: A ModelOpt NVFP4 export's hf_quant_config.json as ModelOpt 0.37 writes it with an NVFP4 KV
#: cache (``quant_cfg`` "NVFP4_KV_CFG"; layout of nvidia/Llama-3.1-8B-Instruct-FP4's
#: https://huggingface.co/nvidia/Llama-3.1-8B-Instruct-FP4/blob/main/hf_quant_config.json).
NVFP4_KV_SIDE = {"producer": {"name": "modelopt", "version": "0.37.0"},
                 "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4",
                                  "group_size": 16, "exclude_modules": ["lm_head"]}}


def _folder(tmp_path: Path, config: dict, side: dict | None = None) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    if side is not None:
        (tmp_path / "hf_quant_config.json").write_text(json.dumps(side))
    return tmp_path


def _notes(path: Path):
    with pytest.warns(Note) as caught:
        model = load_hf_config(path)
    return model, [str(w.message) for w in caught]


def test_an_unmodelled_kv_format_in_hf_quant_config_is_named_there(tmp_path: Path) -> None:
    """The note named config.json and a bare 'kv_cache_quant_algo', a key config.json does not
    have: the value is read from hf_quant_config.json's 'quantization' block."""
    folder = _folder(tmp_path, LLAMA31_8B, NVFP4_KV_SIDE)
    model, notes = _notes(folder)
    side = folder / "hf_quant_config.json"
    assert f"{side}: key 'quantization.kv_cache_quant_algo' is 'NVFP4': a KV-cache format " \
        "tiersim does not model; its cache is read in the model's dtype, which may hold more " \
        "bytes a token than the checkpoint's; set the tier's kv_dtype (fp8 or bf16) to choose " \
        "one" in notes
    assert model.kv_cache == ""
    # the weights are read from that file as before: NVFP4 but lm_head and the embeddings
    assert checkpoint_bytes(model) == pytest.approx(6.0277e9, rel=1e-4)


def test_an_unmodelled_kv_format_in_a_wrappers_text_config_names_its_key(tmp_path: Path
                                                                         ) -> None:
    """A multimodal wrapper whose language model's block declares the cache: the note names the
    key path it is read at."""
    quant = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4",
             "group_size": 16, "exclude_modules": ["lm_head"]}
    text = {**LLAMA31_8B, "quantization_config": quant}
    config = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
              "text_config": text, "vision_config": {"model_type": "clip_vision_model"}}
    folder = _folder(tmp_path, config)
    _, notes = _notes(folder)
    assert any(n.startswith(f"{folder / 'config.json'}: key 'text_config.quantization_config."
                            "kv_cache_quant_algo' is 'NVFP4': a KV-cache format") for n in notes)


#: Mistral's own params.json of a Mistral-Small-24B model (Magistral-Small-2506 ships only this
#: and consolidated.safetensors: https://huggingface.co/mistralai/Magistral-Small-2506, whose
#: model card serves it with ``--config_format mistral``; vllm-project/vllm issue 19427). The
#: shapes are those of the mistral3 text_config of Mistral-Small-3.1-24B (vllm-project/vllm
#: issue 15212 quotes its config.json).
MISTRAL_SMALL_PARAMS = {"dim": 5120, "n_layers": 40, "head_dim": 128, "hidden_dim": 32768,
                        "n_heads": 32, "n_kv_heads": 8, "rope_theta": 1000000000.0,
                        "norm_eps": 1e-05, "vocab_size": 131072}
PARAMS_WORDS = ("params.json is Mistral's own format (vLLM reads it under --config-format "
                "mistral), which tiersim does not read; give the model's Hugging Face config.json "
                "(the repository's, where it ships one), or write one beside it as vLLM builds it "
                "(dim as hidden_size, n_layers as num_hidden_layers, n_heads as "
                "num_attention_heads, n_kv_heads as num_key_value_heads, hidden_dim as "
                "intermediate_size; model_type 'mistral', or 'mixtral' where it has a moe block; "
                "max_position_embeddings 128000 where it gives none)")


def _params_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "Magistral-Small-2506"
    folder.mkdir()
    (folder / "params.json").write_text(json.dumps(MISTRAL_SMALL_PARAMS))
    return folder


def test_a_mistral_format_folder_is_one_line_naming_params_json(tmp_path, capsys) -> None:
    """A folder in Mistral's own format read only 'a folder with no config.json in it; give
    the model's config.json ...', not what the folder holds nor how to get one."""
    folder = _params_folder(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nmodel: {folder}\ngpu: H100\ntrace: {{path: "
                        "azure2023_code.parquet, window: [240, 275]}\ntiers:\n  - {name: t, "
                        "precision: bf16, replicas: 1, cost_per_gpu_hour: 3.0}\n")
    line = one_error_line(*run_cli(capsys, "run", scenario))
    assert line == (f"Error: {scenario}: line 2: model: {folder}: a folder with no config.json "
                    f"in it; its {PARAMS_WORDS}")


def test_params_json_given_as_the_config_names_its_format(tmp_path: Path) -> None:
    """params.json named as the config read "key 'model_type': missing (it names the
    architecture)"."""
    path = _params_folder(tmp_path) / "params.json"
    with pytest.raises(TiersimError) as caught:
        load_hf_config(path)
    assert str(caught.value) == f"{path}: {PARAMS_WORDS}"


def test_the_harness_names_params_json_too(tmp_path, capsys, monkeypatch) -> None:
    """``python -m tiersim.calibrate --config`` of such a folder says the same."""
    monkeypatch.chdir(tmp_path)
    folder = _params_folder(tmp_path)
    line = one_error_line(*run_harness(capsys, "--device", "cpu", "--config", folder.name,
                                       "--ops", "overhead", "--out", "p.json"))
    assert line == (f"Error: {folder.name}: a folder with no config.json in it; its "
                    f"{PARAMS_WORDS}")
    line = one_error_line(*run_harness(capsys, "--device", "cpu", "--config",
                                       f"{folder.name}/params.json", "--ops", "overhead",
                                       "--out", "p.json"))
    assert line == f"Error: {folder.name}/params.json: {PARAMS_WORDS}"


def test_the_config_json_the_line_describes_reads_the_model(tmp_path: Path) -> None:
    """Written as the line says, the config reads Mistral-Small-24B's 23.57 B parameters: 40 x
    (5120 x (4096 + 2 x 1024) + 4096 x 5120 + 3 x 5120 x 32768) + 2 x 131072 x 5120 and the
    norms (the Mistral-Small-3.1 card's 24 B holds its vision tower too)."""
    folder = _params_folder(tmp_path)
    config = {MISTRAL_KEYS.get(k, k): v for k, v in MISTRAL_SMALL_PARAMS.items()}
    config.update(model_type="mistral", max_position_embeddings=128000)
    (folder / "config.json").write_text(json.dumps(config))
    model = load_hf_config(folder)
    attention = 5120 * (4096 + 2 * 1024) + 4096 * 5120
    expected = 40 * (attention + 3 * 5120 * 32768 + 2 * 5120) + 2 * 131072 * 5120 + 5120
    assert model.total_params == expected
    assert (model.max_context, model.kv_heads, model.head_dim) == (128000, 8, 128)


#: Qwen/Qwen2.5-72B-Instruct's config.json (https://huggingface.co/Qwen/Qwen2.5-72B-Instruct/
#: blob/main/config.json), the keys that shape the model: an MLP of 29,568 = 231 blocks of 128.
QWEN25_72B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
              "intermediate_size": 29568, "num_hidden_layers": 80, "num_attention_heads": 64,
              "num_key_value_heads": 8, "max_position_embeddings": 32768,
              "sliding_window": 131072, "max_window_layers": 80, "use_sliding_window": False,
              "tie_word_embeddings": False, "vocab_size": 152064, "rope_theta": 1000000.0}


#: Why no uniform fleet of that tier is sized: the split at every count that fits and, since
#: the split's fix names 1 GPU, that it does not fit there (before: only the split, ending
#: "split it over 1 GPU").
SPLIT_AND_TOO_SMALL = ("t on 2, 4, 8 GPUs per replica: its block-FP8 MLP width 29,568 over 8 "
                       "GPUs is 3,696 per GPU, not whole 128-wide blocks: vLLM refuses to load "
                       "that split in the versions that check it; split it over 1 GPU; it does "
                       "not fit on 1 GPU per replica")


def _qwen72_block_fp8(tmp_path: Path) -> Path:
    """A scenario serving Qwen2.5-72B in block FP8 on 4 H100s per replica."""
    folder = tmp_path / "Qwen2.5-72B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN25_72B))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nmodel: {folder}\ngpu: H100\ntrace: {{path: "
                        "azure2023_code.parquet, window: [240, 275]}\ntiers:\n  - {name: t, "
                        "precision: fp8_block, replicas: 1, gpus_per_replica: 4, "
                        "cost_per_gpu_hour: 3.0}\nrouter: {policy: uniform}\nslo: {ttft_p99_s: "
                        "2.0, tpot_p99_s: 0.1}\n")
    return scenario


def test_a_baseline_no_gpu_count_loads_is_infeasible_not_a_traceback(tmp_path, capsys) -> None:
    """Qwen2.5-72B in block FP8 on H100s: 1 GPU is too small and 29,568 splits into whole
    128-wide blocks over none of 2, 4, 8. The run (4 GPUs, with its split note) ended in
    "AttributeError: 'NoneType' object has no attribute 'name'" when its uniform baseline,
    sized at no GPU count, was routed on 1 GPU to score its accuracy."""
    scenario = _qwen72_block_fp8(tmp_path)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out")
    assert code == 0 and "Traceback" not in err, err[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    uniform = summary["savings"]["uniform"]["t"]
    assert uniform["slo_met"] is False and uniform["replicas"] is None
    assert uniform["infeasible"] == SPLIT_AND_TOO_SMALL
    assert uniform["accuracy"] == summary["accuracy"]  # one tier: as accurate at any size


def test_a_plan_of_a_tier_no_gpu_count_loads_says_so(tmp_path, capsys) -> None:
    """The same tier planned ended on the same AttributeError (its uniform fleet's accuracy
    source, routed on 1 GPU); it is one plan that meets nothing, saying why."""
    scenario = _qwen72_block_fp8(tmp_path)
    code, err = run_cli(capsys, "plan", scenario, "--out", tmp_path / "plan")
    assert code == 1 and "Traceback" not in err, err[-2000:]
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert plan["plan"] is None
    assert [u["design"] for u in plan["uniform"]] == ["t"]
    assert plan["uniform"][0]["missed"] == SPLIT_AND_TOO_SMALL


#: The language model of a Ministral 3 3B config.json (mistralai/Ministral-3-3B-Instruct-2512:
#: a mistral3 wrapper over text_config model_type 'ministral3', as Devstral 2's checkpoints
#: declare too). Shapes as transformers' VoxtralRealtimeConfig writes the same 3B backbone's
#: defaults (hidden 3072, 26 layers, 32 / 8 heads of 128, MLP 9216, vocabulary 131072, tied);
#: the YaRN rope_parameters block (with its llama_4_scaling_beta) as Ministral 3 configs carry it.
MINISTRAL3_3B_TEXT = {"model_type": "ministral3", "hidden_size": 3072, "intermediate_size": 9216,
                      "num_hidden_layers": 26, "num_attention_heads": 32,
                      "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
                      "max_position_embeddings": 262144, "tie_word_embeddings": True,
                      "sliding_window": None,
                      "rope_parameters": {"rope_type": "yarn", "type": "yarn", "factor": 16.0,
                                          "original_max_position_embeddings": 16384,
                                          "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                                          "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1,
                                          "rope_theta": 1000000.0}}


def test_ministral3_is_read_as_mistral(tmp_path: Path) -> None:
    """'ministral3' read "key 'text_config.model_type': 'ministral3' is not supported": it is
    Mistral's architecture (its llama_4_scaling_beta scales the queries, no weights). By hand:
    26 x (3072 x 4096 + 2 x 3072 x 1024 + 4096 x 3072 + 3 x 3072 x 9216 + 2 x 3072) + 131072 x
    3072 (tied) + 3072 = 3,429,006,336 parameters; 26 x 8 x 128 x 2 x 2 bytes of KV a token;
    YaRN's 16384 x 16 = 262,144 tokens of context."""
    config = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
              "text_config": MINISTRAL3_3B_TEXT, "vision_config": {"model_type": "pixtral"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.warns(Note, match="a mistral3 model: tiersim serves its language model"):
        model = load_hf_config(tmp_path)
    assert model.total_params == 3_429_006_336
    assert kv_bytes_per_token(model, "bf16") == 26 * 8 * 128 * 2 * 2
    assert (model.max_context, model.tie_embeddings) == (262144, True)
