"""The harness's one-line user error (a subclass of tiersim's ``TiersimError``)."""

from __future__ import annotations

from tiersim.errors import TiersimError


class CalibrateError(TiersimError):
    """A harness option or model config is invalid: names the flag or file and the fix."""


class Stopped(BaseException):
    """SIGTERM or SIGINT reached the harness (raised by the CLI's signal handler).

    A BaseException, like KeyboardInterrupt, so that the per-table guard, which records a
    failing kernel and goes on, does not swallow it; the runner saves what it measured under
    the partial name and turns it into a one-line CalibrateError. ``args[0]`` is the signal name.
    """
