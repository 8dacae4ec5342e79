"""Models a new user brings that tiersim's benchmarks do not cover (helper newmodels, round 46):
where a note or refusal names the file and key a value came from, it names the one it was read
from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.errors import Note
from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf.memory import checkpoint_bytes

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
