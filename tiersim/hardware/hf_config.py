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
  ``llama``, ``mimo`` as ``qwen2`` (its multi-token-prediction layer counted in the
  checkpoint's size only);
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
they average (:func:`_by_module`). Multi-token-prediction layers are not served and not
weighed. Embeddings are never quantised (vLLM loads them in BF16). A compressed-tensors block
with no config group is read as BF16, with a note; sparse weights (a ``sparsity_config`` of a
format other than ``dense``, or a ``marlin-24`` format), two groups both targeting ``Linear``,
and a ``quantized_layers`` map no key of which names a module of the model, are refused.

Anything else is one :class:`TiersimError` line naming the file and the key (its full path:
``quantization_config.quant_algo``, or ``quantization.quant_algo`` in ``hf_quant_config.json``).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import fnmatch
import json
import os
import re
import signal
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown
from tiersim.hardware.arch import ModelArch
from tiersim.hardware.hf_fields import (
    CONTEXT_KEYS,
    EveryButNth,
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
from tiersim.hardware.hf_types import (
    _served_type,
    _text_config,
    _tied,
    _type_name,
    _unsupported,
    _vision_note,
)
from tiersim.hardware.precisions import PER_CHANNEL, WEIGHT_ONLY, prior_name
from tiersim.hf_text import (  # noqa: F401 -- the types and wrapper keys, shared with the harness
    ALIASES,
    DENSE_TYPES,
    DSA_TYPES,
    FLAT_WRAPPERS,
    GPT_OSS_TOP_K,
    GQA_MOE_TYPES,
    HYBRID_TYPES,
    MLA_TYPES,
    MOE_LOCAL_TYPES,
    SUPPORTED_TYPES,
    TEXT_CLASS_DEFAULTS,
    TEXT_CONFIG_KEYS,
    class_defaults_left_out,
    defaults_note,
    kv_heads_left_out,
    language_model_key,
    served_type,
    text_key,
    type_not_a_name,
)

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

#: Member-name prefixes of attention modules: a hybrid's softmax and delta-net layers each hold
#: their own (:meth:`Span.holds`).
ATTENTION_MODULES = ("self_attn.", "linear_attn.")
_LAYER_PREFIXES = ("model.layers.{i}.", "language_model.model.layers.{i}.",
                   "model.language_model.layers.{i}.")


def load_hf_config(path: str | Path) -> ModelArch:
    """The architecture a Hugging Face ``config.json`` (or a folder holding one) describes."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    outer = _Config(path, _read(path))
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
    if not quant:  # its text_config's only where the wrapper has none
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
    return dataclasses.replace(arch, checkpoint=kept, mtp_checkpoint=mtp_kept, kv_cache=kv_cache)


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
            kv_cache = checkpoint_kv_cache(path, quant)
            if quant and side.is_file():
                _note_unread_side(path, side, (formats, kv_cache), span)
            return formats, kv_cache
    except TiersimError:
        raise
    except RegexTimeout:
        raise TiersimError(f"{where}: matching its ignore list against the module names of "
                           f"the model's {span.total:,} layers took over {REGEX_BUDGET_S:g} s (a "
                           "'re:' pattern that backtracks without end, a list that long, or "
                           "that many layers); simplify it") from None
    except (AttributeError, TypeError, ValueError, KeyError, IndexError, OverflowError,
            RecursionError, re.error) as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise TiersimError(f"{where}: not in a layout tiersim reads ({type(exc).__name__}: "
                           f"{text}); see the quant_method's documented layout (fp8, mxfp4, "
                           "compressed-tensors, modelopt, awq, gptq)") from None


#: Seconds of CPU time the ignore-list patterns of one config may take to match, in all.
REGEX_BUDGET_S = 2.0


class RegexTimeout(Exception):
    """An ignore-list regex ran past :data:`REGEX_BUDGET_S` (see :func:`regex_budget`)."""


@contextlib.contextmanager
def regex_budget(seconds: float):
    """Raise :class:`RegexTimeout` in the block once it has spent ``seconds`` of CPU time, so
    a pattern that backtracks without end (``re:(.|.)*X``) cannot hang the command.

    Python's ``re`` has no timeout, but its matcher checks for signals, so a timer interrupts
    it. The timer counts the process's user CPU time (``ITIMER_VIRTUAL``), not wall time: a
    real-time timer ran out on a busy machine while the process waited for a CPU, and refused
    configs that match in 0.4 s of CPU. ``SIGPROF`` is left to the memory guard
    (:mod:`tiersim.memory`). Only the main thread of a process can take signals: elsewhere (a
    thread pool), or where the timer is already running or the platform has none, the block
    runs without a budget.
    """
    usable = (hasattr(signal, "setitimer") and hasattr(signal, "SIGVTALRM")
              and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0)
    if not usable:
        yield
        return

    def expired(signum, frame):
        raise RegexTimeout

    previous = signal.signal(signal.SIGVTALRM, expired)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


# --------------------------------------------------------------------------- weight formats


#: The key path of a config.json's quantisation block, as its errors name its keys.
QUANT_KEY = "quantization_config."


def hf_quant_path(path: Path, name: str = "hf_quant_config.json") -> Path:
    """NVIDIA's ``hf_quant_config.json`` (or another file ``name``) beside ``path``: in the
    same folder, or, for a config named ``<stem>_config.json``, as ``<stem>_<name>``."""
    if path.name == "config.json":
        return path.with_name(name)
    return path.with_name(path.name.removesuffix("config.json") + name)


#: Quantisation files of AutoGPTQ / AutoAWQ exports that vLLM opens only when told the format
#: (``--quantization gptq|awq``: its ``get_quant_config``), never to detect it.
TOLD_QUANT_FILES = ("quantize_config.json", "quant_config.json")


def _note_told_quant_file(path: Path) -> None:
    """A note when a config with no quantisation block (nor ``hf_quant_config.json``) has an
    AutoGPTQ / AutoAWQ block beside it (:data:`TOLD_QUANT_FILES`): vLLM detects a checkpoint's
    formats from the config (it opens that file only under ``--quantization``, and without it
    loads the weights as BF16), so tiersim reads them as BF16 too, and says so."""
    side = next((s for s in (hf_quant_path(path, n) for n in TOLD_QUANT_FILES)
                 if s.is_file()), None)
    if side is None:
        return
    try:
        said = json.loads(side.read_text(encoding="utf-8-sig")).get("quant_method")
    except (OSError, ValueError, AttributeError, RecursionError):  # unreadable: no method
        said = None
    method = said if said in ("gptq", "awq") else "gptq or awq"
    warnings.warn(Note(f"{side}: a quantisation block beside a config with no "
                       f"quantization_config: vLLM reads it only when told the format "
                       f"(--quantization {method}); without that it loads the weights as BF16, "
                       f"and tiersim sizes them as BF16 too; copy the block into {path.name} as "
                       "quantization_config (with its quant_method), or set the tier's "
                       "precision"), stacklevel=3)


def _side_file(path: Path) -> Path | None:
    """The ``hf_quant_config.json`` beside ``path`` when there is one, else None; one line for
    a name there that is no readable file (a folder, a pipe, a link to nothing: a Hugging
    Face cache whose blob is missing), which would otherwise be skipped as absent. Asked only
    where the config has no quantisation block, as vLLM looks for the file only then."""
    side = hf_quant_path(path)
    if side.is_file():
        return side
    if not os.path.lexists(side):
        return None
    what = "a link that leads to no file" if side.is_symlink() and not side.exists() else (
        "not a regular file (a folder, device or pipe)")
    raise TiersimError(f"{side}: {what}; the checkpoint's formats are read from it: put the "
                       "file there, or remove the name")


def _matches(pattern: str, name: str) -> bool:
    """An ignore-list entry against a module name: ``re:`` regex, ``*`` wildcard, or a name
    that equals the module, one of its parents, or its trailing components."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
    return (name == pattern or name.startswith(pattern + ".") or name.endswith("." + pattern)
            or f".{pattern}." in name)


@dataclasses.dataclass(frozen=True)
class Span:
    """The decoder layers a checkpoint's groups live in: ``total`` layers, the first ``dense``
    of them with a dense MLP before the MoE ones (0: every layer is of one kind); and, per
    group, its member modules with their share of the group's weights (:func:`_members`)."""

    total: int = 1
    dense: int = 0
    members: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = dataclasses.field(
        default_factory=dict, hash=False, compare=False)
    prefixes: tuple[str, ...] = _LAYER_PREFIXES
    extra: int = 0  # multi-token-prediction layers after them (not served, not weighed)
    # gated delta-net layers (their own attention members): a set of indices, or EveryButNth
    linear: frozenset[int] | EveryButNth = frozenset()
    start: int = 0  # the index of the first layer (the MTP layers': the model's layer count)
    # the multi-token-prediction layers only (:func:`_mtp_formats`): whether the config names
    # this model's layers was checked on the model's own span
    mtp: bool = False

    def holds(self, layer: int, names: tuple[str, ...]) -> bool:
        """Whether decoder layer ``layer`` has the member ``names``: a hybrid's
        ``linear_attn.*`` members live in its delta-net layers, ``self_attn.*`` in the others;
        every other member (an MLP's, an expert's) in every layer."""
        if not self.linear or not names or not names[0].startswith(ATTENTION_MODULES):
            return True
        return names[0].startswith("linear_attn.") == (layer in self.linear)

    def members_of(self, group: str, each_expert: bool):
        """``group``'s members; for the experts, every expert only when ``each_expert`` (a
        list singles some out), else the first expert's projections standing for all. A group
        without listed members is one module no entry names."""
        members = self.members.get(group) or (((), 1.0),)
        if group != "experts" or each_expert or len(members) <= 3:
            return members
        scale = len(members) / 3
        return tuple((names, share * scale) for names, share in members[:3])

    def module_names(self, layer: int, names: tuple[str, ...]) -> list[str]:
        """Full names of one member module in decoder layer ``layer``."""
        return [p.format(i=layer) + n for p in self.prefixes for n in names]

    def layers(self, group: str) -> range:
        """The layers holding ``group``."""
        first = self.start
        if group == "mlp":
            return range(first, first + (self.dense or self.total))
        if group in ("experts", "shared_experts"):
            return range(first + self.dense, first + self.total) or range(first, first + 1)
        return range(first, first + self.total)


class _Patterns:
    """An ignore / target list, matched as :func:`_matches` matches one entry: plain names
    by set lookup (a plain name matches a module when it is a run of the module's dotted
    components), every wildcard in one compiled pattern, ``re:`` entries one by one, so a list
    of thousands of names stays fast."""

    def __init__(self, patterns):
        if isinstance(patterns, str):  # one module name written without its list
            patterns = [patterns]
        if patterns is None:
            patterns = []
        if not isinstance(patterns, (list, tuple)):
            raise TypeError(f"an ignore / exclude list must be a list of module names (got "
                            f"{shown(patterns)})")
        bad = [p for p in patterns if not isinstance(p, str)]
        if bad:
            raise TypeError(f"an ignore / exclude entry must be a module name (got "
                            f"{shown(bad[0])})")
        listed = list(patterns)
        self.plain = {p for p in listed if not p.startswith("re:") and "*" not in p
                      and "?" not in p}
        self.other = [p for p in listed if p not in self.plain]
        wild = [p for p in self.other if not p.startswith("re:")]
        self.regexes = [p for p in self.other if p.startswith("re:")]
        # every wildcard at once, as _matches reads each (the pattern, or a parent of the name)
        either = (f"(?:{fnmatch.translate(w)})|(?:{fnmatch.translate(w + '.*')})" for w in wild)
        self.wild = re.compile("|".join(either)) if wild else None

    def __bool__(self) -> bool:
        return bool(self.plain or self.other)

    def names_experts(self) -> bool:
        """Whether an entry may single out some experts (``experts.3``, or a regex or wildcard
        mentioning experts): only then is every expert matched, else expert 0 stands for all."""
        return any(_SINGLES_OUT_EXPERTS.search(p) for p in (*self.plain, *self.other))

    def match(self, name: str) -> bool:
        """True when an entry names module ``name``."""
        if self.plain:
            parts = name.split(".")
            runs = (".".join(parts[a:b]) for a in range(len(parts))
                    for b in range(a + 1, len(parts) + 1))
            if any(run in self.plain for run in runs):
                return True
        if self.wild is not None and self.wild.match(name):
            return True
        return any(_matches(p, name) for p in self.regexes)


def _by_module(span: Span, format_of, each_expert: bool = True,
               groups: tuple[str, ...] = ()) -> tuple:
    """``(group, format, bits)`` per group of ``groups`` (default: every linear group), each
    member module of each layer in the format ``format_of(layer, full names)`` gives it
    (``None``: BF16), weighed by its share of the group: the format of most of its weights (its
    kernels), and the bits they average (its memory); no entry for a group all BF16."""
    out = []
    for g in groups or _LINEAR_GROUPS:
        members = span.members_of(g, each_expert)
        tally: dict[tuple[str, float], float] = {}
        for i in span.layers(g):
            for names, share in members:
                if not span.holds(i, names):
                    continue
                fmt = format_of(i, span.module_names(i, names)) or _fmt("bf16")
                tally[fmt] = tally.get(fmt, 0.0) + share
        weight = sum(tally.values())
        if weight <= 0 or all(f[0] == "bf16" for f in tally):
            continue
        name = max(tally, key=lambda f: (tally[f], f[0] != "bf16"))[0]
        out.append((g, name, sum(f[1] * w for f, w in tally.items()) / weight))
    return tuple(out)


#: Expert module names by model type: ``{j}`` the expert (none: gpt-oss's fused tensors).
EXPERT_NAMES = {
    "mixtral": ("block_sparse_moe.experts.{j}.w1", "block_sparse_moe.experts.{j}.w3",
                "block_sparse_moe.experts.{j}.w2"),
    "minimax_m2": ("block_sparse_moe.experts.{j}.w1", "block_sparse_moe.experts.{j}.w3",
                   "block_sparse_moe.experts.{j}.w2"),
    "gpt_oss": ("mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj", "mlp.experts.down_proj"),
}
DEFAULT_EXPERT_NAMES = ("mlp.experts.{j}.gate_proj", "mlp.experts.{j}.up_proj",
                        "mlp.experts.{j}.down_proj")


def _expert_members(fields: dict[str, Any], model_type: str = "") -> ExpertMembers:
    """Every routed expert's three projections, a third of an expert each (gpt-oss: its
    fused tensors, the same for every expert, so one stands for all)."""
    spelled = EXPERT_NAMES.get(model_type, DEFAULT_EXPERT_NAMES)
    experts = 1 if "{j}" not in spelled[0] else max(1, int(fields.get("num_experts") or 1))
    return ExpertMembers(spelled, experts)


class ExpertMembers(Sequence):
    """The members of the routed experts, ``(names, share)`` for each projection of each of
    ``experts`` experts, spelled as they come: a config may declare any number of experts,
    and most readings look at the first expert's three only (:meth:`Span.members_of`)."""

    def __init__(self, spelled: tuple[str, ...], experts: int):
        self.spelled, self.experts = spelled, experts

    def __len__(self) -> int:
        return self.experts * len(self.spelled)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        j, k = divmod(index % len(self), len(self.spelled))
        return (self.spelled[k].format(j=j),), 1.0 / self.experts


#: The fused projections a checkpoint of :data:`FUSED_TYPES` names where Llama's has three or
#: two modules: each of q / k / v and gate / up also answers to it there (only there: in a
#: Llama checkpoint ``re:.*v_proj`` must not reach q and k through ``qkv_proj``).
FUSED_QKV, FUSED_GATE_UP = "self_attn.qkv_proj", "mlp.gate_up_proj"
#: Model types whose checkpoints store q/k/v and gate/up fused (Phi-3, Phi-4).
FUSED_TYPES = ("phi3",)


def _members(fields: dict[str, Any], model_type: str = "", fused: bool = False
             ) -> dict[str, tuple[tuple[tuple[str, ...], float], ...]]:
    """Per group, its member modules (alternative names) and their weights' share: attention's
    projections by their shapes (MLA's low-rank ones included), an MLP's gate, up and down a
    third each; ``fused``: the checkpoint also names them :data:`FUSED_QKV` / ``_GATE_UP``."""
    hidden, heads = fields["hidden"], fields["heads"]
    if fields.get("kv_lora_rank"):
        nope, rope, v = fields["qk_nope_head_dim"], fields["qk_rope_head_dim"], fields["v_head_dim"]
        q_lora, kv_lora = fields.get("q_lora_rank", 0), fields["kv_lora_rank"]
        q = ((("self_attn.q_a_proj",), hidden * q_lora),
             (("self_attn.q_b_proj",), q_lora * heads * (nope + rope))) if q_lora else (
             (("self_attn.q_proj",), hidden * heads * (nope + rope)),)
        attention = (*q, (("self_attn.kv_a_proj_with_mqa",), hidden * (kv_lora + rope)),
                     (("self_attn.kv_b_proj",), kv_lora * heads * (nope + v)),
                     (("self_attn.o_proj",), heads * v * hidden), *_indexer_members(fields))
    else:
        width, kv = heads * fields["head_dim"], fields.get("kv_heads", heads) * fields["head_dim"]
        q = 2 * width if fields.get("attn_gate") else width
        qkv = (FUSED_QKV,) if fused else ()
        attention = ((("self_attn.q_proj", *qkv), q), (("self_attn.k_proj", *qkv), kv),
                     (("self_attn.v_proj", *qkv), kv), (("self_attn.o_proj",), width))
    if fields.get("linear_layers"):
        attention = _hybrid_members(fields, attention)
    gate_up = (FUSED_GATE_UP,) if fused else ()
    mlp = ((("mlp.gate_proj", *gate_up), 1.0), (("mlp.up_proj", *gate_up), 1.0),
           (("mlp.down_proj",), 1.0))
    shared = tuple(((f"mlp.shared_experts.{p}", f"mlp.shared_expert.{p}"), 1.0)
                   for p in ("gate_proj", "up_proj", "down_proj"))
    return {"attention": tuple((names, float(share)) for names, share in attention),
            "mlp": mlp, "shared_experts": shared,
            "experts": _expert_members(fields, model_type)}


def _indexer_members(fields: dict[str, Any]) -> tuple:
    """A DSA indexer's projections, weighed by their widths (none without an indexer;
    GLM-5 spells ``weights_proj`` as ``indexers_proj``)."""
    if not fields.get("index_topk"):
        return ()
    hidden, dim, n = fields["hidden"], fields["index_head_dim"], fields["index_heads"]
    q_in = fields.get("q_lora_rank") or hidden
    return ((("self_attn.indexer.wq_b",), q_in * n * dim),
            (("self_attn.indexer.wk",), hidden * dim),
            (("self_attn.indexer.weights_proj", "self_attn.indexers_proj"), hidden * n))


def _hybrid_members(fields: dict[str, Any], softmax: tuple) -> tuple:
    """Attention's members of a gated delta-net hybrid: the softmax layers' projections and
    the linear layers' (Qwen3-Next's fused ``in_proj_qkvz`` / ``in_proj_ba``, or Qwen3.5's
    ``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``: each member names both
    spellings), weighed by its width (:meth:`Span.holds` matches each layer against its own
    kind's)."""
    qk = fields["linear_k_heads"] * fields["linear_k_dim"]
    v = fields["linear_v_heads"] * fields["linear_v_dim"]
    heads = fields["linear_v_heads"]
    gdn = ((("linear_attn.in_proj_qkv", "linear_attn.in_proj_qkvz"), 2 * qk + v),
           (("linear_attn.in_proj_z", "linear_attn.in_proj_qkvz"), v),
           (("linear_attn.in_proj_b", "linear_attn.in_proj_ba"), heads),
           (("linear_attn.in_proj_a", "linear_attn.in_proj_ba"), heads),
           (("linear_attn.out_proj",), v))
    return softmax + gdn


def _fmt(name: str, group_size: int = 128) -> tuple[str, float]:
    """``(format, bits)`` of a format name (W4A16 and W8A16 carry their group's scale
    overhead; a weight-only checkpoint format,
    :data:`~tiersim.hardware.precisions.WEIGHT_ONLY`, keeps its own name)."""
    from tiersim.hardware.precisions import checkpoint_precision, w4a16, w8a16

    sized = {"w4a16": w4a16, "w8a16": w8a16}.get(name)
    prec = sized(group_size) if sized else checkpoint_precision(name)
    return (name if name in WEIGHT_ONLY else prec.name), prec.weight_bits


def _int_fmt(bits: int, group_size: int) -> tuple[str, float]:
    """``(format, bits)`` of integer weight-only weights of ``bits`` (4 or 8) bits."""
    return _fmt("w4a16" if bits == 4 else "w8a16", group_size)


#: The weight-only notes held back while one quantisation block is read (None: none is):
#: a per-layer map names the same format in every layer, and one note says it once.
_HELD_NOTES: contextvars.ContextVar[list | None] = contextvars.ContextVar("held_notes",
                                                                         default=None)


def _note_weight_only(path: Path, key: str, said: str, fmt: tuple[str, float]) -> None:
    """A note that the checkpoint format ``fmt`` (``(name, bits)``, a :data:`WEIGHT_ONLY`
    name), which ``key`` says (``said``), keeps activations 16-bit, so it is timed as W4A16 at
    its own bits a weight; held back for :func:`_notes_once` while a quantisation block is
    read."""
    held = _HELD_NOTES.get()
    if held is not None:
        held.append((path, key, said, fmt))
        return
    _warn_weight_only(path, key, said, fmt, 0)


#: How a weight-only note names the numbers each format stores.
_WEIGHT_WORDS = {"nvfp4a16": "NVFP4", "fp8a16": "FP8", "w8a16": "INT8"}


def _warn_weight_only(path: Path, key: str, said: str, fmt: tuple[str, float],
                      more: int) -> None:
    """The note of :func:`_note_weight_only`, naming ``key`` and how many ``more`` keys say
    the same."""
    from tiersim.hardware.precisions import stored_format

    name, bits = fmt
    prec = stored_format(name, bits)
    others = f" (and {more:,} more key{'s' * (more > 1)} like it)" if more else ""
    warnings.warn(Note(f"{path}: key {key!r}{others} {said}: {_WEIGHT_WORDS[name]} weights "
                       f"with 16-bit activations ({prec.label}), which vLLM serves weight-only; "
                       f"precision: checkpoint times them as W4A16 (weight-only kernels, BF16 "
                       f"math) at their own {round(bits, 3):g} bits a weight, with "
                       f"{prior_name(prec).upper()}'s accuracy prior"), stacklevel=4)


@contextlib.contextmanager
def _notes_once(emit: bool = True):
    """Hold the weight-only notes of the block read inside, then give one per file and
    format (naming its first key and how many more say it), or none when not ``emit`` (a
    side file that is only compared, not read)."""
    held: list = []
    token = _HELD_NOTES.set(held)
    try:
        yield
    finally:
        _HELD_NOTES.reset(token)
    groups: dict[tuple, dict] = {}  # per file and format, its keys (each once) in order
    for path, key, said, fmt in held:
        groups.setdefault((path, fmt), {}).setdefault(key, said)
    for (path, fmt), keys in groups.items() if emit else ():
        key, said = next(iter(keys.items()))
        _warn_weight_only(path, key, said, fmt, len(keys) - 1)


def checkpoint_formats(path: Path, quant: Any, span: Span = Span(), prefix: str = "") -> tuple:
    """``((group, format, bits), ...)`` for the quantised groups of a checkpoint.

    Reads ``quant`` (the config's ``quantization_config``, at key path ``prefix``: default
    :data:`QUANT_KEY`) or, only when the config has none, the ``hf_quant_config.json`` beside
    ``path``, as vLLM does. One :class:`TiersimError` line for a scheme tiersim cannot
    represent, naming the key.
    """
    prefix = prefix or QUANT_KEY
    if quant is not None and not isinstance(quant, dict):  # vLLM reads any but null as one
        raise TiersimError(f"{path}: key {prefix.rstrip('.')!r}: must be an object with a "
                           f"quant_method (got {shown(quant)}); remove the key if the weights "
                           "are BF16")
    if not quant:  # vLLM looks for the side file only then
        side = _side_file(path)
        return _modelopt(side, *_side_block(side), span) if side is not None else ()
    raw_method = quant.get("quant_method")
    method = "" if raw_method is None else str(raw_method).lower()
    if not method and quant.get("quant_algo"):
        method = "modelopt"
    if method == "fbgemm_fp8":  # Meta's FP8: a scale per channel, some modules left BF16
        return _uniform(_fmt("fp8"), _module_list(path, quant, "modules_to_not_convert",
                                                  prefix=prefix), span)
    if method == "fp8":
        block = _block_size(path, quant.get("weight_block_size"), prefix)
        _fp8_activations(path, quant.get("activation_scheme"), block, prefix)
        fmt = "fp8_block" if block else "fp8"
        # vLLM's Fp8Config reads ignored_layers, modules_to_not_convert only where it is empty
        skip = _module_list(path, quant, "ignored_layers", "modules_to_not_convert", prefix=prefix)
        return _uniform(_fmt(fmt), skip, span, _LINEAR_GROUPS)
    if method == "mxfp4":
        return _uniform(_fmt("mxfp4"), _module_list(path, quant, "modules_to_not_convert",
                                                    prefix=prefix), span, ("experts",))
    if method == "compressed-tensors":
        return _compressed_tensors(path, quant, span, prefix)
    if method == "modelopt":
        return _modelopt(path, quant, prefix, span)
    if method in ("awq", "gptq"):
        return _awq_gptq(path, quant, method, span, prefix)
    said = "missing" if not method else f"{method!r} is not supported"
    raise TiersimError(
        f"{path}: key '{prefix}quant_method': {said}; supported: fp8, mxfp4, "
        "compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no quantization_config at "
        "all: BF16)"
    )


def _awq_gptq(path: Path, quant: dict, method: str, span: Span, prefix: str = QUANT_KEY):
    """AWQ and GPTQ: integer weights with a 16-bit scale per ``group_size`` weights,
    activations 16-bit, as vLLM serves them with its weight-only (AWQ-)Marlin kernels (an AWQ
    block Marlin does not serve, AutoAWQ's ``w_bit`` / ``q_group_size`` spelling or no zero
    points among them, is refused: :func:`_check_awq_marlin`): 4 bits (``w4a16``), and for
    GPTQ 8 bits too
    (``w8a16``, with a note); the modules ``modules_to_not_convert`` (or ``ignore``) names stay
    BF16; ``lm_head: true`` quantises lm_head too (vLLM's GPTQ and AWQ-Marlin configs both read
    it; a model whose lm_head is its embeddings keeps it BF16; anything but true or false is
    refused, :func:`_lm_head_quantised`). Other bit widths are refused
    (:func:`_check_bits`), as is asymmetric GPTQ (``sym: false``, :func:`_check_sym`). AWQ's
    zero points (a packed zero per group: 0.03 bits a weight at 4
    bits, 0.06 at 8) are not counted. ``prefix``: the block's key path, as errors name its
    keys."""
    bits_key = "w_bit" if quant.get("bits") is None and "w_bit" in quant else "bits"
    bits = _check_bits(path, f"{prefix}{bits_key}", quant.get(bits_key), method)
    if method == "gptq":
        _check_gptq_keys(path, quant, prefix)
    size_key = "q_group_size" if quant.get("group_size") is None and "q_group_size" in quant \
        else "group_size"
    size = _group_size(path, f"{prefix}{size_key}", quant.get(size_key),
                       f"{method.upper()} weights")
    if method == "awq":
        _check_awq_marlin(path, quant, prefix)
    if method == "gptq":
        _check_sym(path, f"{prefix}sym", quant["sym"])  # present: _check_gptq_keys
    if bits == 8:
        _note_weight_only(path, f"{prefix}{bits_key}", "is 8", _int_fmt(8, size))
    skip = _module_list(path, quant, "modules_to_not_convert", "ignore", prefix=prefix)
    listed = _gptq_listed(path, quant, prefix) if method == "gptq" else None
    if method == "gptq" and (quant.get("dynamic") or listed):
        formats = _gptq_dynamic(path, quant.get("dynamic") or {}, (bits, size), _Patterns(skip),
                                span, prefix, listed)
    else:
        formats = _uniform(_int_fmt(bits, size), skip, span)
    if _lm_head_quantised(path, quant.get("lm_head"), prefix) and (
            not listed or any(entry in "lm_head" for entry in listed)):  # quantised lm_head
        formats += (("lm_head", *_int_fmt(bits, size)),)
    return formats


def _gptq_listed(path: Path, quant: dict, prefix: str) -> list[str]:
    """A GPTQ block's ``modules_in_block_to_quantize`` flattened (AutoGPTQ and GPTQModel write
    it in groups: ``[["self_attn.q_proj", ...], ["mlp.up_proj"]]``); ``[]`` where it is null,
    absent or empty (vLLM then reads which modules are quantised from the checkpoint's
    tensors, and tiersim, which does not open them, takes all). One line for anything but
    module names in lists."""
    value, key = quant.get("modules_in_block_to_quantize"), "modules_in_block_to_quantize"
    if value is None:
        return []
    flat, stack = [], [value] if isinstance(value, list) else None
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, str):
            flat.append(item)
        else:
            stack = None
    if stack is None:
        raise TiersimError(f"{path}: key '{prefix}{key}': must be a list of module names, or "
                           f"of lists of them (got {shown(value)})")
    return flat


#: AutoAWQ's spellings of the keys vLLM's AWQ-Marlin check reads (its older AWQ kernel reads
#: both).
_AUTOAWQ_KEYS = {"bits": "w_bit", "group_size": "q_group_size"}


#: AutoAWQ ``version`` values whose weights are not packed in its GEMM layout, the only one
#: vLLM's awq.py / awq_marlin.py create (they read no ``version``: such a checkpoint's qweight,
#: qzeros and scales do not load); ``gemm`` and transformers' ``exllama`` / ``ipex`` (kernels
#: run on GEMM-packed weights) are read.
AWQ_OTHER_PACKINGS = ("gemv", "gemv_fast", "marlin")


def _check_awq_marlin(path: Path, quant: dict, prefix: str) -> None:
    """One line for an AWQ block vLLM does not serve with its AWQ-Marlin kernel, the one
    tiersim times (``AWQMarlinConfig.is_awq_marlin_compatible``, vLLM's awq_marlin.py): it
    needs ``bits``, ``group_size`` and ``zero_point`` under those names (AutoAWQ's ``w_bit`` /
    ``q_group_size`` are read only by ``AWQConfig.from_config``, its older AWQ kernel) and
    zero points (``zero_point: true``; Marlin has no zero-point-free 4-bit AWQ type). A block
    without ``group_size`` or ``zero_point`` under either spelling vLLM does not load
    (``AWQConfig.from_config`` requires them). A ``version`` of another packing than GEMM's
    (:data:`AWQ_OTHER_PACKINGS`) is refused too."""
    for key in ("bits", "group_size", "zero_point"):
        if quant.get(key) is not None:
            continue
        state = "null" if key in quant else "missing"
        other = _AUTOAWQ_KEYS.get(key)
        if other is not None and quant.get(other) is not None:
            why = (f"vLLM's AWQ-Marlin kernel reads {key!r} only, so a block that spells it "
                   f"{other!r} (AutoAWQ's spelling) runs its older AWQ kernel, which tiersim "
                   f"does not time: write it as {key!r}")
        else:
            why = ("vLLM does not load an AWQ block without it (both its AWQ configs need "
                   "bits, group_size and zero_point): write it as the checkpoint was made")
        raise TiersimError(f"{path}: key '{prefix}{key}': {state}; {why}")
    version = quant.get("version")
    if isinstance(version, str) and version.lower() in AWQ_OTHER_PACKINGS:
        raise TiersimError(
            f"{path}: key '{prefix}version': {version!r}: vLLM loads AWQ weights packed as "
            "AutoAWQ's GEMM layout only (its AWQ and AWQ-Marlin kernels read qweight as [in, "
            "out / 8]); re-export the checkpoint with version 'gemm'")
    if quant["zero_point"] is not True:
        raise TiersimError(
            f"{path}: key '{prefix}zero_point': must be true (got {shown(quant['zero_point'])});"
            " vLLM's AWQ-Marlin kernel serves 4-bit AWQ with zero points only (without them it "
            "runs its older AWQ kernel, which tiersim does not time): use a checkpoint with "
            "zero points, or remove quantization_config from a copy of config.json and set the "
            "tier's precision")


def _lm_head_quantised(path: Path, value: Any, prefix: str = QUANT_KEY) -> bool:
    """Whether an AWQ or GPTQ block's ``lm_head`` quantises lm_head: true or false (null or
    absent: false). vLLM's GPTQ(-Marlin) and AWQ-Marlin configs (AWQ's path on Hopper) read it
    with ``get_from_keys_or`` and quantise lm_head for any truthy value (the string "false"
    too), so anything but a bool is one line."""
    if value is None or isinstance(value, bool):
        return bool(value)
    raise TiersimError(f"{path}: key '{prefix}lm_head': must be true or false (got "
                       f"{shown(value)}); vLLM quantises lm_head for any value but false, 0, "
                       "null or an empty one, so say which")


def _check_bits(path: Path, key: str, bits: Any, method: str, what: str = "checkpoints") -> int:
    """``bits`` of an AWQ / GPTQ block (or of a GPTQ ``dynamic`` rule: ``what`` is "modules")
    where vLLM serves it with a Marlin kernel tiersim times: 4 (AWQ), 4 or 8 (GPTQ); one line
    saying why for any other (vLLM serves AWQ at 4 bits only, GPTQ's 2 and 3 bits with its
    older GPTQ kernel)."""
    widths = (4, 8) if method == "gptq" else (4,)
    if bits in widths and not isinstance(bits, bool):
        return bits
    one = "checkpoint" if what == "modules" else "one"
    if method == "gptq":
        need, why = "4 or 8", (
            f"tiersim reads 4- and 8-bit GPTQ {what} (as w4a16 / w8a16), the widths vLLM's "
            "Marlin kernel serves (2 and 3 bits run its older GPTQ kernel, which tiersim does "
            f"not time): use a 4- or 8-bit {one}")
    else:
        need, why = "4", (
            f"tiersim reads 4-bit {method.upper()} {what} (as w4a16), the only width vLLM "
            f"serves {method.upper()} in (its AWQ-Marlin zero-point kernel and its AWQ kernel "
            f"are 4-bit): use a 4-bit {one}")
    got = "missing" if bits is None else f"must be {need} (got {shown(bits)})"
    raise TiersimError(f"{path}: key {key!r}: {got}; {why}, or remove quantization_config "
                       "from a copy of config.json and set the tier's precision")


def _check_gptq_keys(path: Path, quant: dict, prefix: str) -> None:
    """One line for a GPTQ block without ``group_size``, ``sym`` or ``desc_act``: vLLM serves
    GPTQ with its Marlin kernel only when all of them are given
    (``GPTQMarlinConfig.is_gptq_marlin_compatible``), else with its older GPTQ kernel, which
    tiersim does not time, and that one's config needs ``group_size`` and ``desc_act``."""
    for key in ("group_size", "sym", "desc_act"):
        if quant.get(key) is None:
            state = "null" if key in quant else "missing"
            raise TiersimError(
                f"{path}: key '{prefix}{key}': {state}; vLLM serves a GPTQ checkpoint with its "
                "Marlin kernel only when bits, group_size, sym and desc_act are all given (else "
                "its older GPTQ kernel, which tiersim does not time, or no load): write it as "
                "the checkpoint was made")


def _check_sym(path: Path, key: str, sym: Any, what: str = "checkpoints") -> None:
    """``sym`` of a GPTQ block (or of a ``dynamic`` rule: ``what`` is "modules") must be true
    (a block without one is refused first, :func:`_check_gptq_keys`): vLLM's Marlin kernel
    serves symmetric GPTQ only (``GPTQMarlinConfig.TYPE_MAP``); an asymmetric checkpoint runs
    its older GPTQ kernel, and an asymmetric override of a symmetric checkpoint is refused.
    One line saying why for anything else."""
    if sym is True:
        return
    if what == "modules":
        one, why = "checkpoint", "vLLM refuses an asymmetric override of a symmetric checkpoint"
    else:
        one = "one"
        why = "an asymmetric one runs its older GPTQ kernel, which tiersim does not time"
    raise TiersimError(
        f"{path}: key {key!r}: must be true (got {shown(sym)}); tiersim reads symmetric GPTQ "
        f"{what} (as w4a16 / w8a16), the ones vLLM's Marlin kernel serves ({why}): use a "
        f"symmetric {one}, or remove quantization_config from a copy of config.json and set the "
        "tier's precision")


def _gptq_dynamic(path: Path, dynamic: Any, base: tuple[int, int], skip: _Patterns,
                  span: Span, prefix: str = QUANT_KEY, listed: Sequence[str] = ()):
    """GPTQModel's per-module overrides, as vLLM reads ``dynamic``: the first regex matching
    a module's name from its start decides; ``-:`` leaves the module unquantised (BF16), ``+:``
    (or no sign) quantises it with its own ``bits`` (4 or 8) and ``group_size``; a module no
    regex matches keeps the block's (``base``: its bits and group size). ``listed``: the
    block's ``modules_in_block_to_quantize`` (:func:`_gptq_listed`), where given the only
    linear modules quantised, as vLLM's gptq_utils.py ``is_layer_gptq_quantized`` reads it (an
    entry within the module's full name); routed experts are not looked up in it (vLLM's
    fused-MoE path quantises them whatever it says)."""
    if not isinstance(dynamic, dict):
        raise TiersimError(f"{path}: key '{prefix}dynamic': must be an object of module "
                           f"regexes (got {shown(dynamic)})")
    rules = [_dynamic_rule(path, pattern, spec, base, prefix)
             for pattern, spec in dynamic.items()]

    def format_of(_layer: int, names: list[str]):
        if any(skip.match(n) for n in names):
            return None
        if listed and not _ROUTED_EXPERT.search(names[0]) and not any(
                entry in n for entry in listed for n in names):
            return None
        for regex, fmt in rules:
            if any(regex.match(n) for n in names):
                return fmt
        return _int_fmt(*base)

    each = skip.names_experts() or any(_SINGLES_OUT_EXPERTS.search(p) for p in dynamic)
    return _by_module(span, format_of, each)


def _dynamic_rule(path: Path, pattern: str, spec: Any, base: tuple[int, int],
                  prefix: str = QUANT_KEY):
    """One ``dynamic`` entry of a GPTQ block: its compiled regex and the format of the modules
    it matches (None: unquantised); ``base``: the block's bits and group size, which it
    overrides."""
    where = f"{prefix}dynamic.{pattern}"
    negative = pattern.startswith("-:")
    try:
        regex = re.compile(pattern[2:] if pattern.startswith(("-:", "+:")) else pattern)
    except re.error as exc:
        raise TiersimError(f"{path}: key '{prefix}dynamic': {pattern[:80]!r} is not a "
                           f"regular expression ({exc})") from None
    if not isinstance(spec, dict):
        raise TiersimError(f"{path}: key {where[:120]!r}: must be an object of overrides (bits, "
                           f"group_size ...) (got {shown(spec)})")
    if negative:
        return regex, None
    if "sym" in spec:
        _check_sym(path, f"{where[:120]}.sym", spec["sym"], "modules")
    bits = _check_bits(path, f"{where[:120]}.bits", spec.get("bits", base[0]), "gptq",
                       "modules")
    fmt = _int_fmt(bits, _group_size(path, f"{where}.group_size", spec["group_size"],
                                     "GPTQ weights") if "group_size" in spec else base[1])
    if "bits" in spec and bits == 8:
        _note_weight_only(path, f"{where}.bits", "is 8", fmt)
    return regex, fmt


def _block_size(path: Path, value: Any, prefix: str = QUANT_KEY) -> tuple[int, ...] | None:
    """``weight_block_size`` of an FP8 checkpoint: absent or null (per-tensor scales), else a
    list of two whole numbers >= 1 (``[128, 128]``; vLLM's ``Fp8Config`` refuses any other
    length); one line for anything else."""
    if value is None:
        return None
    if not (isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 20 for v in value)):
        raise TiersimError(f"{path}: key '{prefix}weight_block_size': must be a "
                           f"list of whole numbers from 1 to 1048576 (e.g. [128, 128]), got "
                           f"{shown(value)}")
    if len(value) != 2:  # vLLM's Fp8Config refuses any other number of dimensions
        raise TiersimError(f"{path}: key '{prefix}weight_block_size': must hold 2 "
                           "numbers, a block's output and input widths (e.g. [128, 128]), as "
                           f"vLLM's Fp8Config requires (got {shown(value)})")
    return tuple(value)


