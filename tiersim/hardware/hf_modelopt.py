"""NVIDIA ModelOpt quantisation blocks: one ``quant_algo`` (FP8, NVFP4, W4A16_NVFP4) with an
exclude list, or per layer (``MIXED_PRECISION``: ``quantized_layers``, or ``config_groups``
laid out as compressed-tensors lays them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError, shown, shown_json
from tiersim.hardware.hf_compressed import _compressed_tensors
from tiersim.hardware.hf_formats import QUANT_KEY, _fmt, _note_weight_only
from tiersim.hardware.hf_modules import (
    Span,
    _by_module,
    _module_list,
    _Patterns,
    _uniform,
    runs,
)
from tiersim.hardware.precisions import WEIGHT_ONLY

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
                           f"object with a quant_algo (got {shown_json(spec)})")
    if spec.get("quant_algo") is None:
        raise TiersimError(f"{path}: key '{where}quant_algo': missing; say which format "
                           f"({', '.join(_MODELOPT_ALGOS)})")
    if not isinstance(spec["quant_algo"], str):  # true was told as 'TRUE', 5 as '5'
        raise TiersimError(f"{path}: key '{where}quant_algo': must be a name such as 'FP8' "
                           f"(got {shown_json(spec['quant_algo'])}); say which format "
                           f"({', '.join(_MODELOPT_ALGOS)})")
    algo = spec["quant_algo"].upper()
    if algo == "UNQUANTIZED" and per_layer:  # a layer of a MIXED_PRECISION checkpoint as is
        return _fmt("bf16")
    if algo not in _MODELOPT_ALGOS:
        raise TiersimError(
            f"{path}: key '{where}quant_algo': {shown_json(spec['quant_algo'])} is not a format "
            "tiersim models; "  # as written ("fp9" was told 'FP9')
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
        f"{path}: key {key!r}: must be 16 (got {shown_json(value)}); {algo} scales each 16 weights "
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
                               f"{shown_json(layers)}")
        nvfp4 = next((str(spec["quant_algo"]).upper() for spec in layers.values()
                      if isinstance(spec, dict) and str(spec.get("quant_algo", "")).upper()
                      in ("NVFP4", "W4A16_NVFP4")), None)
        if nvfp4:  # vLLM sizes every NVFP4 layer's groups by the block's group_size
            _check_nvfp4_group(path, f"{prefix}group_size", quant.get("group_size"), nvfp4)
        return _per_layer(path, layers, span, prefix)
    skip = _module_list(path, quant, "exclude_modules", "ignore", prefix=prefix)
    return _uniform(_modelopt_fmt(path, quant, prefix=prefix), skip, span)


_LAYER_INDEX = re.compile(r"layers\.(\d+)\.")


_EXPERT_INDEX = re.compile(r"experts\.\d")


def _per_layer(path: Path, layers: dict, span: Span, prefix: str = QUANT_KEY):
    """Each group of a MIXED_PRECISION checkpoint, module by module and layer by layer (a
    module no key names is BF16), as :func:`~tiersim.hardware.hf_modules._by_module` states
    it; refused when no key names a module of the model (every weight would silently read as
    BF16)."""
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
    ordered: dict[int, _Ordered] = {}

    def format_of(layer: int, names: list[str]):
        if layer not in ordered:
            ordered[layer] = _Ordered(by_layer.get(layer, []) + anywhere)
        entry = ordered[layer].first(names)
        if entry is None:
            return None
        _, key, spec = entry
        matched.add(key)
        return _modelopt_fmt(path, spec, f"quantized_layers.{key}.", prefix)

    each = any(_EXPERT_INDEX.search(str(key)) for key in layers)
    formats = _by_module(span, format_of, each)
    if not matched and not span.mtp:
        example = span.module_names(0, span.members_of("attention", False)[0][0])[0]
        raise TiersimError(f"{path}: key '{prefix}quantized_layers': no entry names a module "
                           f"of this model (first: {shown(next(iter(layers)))}), so every "
                           f"weight would read as BF16; name modules as the checkpoint does "
                           f"(e.g. {example!r})")
    return formats


class _Ordered:
    """A layer's MIXED_PRECISION entries, most specific first: :meth:`first` gives the first
    that names a module, as matching each entry in turn does, but finds a plain key (a module
    name, no wildcard or regex) by looking each run of the module's names up (:func:`runs`).
    NOTE: matched in turn, a checkpoint naming each expert's projections (94 layers of 128
    experts: 36,472 keys) matched every module against its layer's 388 keys, 1.3 billion
    matches: past the regex budget, so refused."""

    def __init__(self, entries: list[tuple[_Patterns, str, Any]]):
        self.entries, self.plain, self.other = entries, {}, []
        for at, (listed, key, _) in enumerate(entries):
            if listed.plain and not listed.other:
                self.plain.setdefault(key, at)
            else:
                self.other.append(at)

    def first(self, names: list[str]) -> tuple[_Patterns, str, Any] | None:
        """The first entry naming one of ``names`` (None: none does)."""
        best = min((self.plain[run] for name in names for run in runs(name)
                    if run in self.plain), default=len(self.entries))
        for at in self.other:
            if at > best:
                break
            if any(self.entries[at][0].match(name) for name in names):
                return self.entries[at]
        return self.entries[best] if best < len(self.entries) else None

