"""Round 22 (models2) of hostile input, each a failure found from outside and fixed: the exact
line a user sees, or the number that was wrong. Hugging Face config.json reading, checked
against vLLM's reading (config/model.py ``_get_and_verify_max_len``, transformers_utils/
config.py ``patch_rope_parameters``) and transformers' (``PretrainedConfig``)."""

from __future__ import annotations

import json
import warnings

import pytest
from test_round19 import _config
from test_round21_models2 import _DSV3, _refused

from tiersim.errors import Note, TiersimError
from tiersim.hardware.hf_config import load_hf_config

# ------------------------------------------------------------------ no context key at all

_NO_LENGTH = {"max_position_embeddings": None}


def _read_noting(path):
    """The model ``path`` reads as, and the texts of the notes it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_config_without_a_length_key_serves_vllms_2048_tokens(tmp_path):
    """vLLM's ``_get_and_verify_max_len`` assumes 2,048 tokens (with a warning) where none of
    its length keys is given; tiersim read no limit, so requests vLLM refuses were served."""
    path = _config(tmp_path, **_NO_LENGTH)
    model, notes = _read_noting(path)
    assert model.max_context == 2048 and model.context_assumed
    assert notes == [f"{path}: no context-length key (max_position_embeddings, n_positions, "
                     "max_seq_len, seq_length, ...): tiersim serves 2,048 tokens, as vLLM "
                     "assumes; write max_position_embeddings, or set the tier's "
                     "scheduler.max_model_len"]


def test_the_assumed_2048_is_stretched_by_a_rope_factor_as_vllm_does(tmp_path):
    path = _config(tmp_path, **_NO_LENGTH, rope_scaling={"rope_type": "linear", "factor": 4.0})
    assert _read_noting(path)[0].max_context == 8192


def test_an_asked_max_model_len_beside_no_length_key_is_served_as_asked(tmp_path):
    """vLLM returns the max_model_len asked for unchecked where the config has no length key
    (``_get_and_verify_max_len``); the assumed 2,048 does not refuse it."""
    from tiersim.fleet import context_problem
    from tiersim.scenario import TierConfig

    path = _config(tmp_path, **_NO_LENGTH)
    tier = TierConfig.model_validate({"name": "t", "model": str(path), "precision": "bf16",
                                      "replicas": 1, "cost_per_gpu_hour": 1.0,
                                      "scheduler": {"max_model_len": 32768}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert context_problem(tier, str(path)) is None



# ------------------------------------------------------------------ YaRN's pretraining length

_YARN = {"rope_type": "yarn", "factor": 4.0}


def test_a_yarn_block_without_its_original_length_is_one_line(tmp_path, capsys):
    """vLLM's ``_get_and_verify_max_len`` reads a YaRN block's
    ``original_max_position_embeddings`` (a KeyError with transformers 4; transformers 5's
    ``standardize_rope_params`` puts max_position_embeddings there); tiersim stretched the
    smallest length key silently."""
    path = _config(tmp_path, rope_scaling=_YARN)
    _refused(tmp_path, capsys, path, (
        "key 'rope_scaling.original_max_position_embeddings': missing; vLLM stretches a YaRN "
        "block's pretraining context, which it reads there (with transformers 4 it stops on a "
        "KeyError; transformers 5 puts max_position_embeddings there): write the context the "
        "model was trained at"), precision="bf16")


def test_a_top_level_original_length_is_read_over_the_yarn_blocks(tmp_path):
    """vLLM's ``patch_rope_parameters`` (transformers 4) and transformers 5's
    ``standardize_rope_params`` both copy a top-level ``original_max_position_embeddings`` into
    the YaRN block over the block's own; tiersim read the block's alone."""
    yarn = {**_YARN, "original_max_position_embeddings": 32768}
    assert load_hf_config(_config(tmp_path, rope_scaling=yarn)).max_context == 131072
    top = _config(tmp_path, rope_scaling=yarn, original_max_position_embeddings=8192)
    assert load_hf_config(top).max_context == 32768
    alone = _config(tmp_path, rope_scaling=_YARN, original_max_position_embeddings=8192)
    assert load_hf_config(alone).max_context == 32768


# ------------------------------------------------------------------ AWQ's packed layout

_AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}


@pytest.mark.parametrize("version", ["gemv", "GEMV", "gemv_fast", "marlin"])
def test_an_awq_block_of_another_packing_than_gemm_is_one_line(tmp_path, capsys, version):
    """vLLM's awq.py / awq_marlin.py read no ``version`` and create AWQ weights in AutoAWQ's
    GEMM packing only (qweight [in, out / 8], scales [in / group, out]); a GEMV, GEMV-fast or
    Marlin export does not load. tiersim read them as W4A16."""
    path = _config(tmp_path, quantization_config={**_AWQ, "version": version})
    _refused(tmp_path, capsys, path, (
        f"key 'quantization_config.version': {version!r}: vLLM loads AWQ weights packed as "
        "AutoAWQ's GEMM layout only (its AWQ and AWQ-Marlin kernels read qweight as [in, "
        "out / 8]); re-export the checkpoint with version 'gemm'"))


@pytest.mark.parametrize("version", ["gemm", "GEMM", "exllama", None])
def test_an_awq_block_of_gemm_packing_reads_as_w4a16(tmp_path, version):
    """transformers' ExLlama and IPEX versions run on GEMM-packed weights."""
    model = load_hf_config(_config(tmp_path, quantization_config={**_AWQ, "version": version}))
    assert model.checkpoint == (("attention", "w4a16", 4.125), ("mlp", "w4a16", 4.125))


