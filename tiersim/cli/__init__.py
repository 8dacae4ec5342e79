"""The ``tiersim`` command line: one typer app (:mod:`tiersim.cli.app`), one module per command.

``tiersim = "tiersim.cli:app"`` is the console script; ``python -m tiersim`` runs the same app.
Only this package holds command-line code; no domain package imports it.
"""

from __future__ import annotations

try:  # Ctrl-C while the command line loads ends it as one after: status 130, no traceback
    import os
    import sys

    if sys.platform.startswith("linux"):  # memory of big runs (issue 13), set before allocating
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")  # see tiersim.outputs
        try:  # glibc: a fixed mmap threshold, so freed big arrays go back to the system (glibc's
            # sliding threshold kept ~40 MB of a 1M-row trace's loading temporaries)
            import ctypes

            ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 17)  # M_MMAP_THRESHOLD = 128 KiB
        except (OSError, AttributeError):
            pass

    from tiersim.cli.app import TiersimApp, app, main, mount
except KeyboardInterrupt:
    raise SystemExit(130) from None


def return_freed_arrow_memory() -> None:
    """Make pyarrow's jemalloc pool give freed pages back at once (its default keeps them for
    seconds: reading a 1M-row trace then held ~45 MB of freed row groups at the run's peak).
    Called by commands that read traces; a no-op where the pool is not jemalloc."""
    import contextlib

    import pyarrow as pa

    with contextlib.suppress(NotImplementedError, pa.ArrowException):
        pa.jemalloc_set_decay_ms(0)


__all__ = ["TiersimApp", "app", "main", "mount", "return_freed_arrow_memory"]
