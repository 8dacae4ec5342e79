"""The HTML report: plotly figures on one self-contained page (see ``docs/report.md``)."""

from __future__ import annotations

from pathlib import Path


def write_report(directory: str | Path) -> Path:
    """Write ``directory/report.html`` for the run, sweep or plan there; return its path."""
    from tiersim.report.page import write_report as write

    return write(directory)


__all__ = ["write_report"]
