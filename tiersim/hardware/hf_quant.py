"""A checkpoint's weight and KV-cache formats: :func:`checkpoint_formats` reads a
``quantization_config`` (or the ``hf_quant_config.json`` beside the config) by its
``quant_method`` (FP8 here; AWQ / GPTQ, compressed-tensors and ModelOpt in their own modules),
:func:`checkpoint_kv_cache` the KV-cache format it declares, :func:`checkpoint_static_fp8`
whether its FP8 activation scales are static, and :func:`_note_unread_side`
notes a side file the config overrides.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.hf_compressed import _compressed_tensors
from tiersim.hardware.hf_formats import QUANT_KEY, _fmt, _notes_once
from tiersim.hardware.hf_gptq import _awq_gptq
from tiersim.hardware.hf_modelopt import _modelopt
from tiersim.hardware.hf_modules import _LINEAR_GROUPS, RegexTimeout, Span, _module_list, _uniform
from tiersim.hardware.hf_side import _side_block, _side_file, _side_quant


def checkpoint_formats(path: Path, quant: Any, span: Span = Span(), prefix: str = "") -> tuple:  # noqa: B008
    """``((group, format, bits), ...)`` for the quantised groups of a checkpoint.

    Reads ``quant`` (the config's ``quantization_config``, at key path ``prefix``: default
    :data:`~tiersim.hardware.hf_formats.QUANT_KEY`) or, only when the config has none, the
    ``hf_quant_config.json`` beside ``path``, as vLLM does. One :class:`TiersimError` line for
    a scheme tiersim cannot represent, naming the key.
    """
    prefix = prefix or QUANT_KEY
    if quant is not None and not isinstance(quant, dict):  # vLLM reads any but null as one
        raise TiersimError(f"{path}: key {prefix.rstrip('.')!r}: must be an object with a "
                           f"quant_method (got {shown_json(quant)}); remove the key if the weights "
                           "are BF16")
    if quant == {}:  # read as none, it passed for BF16 without a word
        raise TiersimError(f"{path}: key {prefix.rstrip('.')!r}: an empty object names no "
                           "weight format (no quant_method); remove the key if the weights are "
                           "BF16, or give its quant_method (fp8, mxfp4, compressed-tensors, "
                           "modelopt, awq, gptq, fbgemm_fp8) and settings")
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
    said = ("missing" if not method else  # as written: "BitsAndBytes" was told 'bitsandbytes'
            f"{shown_json(raw_method)} is not supported" if isinstance(raw_method, str) else
            f"must be a name such as 'fp8' (got {shown_json(raw_method)})")  # 5 was told '5'
    raise TiersimError(
        f"{path}: key '{prefix}quant_method': {said}; supported: fp8, mxfp4, "
        "compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no quantization_config at "
        "all: BF16)"
    )


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
                           f"{shown_json(value)}")
    if len(value) != 2:  # vLLM's Fp8Config refuses any other number of dimensions
        raise TiersimError(f"{path}: key '{prefix}weight_block_size': must hold 2 "
                           "numbers, a block's output and input widths (e.g. [128, 128]), as "
                           f"vLLM's Fp8Config requires (got {shown_json(value)})")
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
                           f"(got {shown_json(scheme)})")
    if block:
        raise TiersimError(f"{key}: 'static' beside a weight_block_size: vLLM's Fp8Config "
                           "refuses it (block FP8 scales activations dynamically); use 'dynamic'")


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


def checkpoint_kv_cache(path: Path, quant: Any, prefix: str = QUANT_KEY) -> str:
    """The KV-cache format a checkpoint declares: ``"fp8"`` or ``""`` (none).

    As vLLM resolves ``--kv-cache-dtype auto``: ModelOpt's ``kv_cache_quant_algo`` (in
    ``quantization_config``, at key path ``prefix``, or NVIDIA's ``hf_quant_config.json``
    beside ``path`` when the config has none) or a
    compressed-tensors ``kv_cache_scheme`` of 8-bit floats selects an FP8 cache; anything else
    leaves the model dtype, with a note when the checkpoint declares a KV format tiersim does
    not model (:func:`_unmodelled_kv`), naming the file and key that declare it.
    """
    side = None if quant else _side_file(path)
    if side is not None:  # vLLM reads the side file only where the config has no block
        quant, prefix = _side_block(side)
        path = side
    quant = quant if isinstance(quant, dict) else {}
    kv = _declared_kv(quant)
    declared = _unmodelled_kv(quant, prefix) if not kv else None
    if declared:
        warnings.warn(Note(f"{path}: {declared}: a KV-cache format tiersim does not model; its "
                           "cache is read in the model's dtype, which may hold more bytes a "
                           "token than the checkpoint's; set the tier's kv_dtype (fp8 or bf16) "
                           "to choose one"), stacklevel=2)
    return kv


def checkpoint_static_fp8(path: Path, quant: Any) -> bool:
    """True when the checkpoint's per-tensor FP8 layers carry static (calibrated) activation
    scales, read from the block :func:`checkpoint_kv_cache` reads: ModelOpt's FP8 (its
    exports calibrate every input scale; also FP8 layers of a ``MIXED_PRECISION`` one), an
    ``fp8`` block with ``activation_scheme: static``, or a compressed-tensors group of 8-bit
    float weights whose ``input_activations`` say ``dynamic: false``. Anything else (dynamic
    scales, block FP8, another format) is False: the engine computes each input's scale at run
    time, as NVIDIA's per-tensor FP8 GEMM tables time it."""
    side = None if quant else _side_file(path)
    if side is not None:
        quant = _side_quant(side)
    if not isinstance(quant, dict):
        return False
    method = str(quant.get("quant_method") or "").lower()
    if method == "fp8":
        return quant.get("activation_scheme") == "static" and not quant.get("weight_block_size")
    if quant.get("config_groups"):
        return any(_static_fp8_group(g) for g in _values(quant.get("config_groups")))
    if method in ("", "modelopt") and quant.get("quant_algo"):
        layers = _values(quant.get("quantized_layers"))
        return any(str(spec.get("quant_algo", "")).upper() == "FP8"
                   for spec in (quant, *layers) if isinstance(spec, dict))
    return False


