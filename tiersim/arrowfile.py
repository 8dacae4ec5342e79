"""Local files for pyarrow, named as the operating system names them.

pyarrow encodes a path given as text in UTF-8, which fails (``UnicodeEncodeError: surrogates
not allowed``) on a name the file system allows but UTF-8 does not: a folder named in Latin-1,
or any non-ASCII name under a C locale with Python's UTF-8 mode off, which Python holds with
surrogates. Every Parquet and JSON-lines file tiersim reads or writes is opened here instead,
by its bytes (``os.fsencode``), as Python's own ``open`` does.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pyarrow as pa

NOT_A_FILE = "not a regular file (a device or pipe)"
"""The ``strerror`` of the OSError :func:`arrow_file` raises for a pipe or device."""


def arrow_file(path: str | Path, mode: str = "rb") -> pa.NativeFile:
    """``path`` opened as a pyarrow file (``"rb"`` to read, ``"wb"`` to write); close it, or use
    it in a ``with`` block. A missing file raises ``FileNotFoundError`` as ``open`` does; a
    named pipe or a device to read raises an OSError (:data:`NOT_A_FILE`) before it is
    opened: opening a pipe waits for a writer, and a sweep.parquet that was one hung the
    sweep's resume for ever."""
    name = os.fsencode(path)
    if mode == "rb":
        _refuse_special(name)
    return pa.OSFile(name, mode)


def _refuse_special(name: bytes) -> None:
    """Raise an OSError where ``name`` is a named pipe, socket or device; a missing file or a
    folder is left to the open, which says so in its own words."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise OSError(errno.EINVAL, NOT_A_FILE, os.fsdecode(name))
