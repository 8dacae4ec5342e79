"""Atomic files (JSON, text, Parquet), importing nothing heavy (sweep workers load this module).

A file is written to a temp file in the same folder, flushed to disk, then renamed over the
target with ``os.replace``: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def _file_mode() -> int:
    """Permissions a plain ``open()`` would give a new file under the current umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


FILE_MODE = _file_mode()


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values (without importing numpy)."""
    if type(value).__module__ == "numpy":
        return value.tolist() if hasattr(value, "tolist") else value.item()
    return value


def clean(value: Any) -> Any:
    """A JSON-ready copy: numpy values as Python ones, non-finite floats as None."""
    value = _plain(value)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def stage(path: Path, write: Callable[[IO], None], mode: str = "wb") -> Path:
    """Call ``write(handle)`` on a uniquely named temp file beside ``path``, flush it to disk
    and return the temp file, for :func:`commit` to rename over ``path``: the new bytes are
    whole before anything they replace is touched. On any failure the temp file is removed
    (an OSError names ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # its error names the folder
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise _naming(error, path) from None
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp makes 0600; results are ordinary files
        with os.fdopen(fd, mode) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise _naming(error, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def commit(staged: list[tuple[Path, Path]]) -> None:
    """Rename each staged temp file over its target, in order (``[(temp, target), ...]``);
    on a failure the temp files not yet renamed are removed (an OSError names its target)."""
    for done, (tmp, path) in enumerate(staged):
        try:
            os.replace(tmp, path)
        except OSError as error:
            for left, _ in staged[done:]:
                Path(left).unlink(missing_ok=True)
            raise _naming(error, Path(path)) from None


def _naming(error: OSError, path: Path) -> OSError:
    """``error`` naming the file being written, not its temporary name (which no user knows
    and which is gone): same errno, so the same OSError subclass."""
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror, str(path))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a temp file in the same folder and ``os.replace``."""
    def write(handle: IO[str]) -> None:
        json.dump(clean(data), handle, indent=1, default=str, allow_nan=False)

    commit([(stage(path, write, "w"), Path(path))])


def write_text_atomic(path: Path, text: str) -> None:
    """Write text to ``path`` via a temp file in the same folder and ``os.replace``."""
    commit([(stage(path, lambda handle: handle.write(text), "w"), Path(path))])


def write_with_atomic(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(binary handle)`` on a temp file beside ``path``, then rename it over
    ``path`` (e.g. ``lambda f: pyarrow.parquet.write_table(table, f)``)."""
    commit([(stage(path, write), Path(path))])


def points_dir(out_dir: Path) -> Path:
    """The folder holding one JSON per finished point."""
    return Path(out_dir) / "points"


def write_point(out_dir: Path, record: dict[str, Any]) -> Path:
    """Store one point's record atomically as ``points/<id>.json``; return its path."""
    path = points_dir(out_dir) / f"{record['point_id']}.json"
    write_json_atomic(path, record)
    return path
