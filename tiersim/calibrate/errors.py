"""The harness's one-line user error (a subclass of tiersim's ``TiersimError``)."""

from __future__ import annotations

from tiersim.errors import TiersimError


class CalibrateError(TiersimError):
    """A harness option or model config is invalid: names the flag or file and the fix."""