# ------------------------------------------------------------------ a byte-order mark

_BOM_LINE = ("starts with a UTF-8 byte-order mark, which transformers' config reader, and so "
             "vLLM, refuses (PretrainedConfig._dict_from_json_file: json.loads 'Unexpected UTF-8 "
             "BOM'); save it as UTF-8 without one")


def test_a_config_json_with_a_byte_order_mark_is_one_line(tmp_path, capsys):
    """transformers opens config.json as UTF-8 and json.loads the text, which refuses a
    leading BOM; tiersim read past it (round 9), simulating a model vLLM does not start."""
    path = _config(tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    _refused(tmp_path, capsys, path, _BOM_LINE, precision="bf16")


def test_an_hf_quant_config_with_a_byte_order_mark_is_one_line(tmp_path):
    """vLLM's get_hf_file_to_dict json.loads NVIDIA's side file the same way."""
    path = _config(tmp_path)
    side = path.parent / "hf_quant_config.json"
    side.write_bytes(b"\xef\xbb\xbf" + json.dumps({"quantization": {"quant_algo": "FP8"}})
                     .encode())
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{side}: {_BOM_LINE}"


def test_calibrate_refuses_a_config_json_with_a_byte_order_mark(tmp_path):
    from tiersim.calibrate import shapes
    from tiersim.calibrate.errors import CalibrateError

    path = _config(tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == f"{path}: {_BOM_LINE}"


# ------------------------------------------------------------------ Qwen MoE's dense layers

_QWEN3_MOE = {"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 768, "num_hidden_layers": 4}


@pytest.mark.parametrize("listed", [[4], [-1, 99], [4, 4], ["0"], [None], []])
def test_mlp_only_layers_naming_no_layer_reads_every_layer_moe(tmp_path, listed):
    """vLLM's qwen3_moe.py / qwen2_moe.py make a layer dense where ``layer_idx in
    mlp_only_layers``: an index past the layers (or negative, or no number) names none, so
    every layer is MoE; tiersim refused any non-empty list as 'dense layers inside a MoE
    model'."""
    model = load_hf_config(_config(tmp_path, **_QWEN3_MOE, mlp_only_layers=listed))
    assert model.num_experts == 8 and model.expert_intermediate == 768


@pytest.mark.parametrize("listed", [[3], [4, 0, 0], [2.0]])
def test_mlp_only_layers_naming_a_layer_is_still_one_line(tmp_path, capsys, listed):
    path = _config(tmp_path, **_QWEN3_MOE, mlp_only_layers=listed)
    _refused(tmp_path, capsys, path, "key 'mlp_only_layers': dense layers inside a MoE model "
             "are not supported", precision="bf16")


@pytest.mark.parametrize("value", [3, 0, "3", True])
def test_mlp_only_layers_that_is_no_list_is_one_line(tmp_path, capsys, value):
    """vLLM's ``layer_idx not in mlp_only_layers`` fails on a number or a string."""
    path = _config(tmp_path, **_QWEN3_MOE, mlp_only_layers=value)
    _refused(tmp_path, capsys, path, f"key 'mlp_only_layers': must be a list of layer indices "
             f"(got {json.dumps(value)})", precision="bf16")  # round 52: as JSON writes it


# ------------------------------------------------------------------ DeepSeek's dense layers

def test_a_null_first_k_dense_replace_is_one_line(tmp_path, capsys):
    """vLLM's deepseek_v2.py makes a layer MoE where ``layer_idx >=
    config.first_k_dense_replace`` (transformers' DeepseekV3DecoderLayer likewise): null fails
    the comparison, so vLLM does not build the model; tiersim read it as no dense layer."""
    path = _config(tmp_path, **{**_DSV3, "first_k_dense_replace": None})
    _refused(tmp_path, capsys, path, (
        "key 'first_k_dense_replace': null; vLLM's DeepSeek decoder layers compare each "
        "layer's index with it (layer_idx >= first_k_dense_replace), which fails on null: "
        "write 0 for no dense layer"), precision="bf16")


def test_a_missing_first_k_dense_replace_says_to_write_0(tmp_path, capsys):
    path = _config(tmp_path, **_DSV3)
    doc = json.loads(path.read_text())
    del doc["first_k_dense_replace"]
    path.write_text(json.dumps(doc))
    _refused(tmp_path, capsys, path, (
        "key 'first_k_dense_replace': missing; transformers would take deepseek_v3's default, "
        "not none: write it out (0 for none)"), precision="bf16")


# ------------------------------------------------------------------ MiniMax-M2's shared expert

_MINIMAX = {"model_type": "minimax_m2", "num_local_experts": 8, "num_experts_per_tok": 2,
            "intermediate_size": 1536, "head_dim": 128}


@pytest.mark.parametrize("model_type", ["minimax_m2", "mixtral"])
def test_a_shared_intermediate_size_builds_no_shared_expert(tmp_path, model_type):
    """vLLM's minimax_m2.py MiniMaxM2MoE (and mixtral.py MixtralMoE) hold the routed experts
    only and read no shared_intermediate_size; tiersim added a shared expert of that width to
    every layer (weights, memory and time vLLM never spends)."""
    path = _config(tmp_path, **{**_MINIMAX, "model_type": model_type},
                   shared_intermediate_size=3072)
    model, notes = _read_noting(path)
    assert model.shared_intermediate == 0
    assert notes == [f"{path}: key 'shared_intermediate_size' is 3072: vLLM's {model_type} "
                     "model builds no shared expert (routed experts only), so none is counted"]
    plain, quiet = _read_noting(_config(tmp_path, **{**_MINIMAX, "model_type": model_type},
                                        shared_intermediate_size=0))
    assert plain.total_params == model.total_params and quiet == []


# ------------------------------------------------------------------ LongRoPE's default length

_LONGROPE = {"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48,
                              "long_factor": [1.0] * 48},
             "original_max_position_embeddings": 4096}


@pytest.mark.parametrize("kind", ["longrope", "su"])
def test_a_longrope_model_serves_its_original_length_by_default(tmp_path, kind):
    """vLLM's ``_get_and_verify_max_len`` defaults a LongRoPE model's max_model_len to its
    top-level ``original_max_position_embeddings`` (Phi-3-mini-128k: 4,096, "to avoid
    performance degradation for shorter sequences"), allowing up to the derived length when
    asked; tiersim served the whole 131,072 by default."""
    from tiersim.fleet import context_problem, limits
    from tiersim.scenario import TierConfig

    rope = {**_LONGROPE["rope_scaling"], "type": kind}
    path = _config(tmp_path, **{**_LONGROPE, "rope_scaling": rope})
    model = load_hf_config(path)
    assert (model.max_context, model.context_limit) == (4096, 131072)

    def tier(asked):
        return TierConfig.model_validate({"name": "t", "precision": "bf16", "replicas": 1,
                                          "cost_per_gpu_hour": 1.0,
                                          "scheduler": {"max_model_len": asked}})
    assert limits(tier(None), str(path)).max_model_len == 4096
    assert limits(tier(131072), str(path)).max_model_len == 131072
    assert context_problem(tier(131073), str(path)) == (
        "131073 is above model's context (131072 tokens); set it to at most 131072")


def test_a_longrope_model_without_an_original_length_serves_its_own(tmp_path):
    path = _config(tmp_path, rope_scaling=_LONGROPE["rope_scaling"])
    assert load_hf_config(path).max_context == 131072