def _fp8_activations(path: Path, scheme: Any, block: tuple[int, ...] | None,
                     prefix: str = QUANT_KEY) -> None:
    """``activation_scheme`` of an FP8 checkpoint as vLLM's ``Fp8Config`` takes it: ``dynamic``
    (also when absent) or ``static``, and ``dynamic`` beside a ``weight_block_size``; one line
    for anything else (vLLM refuses it at start-up)."""
    key = f"{path}: key '{prefix}activation_scheme'"
    if scheme is None or scheme == "dynamic":
        return
    if scheme != "static":
        raise TiersimError(f"{key}: must be 'dynamic' or 'static', as vLLM's Fp8Config requires "
                           f"(got {shown(scheme)})")
    if block:
        raise TiersimError(f"{key}: 'static' beside a weight_block_size: vLLM's Fp8Config "
                           "refuses it (block FP8 scales activations dynamically); use 'dynamic'")


def _side_quant(side: Path) -> dict[str, Any]:
    """The ``quantization`` object of NVIDIA's ``hf_quant_config.json`` (the file itself where
    it has none), or one line naming that file and key."""
    return _side_block(side)[0]


def _side_block(side: Path) -> tuple[dict[str, Any], str]:
    """:func:`_side_quant` and the key path leading to it in the file (``quantization.``, or
    none where the file is the block itself), as its errors name its keys."""
    data = _read(side)
    quant = data.get("quantization", data)
    _refuse_non_finite(side, quant, "quantization" if "quantization" in data else "")
    if not isinstance(quant, dict):
        raise TiersimError(f"{side}: key 'quantization': must be an object with a quant_algo "
                           f"(got {shown(quant)})")
    return quant, "quantization." if "quantization" in data else ""


