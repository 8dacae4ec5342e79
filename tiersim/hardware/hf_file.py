"""Reading a Hugging Face ``config.json`` and checking its values.

:func:`_read` parses the file (one error line for a file tiersim cannot read, a JSON error or
a leading byte-order mark: :func:`tiersim.jsonio.read_json`); :class:`_Config` gives typed
access to its keys, each error naming the file and the key; :func:`_refuse_non_finite` refuses
NaN and the infinities Python's JSON reader accepts. Used by the readers of
:mod:`tiersim.hardware.hf_config`, the entry point.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError, shown_json
from tiersim.jsonio import HF_BOM, read_json


def _read(path: Path, what: str = "a model config") -> dict[str, Any]:
    """The parsed JSON object of ``path`` (``what`` it is, for its errors: the quantisation
    file beside a config was "a model config"), or one error line (a leading byte-order mark
    too, which transformers refuses: :data:`~tiersim.jsonio.HF_BOM`)."""
    data = read_json(path, what, bom=HF_BOM, floats_as_written=True)  # quoted as written
    if not isinstance(data, dict):
        raise TiersimError(f"{path}: {what} must be a JSON object")
    return data


#: The largest size a config key may give (2**53, the largest whole number a float, and so
#: most JSON readers, holds exactly): far past any model, and products of a few of them
#: (a layer's weights, the model's) stay finite floats.
MAX_SIZE = 2**53


class _Config:
    """Typed access to a config's keys with errors that name the file and the key."""

    def __init__(self, path: Path, data: dict[str, Any], prefix: str = ""):
        self.path, self.data, self.prefix = path, data, prefix

    def error(self, key: str, message: str) -> TiersimError:
        """An error naming this file and ``key`` (under ``prefix``: ``text_config.``), each
        name in it cut to :func:`key_part`'s width."""
        shown_key = ".".join(key_part(part) for part in (self.prefix + key).split("."))
        return TiersimError(f"{self.path}: key {shown_key!r}: {message}")

    def int(self, key: str, default: int | None = None, *alternatives: str,
            bounded: bool = True) -> int:
        """A positive integer under ``key`` (or the first alternative present); null is absent,
        as in transformers (``"head_dim": null``: hidden_size / num_attention_heads). At most
        :data:`MAX_SIZE` unless not ``bounded`` (a caller with its own, tighter bound)."""
        for name in (key, *alternatives):
            if self.data.get(name) is not None:
                key = name
                break
        else:
            if default is None:
                state = "null" if key in self.data else "missing"
                raise self.error(key, f"{state}; needed to build the model")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(key, f"must be a positive integer (got {shown_json(value)})")
        return self._bounded(key, value, "a positive integer") if bounded else value

    def flag(self, key: str) -> bool:
        """A true/false value under ``key`` (False when absent or null); a string such as
        ``"false"`` is refused, not read as true."""
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false (got {shown_json(value)})")
        return value

    def count(self, key: str, most: int | None = None) -> int:
        """A whole number >= 0 under ``key`` (0 when absent or null), at most ``most``."""
        value = self.data.get(key)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(key, f"must be a whole number >= 0 (got {shown_json(value)})")
        if most is not None and value > most:
            raise self.error(key, f"must be at most {most} (got {shown_json(value)})")
        return self._bounded(key, value, "a whole number >= 0")

    def _bounded(self, key: str, value: int, what: str) -> int:
        """``value`` when at most :data:`MAX_SIZE`, else one line: sizing a tier divides the
        weights into floats, which a larger size overflows (or leaves inexact)."""
        if value > MAX_SIZE:
            raise self.error(key, f"must be {what} of at most {MAX_SIZE:,} (got "
                             f"{shown_json(value)}); give the value the model card states")
        return value


def key_part(name) -> str:
    """A name from a config (a map's key: a group's, a layer type's) for the key path an
    error names: whole up to 40 characters, else its first 37 and "..." (a 5,000-character
    group name was written out whole)."""
    text = str(name)
    return text if len(text) <= 40 else text[:37] + "..."


def _model_name(path: Path) -> str:
    """The folder name for ``.../NAME/config.json``, else the file's stem."""
    if path.name == "config.json" and path.parent.name:
        return path.parent.name
    return path.stem


NAME_KEYS = frozenset({"quant_method", "quant_algo"})
"""Keys of a quantisation block that hold a name (``"fp8"``, ``"NVFP4"``): a NaN or infinity
there is told what the key takes, by the check of that key ("must be a name such as 'fp8'
(got NaN)"), not to "give a finite number", which the key takes neither."""


def _refuse_non_finite(path: Path, data: Any, prefix: str) -> None:
    """One line naming the first key under ``data`` (at key path ``prefix``) that holds NaN or
    an infinity, which Python's JSON reader accepts and JSON does not, so it is not read as a
    number; a key of :data:`NAME_KEYS` is left to its own check."""
    stack = [(prefix, data)]
    while stack:
        where, value = stack.pop()
        if where.rpartition(".")[2] in NAME_KEYS:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            if isinstance(getattr(value, "text", None), str):  # 1e400 was told "Infinity"
                raise TiersimError(f"{path}: key {where!r}: {value.text} is beyond the range "
                                   "of numbers; give a finite number or remove the key")
            raise TiersimError(f"{path}: key {where!r}: {json.dumps(value)} is not a number JSON "
                               "allows; give a finite number or remove the key")
        if isinstance(value, dict):
            stack.extend(reversed([(f"{where}.{k}" if where else str(k), v)
                                   for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(value)]))
