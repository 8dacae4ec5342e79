"""Build a :class:`ModelArch` from a Hugging Face ``config.json``.

Supported ``model_type`` values and the keys read:

- dense ``llama``, ``mistral``, ``qwen2``, ``qwen3``: hidden_size, num_hidden_layers,
  num_attention_heads, num_key_value_heads (default: its type's transformers default,
  :data:`tiersim.hf_text.KV_HEADS_DEFAULTS`, else the query heads), head_dim (default
  hidden_size / heads), intermediate_size, vocab_size, tie_word_embeddings (default false; a
  multimodal wrapper's own where its ``text_config`` has none);
  for every type, max_position_embeddings and rope_scaling / rope_parameters (the context
  vLLM serves: :func:`~tiersim.hardware.hf_fields._max_context`).
- ``qwen3_moe``: as above plus num_experts, num_experts_per_tok, moe_intermediate_size; every
  layer must be MoE (``decoder_sparse_step`` 1, ``mlp_only_layers`` naming none of the layers:
  empty, or indices past them, as vLLM reads it).
- ``qwen2_moe`` (Qwen1.5-MoE, Qwen2-57B-A14B): as ``qwen3_moe`` without q/k norms, plus a
  shared expert of ``shared_expert_intermediate_size`` in every layer.
- ``gpt_oss``: num_local_experts, num_experts_per_tok (vLLM's key; OpenAI's experts_per_token
  only where it is absent and says transformers' default, 4), intermediate_size
  (the expert width), head_dim, num_key_value_heads, sliding_window and layer_types (layers typed
  ``sliding_attention``; without layer_types, the even layers, as gpt-oss alternates them).
  Attention sinks and biases are ignored (well under 0.1% of weights and time).

- ``mixtral``, ``minimax_m2``: MoE in every layer; ``num_local_experts``, ``num_experts_per_tok``,
  ``intermediate_size`` (the expert width); no shared expert, as vLLM builds none (a
  ``shared_intermediate_size`` other than 0 is a note).
  ``phimoe`` (Phi-3.5-MoE) reads as ``mixtral`` (:data:`ALIASES`).
- ``deepseek_v3``, ``kimi_k2``, ``deepseek_v2`` (MLA + MoE; DeepSeek-V2-Lite has no query
  LoRA): ``kv_lora_rank``, ``q_lora_rank`` (null: none),
  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``, ``n_routed_experts``,
  ``moe_intermediate_size``, ``n_shared_experts``, ``first_k_dense_replace`` (dense leading
  layers of width ``intermediate_size``); ``moe_layer_freq`` must be 1; ``q_lora_rank``,
  ``n_shared_experts`` and ``first_k_dense_replace`` must be written out (null: none; 0 for
  ``first_k_dense_replace``, whose null vLLM fails on), as transformers' defaults for them are
  not none.
- ``deepseek_v32``, ``glm_moe_dsa`` (DeepSeek sparse attention: DeepSeek-V3.2, GLM-5): as
  ``deepseek_v3`` plus the indexer's ``index_n_heads``, ``index_head_dim`` and ``index_topk``.
- ``glm4_moe`` (GLM-4.5, GLM-4.6, GLM-4.5-Air): DeepSeek's MoE layout under grouped-query
  attention, as vLLM's glm4_moe.py builds it: ``first_k_dense_replace`` dense layers of
  ``intermediate_size``, then ``n_routed_experts`` experts of ``moe_intermediate_size`` and
  ``n_shared_experts`` shared ones of that width (both keys written out, as for MLA);
  ``use_qk_norm``; ``num_nextn_predict_layers`` counted in the checkpoint's size only; the
  q/k/v biases (under 0.01% of the weights) not counted.
- ``qwen3_next``, ``qwen3_5_text``, ``qwen3_5_moe_text`` (gated delta-net hybrids): the layers
  typed ``linear_attention`` in ``layer_types`` (else all but each ``full_attention_interval``-th)
  are delta-net layers of ``linear_num_key_heads`` / ``linear_num_value_heads`` heads of
  ``linear_key_head_dim`` / ``linear_value_head_dim`` with a ``linear_conv_kernel_dim``-tap
  convolution; the others softmax attention with a gated query (``attn_output_gate``, default
  true); ``mamba_ssm_dtype`` the state's dtype (default BF16, vLLM's ``auto``); MoE fields as
  ``qwen3_moe`` plus ``shared_expert_intermediate_size`` (``qwen3_5_text``: a dense
  ``intermediate_size``); ``mtp_num_hidden_layers`` counted in the checkpoint's size only.
- A multimodal wrapper (``kimi_k25``, ``qwen3_vl``, ``qwen3_vl_moe``, ``qwen3_5``,
  ``qwen3_5_moe``) is read through its
  ``text_config`` (InternVL's ``llm_config``, DeepSeek-VL2's ``language_config``) when that
  holds a supported type (the vision tower is not modelled; a ``llama``, ``mistral`` or ``qwen2``
  one that leaves out sizes, written as a diff, takes transformers' class defaults for them:
  :data:`TEXT_CLASS_DEFAULTS`);
  ``qwen3_vl_text`` / ``qwen3_vl_moe_text`` read as ``qwen3`` / ``qwen3_moe``, ``phi3``
  (Phi-3, Phi-4: fused ``qkv_proj`` / ``gate_up_proj``, which ignore lists may name) as
  ``llama``, ``ministral3`` (Ministral 3, Devstral 2) as ``mistral``, ``mimo`` as ``qwen2``
  (its multi-token-prediction layer counted in the checkpoint's size only);
  ``qwen2_vl`` / ``qwen2_5_vl`` as ``qwen2``, through their ``text_config`` or, where they have
  none, their top-level keys.

Weight formats (``quantization_config`` in the config, or, only where the config has none, as
vLLM reads them, NVIDIA's ``hf_quant_config.json`` beside it: ``<folder>/hf_quant_config.json``
or ``<stem>_hf_quant_config.json`` for a file named ``<stem>_config.json``; a note names a side
file the config overrides that names other formats, or that tiersim cannot read; where there
is neither, the config's ``compression_config``, in which early compressed-tensors checkpoints
keep their block; with none of them, an AutoGPTQ / AutoAWQ ``quantize_config.json`` /
``quant_config.json`` beside it is a note, not read: vLLM opens it only under ``--quantization``,
and without that loads the weights as BF16): ``quant_method`` ``fp8``
(``weight_block_size`` -> ``fp8_block``, else per-tensor ``fp8``), ``fbgemm_fp8`` (Meta's
per-channel FP8, read as ``fp8``, but its ``modules_to_not_convert``), ``mxfp4`` (the routed
experts only, as vLLM loads gpt-oss; a model without experts keeps every layer BF16, with a note, as
does any block whose formats name only groups the model lacks),
``compressed-tensors`` (``config_groups``: INT4 weights -> ``w4a16`` with its group size, but
refused beside quantised ``input_activations`` (W4A8, which tiersim does not model); FP4
with 16-wide groups -> ``nvfp4``; FP8 -> ``fp8`` or, block strategy, ``fp8_block``; the
activations are 16-bit unless the group's ``input_activations`` says otherwise, so FP4, FP8 or
INT8 weights whose ``input_activations`` is null or missing are the weight-only ``nvfp4a16`` /
``fp8a16`` / ``w8a16`` (INT8 per group or per channel; per tensor, which vLLM does not serve,
is refused), with a note), ``modelopt`` (``quant_algo`` ``FP8``, ``NVFP4``, ``W4A16_NVFP4``
-> ``nvfp4a16`` with a note, ``MIXED_PRECISION`` per layer; NVFP4 of a ``group_size`` other than
16 is refused), and ``awq`` and ``gptq`` (``bits`` 4
-> ``w4a16`` with its ``group_size``, GPTQ ``bits`` 8 -> ``w8a16`` with a note; AWQ only with
``bits``, ``group_size`` and ``zero_point: true`` so spelled, as vLLM's AWQ-Marlin reads it, and
in AutoAWQ's GEMM packing (a ``version`` of ``gemv``, ``gemv_fast`` or ``marlin`` is refused); but
the modules ``modules_to_not_convert`` names, and GPTQModel's per-module ``dynamic`` regexes as
vLLM reads them: ``-:`` leaves a module BF16, ``+:`` overrides its ``bits`` and ``group_size``;
and a GPTQ ``modules_in_block_to_quantize``, where given, quantises the linear modules it names
only (routed experts whatever it says, as vLLM's fused-MoE path reads it);
other bit widths, and group sizes other than 32, 64, 128 and -1 (per channel;
compressed-tensors' integer weights too), which vLLM does not serve with its Marlin kernels,
are refused saying so). The weight-only formats
(:data:`~tiersim.hardware.precisions.WEIGHT_ONLY`) are timed as W4A16 at their own bits a
weight (FP8 and INT8 W8A16 on W4A16's 4-bit tables rescaled by the roofline,
:func:`~tiersim.hardware.precisions.table_format`), as vLLM serves them with weight-only
kernels (one note per file and format, naming its first key and how many more say it).
Ignore / exclude lists, compressed-tensors ``targets`` (a name or regex target before the
``Linear`` class, as vLLM matches them) and ModelOpt's per-layer ``quantized_layers`` (the most
specific key first) are all matched against every layer's member modules of each group, weighed
by their share of its weights: attention's projections by shape, an MLP's gate / up / down a
third each, every routed expert (expert 0 standing for all when no entry singles experts out).
A group partly in another format keeps the format of most of its weights and stores the bits
they average (:func:`~tiersim.hardware.hf_modules._by_module`). Multi-token-prediction layers
are not served and not weighed. Embeddings are never quantised (vLLM loads them in BF16). A
compressed-tensors block with no config group is read as BF16, with a note; sparse weights (a
``sparsity_config`` of a format other than ``dense``, or a ``marlin-24`` format), two groups
both targeting ``Linear``, and a ``quantized_layers`` map no key of which names a module of
the model, are refused.

Anything else is one :class:`TiersimError` line naming the file and the key (its full path:
``quantization_config.quant_algo``, or ``quantization.quant_algo`` in ``hf_quant_config.json``).

The readers live in their own modules, each importing only those before it: ``hf_file`` (the
file and its keys), ``hf_types`` (the model type and wrappers), ``hf_fields`` (the architecture
fields), ``hf_formats`` and ``hf_modules`` (formats, and the modules a list names), ``hf_gptq``,
``hf_compressed``, ``hf_modelopt`` (one quant_method each), ``hf_side`` (the files beside a
config) and ``hf_quant`` (a checkpoint's formats); this module reads a config with them and
re-exports the names used from here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError
from tiersim.hardware.arch import ModelArch
from tiersim.hardware.hf_fields import (
    CONTEXT_KEYS,
    _common,
    _glm4_moe,
    _gpt_oss,
    _hybrid,
    _mla,
    _moe_local,
    _qwen2_moe,
    _qwen3_moe,
    _window,
    hybrid_linear_layers,
)
from tiersim.hardware.hf_file import _Config, _model_name, _read, _refuse_non_finite
from tiersim.hardware.hf_formats import _notes_once
from tiersim.hardware.hf_modules import (
    _LAYER_PREFIXES,
    FUSED_TYPES,
    RegexTimeout,
    Span,
    _members,
    regex_budget,
)
from tiersim.hardware.hf_quant import (
    _note_unread_side,
    checkpoint_formats,
    checkpoint_kv_cache,
    checkpoint_static_fp8,
)
from tiersim.hardware.hf_side import (
    TOLD_QUANT_FILES,
    _note_told_quant_file,
    _side_file,
    hf_quant_path,
)
from tiersim.hardware.hf_types import (
    _served_type,
    _text_config,
    _tied,
    _type_name,
    _unsupported,
    _vision_note,
)
from tiersim.hf_text import (  # noqa: F401 -- the types and wrapper keys, shared with the harness
    ALIASES,
    DENSE_TYPES,
    DSA_TYPES,
    FLAT_WRAPPERS,
    GPT_OSS_TOP_K,
    GQA_MOE_TYPES,
    HYBRID_TYPES,
    MISTRAL_PARAMS,
    MLA_TYPES,
    MOE_LOCAL_TYPES,
    SUPPORTED_TYPES,
    TEXT_CLASS_DEFAULTS,
    TEXT_CONFIG_KEYS,
    holds_mistral_params,
    mistral_params_words,
    text_key,
)
from tiersim.jsonio import MAX_JSON_BYTES

#: The names imported from this module elsewhere (tiersim, its tests and benchmarks).
__all__ = [
    "CONTEXT_KEYS",
    "REGEX_BUDGET_S",
    "SUPPORTED_TYPES",
    "RegexTimeout",
    "checkpoint_formats",
    "hf_quant_path",
    "load_hf_config",
    "regex_budget",
]


def load_hf_config(path: str | Path) -> ModelArch:
    """The architecture a Hugging Face ``config.json`` (or a folder holding one) describes.

    A config read before, with the same bytes in it and in the files beside it that it reads
    (:func:`_read_key`), is not read again: its model is given back and the notes reading it
    gave are raised again. NOTE: a run asks for its tiers' model some fifty times (checks,
    fleet, summary), and a ModelOpt MIXED_PRECISION config naming every expert (36,472 keys,
    4 MB) takes 0.7 s to read: 80 s a run, read each time."""
    path = Path(path)
    if path.is_dir():
        _refuse_folder_without_config(path)
        path = path / "config.json"
    key = _read_key(path)
    if key is None:
        return _load(path)
    if key not in _MODELS_READ:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            model = _load(path)
        while len(_MODELS_READ) >= MODELS_KEPT:
            _MODELS_READ.pop(next(iter(_MODELS_READ)))
        _MODELS_READ[key] = (model, notes)
    model, notes = _MODELS_READ[key]
    for note in notes:
        warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    return model


def _refuse_folder_without_config(folder: Path) -> None:
    """One line for a model folder with no ``config.json`` in it (``model: .`` read "model:
    config.json: cannot read a model config (No such file or directory)", naming no folder)."""
    if (folder / "config.json").exists() or (folder / "config.json").is_symlink():
        return
    where = str(folder) if folder.is_absolute() else f"{folder} ({folder.resolve()})"
    if holds_mistral_params(folder):
        raise TiersimError(f"{where}: a folder with no config.json in it; its "
                           f"{mistral_params_words()}")
    raise TiersimError(f"{where}: a folder with no config.json in it; give the model's "
                       "config.json, the folder holding it (Hugging Face's layout) or a "
                       "catalogue model's name")


def _refuse_mistral_params(path: Path, data: dict[str, Any]) -> None:
    """One line for Mistral's ``params.json`` given as the model's config (it names no
    model_type: the line said only that the key is missing)."""
    if path.name == MISTRAL_PARAMS and "model_type" not in data:
        raise TiersimError(f"{path}: {mistral_params_words()}")


#: How many models read :func:`load_hf_config` keeps (the oldest is dropped first).
MODELS_KEPT = 16
_MODELS_READ: dict[tuple, tuple[ModelArch, list]] = {}


def _read_key(path: Path) -> tuple | None:
    """What reading the config at ``path`` depends on: the path as written (errors and notes
    name it) and the bytes of the config and of each file beside it that is read (NVIDIA's
    ``hf_quant_config.json``, AutoGPTQ / AutoAWQ quantisation files); None where one is
    anything but a readable regular file of at most :data:`~tiersim.jsonio.MAX_JSON_BYTES`
    (read afresh, which names what is wrong)."""
    key: list = [str(path)]
    for name in (path, hf_quant_path(path), *(hf_quant_path(path, n) for n in TOLD_QUANT_FILES)):
        if not os.path.lexists(name) and name != path:
            key.append(None)
            continue
        try:
            if not name.is_file() or name.stat().st_size > MAX_JSON_BYTES:
                return None
            key.append(hashlib.sha256(name.read_bytes()).hexdigest())
        except OSError:
            return None
    return tuple(key)


def _load(path: Path) -> ModelArch:
    """:func:`load_hf_config` of a ``config.json`` path, read afresh."""
    outer = _Config(path, _read(path))
    _refuse_mistral_params(path, outer.data)
    _type_name(outer)
    cfg, wrapper_quant = _text_config(outer)
    model_type = _served_type(cfg, outer)
    wrapped = cfg is not outer or outer.data.get("model_type") in FLAT_WRAPPERS
    if model_type not in SUPPORTED_TYPES:
        raise _unsupported(cfg, outer, model_type)
    if wrapped:
        _vision_note(outer, str(model_type))
    fields = _common(cfg, _model_name(path))
    fields["tie_embeddings"] = _tied(cfg, outer)
    if model_type not in (*MLA_TYPES, *HYBRID_TYPES, "gpt_oss"):
        fields.update(_window(cfg, model_type, fields["layers"]))
    if model_type in DENSE_TYPES:
        fields["intermediate"] = cfg.int("intermediate_size")
        fields["qk_norm"] = model_type == "qwen3"
        fields["mtp_layers"] = cfg.count("num_nextn_predict_layers")
    elif model_type == "qwen3_moe":
        fields.update(_qwen3_moe(cfg))
    elif model_type == "qwen2_moe":
        fields.update(_qwen2_moe(cfg))
    elif model_type in MOE_LOCAL_TYPES:
        fields.update(_moe_local(cfg))
    elif model_type in MLA_TYPES:
        fields.update(_mla(cfg))
    elif model_type in HYBRID_TYPES:
        fields.update(_hybrid(cfg, fields["layers"], model_type))
    elif model_type in GQA_MOE_TYPES:
        fields.update(_glm4_moe(cfg))
    else:
        fields.update(_gpt_oss(cfg, fields["layers"]))
    if fields.get("num_experts") and fields["top_k"] > fields["num_experts"]:
        key = ("experts_per_token" if model_type == "gpt_oss"
               and cfg.data.get("num_experts_per_tok") is None else "num_experts_per_tok")
        raise cfg.error(key, f"must not exceed the number of experts ({fields['num_experts']})")
    quant, quant_key = wrapper_quant, "quantization_config"  # vLLM reads the wrapper's first,
    if quant is None:  # its text_config's only where the wrapper has none
        quant, quant_key = cfg.data.get("quantization_config"), f"{cfg.prefix}quantization_config"
    if quant is None and outer.data.get("compression_config") is not None and _side_file(
            path) is None:  # early compressed-tensors checkpoints' key, which vLLM reads last
        quant, quant_key = outer.data["compression_config"], "compression_config"
    fused = str(cfg.data.get("model_type")) in FUSED_TYPES
    span = Span(fields["layers"], fields.get("dense_layers", 0),
                _members(fields, model_type, fused),
                _LAYER_PREFIXES if wrapped else _LAYER_PREFIXES[:1],
                fields.get("mtp_layers", 0),
                hybrid_linear_layers(cfg, fields["layers"]) if model_type in HYBRID_TYPES
                else frozenset())
    formats, kv_cache = _quant_of(path, quant, span, quant_key)
    mtp_formats = _mtp_formats(path, quant, span, quant_key, model_type) if formats else None
    if quant is None and not hf_quant_path(path).is_file():
        _note_told_quant_file(path)
    arch = ModelArch(**fields)
    present = {g for g, n in arch.param_groups().items() if n > 0}
    kept = tuple(f for f in formats if f[0] in present)
    if formats and not kept:
        _note_no_layer_quantised(f"{path}: key {quant_key!r}" if quant
                                 else str(hf_quant_path(path)), formats)
    mtp_kept = None if mtp_formats in (None, formats) else tuple(
        f for f in mtp_formats if f[0] in present)
    static = bool(kept) and checkpoint_static_fp8(path, quant)
    return dataclasses.replace(arch, checkpoint=kept, mtp_checkpoint=mtp_kept, kv_cache=kv_cache,
                               static_fp8_activations=static)


#: Where the multi-token-prediction layers of a hybrid (Qwen3-Next, Qwen3.5) live: their own
#: ``mtp.layers.{i}.`` modules; other types number them after the decoder layers.
MTP_PREFIXES = ("mtp.layers.{i}.",)


def _mtp_formats(path: Path, quant: Any, span: Span, key: str, model_type: str):
    """The formats of the ``span.extra`` multi-token-prediction layers, read from the names
    their modules have (ModelOpt's NVFP4 exports list them in ``ignore``: BF16), or ``None``
    where the model has none. Their notes are the model's, given once already."""
    if not span.extra:
        return None
    hybrid = model_type in HYBRID_TYPES
    mtp = dataclasses.replace(span, total=span.extra, dense=0, extra=0, linear=frozenset(),
                              start=0 if hybrid else span.total, mtp=True,
                              prefixes=MTP_PREFIXES if hybrid else span.prefixes)
    with regex_budget(REGEX_BUDGET_S), _notes_once(emit=False):
        return checkpoint_formats(path, quant, mtp, f"{key}.")


def _note_no_layer_quantised(where: str, formats: tuple) -> None:
    """A note that the checkpoint's ``formats`` (declared at ``where``: the file and key)
    apply only to groups this model lacks (the ``mxfp4`` method, which vLLM applies to MoE
    experts only, on a dense model): no layer is quantised, so the weights are read as BF16,
    as vLLM loads them."""
    names = ", ".join(sorted({fmt for _, fmt, _ in formats}))
    groups = " and ".join(sorted({GROUP_WORDS.get(g, g) for g, _, _ in formats}))
    warnings.warn(Note(f"{where}: its {names} format applies to {groups} only (as vLLM loads "
                       "it), and this model has none: no layer is quantised, so its weights are "
                       "read as BF16; remove the quantisation block if they are BF16, or set "
                       "the tier's precision to serve another format"), stacklevel=3)


#: How a note names a parameter group.
GROUP_WORDS = {"experts": "the MoE experts", "shared_experts": "the shared experts",
               "mlp": "dense MLPs", "attention": "attention"}


def _quant_of(path: Path, quant: Any, span: Span, key: str = "quantization_config"
              ) -> tuple[tuple, str]:
    """The checkpoint's weight formats and KV-cache format, or one line naming the file whose
    quantisation block (at key path ``key``: ``text_config.quantization_config`` in a
    multimodal wrapper) is not in a layout tiersim reads (a list where a map goes, a bad regex
    in an ignore list ...)."""
    side = hf_quant_path(path)
    where = (f"{path}: key {key!r}" + (f" (or {side.name} beside it)" if side.is_file() else ""))
    if isinstance(quant, dict):
        _refuse_non_finite(path, quant, key)
    try:
        with regex_budget(REGEX_BUDGET_S), _notes_once():
            formats = checkpoint_formats(path, quant, span, f"{key}.")
            kv_cache = checkpoint_kv_cache(path, quant, f"{key}.")
            if quant and side.is_file():
                _note_unread_side(path, side, (formats, kv_cache), span)
            return formats, kv_cache
    except TiersimError:
        raise
    except RegexTimeout:
        experts = getattr(span.members.get("experts"), "experts", 1)
        of = f" of {experts:,} experts each" if experts > 1 else ""
        raise TiersimError(f"{where}: matching {_lists_matched(quant)} against the module names "
                           f"of the model's {span.total:,} layers{of} took over "
                           f"{REGEX_BUDGET_S:g} s (a 're:' pattern that backtracks without end, "
                           f"a list that long, or that many layers{' or experts' * bool(of)}); "
                           "simplify it") from None
    except (AttributeError, TypeError, ValueError, KeyError, IndexError, OverflowError,
            RecursionError, re.error) as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise TiersimError(f"{where}: not in a layout tiersim reads ({type(exc).__name__}: "
                           f"{text}); see the quant_method's documented layout (fp8, mxfp4, "
                           "compressed-tensors, modelopt, awq, gptq)") from None


def _lists_matched(quant: Any) -> str:
    """The lists of module names a quantisation block's modules are matched against, for a
    message: ModelOpt's ``quantized_layers``, GPTQModel's ``dynamic`` rules, compressed-tensors'
    ``targets``; its ignore list otherwise (a block of MIXED_PRECISION keys read "matching its
    ignore list", which it does not have)."""
    quant = quant if isinstance(quant, dict) else {}
    if quant.get("quantized_layers"):
        return "its quantized_layers keys"
    if quant.get("dynamic"):
        return "its dynamic rules and ignore list"
    if quant.get("config_groups"):
        return "its config groups' targets and ignore list"
    return "its ignore list"


#: Seconds of CPU time the ignore-list patterns of one config may take to match, in all.
REGEX_BUDGET_S = 2.0