def _note_unread_side(path: Path, side: Path, read: tuple[tuple, str], span: Span) -> None:
    """A note when the ``hf_quant_config.json`` beside a config that has its own
    ``quantization_config`` names other weight or KV-cache formats: vLLM reads only the
    config's (``read``: its formats and KV-cache format), so the side file is not read. A side
    file tiersim could not read is a note saying why, not an error: vLLM never opens it."""
    try:
        named, prefix = _side_block(side)
        with _notes_once(emit=False):  # the side file is not read: its formats get no note
            side_read = (_modelopt(side, named, prefix, span), _declared_kv(named))
    except (TiersimError, RegexTimeout, AttributeError, TypeError, ValueError, KeyError,
            IndexError, RecursionError, re.error) as exc:  # vLLM never opens it: a note
        said = str(exc) if isinstance(exc, TiersimError) else (
            f"{side}: not in a layout tiersim reads ({type(exc).__name__}: "
            f"{(str(exc).splitlines() or [''])[0][:200]})")
        warnings.warn(Note(f"{said}; the file is not read: {path}'s quantization_config "
                           "decides the formats, as vLLM reads it"), stacklevel=3)
        return
    if _described(side_read) == _described(read):
        return
    warnings.warn(Note(f"{side}: not read: it names {_described(side_read)}; {path}'s "
                       f"quantization_config ({_described(read)}) decides the formats, as vLLM "
                       "reads it"), stacklevel=3)