def _values(block: Any) -> list:
    """The values of a mapping (``[]`` for anything else)."""
    return list(block.values()) if isinstance(block, dict) else []


def _static_fp8_group(group: Any) -> bool:
    """A compressed-tensors group of 8-bit float weights with static activation scales."""
    if not isinstance(group, dict):
        return False
    weights, acts = group.get("weights"), group.get("input_activations")
    if not (isinstance(weights, dict) and isinstance(acts, dict)):
        return False
    return (weights.get("type") == "float" and weights.get("num_bits") == 8
            and acts.get("dynamic") is False and acts.get("strategy", "tensor") == "tensor")


def _unmodelled_kv(quant: dict, prefix: str = QUANT_KEY) -> str | None:
    """The key declaring a KV-cache format other than FP8 (a 4-bit or integer cache), as
    ``key 'path.name' is value`` (``prefix``: the block's key path in its file); None where
    none is declared."""
    algo = quant.get("kv_cache_quant_algo")
    if algo not in (None, "", "NONE", "none"):
        return (f"key '{prefix}kv_cache_quant_algo' is {str(algo)[:40]!r}"
                if isinstance(algo, str) else  # true: as JSON writes it (it read 'True')
                f"key '{prefix}kv_cache_quant_algo' is {shown_json(algo)}")
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, dict) and scheme:
        bits, kind = scheme.get("num_bits"), scheme.get("type")
        return f"key '{prefix}kv_cache_scheme' is {str(bits)[:12]}-bit {str(kind)[:20]}"
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
