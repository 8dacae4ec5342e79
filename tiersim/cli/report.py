"""``tiersim report DIR``: write DIR/report.html for the run, sweep or plan there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiersim.cli.usage import echo, expand_home


def report(
    directory: Annotated[Path, typer.Argument(help="Folder of a run, sweep or plan.",
                                                parser=expand_home)],
) -> None:
    """Write DIR/report.html: one self-contained page (opens offline)."""
    import contextlib

    from tiersim.errors import escaped
    from tiersim.manifest import missing_files, missing_note
    from tiersim.outputs import locked, refuse_scattering
    from tiersim.report import write_report

    refuse_scattering(directory, "report")  # never a lock in / or the home folder
    # never a page of a folder another command is writing (a missing folder: write_report's line)
    guard = locked(directory, "report") if directory.is_dir() else contextlib.nullcontext()
    with guard:
        echo(f"wrote {escaped(write_report(directory))}")
    gone = missing_files(directory)
    if gone:
        echo(missing_note(gone), err=True)


__all__ = ["report"]
