"""The ``tiersim`` command line: one typer app (:mod:`tiersim.cli.app`), one module per command.

``tiersim = "tiersim.cli:app"`` is the console script; ``python -m tiersim`` runs the same app.
Only this package holds command-line code; no domain package imports it.
"""

from __future__ import annotations

import os
import sys

if sys.platform.startswith("linux"):  # before pyarrow allocates: see tiersim.outputs (memory)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

from tiersim.cli.app import TiersimApp, app, main, mount

__all__ = ["TiersimApp", "app", "main", "mount"]
