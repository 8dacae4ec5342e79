"""Release numbers of the tiersim versions files record (a sweep point's ``tiersim``, a
profile's ``provenance.tool``), to tell a later release's file from an earlier one's."""

from __future__ import annotations

import re
from typing import Any

import tiersim

MAX_PART_DIGITS = 18
"""The most digits a release number has: a longer one (an edited file's; one of more than
4,300 digits is more than Python makes an int of) names no release."""


def release(version: Any) -> tuple[int, ...] | None:
    """The release numbers a version text starts with (``0.2.0+3f2a9c1b7e04`` -> ``(0, 2,
    0)``); None when it starts with none, or one of them has more than
    :data:`MAX_PART_DIGITS` digits."""
    found = re.match(r"\d+(?:\.\d+)*", version) if isinstance(version, str) else None
    parts = found.group().split(".") if found else []
    if not parts or any(len(part) > MAX_PART_DIGITS for part in parts):
        return None
    return tuple(int(part) for part in parts)


def later_than_this(version: Any) -> bool:
    """Whether ``version`` is of a later release than this tiersim's."""
    theirs, mine = release(version), release(tiersim.__version__)
    return theirs is not None and mine is not None and theirs > mine


def release_text(version: Any) -> str:
    """The release numbers ``version`` starts with, written out (``0.2.0+3f2a`` -> ``0.2.0``;
    empty when it starts with none)."""
    return ".".join(map(str, release(version) or ()))