def _described(read: tuple[tuple, str]) -> str:
    """Weight formats and KV-cache format in a few words: ``nvfp4, KV cache fp8``."""
    formats, kv_cache = read
    names = ", ".join(sorted({fmt for _, fmt, _ in formats})) or "bf16"
    return names + (f", KV cache {kv_cache}" if kv_cache else "")


def checkpoint_kv_cache(path: Path, quant: Any) -> str:
    """The KV-cache format a checkpoint declares: ``"fp8"`` or ``""`` (none).

    As vLLM resolves ``--kv-cache-dtype auto``: ModelOpt's ``kv_cache_quant_algo`` (in
    ``quantization_config``, or NVIDIA's ``hf_quant_config.json`` beside ``path`` when the
    config has none) or a
    compressed-tensors ``kv_cache_scheme`` of 8-bit floats selects an FP8 cache; anything else
    leaves the model dtype, with a note when the checkpoint declares a KV format tiersim does
    not model (:func:`_unmodelled_kv`).
    """
    side = None if quant else _side_file(path)
    if side is not None:  # vLLM reads the side file only where the config has no block
        quant = _side_quant(side)
    quant = quant if isinstance(quant, dict) else {}
    kv = _declared_kv(quant)
    declared = _unmodelled_kv(quant) if not kv else None
    if declared:
        warnings.warn(Note(f"{path}: {declared}: a KV-cache format tiersim does not model; its "
                           "cache is read in the model's dtype, which may hold more bytes a "
                           "token than the checkpoint's; set the tier's kv_dtype (fp8 or bf16) "
                           "to choose one"), stacklevel=2)
    return kv


