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
    """Write DIR/report.html: one self-contained page (opens offline). Interrupted (Ctrl-C,
    SIGTERM), it says in one line whether it replaced the page (:func:`said_if_interrupted`);
    a page half written is never left."""
    from tiersim.cli.run import said_if_interrupted
    from tiersim.errors import escaped
    from tiersim.manifest import missing_files, missing_note
    from tiersim.report import write_report

    with said_if_interrupted(directory, "report"):
        echo(f"wrote {escaped(write_report(directory))}")  # refused in / or ~, under the lock
        gone = missing_files(directory)
        if gone:
            echo(missing_note(gone), err=True)


__all__ = ["report"]
