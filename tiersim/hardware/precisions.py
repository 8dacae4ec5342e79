"""Numeric formats a tier can serve its weights in, and how each GPU computes with them.

Bits per weight include the scale overhead of each format:

- ``bf16``: 16 bits.
- ``fp8``: FP8 E4M3 weights and activations (W8A8). Scales are per tensor or per output channel
  (one FP32 per row of 2,048-8,192 weights: under 0.02 bit per weight), rounded to 8.0 bits.
  Native on Hopper and Blackwell (FP8 tensor cores).
- ``w4a16``: 4-bit integer weights, groups of 128 along the input dimension, one 16-bit scale per
  group and no zero point (the symmetric ``W4A16`` scheme of llm-compressor / compressed-tensors,
  run by the Marlin / Machete kernels in vLLM): 4 + 16/128 = 4.125 bits. (Asymmetric GPTQ/AWQ adds
  a packed 4-bit zero per group: 4.156 bits; the difference is under 1% of weight memory.)
  Activations stay 16-bit, so the matrix math is BF16 after dequantisation on every GPU.
- ``nvfp4``: FP4 E2M1 values in 16-element blocks, each with an FP8 E4M3 scale (4 + 8/16 = 4.5
  bits), plus one FP32 scale per tensor (negligible). Blackwell tensor cores compute in it
  directly, with activations quantised to NVFP4 too (W4A4); Hopper has no FP4 tensor cores, so
  there the weights are dequantised and the math runs in BF16 (weight-only).

- ``fp8_block``: FP8 E4M3 weights with one FP32 scale per 128 x 128 block (8 + 32/16384 bits),
  activations quantised per token and 128-wide group (DeepSeek-V3, Qwen3-FP8, MiniMax-M2
  checkpoints: ``quantization_config.weight_block_size``). Native on Hopper and Blackwell.
- ``mxfp4``: FP4 E2M1 values in 32-element blocks with an E8M0 scale (4 + 8/32 = 4.25 bits;
  gpt-oss experts). Native on Blackwell; weight-only (dequantised, BF16 math) on Hopper.

Checkpoints may also store NVFP4, FP8 or INT8 weights with 16-bit activations (``nvfp4a16``:
4.5 bits; ``fp8a16``: 8 bits; ``w8a16``: INT8 in groups of 128 with a 16-bit scale each,
8 + 16/128 = 8.125 bits, or another group size: GPTQ ``bits: 8``, compressed-tensors W8A16;
:data:`WEIGHT_ONLY`). vLLM serves them with weight-only (Marlin) kernels on every GPU, so they
are timed as ``w4a16`` at their own bits a weight; they are checkpoint formats, not tier
precisions.

A tier's ``precision`` names one format for every linear layer inside the transformer blocks
(attention projections, dense MLPs, routed and shared experts; as llm-compressor and NVIDIA
ModelOpt quantise by default), while token embeddings, ``lm_head``, norms and the MoE router stay
BF16. ``precision: checkpoint`` instead serves each module group in the format its checkpoint
ships (:func:`weight_formats`), read from the model's ``config.json`` ``quantization_config``
(or NVIDIA's ``hf_quant_config.json``) by :mod:`tiersim.hardware.hf_config`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tiersim.errors import TiersimError, shown
from tiersim.hardware.gpus import GPU

#: Parameter groups of a model (see :meth:`tiersim.hardware.models.ModelArch.param_groups`).
QUANTISED_GROUPS = frozenset({"attention", "mlp", "shared_experts", "experts"})
BF16_GROUPS = frozenset({"embedding", "lm_head", "norms", "router"})

#: Bytes per element of a compute / activation dtype.
DTYPE_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 4.5 / 8}


@dataclass(frozen=True)
class Precision:
    """A weight format and how it is computed.

    name: key used in scenarios ("bf16", "fp8", "w4a16", "nvfp4").
    label: how it is shown to people ("BF16", "W4A16" ...).
    weight_bits: storage bits per quantised weight, scales included.
    native_compute: the tensor-core dtype the format is computed in where the GPU supports it
        ("bf16", "fp8" or "fp4"); elsewhere it is dequantised and computed in BF16.
    weight_only: activations stay 16-bit even where the format is native (W4A16).
    native_as: the format whose tensor cores it runs on where the GPU has them (block FP8 on
        FP8's), when not its own name.
    group_size: the weights per scale where its bits do not imply it (a weight-only NVFP4
        checkpoint timed as W4A16: 16; :data:`PER_CHANNEL` for one scale per row); 0: they do.
    value_bits: bits of each stored weight value, scales left out (W4A16 at any group size,
        NVFP4, MXFP4: 4; FP8: 8; BF16: 16). A format timed on the tables of the format its
        ``name`` names but of another width (FP8 W8A16 on W4A16's) reads them rescaled
        (:func:`table_format`); 0: not stated, read as the tables' own.
    """

    name: str
    label: str
    weight_bits: float
    native_compute: str
    weight_only: bool = False
    native_as: str = ""
    group_size: int = 0
    value_bits: int = 0

    def bits_for(self, group: str) -> float:
        """Storage bits per weight of one parameter group."""
        return self.weight_bits if group in QUANTISED_GROUPS else 16.0

    def is_native_on(self, gpu: GPU) -> bool:
        """True when ``gpu``'s tensor cores compute in this format without dequantising."""
        return (self.native_as or self.name) in gpu.native

    def compute_dtype_on(self, gpu: GPU) -> str:
        """The dtype the quantised layers' matrix math runs in on ``gpu``."""
        return self.native_compute if self.is_native_on(gpu) else "bf16"


PRECISIONS: dict[str, Precision] = {
    "bf16": Precision("bf16", "BF16", 16.0, "bf16", value_bits=16),
    "fp8": Precision("fp8", "FP8", 8.0, "fp8", value_bits=8),
    "w4a16": Precision("w4a16", "W4A16", 4.0 + 16.0 / 128, "bf16", weight_only=True,
                       value_bits=4),
    "nvfp4": Precision("nvfp4", "NVFP4", 4.0 + 8.0 / 16, "fp4", value_bits=4),
    "fp8_block": Precision("fp8_block", "FP8 (block)", 8.0 + 32.0 / 16384, "fp8", native_as="fp8",
                           value_bits=8),
    "mxfp4": Precision("mxfp4", "MXFP4", 4.0 + 8.0 / 32, "fp4", native_as="nvfp4", value_bits=4),
}
#: The tier precision that serves every group as its checkpoint ships it.
CHECKPOINT = "checkpoint"
#: Module groups that carry their own weight format (the rest, router and norms, are BF16).
FORMAT_GROUPS = ("attention", "mlp", "shared_experts", "experts", "lm_head", "embedding")


def get_precision(name: str | Precision) -> Precision:
    """The format called ``name`` (case-insensitive); a :class:`Precision` passes through."""
    if isinstance(name, Precision):
        return name
    if isinstance(name, WeightFormats):
        return name.headline
    key = str(name).strip().lower()
    if key == CHECKPOINT:
        return CHECKPOINT_PRECISION
    if key not in PRECISIONS:
        known = ", ".join([*PRECISIONS, CHECKPOINT])
        raise TiersimError(f"unknown precision {shown(name)}; known precisions: {known}")
    return PRECISIONS[key]


def kv_dtype_bytes(kv_dtype: str) -> float:
    """Bytes per KV-cache element for ``kv_dtype`` ("bf16"/"fp16" = 2, "fp8" = 1). vLLM's
    ``fp8_e5m2`` is refused with its reason: vLLM's FLASH_ATTN backend (``FlashAttentionBackend.
    get_fp8_dtype_for_flashattn``) raises on it, and the FP8 attention timings are E4M3's."""
    key = str(kv_dtype).strip().lower()
    sizes = {"bf16": 2.0, "fp16": 2.0, "auto": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0}
    if key == "fp8_e5m2":  # vLLM knows it, so "unknown" would mislead
        raise TiersimError("KV-cache dtype 'fp8_e5m2' is not modelled: vLLM's FLASH_ATTN "
                           "backend (its default on Hopper) stops on it ('Unrecognized FP8 "
                           "dtype'), and tiersim times FP8 attention with E4M3 kernels; use "
                           "'fp8' (E4M3)")
    if key not in sizes:
        raise TiersimError(f"unknown KV-cache dtype {shown(kv_dtype)}; use 'bf16', 'fp8' or "
                           "'auto' (the checkpoint's own)")
    return sizes[key]


#: KV-cache dtype names that are another's: vLLM's ``--kv-cache-dtype fp8`` is E4M3.
KV_DTYPE_ALIASES = {"fp8_e4m3": "fp8"}


def kv_dtype_name(kv_dtype: str) -> str:
    """``kv_dtype`` lower-cased under its one name (:data:`KV_DTYPE_ALIASES`): profile tables
    are keyed by it, so ``fp8_e4m3`` reads the ``fp8`` tables (it read none: the roofline)."""
    key = str(kv_dtype).strip().lower()
    return KV_DTYPE_ALIASES.get(key, key)


def resolve_kv_dtype(model: Any, kv_dtype: str) -> str:
    """The KV-cache dtype a server runs for ``kv_dtype``: ``"auto"`` (vLLM's default) is the
    format the checkpoint declares (``model.kv_cache``, e.g. ``"fp8"``), else ``"bf16"``, the
    model dtype; any other value is returned under its one name (:func:`kv_dtype_name`),
    checked by :func:`kv_dtype_bytes`."""
    key = str(kv_dtype).strip().lower()
    if key == "auto":
        return kv_dtype_name(getattr(model, "kv_cache", "") or "bf16")
    kv_dtype_bytes(key)
    return kv_dtype_name(key)


def tier_kv_dtype(model: Any, precision: str, kv_dtype: str) -> str:
    """The ``kv_dtype`` a tier serving ``model`` at ``precision`` runs: ``"auto"`` follows the
    KV format the checkpoint declares (:func:`resolve_kv_dtype`) only where the tier serves the
    checkpoint's own formats (``checkpoint``, or a format the checkpoint stores); a tier serving
    another release of the model (BF16 of an FP8 checkpoint, say) runs that release's default,
    BF16. Any other value is the tier's. ``precision`` is read as :func:`get_precision` reads
    it, without case or surrounding blanks (``FP8`` is ``fp8``)."""
    if str(kv_dtype).strip().lower() != "auto":
        return kv_dtype
    own = {fmt for _, fmt, _ in getattr(model, "checkpoint", ())}
    name = str(precision).strip().lower()
    return kv_dtype if name == CHECKPOINT or name in own else "bf16"


def w4a16(group_size: int) -> Precision:
    """Symmetric INT4 weight-only with one 16-bit scale per ``group_size`` weights."""
    if group_size == 128:
        return PRECISIONS["w4a16"]
    label = "W4A16 per channel" if group_size >= PER_CHANNEL else f"W4A16 g{group_size}"
    return Precision("w4a16", label, 4.0 + 16.0 / group_size, "bf16", weight_only=True,
                     value_bits=4)


def w8a16(group_size: int) -> Precision:
    """Symmetric INT8 weight-only with one 16-bit scale per ``group_size`` weights (GPTQ
    ``bits: 8``, compressed-tensors W8A16), a checkpoint format (:data:`WEIGHT_ONLY`) timed as
    ``w4a16`` on W4A16's tables rescaled to its bits (:func:`table_format`). Zero points, where a
    GPTQ checkpoint stores them (8 bits a group, 0.06 bits a weight), are not counted."""
    label = "W8A16 per channel" if group_size >= PER_CHANNEL else (
        "W8A16" if group_size == 128 else f"W8A16 g{group_size}")
    return Precision("w4a16", label, 8.0 + 16.0 / group_size, "bf16", weight_only=True,
                     group_size=min(group_size, PER_CHANNEL), value_bits=8)


#: The integer weight-only formats by value bits: each a function of its group size.
INT_WEIGHT_ONLY = {4: w4a16, 8: w8a16}


PER_CHANNEL = 1 << 16
"""The group size a per-channel scale is read as (``group_size: -1``, GPTQ's and vLLM's way of
saying one scale per output channel): its scale bytes are negligible."""


def w4a16_group_size(prec: Precision) -> int:
    """The group size of a W4A16 format: its own (:data:`WEIGHT_ONLY`), else the one its bits
    imply (``4 + 16 / group``; 0 per channel), else 128 (the default, and a group whose modules
    are not all in one format)."""
    if prec.group_size:
        return 0 if prec.group_size >= PER_CHANNEL else prec.group_size
    if prec.weight_bits > 4.0:
        group = max(1, round(16.0 / (prec.weight_bits - 4.0)))
        if abs(w4a16(group).weight_bits - prec.weight_bits) < 1e-9:
            return 0 if group >= PER_CHANNEL else group
    return 128


#: Checkpoint formats that store their weights in a W4A4 / W8A8 format's numbers, or in 8-bit
#: integers, but keep the activations 16-bit (compressed-tensors ``input_activations: null``,
#: ModelOpt ``W4A16_NVFP4``, GPTQ ``bits: 8``). vLLM serves them with weight-only kernels
#: (Marlin: dequantised weights, BF16 math) on every GPU, so they are timed as ``w4a16`` (the
#: name the step models and accuracy priors know) at their own bits a weight, under their own
#: label: 8-bit weights (FP8 W8A16, INT8 W8A16) on W4A16's tables rescaled by the roofline
#: (:func:`table_format`). ``w8a16`` is its 128-wide groups' entry; another group size is
#: :func:`w8a16` of it.
WEIGHT_ONLY: dict[str, Precision] = {
    "nvfp4a16": Precision("w4a16", "NVFP4A16", 4.0 + 8.0 / 16, "bf16", weight_only=True,
                          group_size=16, value_bits=4),
    "fp8a16": Precision("w4a16", "FP8 W8A16", 8.0, "bf16", weight_only=True,
                        group_size=PER_CHANNEL, value_bits=8),
    "w8a16": w8a16(128),
}


def table_format(prec: Precision) -> Precision | None:
    """The format whose weight bits a profile's tables of ``prec.name`` were timed at, where
    ``prec`` stores weights of another width: FP8 W8A16 (8-bit weights) on W4A16's 4-bit
    tables, which are then read rescaled by the roofline from those bits to ``prec``'s. None
    where the widths agree (W4A16 at any group size, NVFP4A16 on W4A16's tables): the tables
    do not record the group size they were timed at, and are read as timed."""
    own = PRECISIONS.get(prec.name)
    if own is None or not prec.value_bits or own.value_bits == prec.value_bits:
        return None
    return own


def prior_name(prec: Precision) -> str:
    """The precision whose accuracy prior describes weights stored in ``prec``: its name, but
    ``w8a16`` for a weight-only format of 8-bit values (FP8 W8A16 is timed as ``w4a16`` and
    reads W4A16's tables rescaled, yet its weights keep 8 bits of precision, which qllm-eval's
    W8 setting measures)."""
    if prec.weight_only and prec.value_bits == 8:
        return "w8a16"
    return prec.name


def checkpoint_precision(name: str) -> Precision:
    """The format a checkpoint group is recorded in (``ModelArch.checkpoint``): a tier
    precision, or a weight-only checkpoint format (:data:`WEIGHT_ONLY`)."""
    return PRECISIONS.get(name) or WEIGHT_ONLY[name]


#: What ``get_precision("checkpoint")`` returns: a placeholder whose groups resolve per model.
CHECKPOINT_PRECISION = Precision(CHECKPOINT, "checkpoint", 16.0, "bf16")


@dataclass(frozen=True)
class WeightFormats:
    """The weight format of every module group of one tier (see :data:`FORMAT_GROUPS`).

    headline: the tier's ``precision`` (the format of the quantised linear layers, or the
    checkpoint placeholder). Router and norms are always BF16. present: the groups the model
    has, which :attr:`label` names (a dense model has no experts).
    """

    headline: Precision
    attention: Precision
    mlp: Precision
    shared_experts: Precision
    experts: Precision
    lm_head: Precision
    embedding: Precision
    present: tuple[str, ...] = FORMAT_GROUPS

    def of(self, group: str) -> Precision:
        """The format of parameter ``group`` (router and norms: BF16)."""
        if group in FORMAT_GROUPS:
            return getattr(self, group)
        return PRECISIONS["bf16"]

    def bits_for(self, group: str) -> float:
        """Storage bits per weight of ``group``, scales included."""
        return self.of(group).weight_bits

    @property
    def label(self) -> str:
        """``FP8`` for a uniform tier; the distinct formats for a checkpoint
        (``attention BF16, experts W4A16 g32``)."""
        if self.headline.name != CHECKPOINT:
            return self.headline.label
        parts = [f"{g} {self.of(g).label}" for g in FORMAT_GROUPS[:5] if g in self.present]
        return "checkpoint (" + ", ".join(parts) + ")"

    @property
    def served(self) -> str:
        """The formats of the block's linear layers the model has, in words, however the tier
        named them: one (``FP8``) where they share it, else each group's (``attention BF16,
        experts W4A16 g32``); ``lm_head`` and embeddings left out. A ``precision: fp8`` tier
        and a checkpoint of FP8 layers read the same (what a fidelity record's rows are
        compared with)."""
        groups = [g for g in FORMAT_GROUPS[:4] if g in self.present]
        labels = {self.of(g).label for g in groups}
        if len(labels) == 1:
            return labels.pop()
        return ", ".join(f"{g} {self.of(g).label}" for g in groups)


def weight_formats(model, precision) -> WeightFormats:
    """The per-group formats of ``model`` served at tier ``precision``.

    A named precision quantises the linear layers of the blocks (attention, dense MLP, shared
    and routed experts) and keeps embeddings and ``lm_head`` BF16; ``"checkpoint"`` takes each
    group's format from the model's checkpoint (BF16 where it declares none).
    """
    if isinstance(precision, WeightFormats):
        return precision
    prec = get_precision(precision)
    bf16 = PRECISIONS["bf16"]
    if prec.name != CHECKPOINT:
        return WeightFormats(prec, prec, prec, prec, prec, bf16, bf16)
    groups = {g: checkpoint_format(model, g) for g in FORMAT_GROUPS}
    counts = model.param_groups() if hasattr(model, "param_groups") else {}
    present = tuple(g for g in FORMAT_GROUPS if counts.get(g, 1))
    return WeightFormats(prec, **groups, present=present)


def checkpoint_format(model, group: str) -> Precision:
    """The format parameter ``group`` of ``model`` ships in (BF16 unless its config says)."""
    for name, fmt, bits in getattr(model, "checkpoint", ()):
        if name == group:
            return stored_format(fmt, bits)
    return PRECISIONS["bf16"]


def stored_format(name: str, bits: float) -> Precision:
    """Checkpoint format ``name`` (:func:`checkpoint_precision`) stored at ``bits`` a weight:
    itself; an integer weight-only format (W4A16, W8A16) of the group size those bits imply;
    else a group whose modules are not all in one format (an ignore list naming some modules
    or layers, a per-layer checkpoint), computed as ``name`` (most of its weights) and stored
    at the bits its modules average."""
    base = checkpoint_precision(name)
    if base.weight_bits == bits:
        return base
    for value_bits, sized_of in INT_WEIGHT_ONLY.items():
        if base == sized_of(128) and bits > value_bits:
            sized = sized_of(max(1, round(16.0 / (bits - value_bits))))
            if abs(sized.weight_bits - bits) < 1e-9:
                return sized
    return dataclasses.replace(base, label=f"{base.label} ({bits:.3g} bits a weight: some "
                               "modules in another format)", weight_bits=bits)


def checkpoint_bits(model, group: str) -> float:
    """Storage bits per weight of parameter ``group`` of ``model`` as its checkpoint ships it."""
    if group not in FORMAT_GROUPS:
        return 16.0
    return checkpoint_format(model, group).weight_bits