def _unmodelled_kv(quant: dict) -> str | None:
    """The key declaring a KV-cache format other than FP8 (a 4-bit or integer cache), as
    ``key 'name' is value``; None where none is declared."""
    algo = quant.get("kv_cache_quant_algo")
    if algo not in (None, "", "NONE", "none"):
        return f"key 'kv_cache_quant_algo' is {str(algo)[:40]!r}"
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, dict) and scheme:
        bits, kind = scheme.get("num_bits"), scheme.get("type")
        return f"key 'kv_cache_scheme' is {str(bits)[:12]}-bit {str(kind)[:20]}"
    return None


def _declared_kv(quant: dict) -> str:
    """``"fp8"`` when a quantisation block declares an FP8 KV cache, else ``""``."""
    algo = str(quant.get("kv_cache_quant_algo") or "").upper()
    if algo.startswith("FP8"):
        return "fp8"
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        return "fp8"
    return ""


#: Groups a checkpoint may quantise. ``lm_head`` is not among them: vLLM's FP8, ModelOpt and
#: compressed-tensors methods quantise linear and fused-MoE layers only, so it loads in BF16.
_LINEAR_GROUPS = ("attention", "mlp", "shared_experts", "experts")


def _module_list(path: Path, quant: dict, *keys: str, prefix: str = QUANT_KEY) -> list[str]:
    """The module names under the first of ``keys`` that holds any in ``quant`` (a skip or
    target list; one name written without its list is that list, none is ``[]``), or one line
    naming the file and the key (at key path ``prefix``) of what is not a name."""
    key = next((k for k in keys if quant.get(k)), keys[0])
    value = quant.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise TiersimError(f"{path}: key '{prefix}{key}': must be a list of module names (got "
                           f"{shown(value)})")
    bad = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
    if bad is not None:
        raise TiersimError(f"{path}: key '{prefix}{key}[{bad}]': must be a module name (got "
                           f"{shown(value[bad])})")
    return value


