"""Atomic files (JSON, text, Parquet), importing nothing heavy (sweep workers load this module).

A file is written to a temp file in the same folder, flushed to disk, then renamed over the
target with ``os.replace``: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

#: Flags of a temp file from :func:`create_temp`: new (never an existing file or a link's
#: target), read-write, not inherited by child processes -- those of ``tempfile.mkstemp``.
_TEMP_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def create_temp(folder: str | os.PathLike, prefix: str = "", suffix: str = "") -> tuple[int, str]:
    """Create a new file under a unique name ``prefix + 8 random characters + suffix`` in
    ``folder`` and return ``(fd, absolute path)``, as ``tempfile.mkstemp`` does, but with a
    plain ``open()``'s permissions (0666 less the umask: 0644 under umask 022), not 0600.

    The system applies the umask as it creates the file: the umask is never read or changed
    (it is one per process, and setting it for a moment gave a file that another thread
    created meanwhile the wrong mode)."""
    for _ in range(tempfile.TMP_MAX):
        name = base64.b32encode(os.urandom(5)).decode("ascii").lower()
        path = os.path.abspath(os.path.join(folder, f"{prefix}{name}{suffix}"))
        try:
            return os.open(path, _TEMP_FLAGS, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found", str(folder))


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
        fd, tmp = create_temp(path.parent, f".{path.name}.", ".tmp")  # an ordinary file's mode
    except OSError as error:
        raise _naming(error, path) from None
    try:
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
    """Store one point's record atomically as ``points/<id>.json``, with the
    :func:`point_digest` of its content in its ``digest`` field (set in ``record`` too);
    return its path."""
    path = points_dir(out_dir) / f"{record['point_id']}.json"
    record["digest"] = point_digest(record)
    write_json_atomic(path, record)
    return path


def point_digest(record: dict[str, Any]) -> str:
    """The SHA-256 of a point record's content, its ``digest`` field left out, as its file
    reads back (:func:`write_json_atomic`'s JSON: NaN as null, a tuple as a list), keys sorted:
    a hand-edited or cut-short point file does not match the digest written with it, so a
    resume runs its point again (:func:`tiersim.sweep.store.read_points_each`) rather than
    keeping an edited number as a result."""
    body = {key: value for key, value in record.items() if key != "digest"}
    stored = json.loads(json.dumps(clean(body), default=str, allow_nan=False))
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()
