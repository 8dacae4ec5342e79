"""``sweep.json`` written a point at a time, byte for byte as :func:`write_json_atomic` writes it.

NOTE (speed, memory): ``write_json_atomic`` copies the whole document (:func:`clean`) and
encodes it with ``indent=1``, which the json module does in pure Python: for a 10^6-point grid,
seconds per 10^5 points and a copy of every point's values. Here the text is put together from
parts each encoded once by that same call (``json.dumps(clean(x), indent=1, default=str,
allow_nan=False)``): the document without its points, each path and each axis value (the
points of a grid share their value objects, so a value is encoded once, not once per point),
indented as ``indent=1`` indents them at their depth; and it is written in batches of points.
JSON text holds no raw line break (a string's is escaped), so indenting a part's lines is
indenting the part.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

from tiersim.atomic import clean, commit, stage

#: Points encoded before their text is written out.
BATCH = 4096


def _dumps(value: Any) -> str:
    """``value`` as ``write_json_atomic`` encodes it, at depth 0."""
    return json.dumps(clean(value), indent=1, default=str, allow_nan=False)


def _scalar(value: Any) -> str:
    """:func:`_dumps` of a point's id or index: text as the encoder writes a ``str`` alone
    (``encode_basestring_ascii``, which ``clean`` leaves as it is), an ``int`` as its
    ``repr`` (json's), anything else by :func:`_dumps`."""
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    return repr(value) if kind is int else _dumps(value)


def _at_depth(text: str, depth: int) -> str:
    """Encoded ``text`` as it reads nested ``depth`` levels deep (its first line stays where
    it starts)."""
    return text.replace("\n", "\n" + " " * depth)


class _Parts:
    """The encoded parts of points, each remembered by the object it encodes."""

    def __init__(self):
        self._seen: dict[int, tuple[Any, str]] = {}  # id -> (object, text): holding the
        # object keeps its id from being reused while it is remembered

    def text(self, value: Any, depth: int) -> str:
        """``value`` encoded at ``depth``."""
        found = self._seen.get(id(value))
        if found is None or found[0] is not value:
            found = self._seen[id(value)] = (value, _at_depth(_dumps(value), depth))
        return found[1]

    def point(self, point) -> str:
        """One point's entry of the ``points`` list (depth 2), as ``indent=1`` writes it."""
        values = point.values
        if values:
            keys = [f"    {self.text(str(path), 4)}: {self.text(value, 4)}"
                    for path, value in values.items()]
            shown = "{\n" + ",\n".join(keys) + "\n   }"
        else:
            shown = "{}"
        return (f"  {{\n   \"point_id\": {_scalar(point.id)},\n   \"index\": "
                f"{_scalar(point.index)},\n   \"values\": {shown}\n  }}")


def write_manifest(path: Path, head: dict[str, Any], points: list) -> None:
    """Write ``head`` with ``"points"`` (``point_id``, ``index``, ``values`` of each of
    ``points``) as its last key to ``path``, atomically, in the bytes
    ``write_json_atomic(path, {**head, "points": [...]})`` writes."""
    commit([(stage_manifest(path, head, points), Path(path))])


def stage_manifest(path: Path, head: dict[str, Any], points: list) -> Path:
    """The bytes :func:`write_manifest` writes, in a temp file beside ``path`` (returned) for
    :func:`tiersim.atomic.commit` to rename into place."""
    text = _dumps({**head, "points": []})
    cut = text.rindex('"points": []') + len('"points": ')
    before, after = text[:cut], text[cut + 2:]

    def write(handle) -> None:
        if not points:
            handle.write((before + "[]" + after).encode())
            return
        parts = _Parts()
        handle.write((before + "[\n").encode())
        for start in range(0, len(points), BATCH):
            lead = "" if start == 0 else ",\n"
            batch = ",\n".join(parts.point(p) for p in points[start:start + BATCH])
            handle.write((lead + batch).encode())
        handle.write(("\n ]" + after).encode())

    return stage(path, write)