def _uniform(fmt, skip, span: Span, groups=_LINEAR_GROUPS):
    """Every group of ``groups`` in ``fmt``, but the modules a ``skip`` entry names (BF16);
    with nothing to skip, no module needs looking at (a config of any depth reads at once)."""
    listed = _Patterns(skip)
    if not listed:
        return tuple((g, *fmt) for g in groups)

    def format_of(_layer: int, names: list[str]):
        return None if any(listed.match(n) for n in names) else fmt

    return _by_module(span, format_of, listed.names_experts(), groups)


#: The group sizes vLLM's Marlin kernel serves (``MARLIN_SUPPORTED_GROUP_SIZES``; -1: one
#: scale per output channel).
MARLIN_GROUP_SIZES = (32, 64, 128, -1)


def _group_size(path: Path, key: str, value: Any, marlin: str = "") -> int:
    """A quantisation group size: a whole number from 1 to 65,536 (absent or null: 128; -1:
    per channel). ``marlin``: the integer weights it scales (``"GPTQ weights"``), which
    tiersim times as vLLM's Marlin kernel serves them: then one of
    :data:`MARLIN_GROUP_SIZES`, else one line (vLLM runs another kernel for any other size,
    GPTQ's or AWQ's older one, and refuses a layer whose input width the groups do not
    divide)."""
    if value is None:
        return 128
    if value == -1 and not isinstance(value, bool):
        return PER_CHANNEL
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
        raise TiersimError(f"{path}: key {key!r}: must be a whole number of weights from 1 to "
                           f"65536 (got {value!r})")
    if marlin and value not in MARLIN_GROUP_SIZES:
        raise TiersimError(
            f"{path}: key {key!r}: must be 32, 64, 128 or -1 (per channel) (got {value}); "
            f"tiersim times {marlin} at the group sizes vLLM's Marlin kernel serves (at another "
            "vLLM runs a kernel tiersim does not time, or refuses a layer whose input width the "
            "groups do not divide): use such a checkpoint, or remove quantization_config from "
            "a copy of config.json and set the tier's precision")
    return value


def _ct_format(path: Path, scheme: dict, group: str = "", prefix: str = QUANT_KEY
               ) -> tuple[str, float]:
    """The format of one compressed-tensors config group ``group`` (``scheme``: its
    ``weights`` and ``input_activations``). The activations are 16-bit unless
    ``input_activations`` says otherwise, as vLLM reads them: FP4 or FP8 weights without it
    are weight-only."""
    weights = scheme["weights"]
    bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    where = prefix + (f"config_groups.{group}.weights" if group else "config_groups")
    if scheme.get("input_activations") is None and (kind == "float" and (
            bits == 8 or (bits == 4 and size == 16)) or (kind == "int" and bits == 8)):
        fmt = (_int8_weight_only(path, weights, where) if kind == "int" else
               _fmt("nvfp4a16" if bits == 4 else "fp8a16"))
        said = "is null" if "input_activations" in scheme else "is missing"
        _note_weight_only(path, where.removesuffix("weights") + "input_activations", said, fmt)
        return fmt
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise TiersimError(f"{path}: key '{where}.num_bits': must be a whole "
                           f"number of bits (got {shown(bits)})")
    if bits == 4 and kind == "int":  # the one format whose bits depend on the group size
        _refuse_int_activations(path, scheme.get("input_activations"),
                                 where.removesuffix("weights") + "input_activations")
        return _int8_weight_only(path, weights, where, bits=4)
    if bits == 8 and kind == "int":  # weight-only (W8A16) is read above: these are W8A8
        _refuse_int_activations(path, scheme.get("input_activations"),
                                 where.removesuffix("weights") + "input_activations", bits=8)
    if bits == 4 and kind == "float" and size == 16:
        return _fmt("nvfp4")
    if bits == 4 and kind == "float" and size == 32:  # E2M1 in 32-wide groups: MXFP4
        return _fmt("mxfp4")
    if bits == 8 and kind == "float":
        return _fmt("fp8_block" if weights.get("strategy") == "block" else "fp8")
    raise TiersimError(
        f"{path}: key '{where}': {bits}-bit {kind} weights "
        f"(group size {size}) are not a format tiersim models "
        "(bf16, fp8, fp8_block, w4a16, nvfp4, mxfp4)"
    )


