"""The HTML report: plotly figures on one self-contained page (see ``docs/report.md``)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def write_report(directory: str | Path, shown_as: str | Path | None = None) -> Path:
    """Write ``directory/report.html`` for the run, sweep or plan there; return its path, as
    ``tiersim report DIR`` does: never in the root or home folder
    (:func:`tiersim.outputs.refuse_scattering`), and under the folder's lock, so never a page
    of a folder another tiersim command is writing (a refusal is the command's one-line
    :class:`~tiersim.errors.TiersimError`). ``shown_as``: the folder to name on the page
    (default ``directory``). A command that already holds the folder writes its page with
    :func:`tiersim.report.page.write_report`."""
    from tiersim.outputs import locked, refuse_scattering
    from tiersim.report.page import write_report as write

    directory = Path(directory)
    refuse_scattering(directory, "report")  # never a lock in / or the home folder
    # a missing folder: write's own line, and no folder made for its lock
    guard = locked(directory, "report") if directory.is_dir() else contextlib.nullcontext()
    with guard:
        return write(directory, shown_as)


__all__ = ["write_report"]
