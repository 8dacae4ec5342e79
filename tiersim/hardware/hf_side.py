"""The quantisation files beside a config: NVIDIA's ``hf_quant_config.json``, which vLLM reads
only where the config has no ``quantization_config`` (:func:`hf_quant_path`,
:func:`_side_file`, :func:`_side_block`), and AutoGPTQ / AutoAWQ ``quantize_config.json`` /
``quant_config.json``, which it opens only when told the format (a note,
:func:`_note_told_quant_file`).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from tiersim.errors import Note, TiersimError, shown_json
from tiersim.hardware.hf_file import _read, _refuse_non_finite


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


def _side_quant(side: Path) -> dict[str, Any]:
    """The ``quantization`` object of NVIDIA's ``hf_quant_config.json`` (the file itself where
    it has none), or one line naming that file and key."""
    return _side_block(side)[0]


def _side_block(side: Path) -> tuple[dict[str, Any], str]:
    """:func:`_side_quant` and the key path leading to it in the file (``quantization.``, or
    none where the file is the block itself), as its errors name its keys."""
    data = _read(side, "NVIDIA's quantisation config")
    quant = data.get("quantization", data)
    _refuse_non_finite(side, quant, "quantization" if "quantization" in data else "")
    if not isinstance(quant, dict):
        raise TiersimError(f"{side}: key 'quantization': must be an object with a quant_algo "
                           f"(got {shown_json(quant)})")
    return quant, "quantization." if "quantization" in data else ""
