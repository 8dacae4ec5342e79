"""``python -m tiersim.calibrate``: run the harness (see ``tiersim.calibrate.cli``)."""

from __future__ import annotations

from tiersim.calibrate.cli import main

raise SystemExit(main())
