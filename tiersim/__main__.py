"""``python -m tiersim``: the same command line as the ``tiersim`` console script."""

from __future__ import annotations

from tiersim.cli import app

app(prog_name="tiersim")
