"""Reading a JSON file a user gave (a model config, a profile): one error line per failure.

Missing or unreadable, not UTF-8, not JSON, or nested too deeply for the parser: each is a
:class:`~tiersim.errors.TiersimError` subclass chosen by the caller, naming the file and what
it was expected to be.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError


def read_json(path: Path, what: str, error: type[TiersimError] = TiersimError,
              missing: str | None = None) -> Any:
    """The parsed content of ``path`` (``what``: "a model config", "a profile"); ``missing``
    replaces the message for a file that does not exist."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        if missing is not None and isinstance(exc, FileNotFoundError):
            raise error(f"{path}: {missing}") from None
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: byte {exc.start}: not UTF-8 text; {what} is a UTF-8 JSON "
                    "file") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to be {what}") from None