def _refuse_int_activations(path: Path, activations: Any, key: str, bits: int = 4) -> None:
    """One line for ``bits``-bit int weights (4 or 8) whose ``input_activations`` (at ``key``)
    are quantised too: W4A8 (8-bit int or float activations, which vLLM serves with its own
    ``CompressedTensorsW4A8Int`` / ``W4A8Fp8`` kernels), W8A8 INT8 (``W8A8Int8``) or any other
    width (vLLM finds no scheme for it). tiersim times int weights weight-only (W4A16 /
    W8A16) and has no W4A8 or INT8 W8A8. Null or empty activations are 16-bit, as vLLM reads
    them (it looks at a truthy one only)."""
    if not activations:
        return
    width = activations.get("num_bits") if isinstance(activations, dict) else None
    if isinstance(width, int) and not isinstance(width, bool):
        said, name = (f"{width}-bit {str(activations.get('type', 'int'))[:10]}",
                      f"W{bits}A{width}")
    else:
        said, name = f"quantised ({shown(activations)})", "quantised activations"
    raise TiersimError(f"{path}: key {key!r}: {said} activations beside {bits}-bit int weights "
                       f"({name}): tiersim times {bits}-bit int weights weight-only "
                       f"(W{bits}A16, 16-bit activations) and does not model {name}; use a "
                       f"W{bits}A16 checkpoint (input_activations null), or remove "
                       "quantization_config from a copy of config.json and set the tier's "
                       "precision")


def _int8_weight_only(path: Path, weights: dict, where: str, bits: int = 8
                      ) -> tuple[str, float]:
    """``(format, bits)`` of compressed-tensors INT8 (``bits`` 4: INT4) weights with 16-bit
    activations (W8A16 / W4A16), which vLLM serves with its weight-only Marlin kernel given a
    scale per group or per output channel; one scale per tensor (``strategy: tensor``, or
    neither a strategy nor a group size, as compressed-tensors reads that) it does not serve
    (``CompressedTensorsWNA16`` takes the group and channel strategies only): one line."""
    name = "w4a16" if bits == 4 else "w8a16"
    strategy, size = weights.get("strategy"), weights.get("group_size")
    if strategy == "channel":
        return _fmt(name, PER_CHANNEL)
    if strategy == "group" or (strategy is None and size is not None):  # -1: per channel
        return _fmt(name, _group_size(path, f"{where}.group_size", size,
                                      "int weight-only weights"))
    per = "per tensor" if strategy in (None, "tensor") else f"with strategy {shown(strategy)}"
    raise TiersimError(f"{path}: key '{where}': {bits}-bit int weights {per} with 16-bit "
                       "activations are not served by vLLM (its weight-only Marlin kernel takes "
                       "a scale per group or per output channel: strategy 'group' with a "
                       "group_size, or 'channel')")


def _compressed_tensors(path: Path, quant: dict, span: Span, prefix: str = QUANT_KEY):
    """compressed-tensors: each config group's weight format on the modules its ``targets``
    name (a module name or regex before the ``Linear`` class, as vLLM matches them), but the
    ``ignore`` list's (BF16). No group at all is read as BF16, with a note, and so is a group
    whose ``targets`` is an empty list (it quantises no module, as vLLM reads it); a group with
    no ``targets`` or one written as a string is refused (:func:`_check_targets`), and so are
    two groups both targeting ``Linear`` (which one holds the linear layers is not said) and a
    linear module that neither a group's targets nor ``ignore`` name
    (:func:`_refuse_untargeted`: vLLM does not load such a checkpoint)."""
    _refuse_sparse(path, quant.get("sparsity_config"), prefix)
    _refuse_sparse_format(path, quant.get("format"), f"{prefix}format")
    groups = quant.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise TiersimError(f"{path}: key '{prefix}config_groups': must be an object "
                           f"of named groups (got {type(groups).__name__})")
    if not groups:
        _note_no_groups(path, quant, prefix)
    ignore = _Patterns(_module_list(path, quant, "ignore", prefix=prefix))
    named, linear = [], None  # (targets, format) of groups naming modules; the Linear class's
    for name, scheme in groups.items():
        weights = scheme.get("weights") if isinstance(scheme, dict) else None
        if not isinstance(weights, dict):
            raise TiersimError(f"{path}: key '{prefix}config_groups.{name}."
                               "weights': missing; each group says how its weights are stored "
                               "(num_bits, type, group_size)")
        if scheme.get("targets") == []:  # vLLM and compressed-tensors match no module by it
            _note_no_targets(path, f"{prefix}config_groups.{name}.targets")
            continue
        _refuse_sparse_format(path, scheme.get("format"), f"{prefix}config_groups.{name}.format")
        fmt = _ct_format(path, scheme, name, prefix)
        _check_targets(path, scheme.get("targets"), f"{prefix}config_groups.{name}.targets")
        targets = _module_list(path, scheme, "targets", prefix=f"{prefix}config_groups.{name}.")
        if "Linear" in targets and linear is not None:
            raise TiersimError(f"{path}: key '{prefix}config_groups.{name}.targets': 'Linear' "
                               f"is targeted by group {linear[0]!r} too, so which format the "
                               "linear layers hold is not said; keep 'Linear' in one group "
                               "(name the other group's modules instead)")
        if "Linear" in targets:
            linear = (name, fmt)
        others = [t for t in targets if t != "Linear"]
        if others:
            named.append((_Patterns(others), fmt))

    def format_of(_layer: int, names: list[str]):  # as vLLM: a name or regex before Linear
        if any(ignore.match(n) for n in names):
            return None
        hit = next((fmt for listed, fmt in named if any(listed.match(n) for n in names)), None)
        if hit is None and linear is None and named and not span.mtp:  # MTP: not served
            _refuse_untargeted(path, names[0], prefix)
        return hit or (linear[1] if linear else None)

    each = ignore.names_experts() or any(listed.names_experts() for listed, _ in named)
    return _by_module(span, format_of, each)


def _refuse_untargeted(path: Path, module: str, prefix: str) -> None:
    """One line for a linear module (``module``, its checkpoint name) that no compressed-tensors
    group targets and ``ignore`` does not name: vLLM's ``find_matched_target`` raises "Unable to
    find matching target" for it and the checkpoint does not load (llm-compressor lists every
    linear layer it leaves unquantised under ``ignore``)."""
    raise TiersimError(f"{path}: key '{prefix}config_groups': no group targets {module} and "
                       f"'{prefix}ignore' does not name it; vLLM refuses to load a linear layer "
                       "that is neither (\"Unable to find matching target\"): add it to ignore "
                       "(BF16) or to a group's targets")


def _check_targets(path: Path, targets: Any, key: str) -> None:
    """One line for a compressed-tensors group's ``targets`` (at ``key``) that vLLM cannot
    read as its list of modules: missing or null (``CompressedTensorsConfig`` loops over it and
    fails to load) or one string (the loop takes it letter by letter and matches no module)."""
    if targets is None:
        raise TiersimError(f"{path}: key '{key}': missing; vLLM quantises the modules a group's "
                           "targets name and fails to load a group without them: name its "
                           "modules (or 'Linear' for every linear layer)")
    if isinstance(targets, str):
        raise TiersimError(f"{path}: key '{key}': must be a list of module names (got "
                           f"{shown(targets)}); vLLM reads a string letter by letter and "
                           f"matches no module: write [{shown(targets)}]")


def _note_no_targets(path: Path, key: str) -> None:
    """A note that a compressed-tensors group whose ``targets`` (at ``key``) is an empty list
    quantises nothing, as vLLM reads it (``CompressedTensorsConfig`` registers a group's scheme
    under each of its targets) and compressed-tensors applies it (``match_named_modules``
    matches no module with no target): the group is not read."""
    warnings.warn(Note(f"{path}: key {key!r} is empty: the group quantises no module (vLLM "
                       "and compressed-tensors match a group's modules by its targets), so it "
                       "is not read; name its modules (or 'Linear') if it should quantise "
                       "them"), stacklevel=4)


def _refuse_sparse(path: Path, sparsity: Any, prefix: str) -> None:
    """One line for a compressed-tensors ``sparsity_config`` that stores sparse weights (any
    ``format`` but ``dense``: a 2:4 bitmask, say), which vLLM keeps compressed and serves with
    sparse kernels, and tiersim would size and time as dense."""
    if not isinstance(sparsity, dict) or sparsity.get("format") in (None, "", "dense"):
        return
    structure = sparsity.get("sparsity_structure")
    said = f" ({str(structure)[:20]} sparsity)" if structure else ""
    raise TiersimError(f"{path}: key '{prefix}sparsity_config.format': "
                       f"{str(sparsity['format'])[:40]!r}{said}: tiersim does not model sparse "
                       "weights (it sizes and times them dense); use the dense checkpoint")


#: compressed-tensors formats (``quantization_config.format``, or a group's own) whose weights
#: are stored sparse: ``marlin-24`` packs 2:4-sparse INT4 weights (vLLM's
#: ``CompressedTensorsW4A16Sparse24``; its ``sparsity_config`` says ``dense``, the format
#: holding the sparsity); the other two are sparsity formats written in the wrong place.
SPARSE_FORMATS = ("marlin-24", "sparse-24-bitmask", "sparse-bitmask")


