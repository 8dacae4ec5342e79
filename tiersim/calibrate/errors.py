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


#: Names of the signals that the CLI's handler turned into :class:`Stopped` while its handlers
#: are set (it clears the list when it restores them). Code that catches every error can
#: swallow a Stopped raised inside it: torch's C extension imports numpy and carries on when
#: that import fails, so a SIGTERM during ``import torch`` was lost and the run went on to
#: write a complete profile, exit 0. The runner calls :func:`raise_if_stopped` before every
#: grid point, so such a signal still stops the run there.
RECEIVED: list[str] = []


def raise_if_stopped() -> None:
    """Raise :class:`Stopped` for a signal in :data:`RECEIVED` (one whose first Stopped may
    have been swallowed where it was raised); nothing when none was received."""
    if RECEIVED:
        raise Stopped(RECEIVED[0])
