"""The HTML report: plotly figures on one self-contained page (see ``docs/report.md``)."""

from __future__ import annotations

from pathlib import Path


def write_report(directory: str | Path, shown_as: str | Path | None = None) -> Path:
    """Write ``directory/report.html`` for the run, sweep or plan there; return its path.
    ``shown_as``: the folder to name on the page (default ``directory``)."""
    from tiersim.report.page import write_report as write

    return write(directory, shown_as)


__all__ = ["write_report"]
