"""The width tiersim's tables and help pages are laid out for: the terminal's, or
``COLUMNS``, held between :data:`MIN_COLUMNS` and :data:`MAX_COLUMNS` for one command and put
back after it (:func:`_readable_width`, :func:`_restore_width`).
"""

from __future__ import annotations

MIN_COLUMNS = 80
"""Fewest columns output is laid out for (the width the help is laid out for where standard
output is no terminal); a narrower terminal wraps the lines."""


MAX_COLUMNS = 1000
"""Most columns output is laid out for: rich pads each help line to the width, so
``COLUMNS=10000000`` printed 280 MB of spaces for ``tiersim plan --help`` (38 s, 580 MB of
memory), and a width past a machine integer was an OverflowError traceback."""


def _readable_width() -> dict[str, str | None]:
    """Lay every table and help page out for at least :data:`MIN_COLUMNS` columns: rich cuts
    them to the terminal's width, or to ``COLUMNS``, so ``COLUMNS=0`` printed blank lines for
    a help page and ``trace inspect`` a column of box corners (``COLUMNS=20``: options cut to
    ``-…``), status 0. A ``COLUMNS`` above :data:`MAX_COLUMNS` is laid out for that many.
    A ``COLUMNS`` or ``LINES`` that is no number is set aside first
    (:func:`_drop_unreadable_sizes`). Returns what :func:`_restore_width` needs: the value
    before of each variable it changed (None: it was unset)."""
    import os

    changed = _drop_unreadable_sizes()
    before = os.environ.get("COLUMNS")
    width = _whole(before)
    if width is None:  # rich asks the terminal of each standard stream in turn
        for fd in (0, 1, 2):
            try:
                width = os.get_terminal_size(fd).columns
                break
            except (OSError, ValueError):
                continue
    if width is None or MIN_COLUMNS <= width <= MAX_COLUMNS:
        return changed
    changed.setdefault("COLUMNS", before)
    os.environ["COLUMNS"] = str(min(max(width, MIN_COLUMNS), MAX_COLUMNS))
    return changed


def _whole(value: str | None) -> int | None:
    """The whole number a ``COLUMNS`` value is, or None where it is none (unset, a word, or
    digits ``int`` cannot read)."""
    if value is None or not value.strip().isdigit():
        return None
    try:
        return int(value)
    except ValueError:  # str.isdigit takes superscripts ("²"), which int refuses
        return None


def _drop_unreadable_sizes() -> dict[str, str | None]:
    """Unset a ``COLUMNS`` or ``LINES`` that rich would take for a number and fail to read:
    rich reads any value ``str.isdigit`` accepts with ``int``, so ``COLUMNS=²`` or ``LINES=²``
    (a superscript two) ended every command in a ValueError traceback. Such a value is no
    size, as a word is, so the terminal's is used. Returns the values unset, by name."""
    import os

    dropped = {}
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and value.isdigit() and _whole(value) is None:
            dropped[name] = os.environ.pop(name)
    return dropped


def _restore_width(changed: dict[str, str | None]) -> None:
    """Put ``COLUMNS`` and ``LINES`` back as they were before :func:`_readable_width` (a
    command run inside a Python process leaves its environment as it found it)."""
    import os

    for name, value in changed.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