def _refuse_sparse_format(path: Path, value: Any, key: str) -> None:
    """One line for a compressed-tensors ``format`` (at ``key``) that stores sparse weights
    (:data:`SPARSE_FORMATS`), which tiersim would size and time as dense."""
    if value in SPARSE_FORMATS:
        kind = "2:4-sparse" if "24" in value else "sparse"
        raise TiersimError(f"{path}: key {key!r}: {value!r} stores {kind} weights: tiersim "
                           "does not model sparse weights (it sizes and times them dense); use "
                           "the dense checkpoint")


def _note_no_groups(path: Path, quant: dict, prefix: str) -> None:
    """A note that a compressed-tensors block with no config group quantises nothing: its
    weights are read as BF16 (as vLLM loads them)."""
    said = "is empty" if "config_groups" in quant else "is missing"
    warnings.warn(Note(f"{path}: key '{prefix}config_groups' {said}: no module is quantised, "
                       "so the weights are read as BF16; if they are stored quantised, add "
                       "the groups that say how"), stacklevel=4)


#: ModelOpt's ``quant_algo`` names tiersim reads, as vLLM's modelopt.py loads them (its
#: ``QUANT_ALGOS``; a MIXED_PRECISION entry of another name it leaves unquantised, so the
#: stored weights do not load). TensorRT-LLM's other names (``W4A16_AWQ``, ``FP8_BLOCK_SCALES``
#: ...) vLLM refuses ("ModelOpt currently only supports ...").
_MODELOPT_ALGOS = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4a16"}


def _modelopt_fmt(path: Path, spec: dict, where: str = "", prefix: str = QUANT_KEY
                  ) -> tuple[str, float]:
    """The format of a ModelOpt ``quant_algo`` (``where``: the key path leading to it inside
    the quantisation block, which is at ``prefix`` in its file)."""
    per_layer = bool(where)
    where = prefix + where
    if not isinstance(spec, dict):
        raise TiersimError(f"{path}: key {where.rstrip('.') or 'quantization'!r}: must be an "
                           f"object with a quant_algo (got {shown(spec)})")
    if spec.get("quant_algo") is None:
        raise TiersimError(f"{path}: key '{where}quant_algo': missing; say which format "
                           f"({', '.join(_MODELOPT_ALGOS)})")
    algo = str(spec["quant_algo"]).upper()
    if algo == "UNQUANTIZED" and per_layer:  # a layer of a MIXED_PRECISION checkpoint as is
        return _fmt("bf16")
    if algo not in _MODELOPT_ALGOS:
        raise TiersimError(
            f"{path}: key '{where}quant_algo': {algo!r} is not a format tiersim models; "
            f"supported: {', '.join(_MODELOPT_ALGOS)}"
            + (", UNQUANTIZED" if per_layer else ", MIXED_PRECISION")
            + " (the ModelOpt formats vLLM loads that tiersim times)"
        )
    fmt = _MODELOPT_ALGOS[algo]
    if fmt in ("nvfp4", "nvfp4a16"):
        _check_nvfp4_group(path, f"{where}group_size", spec.get("group_size"), algo)
    if fmt in WEIGHT_ONLY:
        _note_weight_only(path, f"{where}quant_algo", f"is {algo}", _fmt(fmt))
    return _fmt(fmt)


def _check_nvfp4_group(path: Path, key: str, value: Any, algo: str) -> None:
    """One line for a ModelOpt NVFP4 ``group_size`` (at ``key``) other than 16 (absent or
    null: 16, vLLM's default): NVFP4 scales each 16 weights, the block every NVFP4 kernel
    vLLM runs reads (``cutlass_scaled_fp4_mm`` checks the scales are k / 16 wide), though
    ``ModelOptNvFp4Config`` sizes its scale tensor by the value given (vLLM's modelopt.py), and
    tiersim stores and times it at 4.5 bits a weight."""
    if value is None or (value == 16 and not isinstance(value, bool)):
        return
    raise TiersimError(
        f"{path}: key {key!r}: must be 16 (got {shown(value)}); {algo} scales each 16 weights "
        "with one FP8 scale, the block vLLM's NVFP4 kernels read (at another size its FP4 GEMM "
        "refuses the scales' shape): write 16 if the checkpoint was made so, or remove its "
        "quantisation block from a copy and set the tier's precision")


def _modelopt(path: Path, quant: dict, prefix: str, span: Span):
    """NVIDIA ModelOpt: one algorithm with an exclude list, or per layer (MIXED_PRECISION:
    ``quantized_layers``, or ``config_groups`` laid out as compressed-tensors lays them).
    ``prefix``: the block's key path in its file, as errors name its keys."""
    algo = str(quant.get("quant_algo", "")).upper()
    if algo == "MIXED_PRECISION":
        layers = quant.get("quantized_layers")
        if not layers and quant.get("config_groups"):
            ignore = quant.get("ignore") or quant.get("exclude_modules") or ()
            return _compressed_tensors(path, {**quant, "ignore": ignore}, span, prefix)
        if not isinstance(layers, dict) or not layers:
            raise TiersimError(f"{path}: key '{prefix}quantized_layers': MIXED_PRECISION needs a "
                               "map of module -> {quant_algo: ...} (or config_groups); got "
                               f"{shown(layers)}")
        nvfp4 = next((str(spec["quant_algo"]).upper() for spec in layers.values()
                      if isinstance(spec, dict) and str(spec.get("quant_algo", "")).upper()
                      in ("NVFP4", "W4A16_NVFP4")), None)
        if nvfp4:  # vLLM sizes every NVFP4 layer's groups by the block's group_size
            _check_nvfp4_group(path, f"{prefix}group_size", quant.get("group_size"), nvfp4)
        return _per_layer(path, layers, span, prefix)
    skip = _module_list(path, quant, "exclude_modules", "ignore", prefix=prefix)
    return _uniform(_modelopt_fmt(path, quant, prefix=prefix), skip, span)


_LAYER_INDEX = re.compile(r"layers\.(\d+)\.")
#: A routed expert's module name (``mlp.experts.3.up_proj``; gpt-oss's ``mlp.experts.down_proj``),
#: not a shared expert's.
_ROUTED_EXPERT = re.compile(r"(?<!shared_)experts\.")
_EXPERT_INDEX = re.compile(r"experts\.\d")
#: An entry naming particular experts: ``experts.`` (or regex ``experts\.``) then an index, a
#: character class, a group or a wildcard character (``shared_experts`` are no routed experts).
_SINGLES_OUT_EXPERTS = re.compile(r"(?<!shared_)experts(\\?\.)?[\d\[\(\{?]")


def _per_layer(path: Path, layers: dict, span: Span, prefix: str = QUANT_KEY):
    """Each group of a MIXED_PRECISION checkpoint, module by module and layer by layer (a
    module no key names is BF16), as :func:`_by_module` states it; refused when no key names
    a module of the model (every weight would silently read as BF16)."""
    by_layer: dict[int, list[tuple[_Patterns, str, Any]]] = {}
    anywhere: list[tuple[_Patterns, str, Any]] = []
    for key, spec in layers.items():
        found = _LAYER_INDEX.search(str(key))
        entry = (_Patterns([str(key)]), str(key), spec)
        (by_layer.setdefault(int(found.group(1)), []) if found else anywhere).append(entry)
    beyond, last = max(by_layer, default=-1), span.total + span.extra - 1
    if beyond > last and not span.mtp:
        raise TiersimError(f"{path}: key '{prefix}quantized_layers': names layer {beyond}, and "
                           f"the model "
                           f"has {last + 1} layers (0-{last}); is this the quantisation config "
                           "of another model?")
    for entries in (*by_layer.values(), anywhere):  # the most specific key first
        entries.sort(key=lambda entry: -len(entry[1]))

    matched: set[str] = set()

    def format_of(layer: int, names: list[str]):
        for listed, key, spec in by_layer.get(layer, []) + anywhere:
            if any(listed.match(n) for n in names):
                matched.add(key)
                return _modelopt_fmt(path, spec, f"quantized_layers.{key}.", prefix)
        return None

    each = any(_EXPERT_INDEX.search(str(key)) for key in layers)
    formats = _by_module(span, format_of, each)
    if not matched and not span.mtp:
        example = span.module_names(0, span.members_of("attention", False)[0][0])[0]
        raise TiersimError(f"{path}: key '{prefix}quantized_layers': no entry names a module "
                           f"of this model (first: {shown(next(iter(layers)))}), so every "
                           f"weight would read as BF16; name modules as the checkpoint does "
                           f"(e.g. {example!r})")
    return formats


