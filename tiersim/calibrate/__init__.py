"""The microbenchmark harness: measures a calibration profile on a GPU (or tiny shapes on a CPU).

Runs with only torch and numpy installed: nothing here imports tiersim's simulator dependencies.
``python -m tiersim.calibrate --help``; ``main(argv)`` is the typer-free entry point the CLI
mounts; ``run_calibration(...)`` is the Python API (imports torch when called).
"""

from __future__ import annotations

from tiersim.calibrate.cli import main


def run_calibration(*args, **kwargs) -> dict:
    """Measure and return a profile; see ``tiersim.calibrate.runner.run_calibration``."""
    from tiersim.calibrate.runner import run_calibration as run

    return run(*args, **kwargs)


__all__ = ["main", "run_calibration"]
