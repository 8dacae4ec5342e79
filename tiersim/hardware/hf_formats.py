"""Checkpoint weight formats as the quantisation readers name them: ``(format, bits)`` of a
format name (:func:`_fmt`), the group sizes integer weights may have, and the notes that a
weight-only format (16-bit activations) is timed as W4A16, one per file and format
(:func:`_notes_once`).

The lowest of the quantisation modules (:mod:`tiersim.hardware.hf_modules`,
:mod:`tiersim.hardware.hf_quant` and the per-method readers build on it).
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.precisions import PER_CHANNEL, WEIGHT_ONLY, prior_name

#: The key path of a config.json's quantisation block, as its errors name its keys.
QUANT_KEY = "quantization_config."


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
                           f"65536 (got {shown_json(value)})")
    if marlin and value not in MARLIN_GROUP_SIZES:
        raise TiersimError(
            f"{path}: key {key!r}: must be 32, 64, 128 or -1 (per channel) (got {value}); "
            f"tiersim times {marlin} at the group sizes vLLM's Marlin kernel serves (at another "
            "vLLM runs a kernel tiersim does not time, or refuses a layer whose input width the "
            "groups do not divide): use such a checkpoint, or remove quantization_config from "
            "a copy of config.json and set the tier's precision")
    return value
