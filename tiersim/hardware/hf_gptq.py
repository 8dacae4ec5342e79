"""AWQ and GPTQ quantisation blocks: 4-bit (and GPTQ 8-bit) integer weights with 16-bit
activations, read as vLLM serves them with its (AWQ-)Marlin kernels, and refused where vLLM
would run a kernel tiersim does not time; GPTQModel's per-module ``dynamic`` overrides and a
GPTQ ``modules_in_block_to_quantize``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError, shown_json
from tiersim.hardware.hf_formats import QUANT_KEY, _group_size, _int_fmt, _note_weight_only
from tiersim.hardware.hf_modules import (
    _ROUTED_EXPERT,
    _SINGLES_OUT_EXPERTS,
    Span,
    _by_module,
    _module_list,
    _Patterns,
    _uniform,
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
                           f"of lists of them (got {shown_json(value)})")
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
            f"{path}: key '{prefix}zero_point': must be true (got "
            f"{shown_json(quant['zero_point'])});"
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
                       f"{shown_json(value)}); vLLM quantises lm_head for any value but false, 0, "
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
    got = "missing" if bits is None else f"must be {need} (got {shown_json(bits)})"
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
        f"{path}: key {key!r}: must be true (got {shown_json(sym)}); tiersim reads symmetric GPTQ "
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
                           f"regexes (got {shown_json(dynamic)})")
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
                           f"group_size ...) (got {shown_json(spec)})")
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
