"""What a sweep says beside its results: one of tiersim's notes (:func:`_note`), and text cut
to one line (:func:`clipped`)."""

from __future__ import annotations


def _note(text: str) -> None:
    """One of tiersim's notes (the command line prints it on stderr)."""
    import warnings

    from tiersim.errors import Note

    warnings.warn(text, Note, stacklevel=3)


def clipped(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word's end and marked
    with "..." where it is cut (it was cut mid-word, unmarked: "a smaller precision ;")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "..."
