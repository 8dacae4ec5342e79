"""compressed-tensors quantisation blocks: each config group's weight format on the modules
its ``targets`` name, but the ``ignore`` list's; sparse weights, and groups vLLM would not
load, refused.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.hf_file import key_part
from tiersim.hardware.hf_formats import QUANT_KEY, _fmt, _group_size, _note_weight_only
from tiersim.hardware.hf_modules import Span, _by_module, _module_list, _Patterns
from tiersim.hardware.precisions import PER_CHANNEL


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
                           f"number of bits (got {shown_json(bits)})")
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
    kind = kind if isinstance(kind, str) and len(kind) <= 20 else shown_json(kind, 20)
    raise TiersimError(
        f"{path}: key '{where}': {shown_json(bits)}-bit {kind} weights "
        f"({'no group size' if size is None else f'group size {shown_json(size)}'}) are not "
        "a format tiersim models "
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
        said, name = f"quantised ({shown_json(activations)})", "quantised activations"
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
    per = "per tensor" if strategy in (None, "tensor") else f"with strategy {shown_json(strategy)}"
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
    for group, scheme in groups.items():
        name = key_part(group)  # for the key paths named: the file's text, cut
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
                           f"{shown_json(targets)}); vLLM reads a string letter by letter and "
                           f"matches no module: write [{shown_json(targets)}]")


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
